"""The backfill as progress and status show it (analysis/backfill.py): bytes left to copy,
the rate and ETA measured over the last minutes, the OSDs whose reservations are full."""
import copy
from typing import Any, Dict

from pg_advisor.analysis.backfill import RATE_WINDOW, BackfillRate, bytes_left, full_reservations
from pg_advisor.analysis.status import status_report
from pg_advisor.model import snapshot
from pg_advisor.render.execute_text import progress_text
from pg_advisor.render.status_text import status_text

from .fakes import OPEN, FakeCeph, Store, start, tick_of


def load(d: Dict[str, Any]) -> snapshot.Snapshot:
    return snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])


def stats(d: Dict[str, Any], pool: int) -> Any:
    return [s for s in d["pg_dump"]["pg_map"]["pg_stats"] if s["pgid"].startswith(f"{pool}.")]


def test_bytes_left_count_each_new_copy_of_a_pg(dumps: Dict[str, Any]) -> None:
    d = copy.deepcopy(dumps)
    snap = load(d)
    rbd, ec = snap.pool_by_name("rbd"), snap.pool_by_name("ecpool")
    assert bytes_left(snap, [rbd, ec]) == 0              # all where they are up
    a, b = stats(d, rbd.id)[:2]
    spare = next(o for o in range(6) if o not in a["up"])
    a["acting"] = [spare] + a["up"][1:]                  # one copy to make
    b["acting"] = [o for o in range(6) if o not in b["up"]]     # three (none is held yet)
    e = stats(d, ec.id)[0]
    e["acting"] = [e["up"][0], 0x7FFFFFFF] + e["up"][2:]  # one EC shard of k=2
    snap = load(d)
    want_rbd = a["stat_sum"]["num_bytes"] + 3 * b["stat_sum"]["num_bytes"]
    assert bytes_left(snap, [rbd]) == want_rbd
    assert bytes_left(snap, [rbd, ec]) == want_rbd + e["stat_sum"]["num_bytes"] // ec.data_chunks
    assert ec.data_chunks == 2


def test_the_rate_is_the_fall_over_the_window_and_a_new_plan_starts_afresh() -> None:
    r = BackfillRate()
    r.add("p1", 0.0, 1000)
    assert r.view() == {"bytes_left": 1000, "rate": None, "measured_over": 0.0, "eta_seconds": None}
    r.add("p1", 10.0, 900)                  # too short a span to say
    assert (r.view() or {})["rate"] is None
    r.add("p1", 40.0, 600)
    v = r.view() or {}
    assert v["rate"] == 10.0 and v["eta_seconds"] == 60.0 and v["measured_over"] == 40.0
    r.add("p1", 40.0 + RATE_WINDOW, 300)    # the samples older than the window drop out
    v = r.view() or {}
    assert v["measured_over"] == RATE_WINDOW and v["rate"] == 1.0
    r.add("p2", 500.0, 50)
    assert (r.view() or {})["measured_over"] == 0.0 and len(r.samples) == 1
    r.add("p2", 530.0, 0)
    assert (r.view() or {})["eta_seconds"] == 0.0


def test_full_reservations_name_the_osds_a_waiting_pg_may_wait_for(dumps: Dict[str, Any]) -> None:
    d = copy.deepcopy(dumps)
    assert full_reservations(load(d))["full_osds"] == []
    rows = stats(d, 1)
    # two PGs backfill from their primaries into osd.5; a third waits
    moving = [s for s in rows if 5 not in s["up"]][:3]
    for s in moving[:2]:
        s["up"] = s["up"][:-1] + [5]
        s["state"] = "active+remapped+backfilling"
    moving[2]["state"] = "active+remapped+backfill_wait"
    got = full_reservations(load(d))
    assert got["waiting_pgs"] == 1 and got["osd_max_backfills"] == 1
    named = {o["osd"]: o for o in got["full_osds"]}
    assert named[5]["remote"] == 2 and list(named)[0] == 5      # the fullest first
    assert all(o["local"] >= 1 or o["remote"] >= 1 for o in named.values())
    assert {moving[0]["acting"][0], moving[1]["acting"][0]} <= set(named)
    # with room for two backfills each, only osd.5 is full
    d["osd_dump"] = d["osd_dump"]
    snap = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"],
                         settings=snapshot.Settings(config={"osd_max_backfills": 2}))
    assert [o["osd"] for o in full_reservations(snap)["full_osds"]] == [5]
    # nothing waits: nothing is named
    moving[2]["state"] = "active+clean"
    assert full_reservations(load(d))["full_osds"] == []
    report = status_report(load(d))
    assert report["backfill"]["waiting_pgs"] == 0
    moving[2]["state"] = "active+remapped+backfill_wait"
    text = status_text(status_report(load(d)))
    assert "backfill: 1 PGs wait for a reservation; full at osd_max_backfills 1: osd.5 (" in text


def test_progress_shows_the_plans_backfill(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    rbd = [s for s in ceph.dumps["pg_dump"]["pg_map"]["pg_stats"] if s["pgid"].startswith("1.")]
    held = [list(s["acting"]) for s in rbd]
    for s in rbd[:4]:                 # four PGs of the plan's pool copy a replica each
        spare = next(o for o in range(6) if o not in s["up"])
        s["acting"] = [spare] + s["up"][1:]
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))
    r = ex.report()
    want = sum(s["stat_sum"]["num_bytes"] for s in rbd[:4])
    assert r["backfill"] == {"bytes_left": want, "rate": None, "measured_over": 0.0, "eta_seconds": None}
    assert "left to copy (at most), rate not measured yet" in progress_text(r)
    for s, acting in zip(rbd, held):
        s["acting"] = acting
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 40.0))
    b = ex.report()["backfill"]
    assert b == {"bytes_left": 0, "rate": want / 40.0, "measured_over": 40.0, "eta_seconds": 0.0}


def test_status_and_metrics_count_the_upmap_entries_the_map_holds(dumps: Dict[str, Any]) -> None:
    from pg_advisor.panel.metrics import metrics
    d = copy.deepcopy(dumps)
    d["osd_dump"]["pg_upmap_items"] = [
        {"pgid": "1.0", "mappings": [{"from": 0, "to": 1}, {"from": 2, "to": 3}]},
        {"pgid": "1.1", "mappings": [{"from": 4, "to": 5}]}]
    d["osd_dump"]["pg_upmap"] = [{"pgid": "1.2", "osds": [0, 1, 2]}]
    d["osd_dump"]["pg_upmap_primaries"] = [{"pgid": "1.3", "primary_osd": 4}]
    r = status_report(load(d))
    assert r["cluster"]["upmap_entries"] == {"pg_upmap_items": 2, "pg_upmap_items_pairs": 3,
                                             "pg_upmap": 1, "pg_upmap_primaries": 1,
                                             "pg_upmap_items_ours": None}
    assert "upmap entries in the OSDMap: 2 pg_upmap_items (3 pairs), 1 pg_upmap, 1 pg_upmap_primaries" \
        in status_text(r)
    text = metrics(r, {"plan": None, "steps": []})
    assert 'pg_advisor_upmap_entries{kind="pg_upmap_items_pairs"} 3' in text
