"""A plan never acts on the wrong pool, survives what the store and the cluster throw at
it, and writes the store only when something changed (executor, driver and module, with
the mon's pool targets and upmap items simulated)."""
import copy
import dataclasses
import json
from typing import Any, Dict, List, Optional, Tuple
from types import SimpleNamespace

import pytest

from . import mgr_stub
from .fakes import OPEN, T, FakeCeph, Store, balance_plan, run, start
from .conftest import cmd

from pg_advisor.execute.driver import Driver
from pg_advisor.execute.executor import Executor
from pg_advisor.execute.history import Event
from pg_advisor.module import Module
from pg_advisor.execute.plan_store import ENTRY_MAX, STATE_KEY, PlanStore, Unreadable, check_state
from pg_advisor.execute.steps import PlanStep, StepPlanner, balance_step
from pg_advisor.execute.plan_state import Phase, PlanState, PoolTarget, Source, Status


# -- the plan is bound to its pool's id and to the targets it set ------------------------------

def _stopped_by(dumps: Dict[str, Any], change: Any) -> Tuple[FakeCeph, Store, Executor]:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    ex.tick(ceph.snap(), OPEN, ceph.send, 0.0)     # step 1 sent
    ceph.settle()
    sent = len(ceph.sent)
    change(ceph)
    for t in range(1, 5):
        ex.tick(ceph.snap(), OPEN, ceph.send, float(t))
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
    ex = Executor(None, [], store.save)
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
    ex.tick(ceph.snap(), OPEN, ceph.send, 0.0)      # fast's first step
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
    ex = Executor(None, [], store.save)
    ex.start([balance_step(fast, 8, 8, 10, 1.0), balance_step(rbd, 32, 32, 10, 1.0)], [fast, rbd],
             Source.AUTO, 0.0)
    ex.tick(ceph.snap(), OPEN, ceph.send, 0.0)
    assert ex.state is not None and ex.state.round is not None
    assert any(k.startswith("1.") for k in ex.state.round.items)     # the round moved rbd's PGs
    sent = len(ceph.sent)
    _delete(ceph)
    d = ceph.dumps["osd_dump"]
    d["pg_upmap_items"] = [u for u in d["pg_upmap_items"] if not u["pgid"].startswith("1.")]
    d["epoch"] += 1
    ex.tick(ceph.snap(), OPEN, ceph.send, 40.0)
    assert ex.state.status in (Status.RUNNING, Status.DONE) and "rbd" not in ex.state.pools
    assert ex.state.last_error is None and ex.state.attempts == 0, ex.state.last_error
    assert all(not str(c.get("pgid", "")).startswith("1.") and c.get("pool") != "rbd"
               for c in ceph.sent[sent:])


