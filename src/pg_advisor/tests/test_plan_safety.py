"""A plan never acts on the wrong pool: it is bound to its pools' ids and to the targets it
set, drops a deleted pool and goes on with the others, and resends what a failover cut short
(the executor, with the mon's pool targets and upmap items simulated)."""
import copy
import dataclasses
from typing import Any, Dict, List, Optional, Tuple

import pytest

from .fakes import OPEN, T, FakeCeph, Store, run, start, tick_of

from pg_advisor.execute.executor import Executor
from pg_advisor.execute.step_gate import may_issue
from pg_advisor.execute.steps import StepPlanner, balance_step
from pg_advisor.execute.plan_state import PlanState, Source, Status


# -- the plan is bound to its pool's id and to the targets it set ------------------------------

def _stopped_by(dumps: Dict[str, Any], change: Any) -> Tuple[FakeCeph, Store, Executor]:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))     # step 1 sent
    ceph.settle()
    sent = len(ceph.sent)
    change(ceph)
    for t in range(1, 5):
        ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, float(t)))
        ceph.settle()
    assert len(ceph.sent) == sent, ceph.sent[sent:]      # nothing more went out, to any pool
    return ceph, store, ex


def _delete(ceph: FakeCeph) -> None:
    ceph.dumps["osd_dump"]["pools"] = [p for p in ceph.dumps["osd_dump"]["pools"]
                                       if p["pool_name"] != "rbd"]


def _recreate(ceph: FakeCeph) -> None:
    p = ceph.pool("rbd")
    p.update(pool=99, pg_num=8, pg_placement_num=8, pg_num_target=8, pg_placement_num_target=8)


def _rename(ceph: FakeCeph) -> None:
    ceph.pool("rbd")["pool_name"] = "renamed"


def _retarget(ceph: FakeCeph) -> None:
    ceph.pool("rbd").update(pg_num_target=128, pg_placement_num_target=128)


@pytest.mark.parametrize("change, why", [
    (_rename, "pool rbd (id 1) was renamed to renamed"),
    (_retarget, "pool rbd: pg_num/pgp_num targets were changed outside the plan to 128/128"),
])
def test_a_changed_pool_stops_the_plan_and_abort_leaves_it_alone(
        dumps: Dict[str, Any], change: Any, why: str) -> None:
    ceph, store, ex = _stopped_by(dumps, change)
    st = store.state or {}
    assert st["status"] == "stopped" and st["stopped_why"].startswith(why), st["stopped_why"]
    assert ex.open and not ex.active
    with pytest.raises(Exception):
        ex.start([], [], Source.APPLY, 9.0)                  # a stopped plan still holds its place
    summary = ex.abort(ceph.snap(), ceph.send, 10.0)
    assert "left alone" in summary and not ex.open
    assert all(c.get("pool") != "rbd" for c in ceph.sent[2:])   # the operator's change stands
    if change is _retarget:
        assert ceph.pool("rbd")["pg_num_target"] == 128


def _two_pool_plan(ceph: FakeCeph, store: Store) -> Executor:
    """rbd 32 -> 64 and fast 8 -> 32, in one plan (as auto mode makes them)."""
    snap = ceph.snap()
    rbd, fast = snap.pool_by_name("rbd"), snap.pool_by_name("fast")
    planner = StepPlanner(snap, T)
    ex = Executor([], [], store.save)
    ex.start(planner.plan(fast, 32) + planner.plan(rbd, 64), [fast, rbd], Source.AUTO, 0.0)
    return ex


@pytest.mark.parametrize("change, why", [
    (_delete, "pool rbd (id 1) was deleted"),
    (_recreate, "pool rbd (id 1) was deleted; a new pool rbd has id 99"),
])
def test_a_deleted_pool_drops_out_of_the_plan_which_goes_on_with_the_others(
        dumps: Dict[str, Any], change: Any, why: str) -> None:
    """A plan stopped for a deleted pool held auto mode until an operator came by (the
    thrasher's temporary pools did it): the deletion is not in doubt, so its steps are
    skipped, nothing more is sent to it, and the other pools' steps go on."""
    ceph, store = FakeCeph(dumps), Store()
    ex = _two_pool_plan(ceph, store)
    assert ex.state is not None
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))      # fast's first step
    ceph.settle()
    sent = len(ceph.sent)
    change(ceph)
    run(ex, ceph)
    st = store.state or {}
    assert st["status"] == "done", st
    assert sorted(st["pools"]) == ["fast"]
    assert ceph.pool("fast")["pg_num"] == 32
    assert all(c.get("pool") != "rbd" and not str(c.get("pgid", "")).startswith("1.")
               for c in ceph.sent[sent:]), ceph.sent[sent:]
    drop = [h for h in store.history if h["event"] == "drop"]
    assert len(drop) == 1 and drop[0]["detail"].startswith(why) and "goes on with fast" in drop[0]["detail"]
    states = {s["description"]: s["state"] for s in ex.report()["steps"]}
    assert all(v == "pool deleted" for k, v in states.items() if k.startswith("rbd"))
    assert all(v == "done" for k, v in states.items() if k.startswith("fast"))
    if change is _recreate:
        assert ceph.pool("rbd")["pg_num_target"] == 8           # the new pool is not the plan's


