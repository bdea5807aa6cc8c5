"""A drain moves what it drains: the replicas on the drained OSDs (and what the rule forces
with them) and no more, and no other OSD ends further from its share than before or than
1 PG, per pool and in total; on the test layouts, as CRUSH maps them and evened first."""
import dataclasses
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

from pg_advisor.rules.legality import ancestors, breaks, rule_shape
from pg_advisor.balance.budget import Limits
from pg_advisor.balance.balancer import Balancer
from pg_advisor.balance.drain import drain_osds, drain_report
from pg_advisor.balance.drain_moves import caps
from pg_advisor.crush.placement import Placer
from pg_advisor.execute.driver import Driver
from pg_advisor.execute.rounds import RoundSpec, balance_round
from pg_advisor.model.misplaced import MisplacedBudget
from pg_advisor.model import snapshot
from pg_advisor.model.distribution import up_counts
from pg_advisor.model.options import BalanceMode, make
from pg_advisor_testkit.dumps import FIXTURES, read_case
from pg_advisor_testkit.proposals import applied, replica_moves
from pg_advisor.execute import operator_commands as ops

from .fakes import FakeCeph, context
from .layouts import HOST_IN_RACK, OSDS_ANYWHERE, RACK_THEN_HOST, Layout, load, regrow, use_rule

EPS = 1e-9
# (layout, rbd's rule, target): the fixture's hosts; osd.6 in a fourth rack, rbd one
# replica per rack; rbd's replicas on any OSD
CASES: List[Tuple[Optional[Layout], Optional[Sequence[str]], str]] = [
    (None, None, "osd.0"), (None, None, "osd.1"), (None, None, "osd.2"),
    (HOST_IN_RACK, RACK_THEN_HOST, "osd.6"), (HOST_IN_RACK, RACK_THEN_HOST, "osd.0"),
    (HOST_IN_RACK, RACK_THEN_HOST, "host3"), (HOST_IN_RACK, OSDS_ANYWHERE, "osd.3"),
]


def grown(dumps: Dict[str, Any], layout: Optional[Layout],
          steps: Optional[Sequence[str]]) -> snapshot.Snapshot:
    if layout is not None:
        regrow(dumps, layout, device_class="hdd")     # (an ssd would leave the ssd pool one OSD)
    if steps is not None:
        use_rule(dumps, "rbd", steps)
    return load(dumps)


def evened(snap: snapshot.Snapshot) -> snapshot.Snapshot:
    return applied(snap, Balancer(snap).run().items)


def check_drain(snap: snapshot.Snapshot, target: str) -> Dict[str, Any]:
    """The drain's report, its items checked applied: the OSDs empty, every PG legal, the
    replica moves counted from the up sets, and the deviation rule on every other OSD."""
    r = drain_report(snap, target)
    after = applied(snap, r["items"])
    pl0, pl1 = Placer(snap), Placer(after)
    b = Balancer(snap, pl0, drain=r["osds"])      # the shares without the drained OSDs
    anc = ancestors(after)
    n = snap.osds.count
    keep = np.ones(n, dtype=bool)
    keep[r["osds"]] = False
    moves = 0
    tot0, tot1, share = np.zeros(n), np.zeros(n), np.zeros(n)
    for st in b.states:
        m0, m1 = pl0.map_pool(st.pool), pl1.map_pool(st.pool)
        assert not (breaks(rule_shape(after, st.pool), anc, m1.up) & ~breaks(st.shape, anc, m0.up)).any()
        moves += replica_moves(st.pool.type, m0.up, m1.up)
        c0, c1 = up_counts(m0.up, n), up_counts(m1.up, n)
        if st.pool.name in r["pools"]:
            assert c1[r["osds"]].sum() == 0, (st.pool.name, c1[r["osds"]])
        worse = keep & (np.abs(c1 - st.share) > np.maximum(np.abs(c0 - st.share), 1) + EPS)
        assert not worse.any(), (st.pool.name, np.flatnonzero(worse), c0[worse], c1[worse], st.share[worse])
        tot0, tot1, share = tot0 + c0, tot1 + c1, share + st.share
    worse = keep & (np.abs(tot1 - share) > np.maximum(np.abs(tot0 - share), 1) + EPS)
    assert not worse.any(), ("total", np.flatnonzero(worse), tot0[worse], tot1[worse], share[worse])
    assert moves == r["moves"] and r["left"] == 0 and not r["uneven"], r
    assert r["moves"] == r["replicas"] + r["forced"]
    return r


