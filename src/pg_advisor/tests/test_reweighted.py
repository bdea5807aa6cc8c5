"""crush-reweight: the map after a CRUSH weight change, and the pins that go with it."""
import dataclasses
import errno
import json
import time
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

from pg_advisor.analysis.growth import with_host
from pg_advisor.balance.reweighted import (EPOCHS_SEARCHED, crush_units, holds_weights, pins_missed,
                                           reweight_pins, weight_landing, with_crush_weights)
from pg_advisor.commands import table
from pg_advisor.crush.placement import Placer
from pg_advisor.execute.driver import Driver
from pg_advisor.model import snapshot
from pg_advisor.model.errors import AdvisorError
from pg_advisor.model.options import make
from pg_advisor.render.views import show
from pg_advisor.execute import operator_commands as ops

from .fakes import FakeCeph, context


def ups(snap: snapshot.Snapshot) -> Dict[str, List[int]]:
    placer = Placer(snap)
    out: Dict[str, List[int]] = {}
    for pool in snap.pools:
        m = placer.map_pool(pool)
        out.update({m.pgid(r): m.up_list(r) for r in range(m.up.shape[0])})
    return out


def test_a_host_brought_from_weight_0_maps_as_the_grown_map_and_at_0_as_without_it(
        snap: snapshot.Snapshot) -> None:
    grown, ids, _ = with_host(snap, "hnew", 2, 0.25)
    zero = with_crush_weights(grown, {i: 0.0 for i in ids})
    # at weight 0 CRUSH never picks the new OSDs: every PG maps as before they came
    assert ups(zero) == ups(snap)
    back = with_crush_weights(zero, {i: 0.25 for i in ids})
    assert ups(back) == ups(grown) != ups(snap)
    # the same weights in every bucket, shadow trees included, as the grown map has them
    for bid, b in grown.buckets.items():
        assert np.array_equal(back.buckets[bid].weights, b.weights), b.name
    assert np.array_equal(back.osds.crush_weight, grown.osds.crush_weight)
    # the mon's fixed point: single precision, truncated
    assert crush_units(0.0195) == 1277 and crush_units(1.0) == 0x10000


def with_pins(snap: snapshot.Snapshot, items: Dict[str, List[Tuple[int, int]]]) -> snapshot.Snapshot:
    upmap = dict(snap.pg_upmap_items)
    upmap.update({k: tuple((int(a), int(b)) for a, b in v) for k, v in items.items()})
    return dataclasses.replace(snap, pg_upmap_items=upmap)


def test_the_pins_keep_every_pg_the_weight_moves_where_its_data_is(snap: snapshot.Snapshot) -> None:
    w = float(snap.osds.crush_weight[0])
    rw = reweight_pins(snap, {0: 3 * w})
    before, after = ups(snap), ups(rw.after)
    moved = {k for k in before if before[k] != after[k]}
    assert len(moved) >= 5, "the weight moves too little to show anything"
    assert rw.changed == len(moved) == rw.pins.remapped
    handled = set(rw.pins.items) | set(rw.pins.full) | set(rw.pins.skipped)
    assert handled | set(rw.reordered) == moved
    only = set(rw.reordered) - handled
    # one CRUSH only reorders keeps its OSDs: no data moves, only (maybe) its primary
    assert only and all(sorted(before[k]) == sorted(after[k]) for k in only)
    assert len(rw.pins.items) >= len(moved) - len(only) - 2
    # with the pins in the same map as the weight, no pinned PG's up set changes
    pinned = ups(with_pins(rw.after, rw.pins.items))
    pools = {p.id: p for p in snap.pools}
    for pgid in rw.pins.items:
        old, new = before[pgid], pinned[pgid]
        if pools[int(pgid.split(".")[0])].type == "replicated":
            assert sorted(old) == sorted(new), pgid
            # in the same order, unless counted as reordered
            assert (old == new) != (pgid in rw.reordered), (pgid, old, new)
        else:
            assert old == new, pgid
    # and nothing else moved because of them
    assert all(pinned[k] == after[k] for k in after if k not in rw.pins.items)
    # a chain (a pair's target the source of another) keeps the order one pair per OSD would
    # lose: those PGs keep their primary and do not peer with the weight
    chained = [k for k, v in rw.pins.items.items() if {b for _, b in v} & {a for a, _ in v}]
    assert len(chained) >= 3 and not set(chained) & set(rw.reordered), (chained, rw.reordered)


def test_bad_input_is_refused_before_any_work(snap: snapshot.Snapshot) -> None:
    bad: List[Tuple[Dict[int, float], int]] = [
        ({99: 1.0}, errno.ENOENT), ({-1: 1.0}, errno.ENOENT), ({1 << 31: 1.0}, errno.ENOENT),
        ({0: -1.0}, errno.EINVAL), ({0: float("nan")}, errno.EINVAL), ({0: 1e8}, errno.EINVAL),
        ({}, errno.EINVAL)]
    for weights, code in bad:
        with pytest.raises(AdvisorError) as e:
            reweight_pins(snap, weights)
        assert e.value.code == -code, (weights, e.value.message)
    cmd = table.BY_NAME["crush-reweight"]
    wrong: List[Dict[str, Any]] = [
        {"osd": [0], "weight": "nan"}, {"osd": [0], "weight": -1}, {"osd": [-1], "weight": 1},
        {"osd": [1 << 31], "weight": 1}, {"osd": [0], "weight": 1e8}, {"weight": 1}, {"osd": [0]}]
    for given in wrong:
        with pytest.raises(AdvisorError):
            table.check(cmd, given, live=True)