def test_a_round_in_flight_forgets_the_pgs_of_a_deleted_pool(dumps: Dict[str, Any]) -> None:
    """The mon drops a deleted pool's upmap items: the round's check must not count them
    as items it did not keep (a retry, an error in `progress`)."""
    ceph, store = FakeCeph(dumps), Store()
    snap = ceph.snap()
    rbd, fast = snap.pool_by_name("rbd"), snap.pool_by_name("fast")
    ex = Executor([], [], store.save)
    ex.start([balance_step(fast, 8, 8, 10, 1.0), balance_step(rbd, 32, 32, 10, 1.0)], [fast, rbd],
             Source.AUTO, 0.0)
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))
    assert ex.state is not None and ex.state.round is not None
    assert any(k.startswith("1.") for k in ex.state.round.items)     # the round moved rbd's PGs
    sent = len(ceph.sent)
    _delete(ceph)
    d = ceph.dumps["osd_dump"]
    d["pg_upmap_items"] = [u for u in d["pg_upmap_items"] if not u["pgid"].startswith("1.")]
    d["epoch"] += 1
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 40.0))
    assert ex.state.status in (Status.RUNNING, Status.DONE) and "rbd" not in ex.state.pools
    assert ex.state.last_error is None and ex.state.attempts == 0, ex.state.last_error
    assert all(not str(c.get("pgid", "")).startswith("1.") and c.get("pool") != "rbd"
               for c in ceph.sent[sent:])


def test_own_targets_between_commands_are_not_a_change(dumps: Dict[str, Any]) -> None:
    """Setting pg_num drags pgp_num's target along until pgp_num is set: a failover
    between the two commands leaves that state, and the plan resumes from it."""
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    assert ex.state is not None
    issuing = ex.state.to_json()
    ceph.send({"prefix": "osd pool set", "pool": "rbd", "var": "pg_num", "val": "48"})  # half sent
    assert issuing is not None
    issuing["phase"] = "issuing"
    ex2 = Executor([issuing], [], store.save)
    for t in range(300):
        ex2.tick(tick_of(ceph.snap(), OPEN, ceph.send, float(t)))
        ceph.settle()
        if not ex2.active:
            break
    assert (store.state or {})["status"] == "done"


# -- a failover in the middle of a pinned burst ------------------------------------------------

def test_a_failover_after_pgp_num_before_the_pins_resends_the_pins(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    snap = ceph.snap()
    rbd = snap.pool_by_name("rbd")
    steps = StepPlanner(snap, dataclasses.replace(T, pin=True)).plan(rbd, 64)
    ex = Executor([], [], store.save)
    ex.start(steps, [rbd], Source.APPLY, 0.0)
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))       # the split
    ceph.settle()
    crashed: List[Optional[Dict[str, Any]]] = []

    def dies_after_pgp(cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
        crashed.append(copy.deepcopy(store.state))      # saved as "issuing"
        for c in cmds[:2]:                                # pgp_num target and actual, no pins
            ceph.send(c)
        raise SystemExit("mgr failed over")
    with pytest.raises(SystemExit):
        ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 1.0, dies_after_pgp))    # split done, pgp_num next
    state = crashed[0]
    assert state is not None and state["phase"] == "issuing"
    pins = [c for c in ceph.sent if "pgid" in c]
    assert pins == []
    # as on a real cluster: the pgp_num change already misplaced data past the budget and
    # left PGs undersized, and the next step is hours away; none of it may hold back the
    # rest of this step (a flag the operator set still does)
    pg_map = ceph.dumps["pg_dump"]["pg_map"]
    pg_map["pg_stats_sum"]["stat_sum"]["num_objects_misplaced"] = 10 ** 6
    pg_map["pg_stats"][0]["state"] = "active+recovery_wait+undersized+degraded+remapped"
    slow = dataclasses.replace(OPEN, interval=3600.0)
    assert not may_issue(
        PlanState.from_json(copy.deepcopy(state)), tick_of(ceph.snap(), slow, ceph.send, 3.0),
        ceph.snap().pool_by_name("rbd"), steps[state["next"]]), "the test shows nothing: a new step would go"
    ceph.dumps["osd_dump"]["flags"] = "norebalance"
    n = len(ceph.sent)
    Executor([copy.deepcopy(state)], [], lambda *a: None).tick(tick_of(ceph.snap(), slow, ceph.send, 2.0))
    assert len(ceph.sent) == n, "sent in spite of norebalance"
    ceph.dumps["osd_dump"]["flags"] = ""
    ex2 = Executor([copy.deepcopy(state)], [], store.save)
    ex2.tick(tick_of(ceph.snap(), slow, ceph.send, 3.0))
    resent = [c for c in ceph.sent if "pgid" in c]
    assert resent, f"the pins were not resent: {(store.state or {}).get('waiting')}"
    # with them, every PG maps onto the OSDs that hold its data (a child: its parent's)
    from pg_advisor.crush.placement import Placer
    from pg_advisor.tests.fakes import acting_sets
    held = acting_sets(ceph.snap())
    now = Placer(ceph.snap()).map_pool(ceph.snap().pool_by_name("rbd"))
    assert all(set(held[now.pgid(r)]) == set(now.up_list(r)) for r in range(48))
    assert (store.state or {})["phase"] == "issued"
    # and once they show, a further failover does not send them again (it goes on)
    n = len(ceph.sent)
    again = copy.deepcopy(state)
    Executor([again], [], store.save).tick(tick_of(ceph.snap(), OPEN, ceph.send, 4.0))
    assert not [c for c in ceph.sent[n:] if "pgid" in c or c.get("var") == "pgp_num_actual"], ceph.sent[n:]
    assert any(h["event"] == "recovered" for h in store.history)
