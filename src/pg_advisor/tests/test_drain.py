"""drain: an OSD or a bucket emptied through pg-upmap-items, in rounds, under the rule."""
import dataclasses
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pytest

from pg_advisor.model import snapshot
from pg_advisor.crush.placement import Placer
from pg_advisor.balance.balancer import Balancer
from pg_advisor.balance.drain import drain_report
from pg_advisor.execute.driver import Driver
from pg_advisor.execute.plan_state import Status
from pg_advisor.model.errors import AdvisorError
from pg_advisor.render.expand_text import drain_text
from pg_advisor.rules.legality import ancestors, breaks, rule_shape
from pg_advisor.model.options import make
from pg_advisor.execute import operator_commands as ops

from .fakes import FakeCeph, context
from .layouts import UNDER_ROOT, load, regrow


def pgs_on(snap: snapshot.Snapshot, osd: int) -> int:
    placer = Placer(snap)
    return sum(int((placer.map_pool(p).up == osd).sum()) for p in snap.pools)


def test_draining_an_osd_moves_every_replica_off_it_under_the_rule(snap: snapshot.Snapshot) -> None:
    r = drain_report(snap, "osd.0")
    assert r["osds"] == [0] and set(r["pools"]) == {"rbd", "ecpool"} and r["replicas"] == pgs_on(snap, 0)
    assert r["moves"] >= r["replicas"] and not r["uneven"]
    # the items, applied: nothing on osd.0, every PG still legal under its rule
    items = {k: [tuple(p) for p in v] for k, v in r["items"].items()}
    kept = {k: v for k, v in snap.pg_upmap_items.items() if k not in items}
    after = dataclasses.replace(snap, pg_upmap_items={**kept, **{k: tuple(v) for k, v in items.items() if v}})
    assert pgs_on(after, 0) == 0
    anc = ancestors(after)
    for pool in after.pools:
        m = Placer(after).map_pool(pool)
        assert not breaks(rule_shape(after, pool), anc, m.up).any(), pool.name
    assert "dry run" in drain_text(r)


@pytest.mark.parametrize("target, code, message", [
    ("osd.99", -2, "osd.99 does not exist"),
    ("osd.2147483648", -2, "neither an OSD"),
    ("osd.-1", -2, "neither an OSD"),
    ("nohost", -2, "neither an OSD"),
    ("", -2, "neither an OSD"),
    ("host0", -22, "pool rbd's rule 'replicated_rule' can place 64 of the pool's 96 replicas"),
    ("osd.5", -22, "pool fast's rule 'fast'"),       # the ssd class has one OSD left
])
def test_bad_targets_are_refused_with_the_reason(snap: snapshot.Snapshot, target: str, code: int,
                                                 message: str) -> None:
    with pytest.raises(AdvisorError) as e:
        drain_report(snap, target)
    assert e.value.code == code and message in e.value.message


def test_an_empty_osd_has_nothing_to_drain(dumps: Dict[str, Any]) -> None:
    for o in dumps["osd_dump"]["osds"]:
        if o["osd"] == 2:
            o["weight"], o["in"] = 0.0, 0         # out: CRUSH maps nothing there
    snap = snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])
    with pytest.raises(AdvisorError) as e:
        drain_report(snap, "2")
    assert e.value.code == -22 and "holds no PG" in e.value.message


def test_an_osd_of_pools_we_cannot_map_says_why_not_that_it_is_empty(dumps: Dict[str, Any]) -> None:
    # host1 of a hash Ceph has not: no pool's rule can be mapped, yet osd.1 holds PGs of all
    next(b for b in dumps["crush"]["buckets"] if b["name"] == "host1")["hash"] = "unknown"
    snap = snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])
    assert (snap.pgs is not None) and (snap.pgs.up == 1).any()
    with pytest.raises(AdvisorError) as e:
        drain_report(snap, "1")
    assert "holds no PG:" not in e.value.message
    assert "left out" in e.value.message and "(hash unknown)" in e.value.message


def driver() -> Tuple[Driver, Dict[str, Optional[str]]]:
    kv: Dict[str, Optional[str]] = {}
    return Driver(kv.get, kv.__setitem__, 0.0), kv


def test_the_drain_runs_as_a_plan_until_the_osd_is_empty(dumps: Dict[str, Any]) -> None:
    ceph, (drv, kv) = FakeCeph(dumps), driver()
    opts = make({"step_interval": 0})
    dry = ops.drain(drv.plans, context(ceph, opts, 0.0), "osd.0", True)
    assert dry["dry_run"] and ceph.sent == [] and drv.executor.state is None
    r = ops.drain(drv.plans, context(ceph, opts, 0.0), "osd.0", False)
    st = drv.executor.state
    assert st is not None and st.source == "drain" and st.drain == [0] and r["plan"] == st.id
    # a new mgr reads the drain back
    again = Driver(kv.get, kv.__setitem__, 1.0).executor.state
    assert again is not None and again.drain == [0]
    sent: List[int] = []
    for t in range(1, 300):
        drv.tick(context(ceph, opts, float(t)))
        ceph.settle()
        sent.append(len(ceph.sent))
        if not drv.executor.active:
            break
    assert drv.executor.state is not None and drv.executor.state.status == "done", drv.executor.report()
    assert pgs_on(ceph.snap(), 0) == 0
    # in rounds: more than one burst of items went out
    assert len(set(sent)) > 2
    assert any(h["event"] == "drain" for h in drv.executor.history)


