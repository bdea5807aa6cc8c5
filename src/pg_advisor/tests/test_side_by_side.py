"""Plans side by side (execute/side_by_side.py): a drain, a split and balance rounds at once,
under one misplaced budget and one backfill limit per OSD, drains first; each paused,
resumed and aborted on its own; all kept across a failover."""
import dataclasses
import json
from typing import Any, Dict, List, Optional, Set, Tuple

import numpy as np
import pytest

from pg_advisor.execute import operator_commands as ops
from pg_advisor.execute.context import Others
from pg_advisor.execute.driver import Driver
from pg_advisor.execute.executor import Executor
from pg_advisor.execute.ledger import HOLD, Ledger, Spend, item_load
from pg_advisor.execute.plan_state import Source, Status
from pg_advisor.execute.side_by_side import OPEN_MAX, check_start, others_of, rank
from pg_advisor.execute.step_gate import may_issue
from pg_advisor.execute.steps import StepKind, StepPlanner, balance_step
from pg_advisor.model.errors import AdvisorError
from pg_advisor.model.options import make

from .fakes import OPEN, T, FakeCeph, acting_sets, context, tick_of

Kv = Dict[str, Optional[str]]


def driver(kv: Optional[Kv] = None, now: float = 0.0) -> Tuple[Driver, Kv]:
    kv = {} if kv is None else kv
    return Driver(kv.get, kv.__setitem__, now), kv


def drain_and_split(dumps: Dict[str, Any]) -> Tuple[FakeCeph, Driver, Kv, Any, str, str]:
    """A drain of osd.0 and a split of rbd to 64 PGs, started one after the other: the fake,
    the driver, its store, the options (no step interval) and the two plans' ids."""
    ceph, (drv, kv) = FakeCeph(dumps), driver()
    opts = make({"step_interval": 0})
    drain = ops.drain(drv.plans, context(ceph, opts, 0.0), "osd.0", False)["plan"]
    split = ops.apply(drv.plans, context(ceph, opts, 0.0), "rbd", 64, False)["plan"]
    return ceph, drv, kv, opts, drain, split


