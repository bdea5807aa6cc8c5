"""The plan service: the one owner of the plan, whose changes are transactions written once."""
from typing import Any, Dict, List, Optional, Tuple

import pytest

from pg_advisor.execute import operator_commands as ops
from pg_advisor.execute.driver import Driver
from pg_advisor.execute.history import Event
from pg_advisor.execute.plan_state import Status
from pg_advisor.model.errors import AdvisorError
from pg_advisor.model.options import make

from .fakes import FakeCeph, context, stored_plan


class CountingStore:
    """The mgr store, counting the writes of each key."""

    def __init__(self) -> None:
        self.kv: Dict[str, Optional[str]] = {}
        self.writes: List[Tuple[str, Optional[str]]] = []

    def load(self, key: str) -> Optional[str]:
        return self.kv.get(key)

    def save(self, key: str, value: Optional[str]) -> None:
        self.writes.append((key, value))
        self.kv[key] = value

    def state_writes(self) -> int:
        """Writes of a plan's state entry (exec_plan.<id>)."""
        return sum(1 for k, _ in self.writes if k.startswith("exec_plan."))


def test_a_command_that_starts_a_plan_and_logs_writes_the_state_once(dumps: Dict[str, Any]) -> None:
    # a drain starts the plan, sets what it drains and logs it: three changes, one write
    ceph, store = FakeCeph(dumps), CountingStore()
    drv = Driver(store.load, store.save, 0.0)
    ops.drain(drv.plans, context(ceph, make({}), 0.0), "osd.0", False)
    assert drv.executor.state is not None and store.state_writes() == 1
    assert Driver(store.load, store.save, 1.0).executor.state == drv.executor.state


def test_a_dry_run_and_an_unchanged_tick_write_nothing(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), CountingStore()
    drv = Driver(store.load, store.save, 0.0)
    ops.drain(drv.plans, context(ceph, make({}), 0.0), "osd.0", True)
    drv.tick(context(ceph, make({}), 1.0))          # mode off and no plan: nothing changes
    assert store.writes == []


def test_a_tick_that_sends_writes_ahead_then_once_at_its_end(dumps: Dict[str, Any]) -> None:
    # the executor's checkpoint before a command goes out is the one write inside; the
    # transaction's end writes the rest
    ceph, store = FakeCeph(dumps), CountingStore()
    drv = Driver(store.load, store.save, 0.0)
    opts = make({"step_interval": 0})
    ops.apply(drv.plans, context(ceph, opts, 0.0), "rbd", 64, False)
    seen: List[Tuple[int, str]] = []       # (state writes so far, the stored phase) at each send
    real = ceph.send

    def send(cmd: Dict[str, Any]) -> Any:
        seen.append((store.state_writes(), stored_plan(store.kv)["phase"]))
        return real(cmd)
    setattr(ceph, "send", send)
    before = store.state_writes()
    drv.tick(context(ceph, opts, 1.0))
    assert seen and {phase for _, phase in seen} == {"issuing"}     # written before it went out
    assert seen[0][0] == before + 1                                  # by the checkpoint alone
    assert store.state_writes() == before + 2                        # and once at the end


def test_a_failure_part_way_keeps_what_was_done(dumps: Dict[str, Any]) -> None:
    store = CountingStore()
    drv = Driver(store.load, store.save, 0.0)
    with pytest.raises(RuntimeError):
        with drv.plans.change() as ex:
            ex.log(0.0, Event.MODE, "auto")
            raise RuntimeError("a bug half-way")
    assert Driver(store.load, store.save, 1.0).executor.history[-1]["detail"] == "auto"
    # and the lock is free again: the next command runs (and finds no plan to pause)
    with pytest.raises(AdvisorError, match="no plan is"):
        ops.pause(drv.plans, 2.0)


def test_pause_and_resume_are_one_write_each(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), CountingStore()
    drv = Driver(store.load, store.save, 0.0)
    ops.apply(drv.plans, context(ceph, make({}), 0.0), "rbd", 64, False)
    n = store.state_writes()
    ops.pause(drv.plans, 1.0)
    assert store.state_writes() == n + 1 and drv.executor.state is not None
    assert drv.executor.state.status == Status.PAUSED
    ops.resume(drv.plans, 2.0)
    assert store.state_writes() == n + 2


def test_an_idle_tick_over_a_closed_plan_serializes_nothing(dumps: Dict[str, Any]) -> None:
    # a finished or aborted plan stays in the store (a drain's may hold a million pins):
    # a tick that changes nothing does not dump it again to find out
    ceph, store = FakeCeph(dumps), CountingStore()
    drv = Driver(store.load, store.save, 0.0)
    ops.apply(drv.plans, context(ceph, make({}), 0.0), "rbd", 64, False)
    ops.abort(drv.plans, context(ceph, make({}), 1.0))
    dumped: List[int] = []
    real = drv.store.write

    def counted(*args: Any) -> None:
        dumped.append(1)
        real(*args)
    setattr(drv.executor, "_save", counted)
    for t in range(2, 12):
        drv.tick(context(ceph, make({"mode": "advise"}), float(t)))
    assert dumped == []
    with pytest.raises(AdvisorError):
        ops.pause(drv.plans, 13.0)
    assert dumped == []