def test_a_drain_plan_whose_osd_left_the_map_ends_as_a_balance(dumps: Dict[str, Any]) -> None:
    # the thrasher purged a drained OSD while its plan ran; with `osd setmaxosd` lower the
    # stored plan names an OSD the map does not have: the rounds even the pools and end
    ceph, (drv, _) = FakeCeph(dumps), driver()
    opts = make({"step_interval": 0})
    ops.drain(drv.plans, context(ceph, opts, 0.0), "osd.0", False)
    st = drv.executor.state
    assert st is not None
    st.drain = [ceph.snap().osds.count + 3]
    for t in range(1, 300):
        drv.tick(context(ceph, opts, float(t)))
        ceph.settle()
        if not drv.executor.active:
            break
    assert drv.executor.state is not None and drv.executor.state.status == "done", drv.executor.report()
    assert drv.error is None
    assert Balancer(ceph.snap(), drain=[-1, 10 ** 6]).drain.size == 0


def test_a_drain_of_an_osd_draining_already_or_beside_the_builtin_balancer_changes_nothing(
        dumps: Dict[str, Any]) -> None:
    ceph, (drv, _) = FakeCeph(dumps), driver()
    opts = make({})
    with pytest.raises(AdvisorError) as e:
        ops.drain(drv.plans, context(ceph, opts, 0.0, balancer_active=True), "osd.0", False)
    assert e.value.code == -16 and "`ceph balancer off`" in e.value.message and ceph.sent == []
    r = ops.drain(drv.plans, context(ceph, opts, 0.0), "osd.1", False)
    st = drv.executor.state
    assert st is not None and r["plan"] == st.id and st.drain == [1] and st.status == Status.RUNNING
    with pytest.raises(AdvisorError) as e:
        ops.drain(drv.plans, context(ceph, opts, 1.0), "osd.1", False)
    assert e.value.code == -16 and f"plan {st.id} (running) drains osd.1 already" in e.value.message
    # another OSD's drain runs beside it (side_by_side.py)
    r2 = ops.drain(drv.plans, context(ceph, opts, 1.0), "osd.0", False)
    assert [p.id for p in drv.executor.opened] == [st.id, r2["plan"]]
    assert np.array_equal(np.array(ceph.sent), np.array([]))


def test_no_round_moves_more_pgs_into_or_out_of_an_osd_than_max_backfills_per_osd(
        dumps: Dict[str, Any]) -> None:
    ceph, (drv, _) = FakeCeph(dumps), driver()
    opts = make({"step_interval": 0, "max_backfills_per_osd": 1})
    ops.drain(drv.plans, context(ceph, opts, 0.0), "osd.0", False)
    rounds: List[List[Dict[str, Any]]] = []
    for t in range(1, 400):
        before = dict(ceph.snap().pg_upmap_items)
        n = len(ceph.sent)
        drv.tick(context(ceph, opts, float(t)))
        items = [c for c in ceph.sent[n:] if c["prefix"] in ("osd pg-upmap-items", "osd rm-pg-upmap-items")]
        if items:
            rounds.append(items)
            # each OSD an end of at most one move of this round (what the PGs' sets lose or gain)
            snap = ceph.snap()
            placer_before = Placer(dataclasses.replace(snap, pg_upmap_items=before))
            placer_after = Placer(snap)
            ends: Dict[int, int] = {}
            for c in items:
                pool = next(p for p in snap.pools if str(p.id) == c["pgid"].split(".")[0])
                ps = int(c["pgid"].split(".")[1], 16)
                a = set(placer_before.map_pool(pool).up_list(ps))
                b = set(placer_after.map_pool(pool).up_list(ps))
                for o in a ^ b:
                    ends[o] = ends.get(o, 0) + 1
            assert max(ends.values()) <= 1, ends
        ceph.settle()
        if not drv.executor.active:
            break
    st = drv.executor.state
    assert st is not None and st.status == "done" and pgs_on(ceph.snap(), 0) == 0
    assert len(rounds) >= 3


def test_a_balancer_kept_to_some_pools_is_one_built_for_them(dumps: Dict[str, Any]) -> None:
    # drain builds every pool's state once and keeps the touched ones (Balancer.only): its
    # notes and counts must be those of a balancer built for those pools alone
    regrow(dumps, UNDER_ROOT)           # osd.6 out of a host rule's reach: a note per pool
    s = load(dumps)
    kept = Balancer(s, drain=[0]).only(["rbd"])
    alone = Balancer(s, pools=["rbd"], drain=[0])
    assert kept.notes == alone.notes and any("cannot reach" in n for n in kept.notes)
    assert kept.left_out == alone.left_out
    assert [st.pool.name for st in kept.states] == ["rbd"]
    assert np.array_equal(kept.total.counts, alone.total.counts)


