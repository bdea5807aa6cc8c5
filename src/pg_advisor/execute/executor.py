"""Drive a plan of steps against the cluster, tick by tick, and survive faults.

Each tick: if the step in flight is done (the pool's actual pg_num and pgp_num are the
step's), advance; otherwise, if nothing blocks the next step and the pacing allows it,
issue it. The state is saved before a step is sent ("issuing") and after ("issued"), so
a new mgr resumes where the old one stopped: a step found "issuing" is sent again only if
the cluster does not show it yet (the commands set targets, so a resend is harmless, and
the history records each step once). A command that fails is retried with a growing
delay and reported; nothing is given up without the operator (`abort`).
"""
import dataclasses
import uuid
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..crush.placement import Placer
from ..crush.upmap import map_mismatches
from ..model.errors import AdvisorError
from ..model.mon_commands import pool_set
from ..model.snapshot import Pool, Snapshot
from .balance_steps import Outcome, balance_round_step, round_checked
from .context import Tick
from .history import Event, HistoryEvent
from ..analysis.backfill import BackfillRate, bytes_left
from .settling import still_moving
from .ledger import Ledger
from .plan_state import ACTIVE, OPEN, Phase, PlanState, PoolTarget, Source, Status
from .plan_pools import changed, stepped
from .plan_report import plan_report, progress_line
from .plan_store import MISMATCH_SHOWN
from .rounds import Send
from .step_commands import (Role, pin_commands, pins_shown, primed_pgp_commands, step_done, target_commands,
                            targets_shown)
from .step_gate import may_issue, step_spend
from .steps import PlanStep, StepKind
from .gates import sets_upmaps
from .side_by_side import ENDED_KEPT, check_room, check_start, in_order, others_of


HISTORY_MAX = 200
TICK_ERRORS_STOP = 5        # a plan's ticks failing on a bug this many times running stop it
RETRY_MAX_DELAY = 300.0
DETAIL_MAX = 300            # characters of one history event's detail (the history is stored)
REASON_MAX = 1000           # characters of a stored error or stop reason (the state stays small)
# pgids -> their up sets in the cluster's map: the mgr's own OSDMap live (module.py), the
# exact model on the snapshot offline and in unit tests
UpSets = Callable[[Snapshot, Sequence[str]], Dict[str, List[int]]]


def model_up_sets(snap: Snapshot, pgids: Sequence[str]) -> Dict[str, List[int]]:
    return Placer.of(snap).up_sets(pgids)