class Mon:
    """The mon as the burst sees it: every command answered, the reweight included."""

    def __init__(self, ceph: FakeCeph, refuse: str = "") -> None:
        self.ceph, self.refuse = ceph, refuse
        self.bursts: List[List[Dict[str, Any]]] = []

    def __call__(self, cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
        self.bursts.append(list(cmds))
        out = []
        for c in cmds:
            if c["prefix"] == "osd crush reweight":
                out.append((-errno.EINVAL, self.refuse) if self.refuse else (0, ""))
            else:
                out.append(self.ceph.send(c))
        return out


def test_the_weight_and_every_pin_go_out_in_one_burst_weight_first(dumps: Dict[str, Any]) -> None:
    kv: Dict[str, Any] = {}
    drv = Driver(kv.get, kv.__setitem__, 0.0)
    ceph = FakeCeph(dumps)
    snap = ceph.snap()
    w = 3 * float(snap.osds.crush_weight[0])
    dry = ops.crush_reweight(drv.plans, context(ceph, make({}), 0.0, burst=Mon(ceph)), {0: w}, True)
    assert dry["dry_run"] and dry["pinned"] > 0 and ceph.sent == [] and drv.executor.state is None
    mon = Mon(ceph)
    r = ops.crush_reweight(drv.plans, context(ceph, make({}), 0.0, burst=mon), {0: w}, False)
    assert len(mon.bursts) == 1, "the weight and its pins go out together, for one map epoch"
    cmds = mon.bursts[0]
    assert cmds[0] == {"prefix": "osd crush reweight", "name": "osd.0", "weight": w}
    assert {c["pgid"] for c in cmds[1:]} == set(dry["items"]) | set(dry["full"])
    st = drv.executor.state
    assert r["plan"] and st is not None and st.source == "crush-reweight"
    assert r["weights"]["osd.0"]["to"] == crush_units(w) / 0x10000
    assert json.loads(json.dumps(r)) == r
    text = show("crush-reweight", r, None)
    assert "osd.0: CRUSH weight" in text and "drains the pins" in text
    # beside an open plan: refused, nothing sent
    n = len(ceph.sent)
    with pytest.raises(AdvisorError) as e:
        ops.crush_reweight(drv.plans, context(ceph, make({}), 1.0, burst=Mon(ceph)), {0: w}, False)
    assert e.value.code == -errno.EBUSY and len(ceph.sent) == n


def test_a_refused_weight_starts_no_plan(dumps: Dict[str, Any]) -> None:
    kv: Dict[str, Any] = {}
    drv = Driver(kv.get, kv.__setitem__, 0.0)
    ceph = FakeCeph(dumps)
    w = 3 * float(ceph.snap().osds.crush_weight[0])
    before = ceph.snap().pg_upmap_items
    mon = Mon(ceph, refuse="no")
    with pytest.raises(AdvisorError) as e:
        ops.crush_reweight(drv.plans, context(ceph, make({}), 0.0, burst=mon), {0: w}, False)
    assert "refused the weight" in e.value.message and drv.executor.state is None
    # the pins that went out with it are taken back: every PG's items as they were
    assert len(mon.bursts) >= 2 and ceph.snap().pg_upmap_items == before


def _tree(weights: Dict[int, float]) -> Dict[str, Any]:
    # `osd tree EPOCH` as the mon prints it: buckets, then OSDs with weight / 0x10000
    return {"nodes": [{"id": -1, "name": "default", "type": "root", "crush_weight": 9.0}]
            + [{"id": o, "name": f"osd.{o}", "type": "osd", "crush_weight": round(w, 5)}
               for o, w in weights.items()]}


def _dump(items: Dict[str, List[Tuple[int, int]]], full: Dict[str, List[int]]) -> Dict[str, Any]:
    return {"pg_upmap": [{"pgid": k, "osds": v} for k, v in full.items()],
            "pg_upmap_items": [{"pgid": k, "mappings": [{"from": a, "to": b} for a, b in v]}
                               for k, v in items.items()]}


def test_the_weights_epoch_is_found_and_the_pins_that_missed_it_named() -> None:
    # epochs 11..14 after the burst's snapshot at 10: the weight lands in 12 with two of
    # four pins (1.3's item and 2.0's full pg-upmap come in 13); 1.2's pin removes its items
    report = {"items": {"1.1": [[4, 0]], "1.2": [], "1.3": [[4, 2], [1, 3]]}, "full": {"2.0": [3, 4, 5]}}
    trees = {11: _tree({4: 0.0, 5: 1.0}), 12: _tree({4: 2.0, 5: 1.0}), 13: _tree({4: 2.0, 5: 1.0})}
    dumps = {12: _dump({"1.1": [(4, 0)], "1.3": [(4, 2)], "1.7": [(0, 1)]}, {}),
             13: _dump({"1.1": [(4, 0)], "1.3": [(4, 2), (1, 3)]}, {"2.0": [3, 4, 5]})}
    asked: List[Tuple[int, bool]] = []

    def past(e: int, tree: bool) -> Any:
        asked.append((e, tree))
        return (trees if tree else dumps).get(e)
    landed = weight_landing(past, 10, 14, {4: 2.0}, report)
    assert landed == {"epoch": 12, "missed": ["1.3", "2.0"]}
    assert asked == [(11, True), (12, True), (12, False)]      # no epoch read past the weight's
    # all in: none missed; the weight in no epoch searched, or an epoch the mon no longer
    # has: not found, nothing claimed
    assert weight_landing(past, 12, 14, {4: 2.0}, dict(report, items={"1.1": [[4, 0]]}, full={})) \
        == {"epoch": 13, "missed": []}
    assert weight_landing(past, 10, 14, {4: 3.0}, report) == {"epoch": None, "missed": None}
    assert weight_landing(lambda e, t: None, 10, 14, {4: 2.0}, report) == {"epoch": None, "missed": None}
    # the search is bounded whatever the epochs since
    asked.clear()

    def always_before(e: int, tree: bool) -> Any:
        asked.append((e, tree))
        return trees[11]
    weight_landing(always_before, 10, 10 ** 6, {4: 2.0}, report)
    assert asked == [(e, True) for e in range(11, 11 + EPOCHS_SEARCHED)]


def test_the_background_finds_where_the_weights_landed_not_the_commands_handler(
        dumps: Dict[str, Any]) -> None:
    # the handler asks (find_landing) and returns; the serve thread looks on each later map
    # (MgrServe.check_landing), keeps what it found for `progress` and says it in the history
    import threading
    from types import SimpleNamespace
    from pg_advisor.mgr.serve import MgrServe
    report = {"items": {"1.1": [[4, 0]], "1.3": [[4, 2], [1, 3]]}, "full": {}}
    trees = {11: _tree({4: 0.0}), 12: _tree({4: 2.0}), 13: _tree({4: 2.0})}
    at_12 = {12: _dump({"1.1": [(4, 0)], "1.3": [(4, 2)]}, {})}
    kv: Dict[str, Any] = {}
    drv = Driver(kv.get, kv.__setitem__, 0.0)
    at = [10]
    reader = SimpleNamespace(maps=SimpleNamespace(epoch=lambda: at[0]),
                             past_map=lambda e, tree: (trees if tree else at_12).get(e))
    serve = MgrServe(SimpleNamespace(driver=drv, reader=reader), threading.Event())
    ops.find_landing(drv.plans, 10, {4: 2.0}, report, time.time())
    assert drv.plans.checks_owed                   # the background polls for it
    serve.check_landing()                          # no later map yet: nothing asked, nothing found
    assert drv.plans.pins.landing is not None and drv.plans.pins.landed is None
    at[0] = 11                                     # a map, but not the weight's: asked again later
    serve.check_landing()
    assert drv.plans.pins.landing is not None
    at[0] = 13
    serve.check_landing()
    assert drv.plans.pins.landing is None and not drv.plans.checks_owed
    assert drv.plans.pins.landed == {"epoch": 12, "missed": ["1.3"]}
    last = drv.executor.history[-1]
    assert last["event"] == "checked"
    assert "landed in epoch 12; 1 pinned PGs missed it (e.g. 1.3)" in last["detail"], last
    # `progress` of the pins' plan gives it, and says it in text
    from pg_advisor.execute.steps import balance_step
    from pg_advisor.execute.plan_state import Source
    from pg_advisor.render.execute_text import progress_text
    snap = FakeCeph(dumps).snap()
    rbd = snap.pool_by_name("rbd")
    drv.plans.pins.plan = drv.executor.start([balance_step(rbd, 32, 32, 4, 1.0)], [rbd],
                                             Source.CRUSH_REWEIGHT, 1.0).id
    got = drv.plan_report()
    assert got["weight_landed"] == {"epoch": 12, "missed": ["1.3"]} and got["pins_checked"] is None
    assert "the weights landed in map epoch 12; 1 pins missed it (those PGs peered as after " \
           "pin-remapped): 1.3" in progress_text(json.loads(json.dumps(got)))


def test_the_tree_compares_weights_as_the_mon_stores_them() -> None:
    # 16.16 fixed point: 0.3 is stored as 19660/65536 = 0.29999, printed so
    assert holds_weights(_tree({7: 19660 / 65536}), {7: 0.3})
    assert not holds_weights(_tree({7: 0.31}), {7: 0.3})
    assert not holds_weights(_tree({8: 0.3}), {7: 0.3})          # the OSD not in the tree
    assert pins_missed(_dump({}, {}), {"1.0": []}, {}) == []     # removed items: landed
    assert pins_missed(_dump({"1.0": [(1, 2)]}, {}), {"1.0": []}, {}) == ["1.0"]
