"""A plan's balance step, round by round: the full pg-upmaps a pinning set go first (within
the budget), then rounds of pg-upmap-items over the plan's pools until each is even; before
each round, what the mon kept of the last one and where the map put its PGs.

A round changes the round's own records in the PlanState (the round in flight, its count,
what it waits for) and returns an Outcome: what the executor then does with the plan (log,
a failure, a check of the map, stop, the next step). No round takes the executor."""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..balance.proposal import unkept
from ..model.misplaced import MisplacedBudget, misplaced_ratio
from ..model.snapshot import Snapshot
from ..model.units import human_bytes
from .context import Tick
from .history import Event
from .ledger import Spend, item_load
from .pacing import backfill_load
from .plan_state import PlanState, RoundInFlight
from .rounds import balance_round, RoundSpec, topology_key, unset_full
from .step_commands import pgs_bytes
from .steps import ROUND_PGS, PlanStep


@dataclass
class Outcome:
    """What a round asks of the executor, done in this order: the events logged, a failure
    counted, the PGs checked against the map, the plan stopped, the step done."""
    more: bool = True                       # the step goes on (False: it is done)
    events: List[Tuple[Event, str]] = field(default_factory=list)
    failed: Optional[str] = None
    verify: Optional[Dict[str, List[int]]] = None     # pgid -> the up set wanted
    stop: Optional[str] = None
    advance: Optional[str] = None           # how the step ended ("" for plainly)
    spent: Optional[Spend] = None           # what the round set moving, for the other plans


BALANCE_ROUNDS_MAX = 1000

ROUND_CHECK_WAIT = 30.0     # seconds for a round's items to show in the map before they are checked
# PGs of a round whose items and wanted up sets the state keeps for the checks after it (the
# state entry stays far below the mon's 64 KiB: ~25 bytes of items and ~30 of up set a PG);
# a bigger round is checked on these
ROUND_CHECK_MAX = 300


