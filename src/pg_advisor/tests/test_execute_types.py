"""The plan's kinds are enums end to end (execute/steps.py StepKind, pacing.BlockerKind,
history.Event), and str-valued: a plan and a history stored by the version before them
read back the same, and are written back as they were."""
import json
from typing import Any, Dict, List, Optional

import pytest

from pg_advisor.execute.driver import Driver
from pg_advisor.execute.history import Event, HistoryEvent
from pg_advisor.execute.plan_state import Source
from pg_advisor.execute.plan_store import PlanStore
from pg_advisor.execute.step_commands import Role, pin_commands, primed_pgp_commands, target_commands
from pg_advisor.execute.steps import PlanStep, StepKind, StepPlanner
from pg_advisor.model import snapshot
from pg_advisor.model.options import Mode
from pg_advisor.execute import operator_commands as ops
from pg_advisor.execute import auto_mode

from .fakes import T

# a plan and its history as the version with string kinds stored them
OLD_STEPS = [
    {"kind": "pg_num", "pool": "rbd", "pool_id": 2, "pg_num": 48, "pgp_num": 32, "pgs_moving": 0,
     "shards_moving": 0, "misplaced": 0.0, "max_osd_backfills": 0, "pin": False},
    {"kind": "pgp_num", "pool": "rbd", "pool_id": 2, "pg_num": 48, "pgp_num": 48, "pgs_moving": 9,
     "shards_moving": 12, "misplaced": 0.01, "max_osd_backfills": 2, "pin": False},
    {"kind": "balance", "pool": "rbd", "pool_id": 2, "pg_num": 48, "pgp_num": 48, "pgs_moving": 0,
     "shards_moving": 3, "misplaced": 0.002, "max_osd_backfills": 0, "pin": False},
]
OLD_HISTORY = [{"time": 1.0, "plan": "ab12cd34", "event": "start", "detail": "3 steps"},
               {"time": 2.0, "plan": None, "event": "mode", "detail": "auto"},
               {"time": 3.0, "plan": "ab12cd34", "event": "abort", "detail": "rbd: left at pg_num 48"}]


def test_a_step_stored_with_string_kinds_reads_back_typed_and_writes_back_the_same() -> None:
    steps = [PlanStep.from_json(dict(s)) for s in OLD_STEPS]
    assert [s.kind for s in steps] == [StepKind.PG_NUM, StepKind.PGP_NUM, StepKind.BALANCE]
    assert all(type(s.kind) is StepKind for s in steps)
    assert [json.loads(json.dumps(s.to_json())) for s in steps] == OLD_STEPS
    with pytest.raises(ValueError):
        PlanStep.from_json(dict(OLD_STEPS[0], kind="merge"))


def test_a_plan_stored_by_the_old_code_loads(dumps: Dict[str, Any]) -> None:
    snap = snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])
    rbd = snap.pool_by_name("rbd")
    kv: Dict[str, Optional[str]] = {}
    d = Driver(kv.get, kv.__setitem__, 0.0)
    d.executor.start(StepPlanner(snap, T).plan(rbd, rbd.pg_num * 2), [rbd], Source.APPLY, 0.0)
    assert d.executor.state is not None
    # what the old code stored: plain JSON, the kinds as strings
    old = json.loads(json.dumps(d.executor.state.to_json()))
    assert {s["kind"] for s in old["steps"]} == {"pg_num", "pgp_num", "balance"}
    store: Dict[str, Optional[str]] = {}
    PlanStore(store.get, store.__setitem__).write([old], json.loads(json.dumps(OLD_HISTORY)))
    again = Driver(store.get, store.__setitem__, 1.0)
    state = again.executor.state
    assert again.store.error is None and state is not None
    assert all(type(s.kind) is StepKind for s in state.steps)
    assert json.loads(json.dumps(state.to_json())) == old
    assert again.executor.history == OLD_HISTORY


def test_the_history_reads_back_as_typed_records() -> None:
    kv: Dict[str, Optional[str]] = {"exec_history": json.dumps(OLD_HISTORY)}
    d = Driver(kv.get, kv.__setitem__, 10.0)
    events: List[HistoryEvent] = list(d.executor.events())
    assert [e.event for e in events] == [Event.ABORT, Event.MODE, Event.START]
    assert events[0] == HistoryEvent(3.0, "ab12cd34", "abort", "rbd: left at pg_num 48")
    # an abort since the operator set auto: auto mode waits out its cooldown
    assert not auto_mode.may_start(d.executor, 10.0)
    ops.mode_set(d.plans, Mode.AUTO, 11.0)
    assert auto_mode.may_start(d.executor, 12.0)
    assert d.executor.history[-1] == {"time": 11.0, "plan": None, "event": "mode", "detail": "auto"}


def test_each_step_command_says_its_role(snap: snapshot.Snapshot) -> None:
    rbd = snap.pool_by_name("rbd")
    split = PlanStep(StepKind.PG_NUM, "rbd", rbd.id, rbd.pg_num * 2, rbd.pgp_num)
    assert [c.role for c in target_commands(split)] == [Role.TARGET, Role.TARGET]
    pgp = PlanStep(StepKind.PGP_NUM, "rbd", rbd.id, rbd.pg_num, rbd.pgp_num, pin=True)
    for cmds in (pin_commands(snap, pgp, rbd.pgp_num), primed_pgp_commands(snap, pgp, rbd.pgp_num)):
        targets = [c.cmd for c in cmds if c.role is Role.TARGET]
        assert [c["var"] for c in targets] == ["pgp_num", "pgp_num_actual"]
        assert all("pgid" in c.cmd for c in cmds if c.role is not Role.TARGET)
