"""A plan's balance rounds are checked like the manual command and are not done while a pool
is uneven: a round the mon drops, OSDs changed under one, the budget holding one back (the
executor and the module, with the mon's upmap items simulated)."""
import dataclasses
from typing import Any, Dict, Tuple
from types import SimpleNamespace

import pytest

from .fakes import OPEN, FakeCeph, Store, balance_plan, tick_of
from .conftest import cmd


def _skewed(dumps: Dict[str, Any]) -> FakeCeph:
    """rbd with osd.0 holding more than its share (items that pile PGs onto it)."""
    ceph = FakeCeph(dumps)
    from pg_advisor.crush.placement import Placer
    snap = ceph.snap()
    m = Placer(snap).map_pool(snap.pool_by_name("rbd"))
    items = ceph.dumps["osd_dump"]["pg_upmap_items"]
    for r in range(m.up.shape[0]):
        row = m.up_list(r)
        if 0 not in row and 1 not in row:     # osd.1 shares osd.0's host
            items.append({"pgid": m.pgid(r), "mappings": [{"from": row[0], "to": 0}]})
    return ceph


def test_a_round_the_mon_drops_is_retried_later_and_reported(dumps: Dict[str, Any]) -> None:
    ceph, store = _skewed(dumps), Store()
    ex = balance_plan(ceph, store)
    real_send = ceph.send

    def drops_items(c: Dict[str, Any]) -> Tuple[int, str]:     # acknowledged, then dropped
        ceph.sent.append(c)
        return 0, ""
    ex.tick(tick_of(ceph.snap(), OPEN, drops_items, 0.0))
    assert (store.state or {})["round"] is not None
    ceph.dumps["osd_dump"]["epoch"] += 1
    ex.tick(tick_of(ceph.snap(), OPEN, drops_items, 1.0))
    st = store.state or {}
    assert st["attempts"] == 1 and "did not keep" in st["last_error"] and st["status"] == "running"
    n = len(ceph.sent)
    ex.tick(tick_of(ceph.snap(), OPEN, real_send, 2.0))           # backing off: nothing now
    assert len(ceph.sent) == n and "retrying after" in (store.state or {})["waiting"]
    for t in range(10, 400, 10):                          # the mon keeps them now
        ex.tick(tick_of(ceph.snap(), OPEN, real_send, float(t)))
        ceph.dumps["osd_dump"]["epoch"] += 1
        ceph.backfill()                                   # and the data moves
        if not ex.active:
            break
    st = store.state or {}
    assert st["status"] == "done" and st["last_error"] is None


def test_a_round_is_not_checked_when_the_osds_changed_under_it(dumps: Dict[str, Any]) -> None:
    """An OSD marked out (or in, down, reweighted) after a round changes CRUSH's sets under
    its items, and the mon drops those no longer valid: neither is the round's fault, so
    no retry, no mismatch (a thrash run raised PG_ADVISOR_UPMAP_MISMATCH and step failures
    on OSDs coming back in). The same dropped items with the OSDs unchanged are still
    reported (the test above)."""
    ceph, store = _skewed(dumps), Store()
    ex = balance_plan(ceph, store)

    def drops_items(c: Dict[str, Any]) -> Tuple[int, str]:
        ceph.sent.append(c)
        return 0, ""
    ex.tick(tick_of(ceph.snap(), OPEN, drops_items, 0.0))
    assert (store.state or {})["round"] is not None
    d = ceph.dumps["osd_dump"]
    osd = next(o for o in d["osds"] if o["osd"] == 5)
    osd["in"], osd["weight"] = 0, 0.0                   # osd.5 out
    d["epoch"] += 1
    ex.tick(tick_of(ceph.snap(), OPEN, drops_items, 1.0))
    st = store.state or {}
    assert st["attempts"] == 0 and st["last_error"] is None and st["mismatched"] == 0, st["last_error"]
    assert [h["event"] for h in store.history if h["event"] == "unchecked"] == ["unchecked"]


def test_a_round_that_nothing_in_flight_will_free_does_not_wait_forever(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A round with no item, "throttled" by the backfill room, waits for backfills to end:
    with none in flight it would wait forever (a thrash run's plan did, every PG clean).
    Then the pool's state is said as a blocker, which names the option."""
    from pg_advisor.execute import balance_steps
    stuck = SimpleNamespace(items={}, throttled=True, moves=0,
                            uneven={"rbd": "osd.1 holds 17 PGs, its share is 16"})
    monkeypatch.setattr(balance_steps, "balance_round",
                        lambda *a, **k: SimpleNamespace(proposal=stuck, items={}))
    ceph, store = FakeCeph(dumps), Store()
    ex = balance_plan(ceph, store)
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))
    st = store.state or {}
    assert st["status"] == "running" and st["waiting"] is None
    assert "max_backfills_per_osd" in st["blockers"][0] and "rbd" in st["blockers"][0]
    # with objects misplaced (a backfill in flight), the same round waits for it
    ceph.dumps["pg_dump"]["pg_map"]["pg_stats_sum"]["stat_sum"]["num_objects_misplaced"] = 5
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 1.0))
    st = store.state or {}
    assert st["waiting"] and not st["blockers"]     # it waits for the cluster, as before


