"""Plans side by side: which may run together, in what order they tick, and what each
leaves the others.

- At most OPEN_MAX plans are open at once: each plan of balance rounds runs the balancer
  once a round, in the mgr's one thread that other modules share.
- A pool's pg_num belongs to one plan at a time: a plan whose steps change a pool's
  pg_num or pgp_num is refused while another open plan still changes it, and no other
  plan's balance round moves that pool's PGs until it is done (they would be remapped
  under its items by the next pgp_num step).
- The OSDs an open plan drains are no destination of any plan's round: every round treats
  them as drained, so a balance plan evens the pools around the OSDs being emptied. So are
  the OSDs of a drain that is done, for the plans that ran beside it while it is kept
  (ENDED_KEPT): the operator takes them out next, and a split finishing after the drain
  must not fill them again.
- One misplaced budget and one backfill limit per OSD for all: each plan's step counts
  what the others sent in the last seconds on top of the cluster's figures (ledger.py),
  and a round leaves the PGs another round just moved alone.
- Drains go first (a disk being emptied is the operator's urgency, and the pins of
  pin-remapped and crush-reweight hold data where it was), then pg_num changes, then plans
  of balance rounds alone; within a rank, the older plan first. The first takes what it
  needs of the budget; the next takes what is left.
"""
from typing import Dict, List, Mapping, Sequence, Set

from ..model.errors import AdvisorError
from .context import Others
from .ledger import Ledger
from .plan_state import OPEN, PlanState, Source, Status
from .steps import PlanStep, StepKind

OPEN_MAX = 4        # plans open at once
ENDED_KEPT = 3      # ended plans kept (for progress and health) beside the open ones

DRAINS = (Source.DRAIN, Source.PIN_REMAPPED, Source.CRUSH_REWEIGHT)


def rank(state: PlanState) -> int:
    """0 drains (and pins), 1 pg_num changes, 2 balance rounds alone."""
    if state.source in DRAINS or state.drain:
        return 0
    return 2 if all(s.kind is StepKind.BALANCE for s in state.steps) else 1


def in_order(plans: Sequence[PlanState]) -> List[PlanState]:
    """The running plans in the order they tick."""
    return sorted((p for p in plans if p.status == Status.RUNNING), key=lambda p: (rank(p), p.created))


def changing(state: PlanState) -> Set[int]:
    """The pools (ids) whose pg_num or pgp_num an open plan has still to change."""
    if state.status not in OPEN:
        return set()
    return {s.pool_id for s in state.steps[state.next:] if s.kind is not StepKind.BALANCE}


def check_room(plans: Sequence[PlanState]) -> None:
    """EBUSY when OPEN_MAX plans are open already."""
    opened = [p for p in plans if p.status in OPEN]
    if len(opened) >= OPEN_MAX:
        raise AdvisorError.busy(f"{len(opened)} plans are open ({', '.join(p.id for p in opened)}), "
                                f"the most pg_advisor runs at once: let one finish or abort it")


def check_start(plans: Sequence[PlanState], steps: Sequence[PlanStep], drain: Sequence[int]) -> None:
    """EBUSY when a new plan of `steps` (draining `drain`) would change what an open plan
    owns: a pool's pg_num, or the OSDs it drains."""
    check_room(plans)
    mine = {s.pool_id: s.pool for s in steps if s.kind is not StepKind.BALANCE}
    for p in plans:
        both = sorted(set(mine) & changing(p))
        if both:
            raise AdvisorError.busy(f"plan {p.id} ({p.status}) is changing pool {mine[both[0]]}'s pg_num: "
                                    f"one plan a pool; let it finish or abort it")
        if p.status in OPEN and set(drain) & set(p.drain):
            osd = min(set(drain) & set(p.drain))
            raise AdvisorError.busy(f"plan {p.id} ({p.status}) drains osd.{osd} already")


def others_of(plans: Sequence[PlanState], me: PlanState, ledger: Ledger, now: float, osds: int,
              finished: Mapping[str, float]) -> Others:
    """What the other open plans hold while `me` ticks (`finished`: plan -> when it was
    done, as far as the history tells)."""
    busy: Dict[str, str] = {}
    avoid: Set[int] = set()
    for p in plans:
        if p is me:
            continue
        if p.status == Status.DONE and me.created <= finished.get(p.id, float("-inf")):
            # emptied beside `me`, waiting to be taken out: kept empty (a plan started
            # after the drain was done is the operator's choice with the OSD in)
            avoid |= set(p.drain)
        if p.status not in OPEN:
            continue
        mine = changing(p)          # once a plan: its steps are scanned, not once a pool
        busy.update({name: p.id for name, target in p.pools.items() if target.id in mine})
        avoid |= set(p.drain)
    return Others(copies=ledger.copies(me.id, now), osd_adds=ledger.osd_adds(me.id, now, osds),
                  claimed=frozenset(ledger.claimed(me.id, now)), avoid=tuple(sorted(avoid - set(me.drain))),
                  busy=busy)