class Executor:
    """The plans, side by side (side_by_side.py says which may run together and in what
    order). Their states (PlanStates) go to `save` as JSON, which the plan store keeps;
    `plans` is that JSON read back, oldest first."""

    def __init__(self, plans: Sequence[Dict[str, Any]], history: List[Dict[str, Any]],
                 save: Callable[[List[Dict[str, Any]], List[Dict[str, Any]]], None]) -> None:
        self.plans: List[PlanState] = [PlanState.from_json(p) for p in plans]
        self.history = history
        self._save = save
        self.held = False       # within a PlanService transaction: it writes once, at its end,
        self.changed = False    # if the plans or their history changed within it
        self.up_sets: UpSets = model_up_sets
        self.rates: Dict[str, BackfillRate] = {}   # each running plan's backfill, sampled each tick
        self.ledger = Ledger()  # what each plan sent lately, for the others' budget
        self.tick_errors: Dict[str, int] = {}      # plan -> its ticks that failed on a bug, running

    # -- plan lifecycle -------------------------------------------------------------------------

    @property
    def state(self) -> Optional[PlanState]:
        """The newest plan (open or ended), or None."""
        return self.plans[-1] if self.plans else None

    @property
    def opened(self) -> List[PlanState]:
        """The plans running, paused or stopped (waiting for the operator)."""
        return [p for p in self.plans if p.status in OPEN]

    @property
    def active(self) -> bool:
        """A plan is running or paused: steps are still to be taken."""
        return any(p.status in ACTIVE for p in self.plans)

    @property
    def open(self) -> bool:
        """A plan is active, or stopped by a change it must not act on: it waits for the operator."""
        return bool(self.opened)

    def find(self, plan_id: Optional[str]) -> Optional[PlanState]:
        """The plan kept under `plan_id` (None: none, e.g. trimmed from the ended ones)."""
        return next((p for p in self.plans if p.id == plan_id), None)

    def plan(self, plan_id: str) -> PlanState:
        found = self.find(plan_id)
        if found is None:
            raise AdvisorError.not_found(f"no plan {plan_id[:64]!r} (`ceph pg-advisor progress` lists them)")
        return found

    def start(self, steps: List[PlanStep], pools: Sequence[Pool], source: Source, now: float,
              hold: bool = False, drain: Sequence[int] = ()) -> PlanState:
        """Run `steps` on `pools` (as they are now: the plan is bound to their ids and targets)
        beside the open plans that own nothing of it; `hold`: the first step, too, waits
        step_interval (what was just set settles first); `drain`: OSDs its balance rounds empty."""
        if not steps:
            raise AdvisorError.invalid("nothing to apply: no step is needed")
        if {s.pool_id for s in steps} - {p.id for p in pools}:
            raise AdvisorError.invalid("a step names a pool the plan is not for")
        check_start(self.plans, steps, drain)
        state = PlanState(
            id=uuid.uuid4().hex[:8], source=source, created=now, steps=list(steps),
            # a pool without a step of its own is there for the balance rounds' total
            pools={p.name: PoolTarget(id=p.id, start=p.pg_num,
                                      goal=next((s.pg_num for s in reversed(steps) if s.pool_id == p.id),
                                                p.pg_num),
                                      expect=[p.pg_num_target, p.pgp_num_target])
                   for p in pools},
            last_step_at=now if hold else None, drain=[int(x) for x in drain])
        self.plans.append(state)
        self._trim()
        self.log(now, Event.START, f"{len(steps)} steps: " + "; ".join(
            f"{n} pg_num {p.start} -> {p.goal}" for n, p in sorted(state.pools.items())), state)
        self.save()
        return state

    def _trim(self) -> None:
        """The open plans and the ENDED_KEPT newest ended ones are kept."""
        ended = [p for p in self.plans if p.status not in OPEN]
        gone = {id(p) for p in ended[:max(0, len(ended) - ENDED_KEPT)]}
        self.plans = [p for p in self.plans if id(p) not in gone]
        for plan in set(self.rates) - {p.id for p in self.plans if p.status in ACTIVE}:
            del self.rates[plan]

    def check_free(self) -> None:
        """EBUSY while no further plan may open (side_by_side.OPEN_MAX)."""
        check_room(self.plans)

    def choose(self, plan_id: Optional[str], *statuses: Status) -> PlanState:
        """The plan `plan_id` names, in one of `statuses`; with none named, the one plan in
        them (ENOENT when there is none, EINVAL when there are several)."""
        if plan_id:
            state = self.plan(plan_id)
            if state.status not in statuses:
                raise AdvisorError.not_found(f"plan {state.id} is {state.status}, "
                                             f"not {' or '.join(statuses)}")
            return state
        found = [p for p in self.plans if p.status in statuses]
        if not found:
            raise AdvisorError.not_found(f"no plan is {' or '.join(statuses)}")
        if len(found) > 1:
            raise AdvisorError.invalid(f"plans {', '.join(p.id for p in found)} are {' or '.join(statuses)}: "
                                       f"name one with --plan")
        return found[0]

    def pause(self, now: float, plan_id: Optional[str] = None) -> PlanState:
        state = self.choose(plan_id, *ACTIVE)
        if state.status == Status.PAUSED:
            raise AdvisorError.invalid(f"plan {state.id} is already paused")
        state.status = Status.PAUSED
        self.log(now, Event.PAUSE, "no new step until resume; a step in flight finishes in Ceph", state)
        self.save()
        return state

    def resume(self, now: float, plan_id: Optional[str] = None) -> PlanState:
        state = self.choose(plan_id, Status.PAUSED) if not plan_id else self.choose(plan_id, *ACTIVE)
        if state.status != Status.PAUSED:
            raise AdvisorError.invalid(f"plan {state.id} is not paused")
        state.status = Status.RUNNING
        self.log(now, Event.RESUME, "", state)
        self.save()
        return state

    def abort(self, snap: Snapshot, send: Send, now: float, plan_id: Optional[str] = None) -> str:
        """Stop, leaving each pool with equal pg_num and pgp_num targets: the PGs that
        exist are placed when growing, the PGs already moved together are merged when
        shrinking (Ceph completes that at its own pace); no further step is taken. A pool
        that is gone, renamed, recreated or retargeted by someone else is left alone."""
        state = self.choose(plan_id, *OPEN)
        notes: List[str] = []
        for name, p in sorted(state.pools.items()):
            if not stepped(state, p):
                continue           # in the plan for its rounds alone: its targets are not the plan's
            why = changed(state, snap, name, p)
            if why:
                notes.append(f"{name}: left alone ({why})")
                continue
            pool = snap.pool_by_name(name)
            want = pool.pg_num if p.goal >= p.start else pool.pgp_num
            for var, cur in (("pg_num", pool.pg_num_target), ("pgp_num", pool.pgp_num_target)):
                if cur != want:
                    rc, err = send(pool_set(name, var, want))
                    if rc != 0:
                        notes.append(f"{name}: setting {var} {want} failed: {err.strip()}")
            notes.append(f"{name}: left at pg_num {want} and pgp_num {want}; {abs(p.goal - want)} "
                         f"PGs short of the plan's {p.goal}")
        state.status = Status.ABORTED
        state.blockers, state.conflicts, state.waiting = [], [], None     # nothing waits any more
        summary = f"plan {state.id}: " + ("; ".join(notes) or "no pg_num target of it to leave")
        self.log(now, Event.ABORT, summary, state)
        self._trim()
        self.save()
        return summary

    # -- a pool of the plan deleted ---------------------------------------------------------------

    def _drop(self, state: PlanState, name: str, p: PoolTarget, why: str, now: float) -> None:
        """A pool of the plan was deleted: nothing is left to do for it, and unlike a rename
        or a retarget the operator's intent is not in doubt. Its steps are skipped and the
        plan goes on with its other pools (a plan of auto mode, stopped, would hold auto mode
        until an operator came by). What the plan keeps of the pool's PGs goes with it, so
        that no command names them."""
        del state.pools[name]
        skipped = sum(1 for s in state.steps[state.next:] if s.pool_id == p.id)
        if state.next < len(state.steps) and state.step().pool_id == p.id:
            state.phase, state.rounds = Phase.IDLE, 0
            state.attempts, state.retry_at, state.last_error = 0, None, None

        def mine(pgid: str) -> bool:
            return pgid.split(".")[0] == str(p.id)
        if state.round is not None:
            state.round.items = {k: v for k, v in state.round.items.items() if not mine(k)}
            state.round.want = {k: v for k, v in state.round.want.items() if not mine(k)}
        state.pins = {k: v for k, v in state.pins.items() if not mine(k)}
        state.full_pins = {k: v for k, v in state.full_pins.items() if not mine(k)}
        state.pins_left = min(state.pins_left, len(state.pins) + len(state.full_pins))
        self.log(now, Event.DROP, f"{why}: its {skipped} remaining steps are skipped; the plan goes on"
                 + (f" with {', '.join(sorted(state.pools))}" if state.pools else ""), state)

    def stop(self, state: PlanState, why: str, now: float) -> None:
        state.status, state.stopped_why = Status.STOPPED, why[:REASON_MAX]
        state.blockers, state.conflicts, state.waiting = [], [], None
        self.log(now, Event.STOP, f"{why}; no command is sent to it; `abort` ends the plan", state)

    # -- the tick -------------------------------------------------------------------------------

    def tick(self, t: Tick) -> None:
        """Each running plan's next move on `t`'s snapshot, drains first (side_by_side.py),
        each seeing what the others hold and sent."""
        self.ledger.expire(t.now)
        failure: Optional[Exception] = None
        finished = {h["plan"]: h["time"] for h in self.history if h["event"] == Event.FINISH.value}
        for state in in_order(self.plans):
            if state.id in t.held:       # e.g. its pins not yet checked: a round would take them out
                state.waiting = t.held[state.id]
                continue
            others = others_of(self.plans, state, self.ledger, t.now, t.snap.osds.count, finished)
            try:
                self._tick_plan(state, dataclasses.replace(t, others=others))
                self.tick_errors.pop(state.id, None)
            except AdvisorError:
                raise
            except Exception as e:      # a bug in one plan's tick: the others still tick
                failure = failure or e
                self._tick_failed(state, e, t.now)
        self._trim()
        self.save()
        if failure is not None:
            raise failure               # for the mgr log's traceback

    def _tick_failed(self, state: PlanState, e: Exception, now: float) -> None:
        """A bug that fails every tick (an exception other than the module's own errors)
        would keep a plan running for ever, retried each poll and nothing moving: after
        TICK_ERRORS_STOP in a row the plan stops, the error in its reason (the traceback
        in the mgr log), for the operator's `abort`."""
        n = self.tick_errors[state.id] = self.tick_errors.get(state.id, 0) + 1
        if n >= TICK_ERRORS_STOP and state.status == Status.RUNNING:
            self.stop(state, f"internal error on {n} ticks running ({type(e).__name__}: {e}; the mgr "
                      f"log has the traceback)", now)
            del self.tick_errors[state.id]

    def _tick_plan(self, state: PlanState, t: Tick) -> None:
        """The plan's next move: drop or stop on a changed pool, advance past steps done,
        then take the next step (or a round of it) if the pacing allows."""
        snap, pacing, now = t.snap, t.pacing, t.now
        rate = self.rates.setdefault(state.id, BackfillRate())
        rate.add(state.id, now, bytes_left(snap, self._pools(state, snap)))
        for name, p in sorted(state.pools.items()):
            why = changed(state, snap, name, p)
            if why and not any(q.id == p.id for q in snap.pools):
                self._drop(state, name, p, why, now)
            elif why:
                self.stop(state, why, now)
                return
        while state.next < len(state.steps):
            step = state.step()
            target = state.pools.get(step.pool)
            if target is None or target.id != step.pool_id:
                state.next += 1              # its pool was deleted (_drop)
                continue
            pool = snap.pool_by_name(step.pool)       # checked above: the plan's own pool
            if state.phase == Phase.ISSUING and self._shown(state, snap, pool, step):
                state.phase = Phase.ISSUED       # sent before a failover: do not send it again
                self._issued(state, step, now)
                self.log(now, Event.RECOVERED, f"step {state.next + 1} was already sent", state)
            if state.phase == Phase.ISSUED:
                if not step_done(pool, step):
                    state.waiting = (f"Ceph is at pg_num {pool.pg_num}, pgp_num {pool.pgp_num} "
                                     f"(step {state.next + 1} wants {step.pg_num}, {step.pgp_num})")
                    break
                self.advance(state, step, now)
                continue
            ours = sets_upmaps(pacing.balancer_active)
            if step.kind is StepKind.BALANCE and not ours and state.round is None:
                # Ceph's own balancer evens the pool; pg_advisor sets no items beside it
                self.advance(state, step, now, " (left to Ceph's balancer, active)")
                continue
            if step.kind is StepKind.BALANCE and state.round is not None:
                if not self._apply(state, step, snap, now, round_checked(state, snap, now)):
                    break
            # half sent before a failover (its targets are in the pool, its pins not): the
            # PGs already move, and the rest of the step is what stops them, so the pacing
            # that would hold a new step back does not hold this one
            half_sent = state.phase == Phase.ISSUING and targets_shown(pool, step)
            if not may_issue(state, t, pool, step, half_sent):
                break
            if step.kind is StepKind.BALANCE:
                if self._apply(state, step, snap, now, balance_round_step(state, t, step)):
                    break
                continue
            self._issue(state, t, step)
            break
        else:
            self._finish(state, snap, now)

    def _finish(self, state: PlanState, snap: Snapshot, now: float) -> None:
        """Every step sent and shown: the plan is done once its pools' PGs are active+clean
        where the map puts them (settling.py), not before."""
        moving = still_moving(snap, self._pools(state, snap))
        if moving is not None:
            state.waiting = (f"all {len(state.steps)} steps sent; done once the data has moved: "
                             f"{moving.pgs} PGs not yet active+clean where the map puts them "
                             f"(e.g. {moving.example})")
            return
        state.status = Status.DONE
        state.waiting = None
        self.log(now, Event.FINISH, f"all {len(state.steps)} steps done", state)

    @staticmethod
    def _pools(state: PlanState, snap: Snapshot) -> List[Pool]:
        """The plan's pools as they are in `snap` (one deleted or recreated is not)."""
        return [p for p in snap.pools if p.name in state.pools and p.id == state.pools[p.name].id]

    def _apply(self, state: PlanState, step: PlanStep, snap: Snapshot, now: float, out: Outcome) -> bool:
        """Do what a balance round asks of the plan, in Outcome's order; its `more`."""
        for event, detail in out.events:
            self.log(now, event, detail, state)
        if out.spent is not None:
            self.ledger.record(out.spent)
        if out.failed is not None:
            self.failed(state, out.failed, now)
        if out.verify is not None:
            self.verify(snap, out.verify, "round", now, state)
        if out.stop is not None:
            self.stop(state, out.stop, now)
        if out.advance is not None:
            self.advance(state, step, now, out.advance)
        return out.more

    def advance(self, state: PlanState, step: PlanStep, now: float, how: str = "") -> None:
        """The current step is done: log it and make the next one current."""
        self.log(now, Event.DONE, f"step {state.next + 1}/{len(state.steps)}: {step.describe()}{how}", state)
        state.next, state.phase, state.last_step_at, state.rounds = state.next + 1, Phase.IDLE, now, 0
        state.attempts, state.retry_at, state.last_error = 0, None, None

    def _from_pgp(self, state: PlanState, step: PlanStep) -> int:
        """The pool's pgp_num before this step: the plan's last target for it."""
        return state.pools[step.pool].expect[1]

    def _shown(self, state: PlanState, snap: Snapshot, pool: Pool, step: PlanStep) -> bool:
        if step.pin:
            return pins_shown(snap, pool, step, self._from_pgp(state, step))
        return targets_shown(pool, step)

    def failed(self, state: PlanState, error: str, now: float) -> None:
        """A command failed: try again later, longer each time, and say so."""
        state.attempts += 1
        state.last_error = error[:REASON_MAX]
        state.retry_at = now + min(RETRY_MAX_DELAY, 5.0 * 2 ** (state.attempts - 1))
        self.log(now, Event.RETRY, f"step {state.next + 1} attempt {state.attempts} failed: {error}", state)

    def verify(self, snap: Snapshot, want: Dict[str, List[int]], what: str, now: float,
               state: Optional[PlanState]) -> Dict[str, str]:
        """Compare the up sets the cluster's map gives `want`'s PGs with the ones their items
        were written for; each PG that differs is counted, logged and kept for health (with
        `state`'s plan)."""
        if not want:
            return {}
        got = self.up_sets(snap, sorted(want))
        bad = map_mismatches(snap, want, got)
        if bad and state is not None:
            state.mismatched += len(bad)
            shown = [f"{k}: {v}" for k, v in sorted(bad.items())]
            state.mismatch_detail = (state.mismatch_detail + shown)[-MISMATCH_SHOWN:]
            self.log(now, Event.MISMATCH, f"{len(bad)} of the {len(want)} PGs of the {what} are not where "
                     f"their items put them, e.g. {shown[0]}", state)
        return bad

    def _issue(self, state: PlanState, t: Tick, step: PlanStep) -> None:
        snap, now = t.snap, t.now
        state.phase = Phase.ISSUING
        self.checkpoint()                # a failover from here resends only if not shown
        if step.pin:
            cmds = pin_commands(snap, step, self._from_pgp(state, step))
        elif step.kind is StepKind.PGP_NUM and t.pacing.prime:
            cmds = primed_pgp_commands(snap, step, self._from_pgp(state, step))
        else:
            cmds = target_commands(step)
        unpinned, unprimed = [], []
        for sc, (rc, err) in zip(cmds, t.burst([c.cmd for c in cmds])):
            cmd = sc.cmd
            if rc != 0 and sc.role is Role.PRIME:
                unprimed.append(f"{cmd['pgid']}: {err.strip()}")
            elif rc != 0 and sc.role is Role.PIN:
                unpinned.append(f"{cmd['pgid']}: {err.strip()}")
            elif rc != 0:
                state.phase = Phase.IDLE
                self.failed(state, f"{cmd['var']} {cmd['val']}: {err.strip() or f'error {rc}'}", now)
                return
        if unpinned:
            self.log(now, Event.UNPINNED, f"{len(unpinned)} pins refused, e.g. {unpinned[0]}", state)
        if unprimed:
            self.log(now, Event.UNPRIMED, f"{len(unprimed)} pg-temps refused, e.g. {unprimed[0]}", state)
        state.phase = Phase.ISSUED
        self._issued(state, step, now)
        self.ledger.record(step_spend(state.id, t, step))
        primed = sum(1 for c in cmds if c.role is Role.PRIME) - len(unprimed)
        pinned = sum(1 for c in cmds if c.role is Role.PIN) - len(unpinned)
        self.log(now, Event.ISSUE, f"step {state.next + 1}/{len(state.steps)}: {step.describe()}"
                 + (f", {primed} primed" if primed else "")
                 + (f", {pinned} pinned" if step.pin else ""), state)

    @staticmethod
    def _issued(state: PlanState, step: PlanStep, now: float) -> None:
        state.issued_at = now
        state.waiting = None
        state.pools[step.pool].expect = [step.pg_num, step.pgp_num]

    # -- reporting (plan_report.py) ------------------------------------------------------------

    def progress(self) -> List[Tuple[str, float, str, Status]]:
        """(plan id, fraction done, one line, status) of each plan kept, for its progress event."""
        return [progress_line(p) for p in self.plans]

    def report(self, plan_id: Optional[str] = None) -> Dict[str, Any]:
        """The plan `plan_id` names (by default the newest open one, else the newest) and its
        steps, and a line for each plan kept: a copy."""
        opened = self.opened
        state = self.plan(plan_id) if plan_id else opened[-1] if opened else self.state
        return plan_report(state, self.plans, self.rates)

    # -- persistence ----------------------------------------------------------------------------

    def log(self, now: float, event: Event, detail: str, state: Optional[PlanState] = None) -> None:
        """An event in the plans' history (`ceph pg-advisor history`), of `state`'s plan
        (by default the newest)."""
        state = state or self.state
        self.note(now, event, detail, state.id if state else None)

    def note(self, now: float, event: Event, detail: str, plan: Optional[str] = None) -> None:
        """An event in the history, of `plan` (None: of no plan)."""
        self.history.append(HistoryEvent(now, plan, event.value, detail[:DETAIL_MAX]).to_json())
        del self.history[:-HISTORY_MAX]
        self.changed = True

    def events(self) -> Iterator[HistoryEvent]:
        """The history read back, the latest event first."""
        return (HistoryEvent.from_json(h) for h in reversed(self.history))

    def save(self) -> None:
        """The state changed: written now, or at the end of the transaction that holds it
        (plan_service.py), once."""
        self.changed = True
        if not self.held:
            self.write()

    def checkpoint(self) -> None:
        """Written now, inside a transaction too: before a command goes to the mon, so that
        a failover after it knows it may have gone (the one write ahead of a transaction's
        end)."""
        self.write()

    def write(self) -> None:
        self._save([p.to_json() for p in self.plans], self.history)
