"""Expansion without a storm, on the real cluster: two OSDs on a new host come in under
norebalance, `ceph pg-advisor pin-remapped` maps every remapped PG back onto its data, and
the drain moves the data onto the new OSDs within the misplaced budget while a client
writes. Runs last (conftest.LAST): it leaves the cluster with 8 OSDs on 4 hosts."""
import hashlib
import json
import time
from typing import Any, Dict, Iterator, List

import pytest

from .cluster import Cluster, Writer, wait_until

OPT = "mgr/pg_advisor/"
POOLS = {"exp_a": 32, "exp_b": 16}
OBJECTS = 2000         # per pool, 8 KiB each, content from the name
# PG logs this short make a new OSD's copy a backfill, as with real PGs (objects far past
# the log); with the default 3000 entries these small PGs would move by log recovery,
# which norebalance does not hold, before anything could pin them
SHORT_LOG = {"osd_min_pg_log_entries": "10", "osd_max_pg_log_entries": "10", "osd_pg_log_trim_min": "10"}


def body(name: str) -> bytes:
    return hashlib.sha256(name.encode()).digest() * 256


def status(c: Cluster) -> Dict[str, Any]:
    return c.json("status")


def misplaced(c: Cluster) -> float:
    return float(status(c)["pgmap"].get("misplaced_ratio", 0.0))


def all_clean(c: Cluster) -> bool:
    pgmap = status(c)["pgmap"]
    clean = sum(s["count"] for s in pgmap["pgs_by_state"] if s["state_name"] == "active+clean")
    return clean == pgmap["num_pgs"] and not pgmap.get("misplaced_objects")


def plan(c: Cluster) -> Any:
    return json.loads(c.ceph("pg-advisor", "progress", "-f", "json"))["plan"]


@pytest.fixture
def filled(cluster: Cluster) -> Iterator[Cluster]:
    import rados
    c = cluster
    for k, v in SHORT_LOG.items():
        c.ceph("config", "set", "osd", k, v)
    for name, n in POOLS.items():
        c.ceph("osd", "pool", "create", name, str(n), str(n))
        c.ceph("osd", "pool", "set", name, "pg_autoscale_mode", "off")
    r = rados.Rados(conffile=c.env["CEPH_CONF"])
    r.connect()
    try:
        for name in POOLS:
            with r.open_ioctx(name) as io:
                for i in range(OBJECTS):
                    io.write_full(f"o{i}", body(f"{name}/o{i}"))
    finally:
        r.shutdown()
    for k, v in {"step_interval": "2", "poll_interval": "1"}.items():
        c.ceph("config", "set", "mgr", OPT + k, v)
    c.wait_clean()
    yield c
    if (plan(c) or {}).get("status") in ("running", "paused"):
        c.ceph("pg-advisor", "abort")
    c.run("osd", "unset", "norebalance")
    for k in ("step_interval", "poll_interval"):
        c.run("config", "rm", "mgr", OPT + k)
    for k in SHORT_LOG:
        c.run("config", "rm", "osd", k)


def test_a_new_host_is_pinned_clean_then_drained_within_the_budget(filled: Cluster) -> None:
    c = filled
    before = {o["osd"] for o in c.json("osd", "dump")["osds"]}
    budget = 0.05                         # target_max_misplaced_ratio; misplaced_budget 0
    with Writer(c, "exp_a") as w:
        # as operators add capacity: norebalance first, so nothing moves as the OSDs come in
        c.ceph("osd", "set", "norebalance")
        new = [int(x) for x in c.vstart("add-osds", "--count", "2", "--host", "host9").split()]
        assert len(new) == 2 and not set(new) & before
        wait_until(lambda: misplaced(c) > 0, 60, "CRUSH to remap PGs onto the new OSDs")
        time.sleep(3)                     # the PG stats catch up with the new map
        r = json.loads(c.ceph("pg-advisor", "pin-remapped", "-f", "json"))
        assert r["pinned"] > 0 and r["failed"] == [] and r["plan"], r
        # pinned: every PG maps onto its data; nothing is misplaced, all clean, within a minute
        t0 = time.time()
        wait_until(lambda: all_clean(c), 60, "active+clean with 0 misplaced after pinning")
        pinned_in = time.time() - t0
        assert plan(c)["status"] == "running" and plan(c)["blockers"], "the drain ignored norebalance"
        # the drain: balance rounds within the budget, sampled every second
        c.ceph("osd", "unset", "norebalance")
        peak, t1 = 0.0, time.time()
        while (plan(c) or {}).get("status") == "running" and time.time() - t1 < 600:
            peak = max(peak, misplaced(c))
            time.sleep(1)
        drained_in = time.time() - t1
        assert plan(c)["status"] == "done", plan(c)
        c.wait_clean()
    print(f"pinned {r['pinned']} of {r['remapped']} remapped PGs; clean in {pinned_in:.1f} s; "
          f"drained in {drained_in:.0f} s, misplaced peak {100 * peak:.2f} % (budget {100 * budget:.0f} %)")
    assert peak <= budget, peak
    assert w.failed == [] and w.ok > 100, (w.ok, w.failed[:3])
    # every OSD, the new ones too, within one PG of its share, per pool and in all
    ev = json.loads(c.ceph("pg-advisor", "eval", "-f", "json"))
    print({p["pool"]: p["max_deviation"] for p in ev["distribution"]["pools"]},
          (ev["distribution"]["total"] or {}).get("max_deviation"))
    assert ev["score"] <= 1.0, ev["score"]
    counts: Dict[int, int] = {}
    brief = c.json("pg", "dump", "pgs_brief")
    for s in brief["pg_stats"] if isinstance(brief, dict) else brief:
        for o in s["acting"]:
            counts[o] = counts.get(o, 0) + 1
    assert all(counts.get(o, 0) > 0 for o in new), counts
    # and the data is whole
    import rados
    cl = rados.Rados(conffile=c.env["CEPH_CONF"])
    cl.connect()
    try:
        bad: List[str] = []
        for name in POOLS:
            with cl.open_ioctx(name) as io:
                bad += [f"{name}/o{i}" for i in range(OBJECTS)
                        if io.read(f"o{i}", 1 << 20) != body(f"{name}/o{i}")]
        assert bad == []
    finally:
        cl.shutdown()


def test_bad_pin_remapped_arguments_change_nothing(cluster: Cluster) -> None:
    c = cluster
    before = c.fingerprint()
    code, _, err = c.run("pg-advisor", "pin-remapped", "--dry-run", "maybe")
    assert code != 0 and err.strip()
    code, out, _ = c.run("pg-advisor", "pin-remapped", "--dry-run", "-f", "json")
    assert code == 0 and json.loads(out)["dry_run"] is True
    assert c.fingerprint() == before
