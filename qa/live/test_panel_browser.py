"""The panel rendered by headless Chromium from the module in the real mgr: its numbers are
the JSON status's, and a hostile pool name stays text. A screenshot is kept."""
import json
import math
import os
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from ..cluster import Cluster, wait_until
from ..conftest import EVIL, PANEL_URL as URL
from .browser import Tables, chromium, dom, fixed, num, pct, size, text


def rendered(budget_ms: int = 8000) -> Tables:
    return dom(URL, budget_ms)


def api(what: str) -> Dict[str, Any]:
    with urllib.request.urlopen(URL + "api/" + what, timeout=30) as r:
        doc: Dict[str, Any] = json.loads(r.read())
    return doc


def iso(t: float) -> str:
    """A time as the page's `new Date(t * 1000).toISOString()` writes it (ms truncated)."""
    ms = math.trunc(t * 1000)
    day = datetime.fromtimestamp(ms // 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{day}.{ms % 1000:03d}Z"


@pytest.fixture
def panel(cluster: Cluster) -> Iterator[Cluster]:
    wait_until(lambda: cluster.json("mgr", "services").get("pg_advisor") == URL, 60, "the panel")
    yield cluster


def expected(st: Dict[str, Any]) -> Dict[str, Any]:
    """What the page must show for this status: table rows, chart titles, texts."""
    osds = [o for o in st["osds"] if o["pgs"] is not None]
    want: Dict[str, Any] = {"tables": {}, "titles": {}}
    want["tables"]["pools"] = [
        [p["name"], text(p["pg_num"]), text(p["recommended_pg_num"]), text(p["autoscaler_pg_num"]),
         size(p["stored"]), text(p["recommendation"])] for p in st["pools"]]
    want["tables"]["osds"] = [
        [f"osd.{o['id']}", text(o["host"]), text(o["pgs"]), num(o["pg_share"]), pct(o["utilization"]),
         size(o["bytes_used"]), size(o["pg_memory_now"]), size(o["pg_memory_steady"])] for o in osds]
    ext = st["distribution"]["extremes"]
    want["tables"]["extremes"] = (
        [[f"{k} by PGs", f"osd.{e['osd']}", f"{e['pgs']} PGs, {fixed(e['ratio'], 2)} x its share"]
         for k, e in ((k, ext["by_pgs"][k]) for k in ("fullest", "emptiest"))] +
        [[f"{k} by space used", f"osd.{e['osd']}", pct(e["utilization"])]
         for k, e in ((k, ext["by_utilization"][k]) for k in ("fullest", "emptiest"))])
    want["titles"]["chart"] = [("rect", f"osd.{o['id']}: {o['pgs']} PGs, share {num(o['pg_share'])}")
                               for o in osds]
    for p in st["pools"]:
        k = str(p["id"])
        want["titles"][f"chart-pool-{k}"] = [
            ("rect", f"osd.{o['id']}: {o['pgs_by_pool'][k]} PGs, share {num(o['pg_share_by_pool'][k])}")
            for o in osds if o["pgs_by_pool"][k] > 0 or o["pg_share_by_pool"][k] > 0]
    want["titles"]["util"] = [("rect", f"osd.{o['id']}: {pct(o['utilization'])}")
                              for o in st["osds"] if o["utilization"] is not None]
    budget = st["cluster"]["sizing"]["pg_memory_budget"]
    want["titles"]["memory"] = [
        ("rect", f"osd.{o['id']}: {size(o['pg_memory_now'])} now, {size(o['pg_memory_steady'])} full")
        for o in st["osds"] if o["pg_memory_now"] is not None] + [("line", f"budget: {size(budget)}")]
    want["budget"] = f"PG memory budget per OSD: {size(budget)}"
    sp = st["space"]        # (the test cluster's OSDs are nearly empty: no OSD past it)
    limit = f"{sp['fill_limit']}_ratio {pct(100 * sp['ratio'])}"
    more = sp["osds_total"] - len(sp["osds"])
    named = ", ".join(f"osd.{o['osd']} ({pct(100 * o['used_ratio'])})" for o in sp["osds"])
    want["space"] = (f"no OSD past {limit}" if not sp["osds_total"] else
                     f"{sp['osds_total']} OSDs take no PG (past {limit}, counting what is copied onto "
                     f"them): {named}" + (f" and {more} more" if more > 0 else ""))
    return want


def shown(page: Tables) -> Dict[str, Any]:
    return {"tables": {k: page.tables.get(k, [])[1:] for k in ("pools", "osds", "extremes")},
            "titles": page.titles, "budget": page.texts.get("budget"), "space": page.texts.get("space")}


def test_rendered_numbers_are_the_status_and_a_hostile_name_stays_text(
        panel: Cluster, evil_pool: Cluster, tmp_path: Path) -> None:
    # the hostile pool is also the second pool, so there are two per-pool charts
    def placed() -> bool:     # every replica of the new pool's PGs counted on an OSD
        st = api("status")
        p = next((p for p in st["pools"] if p["name"] == EVIL), None)
        return p is not None and sum(o["pgs_by_pool"][str(p["id"])] for o in st["osds"]) == \
            p["pg_num"] * p["size"]
    wait_until(placed, 90, "the pool's PGs on the OSDs in the status")
    for _ in range(5):       # stats move: a render and the JSON read just after must agree
        page, st = rendered(), api("status")
        want, got = expected(st), shown(page)
        if got == want:
            break
        time.sleep(2)
    assert got["tables"] == want["tables"]
    assert got["titles"] == want["titles"]     # one bar per OSD in each chart, its figures
    assert got["budget"] == want["budget"]
    assert got["space"] == want["space"]
    # the cluster has several pools, each charted; every OSD up and in reports its size, so
    # its space is charted (an OSD out or down may not)
    assert len(st["pools"]) >= 2 and len(want["titles"]["chart"]) > 0
    assert {int(t.split(":")[0][4:]) for _, t in want["titles"]["util"]} >= \
        {o["id"] for o in st["osds"] if o["up"] and o["in"]}
    assert EVIL in [row[0] for row in page.tables["pools"][1:]]   # shown, as text
    assert "img" not in page.tags                                  # never as an element
    shot = Path(os.environ.get("PG_ADVISOR_ARTIFACTS", tmp_path)) / "panel.png"
    chromium("--window-size=1200,2600", f"--screenshot={shot}", URL)
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


def plan_shown(pr: Dict[str, Any], hi: Dict[str, Any]) -> Dict[str, Any]:
    """The plan paragraph, the steps and the history as the page must show them."""
    plan, steps = pr["plan"], pr["steps"]
    line = (f"plan {plan['id']}: {plan['status']}, step {min(plan['next'] + 1, len(steps))} of "
            f"{len(steps)}" + (f"; blocked: {'; '.join(plan['blockers'])}" if plan["blockers"] else "")
            + (f"; waiting: {plan['waiting']}" if plan.get("waiting") else ""))
    return {"plan": line,
            "steps": [[str(i + 1), s["state"], s["description"]] for i, s in enumerate(steps)],
            "history": [[iso(h["time"]), h["event"], text(h["detail"])]
                        for h in reversed(hi["history"][-20:])]}


def test_a_blocked_plan_its_steps_and_history(panel: Cluster, evil_pool: Cluster) -> None:
    c = evil_pool
    c.ceph("osd", "set", "norebalance")
    try:
        c.ceph("pg-advisor", "apply", "--pool", EVIL, "--pg-num", "16")
        wait_until(lambda: bool((api("progress")["plan"] or {}).get("blockers")), 60,
                   "the plan to be blocked")
        for _ in range(5):
            page, pr, hi = rendered(), api("progress"), api("history")
            want = plan_shown(pr, hi)
            got: Dict[str, Any] = {"plan": page.texts.get("plan"), "steps": page.tables["steps"][1:],
                                   "history": page.tables["history"][1:]}
            if got == want:
                break
            time.sleep(2)
        assert got == want
        assert "norebalance" in got["plan"] and len(got["steps"]) >= 1
        # the progress bar: steps done of all
        plan, steps = pr["plan"], pr["steps"]
        bar = page.attrs["plan-bar"]
        assert (bar["max"], bar["value"]) == (str(len(steps)), str(min(plan["next"], len(steps))))
        assert page.texts["plan-step"] == f"{plan['next']} of {len(steps)} steps done"
        assert any(row[1] == "start" for row in got["history"]), got["history"]
    finally:
        c.run("pg-advisor", "abort")
        c.ceph("osd", "unset", "norebalance")


def test_the_page_refreshes_itself(panel: Cluster) -> None:
    # 35 s of the page's (virtual) time: the first load and a refresh every 10 s after it
    assert int(rendered(budget_ms=35_000).texts["refreshes"]) >= 3
