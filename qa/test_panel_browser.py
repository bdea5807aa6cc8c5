"""The panel rendered by headless Chromium from the module in the real mgr: its numbers are
the JSON status's, and a hostile pool name stays text. A screenshot is kept."""
import json
import math
import os
import subprocess
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from .cluster import Cluster, wait_until
from .conftest import EVIL, PANEL_URL as URL

# the machine has no network: nothing in the background may try to reach it
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(*args: str, budget_ms: int = 8000) -> str:
    with tempfile.TemporaryDirectory(prefix="pga-chromium-") as profile:
        # virtual time: the page's timers run that long (fast-forwarded) before the dump
        p = subprocess.run(["chromium", *FLAGS, f"--virtual-time-budget={budget_ms}",
                            f"--user-data-dir={profile}", *args],
                           capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


class Tables(HTMLParser):
    """Rows of cell texts per table id; the titles of the bars and lines per SVG id; every
    element tag seen."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: Dict[str, List[List[str]]] = {}
        self.titles: Dict[str, List[Tuple[str, str]]] = {}    # svg id: [(rect|line, title)]
        self.texts: Dict[str, str] = {}                        # text of elements with an id
        self.tags: List[str] = []
        self._table = self._svg = self._shape = self._id = ""
        self._text: List[str] = []
        self._in = ""

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Any]]) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id") or ""
            self.tables[self._table] = []
        elif tag == "tr":
            self.tables.setdefault(self._table, []).append([])
        elif tag == "svg":
            self._svg = a.get("id") or ""
            self.titles[self._svg] = []
        elif tag in ("rect", "line"):
            self._shape = tag
        if tag in ("td", "th", "title") or (tag in ("p", "span") and a.get("id")):
            self._in, self._text, self._id = tag, [], a.get("id") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag != self._in:
            return
        text = "".join(self._text)
        if tag in ("td", "th"):
            self.tables[self._table][-1].append(text)
        elif tag == "title":
            if self._svg:
                self.titles[self._svg].append((self._shape, text))
        else:
            self.texts[self._id] = text
        self._in = ""

    def handle_data(self, data: str) -> None:
        if self._in:
            self._text.append(data)


def rendered(budget_ms: int = 8000) -> Tables:
    t = Tables()
    t.feed(chromium("--dump-dom", URL, budget_ms=budget_ms))
    return t


def api(what: str) -> Dict[str, Any]:
    with urllib.request.urlopen(URL + "api/" + what, timeout=30) as r:
        doc: Dict[str, Any] = json.loads(r.read())
    return doc


def iso(t: float) -> str:
    """A time as the page's `new Date(t * 1000).toISOString()` writes it (ms truncated)."""
    ms = math.trunc(t * 1000)
    day = datetime.fromtimestamp(ms // 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{day}.{ms % 1000:03d}Z"


def text(v: Any) -> str:
    """A value as the page writes it: JavaScript prints 16.0 as 16."""
    if v is None:
        return "-"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


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
         text(p["stored"]), text(p["recommendation"])] for p in st["pools"]]
    want["tables"]["osds"] = [
        [f"osd.{o['id']}", text(o["host"]), text(o["pgs"]), text(o["pg_share"]), text(o["utilization"]),
         text(o["bytes_used"]), text(o["pg_memory_now"]), text(o["pg_memory_steady"])] for o in osds]
    ext = st["distribution"]["extremes"]
    want["tables"]["extremes"] = (
        [[f"{k} by PGs", f"osd.{e['osd']}", f"{e['pgs']} PGs, {text(e['ratio'])} x its share"]
         for k, e in ((k, ext["by_pgs"][k]) for k in ("fullest", "emptiest"))] +
        [[f"{k} by space used", f"osd.{e['osd']}", f"{text(e['utilization'])} %"]
         for k, e in ((k, ext["by_utilization"][k]) for k in ("fullest", "emptiest"))])
    want["titles"]["chart"] = [("rect", f"osd.{o['id']}: {o['pgs']} PGs, share {text(o['pg_share'])}")
                               for o in osds]
    for p in st["pools"]:
        k = str(p["id"])
        want["titles"][f"chart-pool-{k}"] = [
            ("rect", f"osd.{o['id']}: {o['pgs_by_pool'][k]} PGs, share {text(o['pg_share_by_pool'][k])}")
            for o in osds if o["pgs_by_pool"][k] > 0 or o["pg_share_by_pool"][k] > 0]
    want["titles"]["util"] = [("rect", f"osd.{o['id']}: {text(o['utilization'])} %")
                              for o in st["osds"] if o["utilization"] is not None]
    budget = st["cluster"]["sizing"]["pg_memory_budget"]
    want["titles"]["memory"] = [
        ("rect", f"osd.{o['id']}: {o['pg_memory_now']} bytes now, {o['pg_memory_steady']} full")
        for o in st["osds"] if o["pg_memory_now"] is not None] + [("line", f"budget: {budget} bytes")]
    want["budget"] = f"PG memory budget per OSD: {budget} bytes"
    return want


def shown(page: Tables) -> Dict[str, Any]:
    return {"tables": {k: page.tables.get(k, [])[1:] for k in ("pools", "osds", "extremes")},
            "titles": page.titles, "budget": page.texts.get("budget")}


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
    # the cluster has several pools, each charted; sizes are known, so space is charted
    assert len(st["pools"]) >= 2 and len(want["titles"]["util"]) == len(want["titles"]["chart"]) > 0
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
    c.ceph("osd", "pool", "set", EVIL, "pg_autoscale_mode", "off")
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
        assert any(row[1] == "start" for row in got["history"]), got["history"]
    finally:
        c.run("pg-advisor", "abort")
        c.ceph("osd", "unset", "norebalance")


def test_the_page_refreshes_itself(panel: Cluster) -> None:
    # 35 s of the page's (virtual) time: the first load and a refresh every 10 s after it
    assert int(rendered(budget_ms=35_000).texts["refreshes"]) >= 3