def items_sent(sent: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [c for c in sent if c["prefix"] == "osd pg-upmap-items"]


def onto(c: Dict[str, Any]) -> List[int]:
    """The OSDs an items command sends replicas to (each pair's second)."""
    return [int(x) for x in c["id"][1::2]]


def test_a_drain_and_a_split_run_at_once_the_drain_first_and_neither_undoes_the_other(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    ceph, drv, kv, opts, drain, split = drain_and_split(dumps)
    assert [p.id for p in drv.executor.opened] == [drain, split]
    # each command tagged with the plan whose tick sent it, in the order sent
    ticking: List[str] = []
    sent: List[Tuple[str, Dict[str, Any]]] = []
    real_tick, real_send = Executor._tick_plan, ceph.send

    def tagged(self: Executor, state: Any, t: Any) -> None:
        ticking.append(state.id)
        try:
            real_tick(self, state, t)
        finally:
            ticking.pop()

    def send(cmd: Dict[str, Any]) -> Any:
        sent.append((ticking[-1] if ticking else "", cmd))
        return real_send(cmd)
    monkeypatch.setattr(Executor, "_tick_plan", tagged)
    setattr(ceph, "send", send)
    both_acted = 0
    for t in range(1, 400):
        n = len(sent)
        held = acting_sets(ceph.snap())
        state = drv.executor.plan(split)
        splitting = any(s.kind is not StepKind.BALANCE for s in state.steps[state.next:])
        drv.tick(context(ceph, opts, float(t)))
        mine = [(plan, c) for plan, c in sent[n:] if c["prefix"] == "osd pg-upmap-items"]
        # no item sends data to the OSD the drain empties, whichever plan set it, while the
        # drain runs or once it is done (osd.0 waits to be taken out); a split's pin keeps a
        # child on its parent's OSDs, osd.0 among them: no data moves there
        assert not [c for _, c in mine if 0 in onto(c) and 0 not in held.get(c["pgid"], [])], mine
        # while rbd's pg_num changes, the drain's rounds leave its PGs to the split
        if splitting:
            assert not [c for plan, c in mine if plan == drain and c["pgid"].startswith("1.")], mine
        order = [plan for plan, _ in sent[n:]]
        if drain in order and split in order:
            both_acted += 1
            assert order.index(drain) < order.index(split), order     # the drain goes first
        ceph.settle()
        if not drv.executor.active:
            break
    statuses = {p.id: p.status for p in drv.executor.plans}
    assert statuses == {drain: Status.DONE, split: Status.DONE}, drv.executor.report(split)
    assert both_acted > 0, "the two plans never acted in the same tick"
    snap = ceph.snap()
    assert snap.pool_by_name("rbd").pg_num == 64
    assert snap.pgs is not None and not (snap.pgs.up == 0).any()      # osd.0 emptied
    # a new mgr reads back both (ended) plans
    again, _ = driver(kv, 500.0)
    assert [p.id for p in again.executor.plans] == [drain, split] and again.store.error is None


def test_one_budget_a_step_counts_what_another_plan_just_set_moving(dumps: Dict[str, Any]) -> None:
    ceph = FakeCeph(dumps)
    snap = ceph.snap()
    rbd = snap.pool_by_name("rbd")
    steps = StepPlanner(snap, T).plan(rbd, 64)
    step = next(s for s in steps if s.kind is StepKind.PGP_NUM)
    drv, _ = driver()
    state = drv.executor.start(steps, [rbd], Source.APPLY, 0.0)
    state.next = steps.index(step)
    from pg_advisor.model.distribution import object_copies
    copies = object_copies(snap)
    alone = tick_of(snap, OPEN, ceph.send, 1.0)
    assert may_issue(state, alone, rbd, step), state.waiting
    # another plan's round misplaced the whole budget a second ago: this step waits
    busy = dataclasses.replace(alone, others=Others(copies=OPEN.misplaced_max * copies))
    assert not may_issue(state, busy, rbd, step)
    assert state.waiting and "other plans' steps counted" in state.waiting
    # and per OSD: what another plan set backfilling there counts toward the limit (the
    # pool at the step's pg_num, as when the step is due)
    ceph.send({"prefix": "osd pool set", "pool": "rbd", "var": "pg_num", "val": str(step.pg_num)})
    ceph.settle()
    snap = ceph.snap()
    rbd = snap.pool_by_name("rbd")
    from pg_advisor.execute.steps import step_load
    most = int(step_load(snap, rbd, step.pgp_num).max())
    limited = dataclasses.replace(OPEN, max_backfills=most)
    assert most and may_issue(state, tick_of(snap, limited, ceph.send, 1.0), rbd, step), state.waiting
    adds = np.full(snap.osds.count, 1, np.int64)
    t = dataclasses.replace(tick_of(snap, limited, ceph.send, 1.0), others=Others(osd_adds=adds))
    assert not may_issue(state, t, rbd, step) and f"limit {most}" in str(state.waiting)


def test_the_ledger_counts_other_plans_spends_for_hold_seconds_and_never_a_plans_own() -> None:
    ledger = Ledger()
    ledger.record(Spend("a", 100.0, 50.0, np.array([1, 0, 2]), frozenset({"1.0"})))
    ledger.record(Spend("b", 101.0, 7.0, None, frozenset({"2.1"})))
    ledger.record(Spend("c", 101.0, 0.0, None, frozenset()))        # nothing spent: not kept
    assert len(ledger.spends) == 2
    assert ledger.copies("a", 102.0) == 7.0 and ledger.copies("b", 102.0) == 50.0
    assert ledger.osd_adds("b", 102.0, 4).tolist() == [1, 0, 2, 0]
    assert ledger.claimed("c", 102.0) == {"1.0", "2.1"} and ledger.claimed("a", 102.0) == {"2.1"}
    assert ledger.copies("c", 100.0 + HOLD) == 7.0              # a's expired, b's not yet
    ledger.expire(101.0 + HOLD)
    assert ledger.spends == []
    # a round's load: both ends of each pair it adds or takes away
    load = item_load({"1.0": [(0, 3)]}, {"1.0": [(0, 3), (1, 4)], "1.1": []}, 6)
    assert load.tolist() == [0, 1, 0, 0, 1, 0]


def test_a_round_leaves_the_pgs_another_plan_just_moved_and_the_osds_it_drains(dumps: Dict[str, Any]) -> None:
    ceph, (drv, _) = FakeCeph(dumps), driver()
    snap = ceph.snap()
    rbd = snap.pool_by_name("rbd")
    ex = drv.executor
    ex.start([balance_step(rbd, rbd.pg_num, rbd.pgp_num, 100, 1.0)], [rbd], Source.APPLY, 0.0)
    free = tick_of(snap, dataclasses.replace(OPEN, misplaced_max=1.0), ceph.send, 1.0)
    from pg_advisor.execute.balance_steps import balance_round_step
    state = ex.plans[-1]
    first = balance_round_step(state, free, state.step())
    assert first.spent is not None and first.spent.pgids, first
    moved: Set[str] = set(first.spent.pgids)
    # the same round again on the same snapshot, those PGs claimed by another plan and the
    # OSDs a drain empties avoided: none of those PGs, no replica onto those OSDs
    ceph2 = FakeCeph(dumps)
    state.round, state.rounds = None, 0
    avoid = (2,)
    held = dataclasses.replace(free, burst=lambda cmds: [ceph2.send(c) for c in cmds],
                               others=Others(claimed=frozenset(moved), avoid=avoid))
    second = balance_round_step(state, held, state.step())
    got = {c["pgid"]: c for c in items_sent(ceph2.sent)}
    assert second.spent is not None and not set(got) & moved, (sorted(got), sorted(moved))
    assert not [c for c in got.values() if set(onto(c)) & set(avoid)]


def test_a_pool_changes_pg_num_under_one_plan_at_a_time(dumps: Dict[str, Any]) -> None:
    ceph, (drv, _) = FakeCeph(dumps), driver()
    opts = make({"step_interval": 0})
    first = ops.apply(drv.plans, context(ceph, opts, 0.0), "rbd", 64, False)["plan"]
    with pytest.raises(AdvisorError) as e:
        ops.apply(drv.plans, context(ceph, opts, 0.0), "rbd", 128, False)
    assert e.value.code == -16 and f"plan {first} (running) is changing pool rbd's pg_num" in e.value.message
    # another pool's change runs beside it
    second = ops.apply(drv.plans, context(ceph, opts, 0.0), "ecpool", 32, False)["plan"]
    assert {p.id for p in drv.executor.opened} == {first, second}
    # a plan stopped mid-change still holds its pool; an aborted one lets it go
    drv.executor.plan(first).status = Status.STOPPED
    again = StepPlanner(ceph.snap(), T).plan(ceph.snap().pool_by_name("rbd"), 128)
    with pytest.raises(AdvisorError):
        check_start(drv.executor.plans, again, ())
    ops.abort(drv.plans, context(ceph, opts, 1.0), first)
    check_start(drv.executor.plans, again, ())


def test_at_most_open_max_plans_are_open(dumps: Dict[str, Any]) -> None:
    ceph, (drv, _) = FakeCeph(dumps), driver()
    opts = make({})
    for osd in range(OPEN_MAX):
        ops.drain(drv.plans, context(ceph, opts, 0.0), f"osd.{osd}", False)
    with pytest.raises(AdvisorError) as e:
        ops.drain(drv.plans, context(ceph, opts, 0.0), f"osd.{OPEN_MAX}", False)
    assert e.value.code == -16 and "the most pg_advisor runs at once" in e.value.message
    assert ceph.sent == []


def test_pause_resume_and_abort_take_the_plan_when_several_are_open(dumps: Dict[str, Any]) -> None:
    ceph, drv, _, opts, a, b = drain_and_split(dumps)
    for act in (lambda: ops.pause(drv.plans, 1.0), lambda: ops.abort(drv.plans, context(ceph, opts, 1.0))):
        with pytest.raises(AdvisorError) as e:
            act()
        assert e.value.code == -22 and f"plans {a}, {b} are" in e.value.message
        assert "--plan" in e.value.message
    with pytest.raises(AdvisorError) as e:
        ops.pause(drv.plans, 1.0, "nosuch")
    assert e.value.code == -2
    assert ops.pause(drv.plans, 1.0, a) == a
    # the paused drain takes no step; the split goes on
    n = len(ceph.sent)
    drv.tick(context(ceph, opts, 2.0))
    assert drv.executor.plan(a).status == Status.PAUSED
    assert all(c["prefix"] == "osd pool set" for c in ceph.sent[n:]) and len(ceph.sent) > n
    assert ops.resume(drv.plans, 3.0) == a          # the one paused: no id needed
    summary = ops.abort(drv.plans, context(ceph, opts, 4.0), b)
    assert summary.startswith(f"plan {b}: rbd: left at pg_num")
    assert drv.executor.plan(a).status == Status.RUNNING and drv.executor.plan(b).status == Status.ABORTED
    # and the drain's pools' targets are not the drain's to set back
    assert ops.abort(drv.plans, context(ceph, opts, 5.0)) == f"plan {a}: no pg_num target of it to leave"


def test_each_plan_has_its_event_and_health_names_each_blocked_plan(dumps: Dict[str, Any]) -> None:
    ceph, drv, _, opts, a, b = drain_and_split(dumps)
    ceph.dumps["osd_dump"]["flags"] += ",norebalance"
    drv.tick(context(ceph, opts, 1.0))
    events = drv.progress()
    assert [e[0] for e in events] == [f"pg_advisor-{a}", f"pg_advisor-{b}"]
    assert "draining 1 OSDs" in events[0][1] and "rbd to pg_num 64" in events[1][1]
    blocked = drv.health()["PG_ADVISOR_BLOCKED"]
    assert blocked["count"] == 2 and blocked["summary"].startswith(f"pg_advisor plan {a} is blocked")
    report = drv.plan_report()
    assert [p["id"] for p in report["plans"]] == [a, b] and report["plan"]["id"] == b
    assert drv.plan_report(a)["plan"]["id"] == a
    from pg_advisor.render.execute_text import progress_text
    text = progress_text(json.loads(json.dumps(report)))
    assert a in text and "drains 1 OSDs" in text and "norebalance" in text


def test_drains_rank_first_then_pg_num_changes_then_balance_rounds(dumps: Dict[str, Any]) -> None:
    ceph, (drv, _) = FakeCeph(dumps), driver()
    opts = make({})
    ops.drain(drv.plans, context(ceph, opts, 0.0), "osd.0", False)
    ops.apply(drv.plans, context(ceph, opts, 0.0), "rbd", 64, False)
    snap = ceph.snap()
    eco = snap.pool_by_name("ecpool")
    drv.executor.start([balance_step(eco, eco.pg_num, eco.pgp_num, 4, 1.0)], [eco],
                       Source.APPLY, 0.0)
    assert [rank(p) for p in drv.executor.plans] == [0, 1, 2]


def test_a_plans_tick_that_fails_on_a_bug_does_not_hold_the_others(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    ceph, drv, _, opts, a, b = drain_and_split(dumps)
    from pg_advisor.execute import balance_steps, executor
    real = balance_steps.balance_round_step

    def broken(state: Any, t: Any, step: Any) -> Any:
        if state.id == a:
            raise ValueError("a bug in the drain's round")
        return real(state, t, step)
    monkeypatch.setattr(executor, "balance_round_step", broken)
    for t in range(1, executor.TICK_ERRORS_STOP + 1):
        n = len(ceph.sent)
        with pytest.raises(ValueError):
            drv.tick(context(ceph, opts, float(t)))
        if t == 1:
            assert ceph.sent[n:], "the split took no step while the drain's tick failed"
        ceph.settle()
    assert drv.executor.plan(a).status == Status.STOPPED and drv.executor.plan(b).status != Status.STOPPED


def test_a_done_drains_osds_stay_empty_for_the_plans_beside_it_not_for_later_ones(
        dumps: Dict[str, Any]) -> None:
    ceph, drv, _, opts, drain, split = drain_and_split(dumps)
    ex = drv.executor
    ex.plan(drain).status = Status.DONE
    eco = ceph.snap().pool_by_name("ecpool")
    later = ex.start([balance_step(eco, eco.pg_num, eco.pgp_num, 4, 1.0)], [eco], Source.APPLY, 50.0)
    done_at = {drain: 10.0}
    assert others_of(ex.plans, ex.plan(split), Ledger(), 60.0, 6, done_at).avoid == (0,)
    assert others_of(ex.plans, later, Ledger(), 60.0, 6, done_at).avoid == ()
    # its end no longer in the history: not guessed at
    assert others_of(ex.plans, ex.plan(split), Ledger(), 60.0, 6, {}).avoid == ()


def test_what_the_others_hold_costs_a_scan_of_each_plans_steps_not_one_per_pool(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # a balance plan over every pool beside a split: the split's steps are scanned once a
    # tick, however many pools the plans hold (4,096 pools x 4,096 steps was the bound)
    ceph, drv, _, opts, drain, split = drain_and_split(dumps)
    from pg_advisor.execute import side_by_side
    scans: List[str] = []
    real = side_by_side.changing

    def counted(state: Any) -> Set[int]:
        scans.append(state.id)
        return real(state)
    monkeypatch.setattr(side_by_side, "changing", counted)
    ex = drv.executor
    got = others_of(ex.plans, ex.plan(drain), Ledger(), 1.0, 6, {})
    assert got.busy == {"rbd": split} and scans == [split]
    scans.clear()           # the drain holds two pools: its steps scanned once all the same
    assert len(ex.plan(drain).pools) == 2
    got = others_of(ex.plans, ex.plan(split), Ledger(), 1.0, 6, {})
    assert got.busy == {} and got.avoid == (0,) and scans == [drain]
