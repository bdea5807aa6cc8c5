"""When the plan's next step may go out: what blocks it (the cluster, the window, a conflict)
and what it waits for (a retry, the interval, the misplaced budget, backfills), as the
sentences the state shows."""
import datetime

import numpy as np

from ..model.distribution import object_copies
from ..model.misplaced import misplaced_ratio, step_fits
from ..model.snapshot import Pool
from .context import Tick
from .gates import unreported_pgs
from .ledger import Spend
from .pacing import BlockerKind, StepTraits, backfill_load, blockers
from .plan_state import PlanState
from .steps import PlanStep, StepKind, step_load


def may_issue(state: PlanState, t: Tick, pool: Pool, step: PlanStep, half_sent: bool = False) -> bool:
    """May the step be sent now? What blocks it goes to the state's blockers (and its
    conflicts), what it waits for to its waiting line."""
    snap, pacing, now = t.snap, t.pacing, t.now
    balance = step.kind is StepKind.BALANCE
    traits = StepTraits(upmaps=step.pin or balance, half_sent=half_sent, pg_num=not balance,
                        pools=tuple(sorted(p.id for p in state.pools.values())) if balance else ())
    found = blockers(snap, pool, pacing, now, traits)
    state.blockers = [b.text for b in found]
    # by kind, not by what the text says (a pool may be named "balancer-x")
    state.conflicts = [b.text for b in found if b.kind is BlockerKind.CONFLICT]
    if state.blockers:
        state.waiting = None
        return False
    waits = []
    if state.retry_at is not None and now < state.retry_at:
        waits.append(f"retrying after {_clock(state.retry_at)}: {state.last_error}")
    if half_sent:
        state.waiting = "; ".join(waits) or None
        return not waits
    primed = pacing.prime and step.kind is StepKind.PGP_NUM
    unseen = unreported_pgs(snap, pool) if step.pin or primed else 0
    if unseen:       # their pins or pg_temps come from the stats: unprimed they change primary
        waits.append(f"{unseen} PGs of pool {pool.name} not in the PG stats yet")
    if state.last_step_at is not None and now - state.last_step_at < pacing.interval:
        waits.append(f"next step after {_clock(state.last_step_at + pacing.interval)}")
    others = t.others
    copies = object_copies(snap)
    ratio = misplaced_ratio(snap) + (others.copies / copies if copies > 0 else 0.0)
    # a pg_num or pgp_num step by its estimate on the whole budget; a balance step's round
    # plans its moves within what is left of it (balance_steps.py), so that a drain's next
    # round is not held until every other plan's backfill has ended
    if step.kind is not StepKind.BALANCE and not step_fits(ratio, step.misplaced, pacing.misplaced_max):
        waits.append(f"misplaced {100 * ratio:.2f}% + this step's {100 * step.misplaced:.2f}% "
                     f"would pass the budget {100 * pacing.misplaced_max:.2f}%"
                     + (" (other plans' steps counted)" if others.copies else ""))
    if pacing.max_backfills and step.max_osd_backfills and step.kind is StepKind.PGP_NUM:
        # per OSD: what backfills into or out of it now and what the step adds there (not
        # the busiest OSD anywhere plus the step's busiest: on thousands of OSDs some OSD
        # always backfills, and that held each step until the last one's data had moved);
        # what other plans just set moving there counts too
        load = backfill_load(snap)
        if others.osd_adds is not None:
            load = load + others.osd_adds[:load.size]
        adds = step_load(snap, pool, step.pgp_num)
        over = np.flatnonzero((adds > 0) & (load + adds > pacing.max_backfills))
        if over.size:
            osd = int(over[np.argmax(load[over])])
            waits.append(f"osd.{osd} has {load[osd]} PGs backfilling; this step adds "
                         f"{adds[osd]} (limit {pacing.max_backfills})"
                         + (f", and {over.size - 1} more OSDs" if over.size > 1 else ""))
    state.waiting = "; ".join(waits) or None
    return not waits


def step_spend(plan: str, t: Tick, step: PlanStep) -> Spend:
    """What a pg_num or pgp_num step just sent sets moving, for the other plans' budget:
    its estimate of misplaced copies, and per OSD the PGs a pgp_num step moves (known
    where the backfill limit is on: the gate mapped them)."""
    snap = t.snap
    adds = None
    if t.pacing.max_backfills and step.max_osd_backfills and step.kind is StepKind.PGP_NUM:
        adds = step_load(snap, snap.pool_by_name(step.pool), step.pgp_num)
    return Spend(plan, t.now, step.misplaced * object_copies(snap), adds, frozenset())


def _clock(t: float) -> str:
    """A moment as local HH:MM:SS: a waiting line that does not change every poll."""
    return datetime.datetime.fromtimestamp(t).strftime("%H:%M:%S")
