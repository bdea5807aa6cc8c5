"""The mgr reads a new snapshot at each map epoch; where the map changed no CRUSH input (a
balance round's items, an OSD marked down) the new snapshot takes the last one's CRUSH sets
(crush/placement.Placer.carry) instead of mapping every PG again: the work follows the
change. Counted in CRUSH draws (crush/descent.CrushWork), not timed."""
import copy
from typing import Any, Callable, Dict

from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor.model.snapshot import Snapshot


def _load(d: Dict[str, Any]) -> Snapshot:
    return snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])


def _next_epoch(dumps: Dict[str, Any], change: Callable[[Dict[str, Any]], None]) -> Dict[str, Any]:
    d = copy.deepcopy(dumps)
    d["osd_dump"]["epoch"] += 1
    change(d)
    return d


def _up_sets(p: Placer) -> Dict[str, Any]:
    return {pool.name: p.map_pool(pool).up.tolist() for pool in p.snap.pools}


def _items(d: Dict[str, Any]) -> None:
    # a balance round's item: the first PG of the first pool, its first OSD swapped for another
    # (the map is not a valid placement for it, but CRUSH's inputs are the same)
    d["osd_dump"]["pg_upmap_items"] = [{"pgid": f"{d['osd_dump']['pools'][0]['pool']}.0",
                                        "mappings": [{"from": 0, "to": 5}]}]


def _down(d: Dict[str, Any]) -> None:
    next(o for o in d["osd_dump"]["osds"] if o["osd"] == 1)["up"] = 0


def _reweight(d: Dict[str, Any]) -> None:
    next(o for o in d["osd_dump"]["osds"] if o["osd"] == 1)["weight"] = 0.5


def _crush_weight(d: Dict[str, Any]) -> None:
    b = next(b for b in d["crush"]["buckets"] if any(it["id"] == 2 for it in b["items"]))
    next(it for it in b["items"] if it["id"] == 2)["weight"] += 0x1000


def test_a_new_epoch_that_changes_no_crush_input_maps_no_pg_again(dumps: Dict[str, Any]) -> None:
    before = _load(dumps)
    first = Placer.of(before)
    _up_sets(first)
    assert first.work.draws > 0
    for change in (_items, _down):
        snap = _load(_next_epoch(dumps, change))
        assert Placer.carry(before, snap), change.__name__
        carried = Placer.of(snap)
        got = _up_sets(carried)
        assert carried.work.draws == 0, change.__name__        # no CRUSH run at all
        fresh = Placer(snap)
        assert got == _up_sets(fresh) and fresh.work.draws > 0, change.__name__
        # the items and the down OSD show: only the CRUSH sets were taken
        assert got != _up_sets(first), change.__name__


def test_a_changed_crush_input_is_mapped_again(dumps: Dict[str, Any]) -> None:
    before = _load(dumps)
    _up_sets(Placer.of(before))
    for change in (_reweight, _crush_weight):
        snap = _load(_next_epoch(dumps, change))
        assert not Placer.carry(before, snap), change.__name__
        assert "placer" not in snap.memo
        assert Placer.of(snap).inputs() != Placer.of(before).inputs()
    # nothing to carry from a snapshot that mapped nothing, nor onto one that has a placer
    assert not Placer.carry(_load(dumps), _load(dumps))
    snap = _load(dumps)
    Placer.of(snap)
    assert not Placer.carry(before, snap)


def test_the_module_keeps_the_crush_sets_across_a_round_s_epoch(wired: Any) -> None:
    m, ceph, refresh = wired
    first = m.reader.take_snapshot(fresh=True)
    Placer.of(first).map_pool(first.pools[0])
    _items(ceph.dumps)
    ceph.dumps["osd_dump"]["epoch"] += 1
    refresh()
    snap = m.reader.take_snapshot(fresh=True)
    assert snap is not first and snap.epoch == first.epoch + 1
    carried = Placer.of(snap)
    carried.map_pool(snap.pools[0])
    assert carried.work.draws == 0


def test_only_the_new_maps_pools_at_their_own_pg_num_are_carried(dumps: Dict[str, Any]) -> None:
    # a split plan's search maps a pool at other pg_nums; a deleted pool leaves its sets:
    # carried from epoch to epoch, they would fill the cache for good
    before = _load(dumps)
    first = Placer.of(before)
    _up_sets(first)
    pool = before.pools[0]
    first.map_pool(pool, pool.pg_num * 2, pool.pg_num * 2)
    gone = before.pools[-1].name

    def drop(d: Dict[str, Any]) -> None:
        d["osd_dump"]["pools"] = [p for p in d["osd_dump"]["pools"] if p["pool_name"] != gone]
    snap = _load(_next_epoch(dumps, drop))
    assert Placer.carry(before, snap)
    carried = Placer.of(snap)
    assert len(carried._cache) == len(snap.pools) < len(first._cache)
    assert carried._cached == (sum(v[2].size for v in carried._cache.values())
                               + sum(s.size for s, _ in carried._seeds.values()))
    assert _up_sets(carried) == _up_sets(Placer(snap)) and carried.work.draws == 0