def test_a_plan_whose_every_pool_was_deleted_ends_and_stores_readably(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    ex.tick(ceph.snap(), OPEN, ceph.send, 0.0)
    ceph.settle()
    sent = len(ceph.sent)
    _delete(ceph)
    run(ex, ceph)
    st = store.state or {}
    assert st["status"] == "done" and st["pools"] == {} and len(ceph.sent) == sent
    # the store reads it back (a plan of no pools is well formed)
    kv = CountingStore()
    PlanStore(kv.load, kv.save).write(st, store.history)
    again = PlanStore(kv.load, kv.save)
    back, _ = again.read(1.0)
    assert back is not None and back["status"] == "done" and back["pools"] == {} and not again.error


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
    ex2 = Executor(issuing, [], store.save)
    for t in range(300):
        ex2.tick(ceph.snap(), OPEN, ceph.send, float(t))
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
    ex = Executor(None, [], store.save)
    ex.start(steps, [rbd], Source.APPLY, 0.0)
    ex.tick(ceph.snap(), OPEN, ceph.send, 0.0)       # the split
    ceph.settle()
    crashed: List[Optional[Dict[str, Any]]] = []

    def dies_after_pgp(cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
        crashed.append(copy.deepcopy(store.state))      # saved as "issuing"
        for c in cmds[:2]:                                # pgp_num target and actual, no pins
            ceph.send(c)
        raise SystemExit("mgr failed over")
    with pytest.raises(SystemExit):
        ex.tick(ceph.snap(), OPEN, ceph.send, 1.0, dies_after_pgp)    # split done, pgp_num next
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
    assert not Executor(copy.deepcopy(state), [], lambda *a: None)._may_issue(
        PlanState.from_json(copy.deepcopy(state)), ceph.snap(), ceph.snap().pool_by_name("rbd"),
        steps[state["next"]], slow, 3.0), "the test shows nothing: a new step would go"
    ceph.dumps["osd_dump"]["flags"] = "norebalance"
    n = len(ceph.sent)
    Executor(copy.deepcopy(state), [], lambda *a: None).tick(ceph.snap(), slow, ceph.send, 2.0)
    assert len(ceph.sent) == n, "sent in spite of norebalance"
    ceph.dumps["osd_dump"]["flags"] = ""
    ex2 = Executor(copy.deepcopy(state), [], store.save)
    ex2.tick(ceph.snap(), slow, ceph.send, 3.0)
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
    Executor(again, [], store.save).tick(ceph.snap(), OPEN, ceph.send, 4.0)
    assert not [c for c in ceph.sent[n:] if "pgid" in c or c.get("var") == "pgp_num_actual"], ceph.sent[n:]
    assert any(h["event"] == "recovered" for h in store.history)


# -- balance rounds: checked like the manual command, not done while uneven -------------------

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
    ex.tick(ceph.snap(), OPEN, drops_items, 0.0)
    assert (store.state or {})["round"] is not None
    ceph.dumps["osd_dump"]["epoch"] += 1
    ex.tick(ceph.snap(), OPEN, drops_items, 1.0)
    st = store.state or {}
    assert st["attempts"] == 1 and "did not keep" in st["last_error"] and st["status"] == "running"
    n = len(ceph.sent)
    ex.tick(ceph.snap(), OPEN, real_send, 2.0)           # backing off: nothing now
    assert len(ceph.sent) == n and "retrying after" in (store.state or {})["waiting"]
    for t in range(10, 400, 10):                          # the mon keeps them now
        ex.tick(ceph.snap(), OPEN, real_send, float(t))
        ceph.dumps["osd_dump"]["epoch"] += 1
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
    ex.tick(ceph.snap(), OPEN, drops_items, 0.0)
    assert (store.state or {})["round"] is not None
    d = ceph.dumps["osd_dump"]
    osd = next(o for o in d["osds"] if o["osd"] == 5)
    osd["in"], osd["weight"] = 0, 0.0                   # osd.5 out
    d["epoch"] += 1
    ex.tick(ceph.snap(), OPEN, drops_items, 1.0)
    st = store.state or {}
    assert st["attempts"] == 0 and st["last_error"] is None and st["mismatched"] == 0, st["last_error"]
    assert [h["event"] for h in store.history if h["event"] == "unchecked"] == ["unchecked"]


def test_a_round_that_nothing_in_flight_will_free_does_not_wait_forever(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A round with no item, "throttled" by the backfill room, waits for backfills to end:
    with none in flight it would wait forever (a thrash run's plan did, every PG clean).
    Then the pool's state is said as a blocker, which names the option."""
    from pg_advisor.execute import executor as executor_module
    stuck = SimpleNamespace(items={}, throttled=True, moves=0,
                            uneven={"rbd": "osd.1 holds 17 PGs, its share is 16"})
    monkeypatch.setattr(executor_module, "balance_round",
                        lambda *a, **k: SimpleNamespace(proposal=stuck, items={}))
    ceph, store = FakeCeph(dumps), Store()
    ex = balance_plan(ceph, store)
    ex.tick(ceph.snap(), OPEN, ceph.send, 0.0)
    st = store.state or {}
    assert st["status"] == "running" and st["waiting"] is None
    assert "max_backfills_per_osd" in st["blockers"][0] and "rbd" in st["blockers"][0]
    # with objects misplaced (a backfill in flight), the same round waits for it
    ceph.dumps["pg_dump"]["pg_map"]["pg_stats_sum"]["stat_sum"]["num_objects_misplaced"] = 5
    ex.tick(ceph.snap(), OPEN, ceph.send, 1.0)
    st = store.state or {}
    assert st["waiting"] and not st["blockers"]     # it waits for the cluster, as before


def test_a_round_held_back_by_the_budget_is_not_done(dumps: Dict[str, Any]) -> None:
    ceph, store = _skewed(dumps), Store()
    ex = balance_plan(ceph, store)
    stats = ceph.dumps["pg_dump"]["pg_map"]
    total = sum(s["stat_sum"]["num_objects"] for s in stats["pg_stats"]) * 3
    stats["pg_stats_sum"]["stat_sum"]["num_objects_misplaced"] = total   # far past any budget
    for t in range(5):
        ex.tick(ceph.snap(), dataclasses.replace(OPEN, misplaced_max=1.0), ceph.send, float(t))
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


# -- the store: written only on change, small entries, anything read back safely --------------

class CountingStore:
    def __init__(self) -> None:
        self.kv: Dict[str, str] = {}
        self.writes: List[str] = []

    def load(self, key: str) -> Optional[str]:
        return self.kv.get(key)

    def save(self, key: str, value: Optional[str]) -> None:
        self.writes.append(key)
        if value is None:
            self.kv.pop(key, None)
        else:
            assert len(value) <= ENTRY_MAX, (key, len(value))
            self.kv[key] = value


def test_a_blocked_plan_writes_the_store_once(dumps: Dict[str, Any]) -> None:
    ceph, kv = FakeCeph(dumps), CountingStore()
    ceph.dumps["osd_dump"]["flags"] += ",norebalance"
    d = Driver(kv.load, kv.save, 0.0)
    snap = ceph.snap()
    d.executor.start(StepPlanner(snap, T).plan(snap.pool_by_name("rbd"), 64),
                     [snap.pool_by_name("rbd")], Source.APPLY, 0.0)
    n = len(kv.writes)
    for t in range(1, 40):       # 40 polls, each with a waiting line and blockers
        d.executor.tick(ceph.snap(), dataclasses.replace(OPEN, interval=1000.0), ceph.send, float(t))
    assert len(kv.writes) == n and d.executor.state is not None and d.executor.state.blockers


def test_a_long_plan_is_kept_in_small_entries_and_read_back(dumps: Dict[str, Any]) -> None:
    ceph, kv = FakeCeph(dumps), CountingStore()
    snap = ceph.snap()
    rbd = snap.pool_by_name("rbd")
    steps = [balance_step(rbd, rbd.pg_num, rbd.pgp_num, i, 0.5) for i in range(1, 2001)]
    d = Driver(kv.load, kv.save, 0.0)
    for i in range(300):
        d.executor.log(float(i), Event.ROUND, "x" * 1000)      # a long history too
    d.executor.start(steps, [rbd], Source.APPLY, 0.0)
    assert len(kv.kv) > 3 and all(len(v) <= ENTRY_MAX for v in kv.kv.values())
    d2 = Driver(kv.load, kv.save, 1.0)                       # a new mgr
    assert d2.store.error is None
    assert d2.executor.state is not None and d.executor.state is not None
    assert d2.executor.state.steps == d.executor.state.steps
    assert d2.executor.history[-1]["event"] == "start"
    # a shorter plan afterwards leaves no stale chunk behind
    d2.executor.state.status = Status.DONE
    d2.executor.start(steps[:3], [rbd], Source.APPLY, 2.0)
    assert sorted(k for k in kv.kv if k.startswith("exec_steps")) == ["exec_steps.0"]


def _doubling_started(dumps: Dict[str, Any], source: Source) -> Tuple[CountingStore, Driver]:
    """A driver over a counting store, its plan doubling rbd just started."""
    ceph, kv = FakeCeph(dumps), CountingStore()
    d = Driver(kv.load, kv.save, 0.0)
    snap = ceph.snap()
    d.executor.start(StepPlanner(snap, T).plan(snap.pool_by_name("rbd"), 64),
                     [snap.pool_by_name("rbd")], source, 0.0)
    return kv, d


@pytest.mark.parametrize("raw", ["{not json", "{}", "[1]", "null", "42", '"text"', "[" * 100000,
                                 json.dumps({"id": "x", "status": "running", "steps": [1]}),
                                 "x" * (2 << 20)],
                         ids=["not-json", "empty", "list", "null", "number", "string", "deep",
                              "wrong-shape", "huge"])
def test_unreadable_state_is_reported_and_abort_clears_it(wired: Any, raw: str) -> None:  # noqa: F811
    m, ceph, _ = wired
    fake = mgr_stub.BaseMgrModule.fake
    fake.store[STATE_KEY] = raw
    fake.store["exec_history"] = "{not a list"
    m2 = Module("pg_advisor", None, None)            # a new mgr finds it
    for attr in ("send", "set_module_option"):
        setattr(m2, attr, getattr(m, attr))
    m2.run_plan()
    m2.refresh_health()
    if raw == "null":            # an empty plan is just no plan
        assert "PG_ADVISOR_PLAN_ERROR" not in fake.health
        return
    assert "PG_ADVISOR_PLAN_ERROR" in fake.health, fake.health
    assert "unreadable" in json.dumps(fake.health["PG_ADVISOR_PLAN_ERROR"])
    code, _, err = cmd(m2, "apply", pool="rbd", pg_num=64)
    assert code == -16 and "abort" in err and ceph.sent == []
    assert cmd(m2, "balance")[0] == -16
    code, r, _ = cmd(m2, "abort")
    assert code == 0 and "cleared" in r["summary"]
    assert fake.store.get(STATE_KEY) is None and "exec_corrupt" in fake.store
    m2.refresh_health()
    assert "PG_ADVISOR_PLAN_ERROR" not in fake.health
    assert cmd(m2, "apply", pool="rbd", pg_num=64)[0] == 0
    assert [h["event"] for h in cmd(m2, "history")[1]["history"]][:2] == ["reset", "abort"]


def test_the_state_keeps_plain_strings_in_the_store_and_enums_in_memory(dumps: Dict[str, Any]) -> None:
    kv, d = _doubling_started(dumps, Source.DRAIN)
    d.executor.pause(1.0)
    doc = json.loads(kv.kv[STATE_KEY])
    assert (doc["source"], doc["status"], doc["phase"]) == ("drain", "paused", "idle")
    assert d.executor.state is not None
    public = d.executor.state.public()
    assert [type(public[k]) for k in ("source", "status", "phase")] == [str, str, str]
    doc, _ = PlanStore(kv.load, kv.save).read(2.0)
    assert doc is not None
    state = PlanState.from_json(doc)
    assert (state.source, state.status, state.phase) == (Source.DRAIN, Status.PAUSED, Phase.IDLE)
    assert isinstance(state.status, Status) and state.to_json()["status"] == "paused"
    # the steps and the pools are records in memory, objects in the store and in reports
    assert isinstance(state.step(), PlanStep) and isinstance(state.pools["rbd"], PoolTarget)
    assert state.pools["rbd"] == PoolTarget(id=1, start=32, goal=64, expect=[32, 32])
    assert set(doc["pools"]["rbd"]) == {"id", "start", "goal", "expect"}
    assert public["pools"] == {"rbd": {"id": 1, "start": 32, "goal": 64, "expect": [32, 32]}}


def test_the_store_checks_each_field_the_plan_state_keeps_there() -> None:
    # the fields of the state entry come from PlanState; each has its check, and nothing else does
    from dataclasses import fields
    from pg_advisor.execute import plan_store
    kept = {f.name for f in fields(PlanState)} - set(plan_store.VOLATILE)
    assert set(plan_store._STATE_FIELDS) == kept | set(plan_store.STORE_OWN)
    assert set(plan_store.VOLATILE) == {"steps", "pins", "blockers", "conflicts", "waiting"}
    assert plan_store.OPTIONAL == {"pins_count": 0, "pins_left": 0, "drain": [], "mismatched": 0,
                                   "mismatch_detail": [], "full_pins": {}}


def test_a_state_of_another_version_is_not_run(dumps: Dict[str, Any]) -> None:
    kv, d = _doubling_started(dumps, Source.APPLY)
    doc = json.loads(kv.kv[STATE_KEY])
    for mutate in (lambda s: s.update(version=1), lambda s: s.pop("pools"),
                   lambda s: s.update(next=10 ** 6), lambda s: s.update(pools={"rbd": [32, 64]}),
                   lambda s: s.update(status="exploded"), lambda s: s.update(created=float("nan")),
                   # a status no plan is ever in any more (health branched on it)
                   lambda s: s.update(status="failed"), lambda s: s.update(phase="sent"),
                   lambda s: s.update(source="cron")):
        bad = copy.deepcopy(doc)
        mutate(bad)
        kv.kv[STATE_KEY] = json.dumps(bad)
        store = PlanStore(kv.load, kv.save)
        state, _ = store.read(1.0)
        assert state is None and store.error and "unreadable" in store.error


def test_an_option_the_mon_let_through_falls_back_and_is_reported(module: Module) -> None:  # noqa: F811
    fake = mgr_stub.BaseMgrModule.fake
    fake.module_options[("pg_advisor", "misplaced_budget")] = float("nan")   # `config set` takes nan
    assert module.current_options().misplaced_budget == 0.0
    module.publish_health()
    check = fake.health.get("PG_ADVISOR_OPTION_INVALID")
    assert check and "misplaced_budget" in check["summary"] and "default 0.0" in check["summary"]
    assert module._handle_command(None, {"prefix": "pg-advisor status", "format": "json"})[0] == 0
    fake.module_options[("pg_advisor", "misplaced_budget")] = 0.02
    module.current_options()
    module.publish_health()
    assert "PG_ADVISOR_OPTION_INVALID" not in fake.health


def test_every_option_the_module_reads_goes_through_the_checks(module: Module) -> None:  # noqa: F811
    # the serve loop's intervals, the mode, the panel's address: read raw, a value the mon
    # let through ('nan', a port it cannot bind) reached int()/float() or the socket
    fake = mgr_stub.BaseMgrModule.fake
    for name, value in (("mode", "sideways"), ("server_port", "nan"), ("poll_interval", "nan")):
        fake.module_options[("pg_advisor", name)] = value
    try:
        assert module._handle_command(None, {"prefix": "pg-advisor mode", "format": "json"})[1] == \
            '{"mode": "advise"}'
        module.publish_health()
        summary = fake.health["PG_ADVISOR_OPTION_INVALID"]["summary"]
        assert "3 option value(s)" in summary
        module.keep_panel()
        assert module._panel_at == ("127.0.0.1", 9285)
    finally:
        for name in ("mode", "server_port", "poll_interval"):
            del fake.module_options[("pg_advisor", name)]
        module._server.stop()


# -- the panel serves what the serve loop computed, once per refresh --------------------------

def test_the_panel_serves_the_status_computed_once_per_refresh(module: Module) -> None:  # noqa: F811
    import urllib.error
    import urllib.request
    from .conftest import free_port
    fake = mgr_stub.BaseMgrModule.fake
    calls: List[int] = []
    real = module.status

    def counted(pool: Optional[str] = None, snap: Any = None) -> Dict[str, Any]:
        calls.append(1)
        return real(pool, snap)
    setattr(module, "status", counted)
    fake.module_options[("pg_advisor", "server_port")] = free_port()
    try:
        module.keep_panel()
        with pytest.raises(urllib.error.HTTPError) as early:    # not computed yet: no work here
            urllib.request.urlopen(fake.uri + "api/status", timeout=10)
        assert early.value.code == 503 and calls == []
        module.refresh_status()
        for _ in range(10):
            for path in ("api/status", "metrics", "api/progress", "api/history"):
                assert urllib.request.urlopen(fake.uri + path, timeout=10).status == 200
        served = json.loads(urllib.request.urlopen(fake.uri + "api/status", timeout=10).read())
        assert len(calls) == 1 and served == real()
    finally:
        module._server.stop()


def test_with_nothing_misplaced_a_round_moves_one_pg_past_the_budget(dumps: Dict[str, Any]) -> None:
    # a child that is half its pool passes any budget; Ceph moves it anyway, so do we
    tiny = dataclasses.replace(OPEN, misplaced_max=1e-9)
    ceph, store = _skewed(dumps), Store()
    stats = ceph.dumps["pg_dump"]["pg_map"]["pg_stats_sum"]["stat_sum"]
    stats["num_objects_misplaced"] = 1                         # something moves already
    ex = balance_plan(ceph, store)
    ex.tick(ceph.snap(), tiny, ceph.send, 0.0)
    assert not [c for c in ceph.sent if "pgid" in c]
    assert "budget" in ((store.state or {})["waiting"] or "")
    stats["num_objects_misplaced"] = 0                         # nothing: one PG goes
    ex.tick(ceph.snap(), tiny, ceph.send, 1.0)
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
        ex.tick(ceph.snap(), OPEN, ceph.send, float(t))
    st = store.state or {}
    assert st["status"] == "running" and st["next"] == 0, st
    assert ex.state is not None and "rbd is not even" in ex.state.blockers[0]
    assert "osd.0 holds" in ex.state.blockers[0]                # the OSD furthest off
    monkeypatch.setattr(rounds, "propose", real)
    for t in range(3, 400):
        ex.tick(ceph.snap(), OPEN, ceph.send, float(t))
        ceph.dumps["osd_dump"]["epoch"] += 1
        if not ex.active:
            break
    assert (store.state or {})["status"] == "done"
    snap = ceph.snap()
    from pg_advisor.balance.proposal import balance_report
    assert balance_report(snap, ["rbd"], mode="pgs")["uneven"] == {}    # done means even


@pytest.mark.parametrize("field, value", [
    ("round", {"epoch": 3, "items": {}, "want": {"1.0": "abc"}}),
    ("round", {"epoch": 3, "items": {}, "want": {"one.x": [1, 2, 3]}}),
    ("round", {"epoch": 3, "items": {}, "want": {"1.0": [1, -5, 3]}}),
    ("round", {"epoch": 3, "items": {}, "topology": 7}),
    ("round", {"epoch": 3, "items": {}, "topology": "x" * 65}),
    ("full_pins", {"2.3": []}),
    ("full_pins", {"2.3": [1, 2, 1 << 40]}),
    ("mismatched", -1),
    ("mismatch_detail", [7]),
])
def test_a_stored_check_field_of_the_wrong_shape_is_unreadable(field: str, value: Any) -> None:
    # the round's wanted sets and the pg-upmap pins are read back into the checks after
    # sending: a hand-edited value must be refused whole, not crash a tick later
    doc = {"version": 2, "id": "abc", "source": "apply", "created": 0.0, "next": 0, "phase": "idle",
           "status": "running", "pools": {"rbd": {"id": 1, "start": 32, "goal": 64, "expect": [32, 32]}},
           "steps_count": 1, "issued_at": None, "last_step_at": None, "retry_at": None, "attempts": 0,
           "last_error": None, "stopped_why": None, "rounds": 0, "round": None}
    check_state(dict(doc))            # the document as it stands is fine
    with pytest.raises(Unreadable, match=field):
        check_state(dict(doc, **{field: value}))


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
    snap = ceph.snap()
    rbd = snap.pool_by_name("rbd")
    for stuck_pool, held in (("fast", False), ("rbd", True)):
        ex = Executor(None, [], store.save)
        ex.start([balance_step(rbd, rbd.pg_num, rbd.pgp_num, 10, 1.0)], list(snap.pools), Source.AUTO, 0.0)
        stuck = SimpleNamespace(items={}, throttled=False, moves=0,
                                uneven={stuck_pool: f"osd.0 holds 20 PGs of pool {stuck_pool}"})
        monkeypatch.setattr(rounds, "propose", lambda *a, **k: stuck)
        for t in range(3):
            ex.tick(snap, OPEN, ceph.send, float(t))
        st = store.state or {}
        assert (st["status"] == "running") == held, (stuck_pool, st["status"])
        assert bool(ex.state and ex.state.blockers) == held