@pytest.mark.parametrize("layout, steps, target", CASES)
@pytest.mark.parametrize("even_first", [False, True], ids=["crush", "evened"])
def test_a_drain_moves_its_replicas_and_leaves_no_other_osd_further_off(
        dumps: Dict[str, Any], layout: Optional[Layout], steps: Optional[Sequence[str]], target: str,
        even_first: bool) -> None:
    snap = grown(dumps, layout, steps)
    if even_first:
        snap = evened(snap)
    r = check_drain(snap, target)
    # the rules here let every replica move alone: no regroup is forced; a chain's second
    # move, where every OSD the rule allows the replica is full, is all there is besides
    assert r["forced"] == r["chained"] <= max(2, 0.1 * r["replicas"]), r
    assert r["replicas"] <= r["moves"] <= 1.1 * r["replicas"] + r["chained"], r


@pytest.mark.parametrize("case, even_first", [(4, False), (6, True)], ids=["osd.0-crush", "osd.3-evened"])
def test_a_chain_is_paid_whole_or_not_made_under_a_backfill_room(
        dumps: Dict[str, Any], case: int, even_first: bool) -> None:
    # the two layouts whose drain chains (a replica onto a full OSD y, another PG's off y);
    # each OSD's backfill room swept: where y has room for one move of the two, a chain
    # made its first move, failed its second and left the replica's row without its
    # source for the steps tried next (ValueError), y over its room
    layout, steps, target = CASES[case]
    snap = grown(dumps, layout, steps)
    if even_first:
        snap = evened(snap)
    osds = drain_osds(snap, target)
    free = Balancer(snap, drain=osds)
    free.run(even=False)
    assert free.drain_chained > 0
    n = snap.osds.count
    for y in range(n):
        for room in range(1, 12):
            rooms = np.full(n, 1000)
            rooms[y] = room
            b = Balancer(snap, limits=Limits(osd_room=rooms), drain=osds)
            most = {id(st): caps(st.level)[0] for st in b.states}
            b.run(even=False)
            for st in b.states:
                over = np.flatnonzero((st.level.counts > most[id(st)]) & ~np.isin(np.arange(n), osds))
                assert not over.size, (y, room, st.pool.name, over)
            moved = sum(int(((st.up != st.start) & ((st.up == y) | (st.start == y))).sum())
                        for st in b.states)    # moves with an end on y: what its room pays
            assert moved <= room, (y, room, moved)


@pytest.mark.parametrize("name", ["chain_first_free_90", "chain_first_free_358"])
def test_kept_drains_whose_chains_broke_run_to_the_end(name: str) -> None:
    # two clusters a random search found (4-6 hosts, a drained OSD whose PGs need chains,
    # items set, backfill room 2, a 1 % budget and nothing misplaced): the round's chain
    # passed the budget as one payment, its second move was refused, and the next way
    # tried for the replica found it gone (ValueError). Every round now stays within each
    # OSD's room, and the rounds empty the OSD
    case = read_case(name)
    spec = json.loads((FIXTURES / name / "round.json").read_text())
    snap = load(case)
    n = snap.osds.count
    drained = np.array(spec["drain"])
    for _ in range(40):
        room = np.full(n, spec["osd_room"])
        rnd = balance_round(snap, RoundSpec(None, spec["max_items"], BalanceMode.PGS,
                                            MisplacedBudget.of(snap, spec["misplaced"]),
                                            drain=spec["drain"], osd_room=room, even=spec["even"]))
        if not rnd.items:
            break
        after = applied(snap, rnd.items)
        pl0, pl1 = Placer(snap), Placer(after)
        ends = np.zeros(n, dtype=np.int64)
        for p in snap.pools:
            up0, up1 = pl0.map_pool(p).up, pl1.map_pool(p).up
            for a, b in zip(up0.tolist(), up1.tolist()):
                for o in set(a) ^ set(b):
                    if o >= 0:
                        ends[o] += 1
        assert (ends <= spec["osd_room"]).all(), ends
        snap = after
    pl = Placer(snap)
    assert sum(int(np.isin(pl.map_pool(p).up, drained).sum()) for p in snap.pools) == 0


