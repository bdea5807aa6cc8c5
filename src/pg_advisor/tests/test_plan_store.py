"""The plan's store: written only on change, in small entries, and anything read back safely:
an unreadable state is reported, never run, and abort clears it."""
import copy
import dataclasses
import json
from typing import Any, Dict, List, Optional, Tuple

import pytest

from . import mgr_stub
from .fakes import OPEN, T, FakeCeph, Store, context, run, start, stored_plan, tick_of
from .conftest import acting_at_once, cmd

from pg_advisor.execute import operator_commands as ops
from pg_advisor.execute.driver import Driver
from pg_advisor.execute.history import Event
from pg_advisor.module import Module
from pg_advisor.execute.plan_store import ENTRY_MAX, STATE_KEY, PlanStore, Unreadable, check_state
from pg_advisor.execute.plan_migrations import migrate
from pg_advisor.execute.steps import PlanStep, StepPlanner, balance_step
from pg_advisor.execute.plan_state import Phase, PlanState, PoolTarget, Source, Status
from pg_advisor.model.errors import AdvisorError
from pg_advisor.model.options import make


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
        d.executor.tick(tick_of(ceph.snap(), dataclasses.replace(OPEN, interval=1000.0), ceph.send, float(t)))
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
    first = d2.executor.state.id
    second = d2.executor.start(steps[:3], [rbd], Source.APPLY, 2.0).id
    assert sorted(k for k in kv.kv if k.startswith("exec_steps")
                  and not k.startswith(f"exec_steps.{first}.")) == [f"exec_steps.{second}.0"]
    # a plan no longer kept (ENDED_KEPT newer ended ones) leaves no entry behind
    from pg_advisor.execute.side_by_side import ENDED_KEPT
    for i in range(ENDED_KEPT):
        d2.executor.plans[-1].status = Status.DONE
        d2.executor.start(steps[:3], [rbd], Source.APPLY, 3.0 + i)
    assert not any(k.startswith((f"exec_steps.{first}.", f"exec_plan.{first}")) for k in kv.kv)
    assert len(d2.executor.plans) == ENDED_KEPT + 1


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
    m2 = acting_at_once(Module("pg_advisor", None, None))            # a new mgr finds it
    for attr in ("send", "set_module_option"):
        setattr(m2, attr, getattr(m, attr))
    m2.background.run_plan()
    m2.background.refresh_health()
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
    m2.background.refresh_health()
    assert "PG_ADVISOR_PLAN_ERROR" not in fake.health
    assert cmd(m2, "apply", pool="rbd", pg_num=64)[0] == 0
    assert [h["event"] for h in cmd(m2, "history")[1]["history"]][:2] == ["reset", "abort"]


def test_the_state_keeps_plain_strings_in_the_store_and_enums_in_memory(dumps: Dict[str, Any]) -> None:
    kv, d = _doubling_started(dumps, Source.DRAIN)
    d.executor.pause(1.0)
    doc = stored_plan(kv.kv)
    assert (doc["source"], doc["status"], doc["phase"]) == ("drain", "paused", "idle")
    assert d.executor.state is not None
    public = d.executor.state.public()
    assert [type(public[k]) for k in ("source", "status", "phase")] == [str, str, str]
    docs, _ = PlanStore(kv.load, kv.save).read(2.0)
    assert len(docs) == 1
    doc = docs[0]
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
    # and the fields layout 2 gained later are what a migration fills in
    from pg_advisor.execute.plan_migrations import _later_defaults
    assert _later_defaults() == {"pins_left": 0, "drain": [], "and_balance": False, "mismatched": 0,
                                 "mismatch_detail": [], "full_pins": {}}


def test_a_state_of_another_version_is_not_run(dumps: Dict[str, Any]) -> None:
    kv, d = _doubling_started(dumps, Source.APPLY)
    doc = stored_plan(kv.kv)
    key = f"exec_plan.{doc['id']}"
    for mutate in (lambda s: s.update(version=1), lambda s: s.update(version=4), lambda s: s.pop("pools"),
                   lambda s: s.update(next=10 ** 6), lambda s: s.update(pools={"rbd": [32, 64]}),
                   lambda s: s.update(status="exploded"), lambda s: s.update(created=float("nan")),
                   # a status no plan is ever in any more (health branched on it)
                   lambda s: s.update(status="failed"), lambda s: s.update(phase="sent"),
                   lambda s: s.update(source="cron")):
        bad = copy.deepcopy(doc)
        mutate(bad)
        kv.kv[key] = json.dumps(bad)
        store = PlanStore(kv.load, kv.save)
        plans, _ = store.read(1.0)
        assert plans == [] and store.error and "unreadable" in store.error


def test_a_plan_whose_every_pool_was_deleted_ends_and_stores_readably(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))
    ceph.settle()
    sent = len(ceph.sent)
    ceph.dumps["osd_dump"]["pools"] = [p for p in ceph.dumps["osd_dump"]["pools"]   # the plan's one pool
                                       if p["pool_name"] != "rbd"]
    run(ex, ceph)
    st = store.state or {}
    assert st["status"] == "done" and st["pools"] == {} and len(ceph.sent) == sent
    # the store reads it back (a plan of no pools is well formed)
    kv = CountingStore()
    PlanStore(kv.load, kv.save).write([st], store.history)
    again = PlanStore(kv.load, kv.save)
    (back,), _ = again.read(1.0)
    assert back["status"] == "done" and back["pools"] == {} and not again.error


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
    check_state(migrate(dict(doc))[0])            # the document as it stands is fine
    with pytest.raises(Unreadable, match=field):
        check_state(migrate(dict(doc, **{field: value}))[0])


def test_one_unreadable_plan_of_two_is_set_aside_and_abort_keeps_the_other(dumps: Dict[str, Any]) -> None:
    ceph, kv = FakeCeph(dumps), CountingStore()
    d = Driver(kv.load, kv.save, 0.0)
    snap = ceph.snap()
    rbd, eco = snap.pool_by_name("rbd"), snap.pool_by_name("ecpool")
    a = d.executor.start(StepPlanner(snap, T).plan(rbd, 64), [rbd], Source.APPLY, 0.0).id
    b = d.executor.start(StepPlanner(snap, T).plan(eco, 32), [eco], Source.APPLY, 0.0).id
    assert json.loads(kv.kv[STATE_KEY]) == {"version": 4, "plans": [a, b]}
    kv.kv[f"exec_plan.{a}"] = "{torn"
    d2 = Driver(kv.load, kv.save, 1.0)         # a new mgr: b read, a set aside and reported
    assert [p.id for p in d2.executor.plans] == [b] and d2.store.error and "unreadable" in d2.store.error
    with pytest.raises(AdvisorError):           # nothing runs or starts until abort clears it
        d2.tick(context(ceph, make({}), 2.0))
    assert "cleared" in ops.abort(d2.plans, context(ceph, make({}), 3.0))
    assert json.loads(kv.kv[STATE_KEY]) == {"version": 4, "plans": [b]} and f"exec_plan.{a}" not in kv.kv
    d3 = Driver(kv.load, kv.save, 4.0)
    assert [p.id for p in d3.executor.plans] == [b] and d3.store.error is None