def test_with_and_balance_every_pool_is_drained_before_any_is_evened(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # a run the work bound stops part-way must have drained what it could in every pool:
    # the moves off the drained OSD come first, over all pools, then the evening
    snap = load(dumps)
    made: List[Tuple[str, int]] = []
    real = Balancer.apply_move

    def logged(self: Balancer, st: Any, row: int, src: int, dst: int) -> bool:
        made.append((st.pool.name, src))
        return real(self, st, row, src, dst)
    monkeypatch.setattr(Balancer, "apply_move", logged)
    r = drain_report(snap, "osd.0", and_balance=True)
    off = [i for i, (_, src) in enumerate(made) if src == 0]
    assert {made[i][0] for i in off} == {"rbd", "ecpool"} and len(off) == r["replicas"]
    assert off == list(range(len(off))), "a move off another OSD came before the drain ended"
    assert len(made) > len(off), "nothing evened: the order is not tested"


def test_a_plan_whose_ticks_fail_on_a_bug_stops_and_says_why(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # found live: a drain round raised ValueError on every tick after a mgr failover, and
    # the plan stayed "running" with nothing moving until a test gave up 10 minutes later
    from pg_advisor.execute import executor
    from pg_advisor.execute.executor import TICK_ERRORS_STOP
    ceph, (drv, kv) = FakeCeph(dumps), driver()
    opts = make({"step_interval": 0})
    ops.drain(drv.plans, context(ceph, opts, 0.0), "osd.0", False)

    def broken(*args: Any) -> bool:
        raise ValueError("0 is not in list")
    monkeypatch.setattr(executor, "balance_round_step", broken)
    for t in range(1, TICK_ERRORS_STOP + 1):
        st = drv.executor.state
        assert st is not None and st.status == Status.RUNNING, t
        with pytest.raises(ValueError):
            drv.tick(context(ceph, opts, float(t)))
    st = drv.executor.state
    assert st is not None and st.status == Status.STOPPED
    why = st.stopped_why or ""
    assert why.startswith(f"internal error on {TICK_ERRORS_STOP} ticks running (ValueError: 0 is not"), why
    assert drv.executor.history[-1]["event"] == "stop"
    # stored: a new mgr finds it stopped, and the stopped plan's ticks no longer fail
    again = Driver(kv.get, kv.__setitem__, 9.0).executor.state
    assert again is not None and again.status == Status.STOPPED
    drv.tick(context(ceph, opts, 99.0))
    ops.abort(drv.plans, context(ceph, opts, 100.0))
    st = drv.executor.state
    assert st is not None and st.status == Status.ABORTED


def test_a_tick_failing_now_and_then_does_not_stop_the_plan(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from pg_advisor.execute import executor
    from pg_advisor.execute.executor import TICK_ERRORS_STOP
    ceph, (drv, _) = FakeCeph(dumps), driver()
    opts = make({"step_interval": 0})
    ops.drain(drv.plans, context(ceph, opts, 0.0), "osd.0", False)
    real = executor.balance_round_step
    calls = [0]

    def flaky(*args: Any) -> Any:
        calls[0] += 1
        if calls[0] % TICK_ERRORS_STOP == 0:     # one in TICK_ERRORS_STOP fails
            raise RuntimeError("once")
        return real(*args)
    monkeypatch.setattr(executor, "balance_round_step", flaky)
    failed = 0
    for t in range(1, 300):
        try:
            drv.tick(context(ceph, opts, float(t)))
        except RuntimeError:
            failed += 1
        ceph.settle()
        if not drv.executor.active:
            break
    st = drv.executor.state
    assert failed > 0 and st is not None and st.status == Status.DONE, drv.executor.report()


def test_a_pg_that_is_not_whole_is_left_where_it_is(dumps: Dict[str, Any]) -> None:
    # a drain moves the PGs it can and waits for the others (execute/gates.py): a degraded
    # PG is not moved, the rest of the OSD is emptied
    d = dumps
    snap = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])
    up0 = Placer(snap).map_pool(snap.pool_by_name("rbd")).up
    ps = int(np.flatnonzero((up0 == 0).any(axis=1))[0])
    stat = next(s for s in d["pg_dump"]["pg_map"]["pg_stats"] if s["pgid"] == f"1.{ps:x}")
    stat["state"] = "active+recovering+degraded"
    snap = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])
    r = drain_report(snap, "osd.0")
    assert f"1.{ps:x}" not in r["items"]
    items = {k: tuple(tuple(p) for p in v) for k, v in r["items"].items() if v}
    after = dataclasses.replace(snap, pg_upmap_items={**snap.pg_upmap_items, **items})
    assert pgs_on(after, 0) == 1            # the degraded PG's replica stays