def test_a_round_held_back_by_the_budget_is_not_done(dumps: Dict[str, Any]) -> None:
    ceph, store = _skewed(dumps), Store()
    ex = balance_plan(ceph, store)
    stats = ceph.dumps["pg_dump"]["pg_map"]
    total = sum(s["stat_sum"]["num_objects"] for s in stats["pg_stats"]) * 3
    stats["pg_stats_sum"]["stat_sum"]["num_objects_misplaced"] = total   # far past any budget
    for t in range(5):
        ex.tick(tick_of(ceph.snap(), dataclasses.replace(OPEN, misplaced_max=1.0), ceph.send, float(t)))
    st = store.state or {}
    assert st["status"] == "running" and st["next"] == 0
    assert "budget" in (st["waiting"] or "") and not any("pgid" in c for c in ceph.sent)


def test_manual_balance_is_refused_while_a_plan_runs(wired: Any) -> None:  # noqa: F811
    m, ceph, _ = wired
    assert cmd(m, "apply", pool="rbd", pg_num=64)[0] == 0
    code, _, err = cmd(m, "balance")
    assert code == -16 and "owns the pool's upmap items" in err and ceph.sent == []
    assert cmd(m, "balance", dry_run=True)[0] == 0         # looking is fine
    cmd(m, "abort")
    ceph.sent.clear()

    def mon_command(c: Dict[str, Any]) -> Tuple[int, str, str]:
        rc, err = m.send(c)
        return rc, "", err
    setattr(m, "mon_command", mon_command)
    code, r, _ = cmd(m, "balance")
    assert code == 0 and r["applied"] == len(r["items"]) > 0 and not r["failed"]


def test_with_nothing_misplaced_a_round_moves_one_pg_past_the_budget(dumps: Dict[str, Any]) -> None:
    # a child that is half its pool passes any budget; Ceph moves it anyway, so do we
    tiny = dataclasses.replace(OPEN, misplaced_max=1e-9)
    ceph, store = _skewed(dumps), Store()
    stats = ceph.dumps["pg_dump"]["pg_map"]["pg_stats_sum"]["stat_sum"]
    stats["num_objects_misplaced"] = 1                         # something moves already
    ex = balance_plan(ceph, store)
    ex.tick(tick_of(ceph.snap(), tiny, ceph.send, 0.0))
    assert not [c for c in ceph.sent if "pgid" in c]
    assert "budget" in ((store.state or {})["waiting"] or "")
    stats["num_objects_misplaced"] = 0                         # nothing: one PG goes
    ex.tick(tick_of(ceph.snap(), tiny, ceph.send, 1.0))
    assert len([c for c in ceph.sent if "pgid" in c]) == 1, ceph.sent


def test_an_uneven_pool_with_no_legal_move_is_not_done(dumps: Dict[str, Any], monkeypatch: Any) -> None:
    from pg_advisor.execute import rounds
    ceph, store = _skewed(dumps), Store()
    ex = balance_plan(ceph, store)
    real = rounds.propose
    # the rule leaves no move: the balancer proposes nothing and the pool stays uneven
    stuck = SimpleNamespace(items={}, throttled=False, moves=0,
                            uneven={"rbd": "osd.0 holds 20 PGs of pool rbd, its share is 16.00"})
    monkeypatch.setattr(rounds, "propose", lambda *a, **k: stuck)
    for t in range(3):
        ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, float(t)))
    st = store.state or {}
    assert st["status"] == "running" and st["next"] == 0, st
    assert ex.state is not None and "rbd is not even" in ex.state.blockers[0]
    assert "osd.0 holds" in ex.state.blockers[0]                # the OSD furthest off
    monkeypatch.setattr(rounds, "propose", real)
    for t in range(3, 400):
        ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, float(t)))
        ceph.dumps["osd_dump"]["epoch"] += 1
        ceph.backfill()
        if not ex.active:
            break
    assert (store.state or {})["status"] == "done"
    snap = ceph.snap()
    from pg_advisor.balance.proposal import Aim, balance_report
    from pg_advisor.model.options import BalanceMode
    assert balance_report(snap, Aim(["rbd"], BalanceMode.PGS))["uneven"] == {}    # done means even


def test_a_pool_there_for_the_total_alone_does_not_hold_the_plan_open(dumps: Dict[str, Any],
                                                                      monkeypatch: Any) -> None:
    # auto mode's balance plan includes every pool (the OSDs' totals need them all) but has
    # steps only for the pools it found moves in; one that CRUSH leaves uneven for good must
    # not hold the plan, and with it auto mode and its sizing, open for ever
    from pg_advisor.execute import rounds
    from pg_advisor.execute.executor import Executor
    from pg_advisor.execute.plan_state import Source
    from pg_advisor.execute.steps import balance_step
    ceph, store = _skewed(dumps), Store()
    ceph.backfill()                 # the skew's data in place: only the rounds hold the plan
    snap = ceph.snap()
    rbd = snap.pool_by_name("rbd")
    for stuck_pool, held in (("fast", False), ("rbd", True)):
        ex = Executor([], [], store.save)
        ex.start([balance_step(rbd, rbd.pg_num, rbd.pgp_num, 10, 1.0)], list(snap.pools), Source.AUTO, 0.0)
        stuck = SimpleNamespace(items={}, throttled=False, moves=0,
                                uneven={stuck_pool: f"osd.0 holds 20 PGs of pool {stuck_pool}"})
        monkeypatch.setattr(rounds, "propose", lambda *a, **k: stuck)
        for t in range(3):
            ex.tick(tick_of(snap, OPEN, ceph.send, float(t)))
        st = store.state or {}
        assert (st["status"] == "running") == held, (stuck_pool, st["status"])
        assert bool(ex.state and ex.state.blockers) == held