def test_and_balance_evens_the_pools_as_balance_does(dumps: Dict[str, Any]) -> None:
    snap = grown(dumps, HOST_IN_RACK, OSDS_ANYWHERE)
    only = drain_report(snap, "osd.3")
    both = drain_report(snap, "osd.3", and_balance=True)
    assert both["and_balance"] and not only["and_balance"]
    assert both["moves"] > only["moves"] == only["replicas"]
    assert both["deviation"]["total"][1] <= 1.0 and not both["uneven"]
    for name, (before, after) in both["deviation"]["pools"].items():
        assert after <= 1.0, (name, before, after)


def test_the_drain_moves_no_replica_of_another_osd(dumps: Dict[str, Any]) -> None:
    # every changed slot of every PG held a drained OSD before
    snap = grown(dumps, HOST_IN_RACK, OSDS_ANYWHERE)
    r = drain_report(snap, "host0")
    osds = set(r["osds"])
    pl0, pl1 = Placer(snap), Placer(applied(snap, r["items"]))
    for pool in snap.pools:
        m0, m1 = pl0.map_pool(pool), pl1.map_pool(pool)
        for a, b in zip(m0.up.tolist(), m1.up.tolist()):
            assert set(a) - set(b) <= osds, (pool.name, a, b)


def test_a_plan_drain_moves_what_it_drains(dumps: Dict[str, Any]) -> None:
    # the rounds of a drain plan, counted from the map's up sets before and after
    ceph = FakeCeph(dumps)
    kv: Dict[str, Optional[str]] = {}
    drv = Driver(kv.get, kv.__setitem__, 0.0)
    opts = make({"step_interval": 0})
    snap0 = ceph.snap()
    r = ops.drain(drv.plans, context(ceph, opts, 0.0), "osd.1", False)
    assert drv.executor.state is not None and not drv.executor.state.and_balance
    for t in range(1, 300):
        drv.tick(context(ceph, opts, float(t)))
        ceph.settle()
        if not drv.executor.active:
            break
    st = drv.executor.state
    assert st is not None and st.status == "done", drv.executor.report()
    snap1 = ceph.snap()
    pl0, pl1 = Placer(snap0), Placer(dataclasses.replace(snap0, pg_upmap_items=snap1.pg_upmap_items))
    moves = sum(replica_moves(p.type, pl0.map_pool(p).up, pl1.map_pool(p).up)
                for p in snap0.pools)
    assert 0 < r["replicas"] <= moves <= 1.1 * r["replicas"] + r["forced"], (moves, r)
    assert sum(int((pl1.map_pool(p).up == 1).sum()) for p in snap0.pools) == 0


def test_a_plan_with_and_balance_keeps_the_flag_and_evens(dumps: Dict[str, Any]) -> None:
    ceph = FakeCeph(dumps)
    kv: Dict[str, Optional[str]] = {}
    drv = Driver(kv.get, kv.__setitem__, 0.0)
    opts = make({"step_interval": 0})
    ops.drain(drv.plans, context(ceph, opts, 0.0), "osd.1", False, and_balance=True)
    again = Driver(kv.get, kv.__setitem__, 1.0).executor.state     # a new mgr reads it back
    assert again is not None and again.and_balance and again.drain == [1]
