"""The one owner of the plan: the lock that the operator's commands and the serve loop share,
the plan store and the executor, and the bookkeeping of a plan's pins. Code that changes a
plan (a PlanState, its history, its pins) does so in `change()`: one transaction under the
lock, written once as it ends, however it ends (a failure part-way keeps what was done,
and the next tick resumes from it), and not at all when nothing changed (an idle tick
serializes nothing: a finished plan may keep a million pins). Within it the executor's
save() and log() say what changed. The one write inside is the executor's checkpoint
before a command goes to the mon. What only reads takes `look()`."""
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

from ..model.errors import AdvisorError
from .command_checks import PENDING_MAX, CommandChecks, PendingCheck
from .executor import Executor
from .history import Event
from .pinning import PinBook
from .plan_store import PlanStore


class PlanService:
    def __init__(self, load: Callable[[str], Optional[str]],
                 save: Callable[[str, Optional[str]], None], now: float) -> None:
        self.store = PlanStore(load, save)
        plans, history = self.store.read(now)      # never raises: what is unreadable is reported
        self.executor = Executor(plans, history, self.store.write)
        self.pins = PinBook()
        self.checks = CommandChecks()     # what operators' balance commands set, to check
        self.lock = threading.Lock()
        self.error: Optional[str] = None  # why the last tick could not run (e.g. a bad option)

    @contextmanager
    def change(self) -> Iterator[Executor]:
        """The executor, to change the plan with; what changed is written once, at the end."""
        with self.lock:
            ex = self.executor
            ex.held, ex.changed = True, False
            try:
                yield ex
            finally:
                ex.held = False
                if ex.changed:
                    ex.write()

    @contextmanager
    def look(self) -> Iterator[Executor]:
        """The executor, to read the plan at one moment."""
        with self.lock:
            yield self.executor

    def check_later(self, check: PendingCheck) -> None:
        """Within look() or change(): `check` for the background's next map (at most
        PENDING_MAX wait; an older one is dropped, and the history says so)."""
        pending = self.checks.pending
        pending.append(check)
        if len(pending) > PENDING_MAX:
            del pending[0]
            self.checks.dropped += 1

    @property
    def checks_owed(self) -> bool:
        """Operators' commands whose changes the background has still to check on a later
        map (balance rounds, pins): it ticks for them even with no plan running."""
        return bool(self.checks.waiting or self.pins.want or self.pins.landing)

    def check_store(self) -> None:
        """EBUSY while the stored plan could not be read (`abort` clears it)."""
        if self.store.error:
            raise AdvisorError.busy(self.store.error)

    def check_idle(self, what: str) -> None:
        """Refuse `what` (EBUSY) while a plan is open: its pins and rounds own the upmap
        items, and a manual round would overwrite them."""
        self.check_store()
        opened = self.executor.opened
        if opened:
            state = opened[-1]
            raise AdvisorError.busy(f"not {what}: plan {state.id} is {state.status} and owns the "
                                    f"pool's upmap items; let it finish or `ceph pg-advisor abort` it")

    def clear_unreadable(self, ex: Executor, now: float) -> Optional[str]:
        """Within a transaction: forget a stored plan that could not be read (`abort`), and
        say so; None when the stored plan was read."""
        why = self.store.error
        if not why:
            return None
        self.store.clear()
        self.error = None
        ex.note(now, Event.ABORT, f"cleared a stored plan that could not be read: {why}")
        return "cleared the stored plan that could not be read (a copy is kept in exec_corrupt)"
