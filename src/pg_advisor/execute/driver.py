"""What the module runs in the background and shows of the plan: each tick, mode auto's
new plans (auto_mode.py), the executor's step, the pins' bookkeeping; the health checks
and the progress event. The plan itself is the PlanService's (plan_service.py); the
operator's commands are functions of it (operator_commands.py).

No mgr calls here: the module hands in a snapshot, the options, and functions to send a
mon command and to read and write the mgr store.
"""
import copy
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..model import health_checks as hc
from ..model.errors import AdvisorError
from ..model.snapshot import Snapshot
from .auto_mode import AutoMode
from .context import Context
from .executor import Executor
from .history import Event
from .plan_service import PlanService
from .plan_state import OPEN, PlanState, Status
from .plan_store import PlanStore
from .rounds import topology_key


def plan_checks(state: PlanState) -> hc.Checks:
    """One plan's health checks (merged with the others' by hc.merge)."""
    checks: hc.Checks = {}
    if state.mismatched and state.status != Status.ABORTED:
        checks.update(hc.upmap_mismatch(state.id, state.mismatched, state.mismatch_detail))
    if state.status not in OPEN:
        return checks
    if state.pins_left:
        checks.update(hc.pinned(state.id, state.status, state.pins_left,
                                len(state.pins) + len(state.full_pins)))
    if state.status == Status.STOPPED:
        checks.update(hc.plan_stopped(state.id, state.stopped_why))
        return checks
    if state.status == Status.RUNNING and state.blockers:
        checks.update(hc.blocked(state.id, state.blockers))
        if state.conflicts:
            checks.update(hc.conflict(state.conflicts))
    if state.last_error:
        checks.update(hc.step_failed(state.id, state.next + 1, state.attempts, state.last_error))
    return checks


class Driver:
    """The background over the one PlanService (`plans`, which the commands share)."""

    def __init__(self, load: Callable[[str], Optional[str]],
                 save: Callable[[str, Optional[str]], None], now: float) -> None:
        self.plans = PlanService(load, save, now)
        self.auto = AutoMode()

    @property
    def executor(self) -> Executor:
        return self.plans.executor

    @property
    def store(self) -> PlanStore:
        return self.plans.store

    @property
    def error(self) -> Optional[str]:
        """Why the last tick could not run (e.g. a bad option)."""
        return self.plans.error

    # -- the background -------------------------------------------------------------------------

    def tick(self, ctx: Context) -> None:
        """One step of the background: auto mode's new plans, then the plan's next step."""
        try:
            self._tick(ctx)
            self.plans.error = None
        except AdvisorError as e:
            self.plans.error = e.message
            raise

    def _tick(self, ctx: Context) -> None:
        snap, now = ctx.snap, ctx.now
        pins = self.plans.pins
        with self.plans.change() as ex:
            self.plans.check_store()
            # what commands set is checked before any plan acts: in the mgr the check reads
            # the live map, which a round sent in this tick would already have changed
            pins.expire(ex, now)
            if pins.due(snap):
                pins.verify(ex, snap, now)
            self._check_commands(ex, ctx)
            self.auto.tick(ex, pins, ctx)
            if ex.active:
                ex.tick(ctx.for_tick(pins.held()))
            pins.count(ex, snap)

    def check_commands(self, ctx: Context) -> None:
        """Only the checks of what operators' commands set, balance rounds and pins (mode
        off: no plan runs, but the commands' outcome still goes to the history)."""
        if self.plans.checks.waiting or self.plans.pins.want:
            with self.plans.change() as ex:
                self.plans.pins.expire(ex, ctx.now)
                self._check_commands(ex, ctx)
                if self.plans.pins.due(ctx.snap):
                    self.plans.pins.verify(ex, ctx.snap, ctx.now)

    def _check_commands(self, ex: Executor, ctx: Context) -> None:
        if self.plans.checks.waiting:      # on the first map after theirs
            self.plans.checks.settle(ctx.snap, ex.up_sets, topology_key(ctx.snap), ctx.now, ex.log)

    # -- what the module shows of the plan: a copy, read at one moment -----------------------------

    def health(self) -> hc.Checks:
        checks: hc.Checks = {}
        if self.store.error and self.store.error != self.error:
            checks.update(hc.plan_error(self.store.error))
        elif self.error:
            checks.update(hc.plan_error(self.error))
        ex = self.executor
        for state in ex.plans:       # an ended plan's mismatches show until the next plan starts
            if state.status in OPEN or state is ex.state:
                hc.merge(checks, plan_checks(state))
        return checks

    def progress(self) -> List[Tuple[str, str, float, Status]]:
        """(event id, message, fraction, plan status) of each plan kept."""
        return [(f"pg_advisor-{plan}", msg, frac, status)
                for plan, frac, msg, status in self.executor.progress()]

    def map_with(self, up_sets: Callable[[Snapshot, Sequence[str]], Dict[str, List[int]]]) -> None:
        """Check the items a plan sets against `up_sets` (pgid -> up set: in the mgr, Ceph's
        own mapping) instead of the model's."""
        with self.plans.look() as ex:
            ex.up_sets = up_sets

    def plan_report(self, plan: Optional[str] = None) -> Dict[str, Any]:
        """A plan (by default the newest open one), its steps and where it is, and a line
        for each plan kept (`ceph pg-advisor progress`); for the plan of the last pins, what
        their checks found (`pins_checked`: pinning.PinBook.verify; `weight_landed`: where a
        crush-reweight's weights landed): a copy."""
        with self.plans.look() as ex:
            out = ex.report(plan)
            pins = self.plans.pins
            if out["plan"] is not None and out["plan"]["id"] == pins.plan:
                out["pins_checked"] = copy.deepcopy(pins.verified)
                out["weight_landed"] = copy.deepcopy(pins.landed)
            return out

    def weights_landed(self, found: Dict[str, Any], now: float) -> None:
        """Where the last crush-reweight's weights landed (serve.check_landing found it on a
        later map): kept for `progress` and said in the history."""
        with self.plans.change() as ex:
            pins = self.plans.pins
            ask, pins.landing, pins.landed = pins.landing, None, found
            state = ex.find(pins.plan)
            missed = found["missed"]
            first = ask.first if ask is not None else "?"
            what = (f"the weights set at epoch {first} landed in epoch {found['epoch']}" if found["epoch"]
                    else f"the weights set at epoch {first} were not found in the epochs after it")
            if missed:
                what += f"; {len(missed)} pinned PGs missed it (e.g. {sorted(missed)[0]})"
            elif missed == []:
                what += "; no pin missed it"
            ex.log(now, Event.CHECKED, what, state)

    def note(self, detail: str, now: float) -> None:
        """An event of no plan in the history: what a queued command did (mgr/intents.py)."""
        with self.plans.change() as ex:
            ex.note(now, Event.COMMAND, detail)

    def history(self) -> List[Dict[str, Any]]:
        """The plans' events, oldest first: a copy."""
        with self.plans.look() as ex:
            return list(ex.history)

    def plan_view(self) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
        """(plan_report, history) of one moment, for the panel."""
        with self.plans.look() as ex:
            return ex.report(), list(ex.history)

    @property
    def plan_active(self) -> bool:
        """A plan is running or paused: the background polls it."""
        return self.executor.active
