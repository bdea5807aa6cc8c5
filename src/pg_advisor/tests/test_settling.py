"""A plan is done when its data has moved (execute/settling.py): its pools' PGs active+clean
where the map puts them, not when the last command was sent."""
from typing import Any, Dict

from pg_advisor.execute.settling import clean, still_moving

from .fakes import OPEN, FakeCeph, Store, start, tick_of


def test_only_clean_pgs_where_the_map_puts_them_are_settled(dumps: Dict[str, Any]) -> None:
    ceph = FakeCeph(dumps)
    ceph.backfill()                   # the captured stats, at the model's up sets, clean
    rbd = ceph.snap().pool_by_name("rbd")
    assert still_moving(ceph.snap(), [rbd]) is None
    stats = ceph.dumps["pg_dump"]["pg_map"]["pg_stats"]
    first = next(s for s in stats if s["pgid"].startswith(f"{rbd.id}."))
    first["state"] = "active+remapped+backfilling"
    moving = still_moving(ceph.snap(), [rbd])
    assert moving is not None and moving.pgs == 1
    assert moving.example == f"{first['pgid']} active+remapped+backfilling"
    # clean in the stats, but the map has moved it on (the stats lag a new map)
    first["state"] = "active+clean"
    first["up"] = first["acting"] = list(reversed(first["up"]))
    moving = still_moving(ceph.snap(), [rbd])
    assert moving is not None and moving.pgs == 1 and "the map says" in moving.example
    # where the map puts it, but still served from elsewhere (a pg_temp while it backfills)
    first["up"] = first["acting"] = list(reversed(first["up"]))
    first["acting"] = list(reversed(first["acting"]))
    moving = still_moving(ceph.snap(), [rbd])
    assert len(first["up"]) > 1 and moving is not None and moving.pgs == 1, moving
    assert f"acting {first['acting']}, up {first['up']}" in moving.example
    first["acting"] = list(first["up"])
    # another pool's PGs are not the plan's
    others = [p for p in ceph.snap().pools if p.id != rbd.id]
    assert still_moving(ceph.snap(), others) is None
    stats[:] = [s for s in stats if s["pgid"] != first["pgid"]]       # not reported
    moving = still_moving(ceph.snap(), [rbd])
    assert moving is not None and "not in the PG stats yet" in moving.example
    assert clean("active+clean+scrubbing+deep") and not clean("active+undersized+degraded")


def test_the_plan_is_done_only_once_its_data_has_moved(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    for i in range(200):           # the mon reaches every target, the data never moves
        ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, float(i)))
        ceph.settle(report=False)
        ceph.report_children()
        if ex.state is not None and ex.state.next == len(ex.state.steps):
            break
    assert ex.state is not None and ex.state.next == len(ex.state.steps)
    for i in range(3):
        stale = ceph.snap()
        moving = still_moving(stale, [stale.pool_by_name("rbd")])
        assert moving is not None
        ex.tick(tick_of(stale, OPEN, ceph.send, 300.0 + i))
        assert ex.active and store.state is not None and store.state["status"] == "running"
        assert "done once the data has moved" in (store.state["waiting"] or "")
    ceph.backfill()
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 400.0))
    assert not ex.active and store.state is not None and store.state["status"] == "done"
    assert [h["event"] for h in store.history][-1] == "finish"