def rounds_max(step: PlanStep) -> int:
    """Rounds after which a pool still uneven stops the plan: 1000, or four times the rounds
    the step's predicted moves take at a round's size, if more (a 32,768 -> 65,536 split
    pinned on 10,000 OSDs predicts up to 98,274 moves: some 6,000 rounds of 16)."""
    per_round = max(1, step.pgs_moving or ROUND_PGS)
    return max(BALANCE_ROUNDS_MAX, 4 * -(-step.shards_moving // per_round))


def balance_round_step(state: PlanState, t: Tick, step: PlanStep) -> Outcome:
    """One balance round on the pool: more rounds follow if it set items or waits for the
    budget; the step is done (`more` False) when the pool is as even as the balancer can
    make it."""
    snap, pacing, now = t.snap, t.pacing, t.now
    if state.full_pins:
        unpinned = unpin_full(state, t)
        if unpinned is not None:
            return unpinned
    # all the plan's pools at once: the rounds even each of them and their total (a
    # drain's without --and-balance: only empty its OSDs, so "done" is empty, not even)
    # and at most max_backfills_per_osd PGs moving into or out of one OSD, those
    # backfilling now included
    # what other plans hold (side_by_side.py): the budget and backfills they just spent,
    # the PGs they just moved, the OSDs they drain, the pools whose pg_num they change
    others = t.others
    load = backfill_load(snap)        # a pass over every PG's state: once a round
    if others.osd_adds is not None:
        load = load + others.osd_adds[:load.size]
    room = np.maximum(pacing.max_backfills - load, 0) if pacing.max_backfills else None
    budget = MisplacedBudget.of(snap, pacing.misplaced_max, others.copies)
    even = state.and_balance or not state.drain
    stepped = {s.pool for s in state.steps}
    pools = sorted(p for p in state.pools if p not in others.busy)
    held = sorted(p for p in stepped if p in others.busy)
    if not pools:
        state.waiting = "another plan is changing the pg_num of every pool of this plan"
        return Outcome()
    rnd = balance_round(snap, RoundSpec(pools, max(1, step.pgs_moving or ROUND_PGS),
                                        pacing.balance_mode, budget, pacing.min_gain, pacing.min_spread,
                                        sorted(set(state.drain) | set(others.avoid)), room, even,
                                        pacing.guards, others.claimed))
    r = rnd.proposal
    if not r.items and held:
        # the pool's PGs move once the plan changing its pg_num is done
        state.waiting = (f"pool {held[0]}'s pg_num is being changed by plan {others.busy[held[0]]}: "
                         f"its PGs move once that is done")
        return Outcome()
    in_flight = misplaced_ratio(snap) > 0 or bool(load.any()) or others.copies > 0
    if not r.items and r.throttled and in_flight:
        state.waiting = ("the misplaced budget or max_backfills_per_osd holds the next balance "
                         "round back" + (" (other plans' moves counted)" if others.copies else ""))
        return Outcome()
    # a pool in the plan for the total alone (no step of its own) that no move evens does
    # not hold the plan open: auto mode includes every pool, and one CRUSH itself leaves
    # uneven would hold auto mode (and its sizing) for good
    uneven = sorted((k, v) for k, v in (r.uneven if even else r.undrained).items() if k in stepped)
    what = "even" if even else "drained"
    if not r.items and r.throttled and uneven:
        # nothing moves now, so no room will come: the next move alone needs more
        # backfills into or out of one OSD than max_backfills_per_osd allows
        state.blockers = [f"pool {uneven[0][0]} is not {what}, and its next move needs more than "
                          f"max_backfills_per_osd ({pacing.max_backfills}) backfills into or out of "
                          f"one OSD: raise the option, or `abort`"]
        state.waiting = None
        return Outcome()
    if not r.items and uneven:
        # "done" means even: an uneven pool the rounds cannot improve stays in view
        state.blockers = [f"pool {uneven[0][0]} is not {what} and no legal move improves it: "
                          f"{uneven[0][1]}; the plan stays open (`abort` ends it)"]
        state.waiting = None
        return Outcome()
    if not r.items:
        return Outcome(more=False, advance=f" ({state.rounds} rounds)")
    if state.rounds >= rounds_max(step):
        return Outcome(stop=f"pool {step.pool}: still not even after {state.rounds} balance rounds")
    state.rounds += 1
    sent = rnd.apply(t.burst, pacing.prime)
    failed = sent.messages()
    state.last_step_at = now
    taken, want = rnd.to_check(ROUND_CHECK_MAX)
    state.round = RoundInFlight(snap.epoch, taken, want, topology_key(snap))
    items = rnd.items
    moved = pgs_bytes(snap, list(items))
    said = (f"step {state.next + 1}: {len(items)} PGs, {r.moves} moves"
            + (f", {human_bytes(moved)} in those PGs" if moved is not None else "")
            + (f", {sent.primed} primed" if sent.primed else "")
            + (f"; {len(failed)} failed: {failed[0]}" if failed else ""))
    refused = f"{len(failed)} of {len(items)} items refused, e.g. {failed[0]}" if failed else None
    spent = Spend(state.id, now, float(r.balancer.budget.misplaced),
                  item_load(snap.pg_upmap_items, items, snap.osds.count), frozenset(items))
    return Outcome(events=[(Event.ROUND, said)], failed=refused, spent=spent)


def unpin_full(state: PlanState, t: Tick) -> Optional[Outcome]:
    """The full pg-upmaps pin-remapped set (EC shards CRUSH swapped) go before any
    balance round: as many as the budget takes, one at least when nothing is misplaced.
    An outcome if it removed some or waits for the budget; None once none is left."""
    snap, now = t.snap, t.now
    present = [k for k, v in sorted(state.full_pins.items()) if list(snap.pg_upmap.get(k, ())) == v]
    state.full_pins = {k: state.full_pins[k] for k in present}    # gone: removed or cleaned by the mon
    if not present:
        return None
    budget = MisplacedBudget.of(snap, t.pacing.misplaced_max, t.others.copies)
    pgs = snap.pgs
    take: List[str] = []
    used = 0.0
    for k in present:
        # every shard may move (the swap and the rest): the PG's objects times its size
        cost = (float(pgs.objects[pgs.rows_of([k])].sum()) * len(state.full_pins[k])
                if pgs is not None else 0.0)
        if not budget.affordable(used, cost):
            break
        take.append(k)
        used += cost
    if not take:
        state.waiting = "the misplaced budget holds back the removal of the pinned pg-upmaps"
        return Outcome()
    sent = unset_full(take, t.burst)
    for k in take:
        if k not in sent.failed:
            del state.full_pins[k]
    state.last_step_at = now
    failed = sent.messages()
    said = (f"step {state.next + 1}: {len(take) - len(failed)} pinned pg-upmaps removed"
            + (f"; {len(failed)} failed: {failed[0]}" if failed else ""))
    refused = f"{len(failed)} of {len(take)} pg-upmap removals refused, e.g. {failed[0]}" if failed else None
    return Outcome(events=[(Event.UNPIN, said)], failed=refused,
                   spent=Spend(state.id, now, used, None, frozenset(take)))


def round_checked(state: PlanState, snap: Snapshot, now: float) -> Outcome:
    """What the mon kept of the last round's items; `more` False while its map may not
    show them yet (the round waits)."""
    rnd = state.round
    if rnd is None:
        return Outcome()
    if snap.epoch <= rnd.epoch and now - (state.last_step_at or now) < ROUND_CHECK_WAIT:
        state.waiting = "waiting for the map with the last round's items"
        return Outcome(more=False)
    state.round = None
    if rnd.topology and rnd.topology != topology_key(snap):
        # OSDs went up, down, in or out or were reweighted since the round: CRUSH's sets
        # changed under its items (the mon drops those no longer valid), so where its PGs
        # are says nothing about the items; the next round plans on the new map
        return Outcome(events=[(Event.UNCHECKED, f"the OSDs changed since the round of {len(rnd.items)} PGs: "
                                                 f"not checked; the next round starts from the new map")])
    lost = unkept(rnd.items, snap.pg_upmap_items)
    dropped = f"the mon did not keep the items of {len(lost)} PGs, e.g. {lost[0]}" if lost else None
    return Outcome(failed=dropped, verify={k: v for k, v in rnd.want.items() if k not in lost})
