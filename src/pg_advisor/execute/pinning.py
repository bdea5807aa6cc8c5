"""A plan's pins: set in small bursts (or with a weight change, in the one burst that makes
the mon take both into one map epoch), then the drain plan that releases them; checked
once against the map that first holds them, and counted down as the rounds take them out."""
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..balance.proposal import items_json
from ..balance.remapped import SKIP_SHOWN, Pins, pins_report
from ..model.distribution import object_copies
from ..model.snapshot import Snapshot
from .context import Context
from .executor import Executor
from .history import Event
from .plan_state import Source
from .rounds import set_full, set_items, set_with, unset_full
from .steps import spanning_steps

CHECK_WAIT = 120.0     # seconds the pins' plan waits for the map that holds them


@dataclass
class Landing:
    """A crush-reweight whose weights' map epoch the background finds (mgr/serve.py) once a
    map after `first` is in: the weights, and what was pinned with them (items, full)."""
    first: int
    weights: Dict[int, float]
    report: Dict[str, Any]
    until: float             # after this, the search ends with what it found


class PinBook:
    """What the module keeps of the pins it set (not stored: a new mgr counts them again
    from the plan's state and the map)."""

    def __init__(self) -> None:
        self.pinned_at = -1               # maps up to this epoch do not show the pins yet
        self.want: Dict[str, List[int]] = {}      # pins not yet checked against the map
        self.verified: Optional[Dict[str, Any]] = None    # what the last check found
        self.unpinnable: Tuple[int, float] = (-1, 0.0)    # (epoch, until when) nothing was pinnable
        self.plan: Optional[str] = None   # the plan the pins waiting for their check are of
        self.check_by = 0.0               # when the pins' check gives up waiting for their map
        self.landing: Optional[Landing] = None        # a weight change still to be found
        self.landed: Optional[Dict[str, Any]] = None  # where the last one landed (weight_landing)

    def pin(self, ex: Executor, ctx: Context, pins: Pins, source: Source,
            lead: Sequence[Dict[str, Any]] = (), report: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Within a transaction: set the pins in small bursts, then start the drain plan. With
        `lead` (a weight change), the lead and every pin go out in one burst instead, the
        lead first, so that the mon takes them into one map epoch."""
        snap, burst, now = ctx.snap, ctx.sender(), ctx.now
        out = dict(report if report is not None else pins_report(snap, pins), dry_run=False)
        if lead:
            lead_failed, refused, refused_full = set_with(snap, lead, pins.items, pins.full, burst)
            if lead_failed:
                # the weight did not change: what the pins would do without it is undone (each
                # PG's items as they were; a full pg-upmap removed), so that nothing moves
                sent = [k for k in pins.items if k not in refused.failed]
                undo = set_items(snap, {k: snap.pg_upmap_items.get(k, ()) for k in sent}, burst, prime=False)
                undo_full = unset_full([k for k in pins.full if k not in refused_full.failed], burst)
                out.update(failed=refused.messages() + refused_full.messages(), lead_failed=lead_failed,
                           undo_failed=undo.messages() + undo_full.messages())
                return out
        else:
            refused = set_items(snap, pins.items, burst, prime=False)
            refused_full = set_full(snap, pins.full, burst)
        failed = out["failed"] = refused.messages() + refused_full.messages()
        done = set(pins.items) - set(refused.failed)
        full = {k: v for k, v in pins.full.items() if k not in refused_full.failed}
        done |= set(full)
        if not done:
            return out
        # every pool: the drain evens each pool and their total, as `balance` does (a pool not
        # pinned may be uneven too: an empty PG is on its new OSDs within a second)
        pools = list(snap.pools)
        copies = object_copies(snap)
        # each round spans all the plan's pools; the budget, not a count, bounds it
        steps = spanning_steps(pools, sum(max(len(pins.items.get(k, ())), 1) for k in done), copies)
        state = ex.start(steps, pools, source, now, hold=True)
        out["plan"] = state.id
        # what PG_ADVISOR_PINNED counts down as the drain takes the items out (a PG pinned
        # by removing its items has none to count)
        state.pins = items_json({k: pins.items[k] for k in done if pins.items.get(k)})
        state.full_pins = {k: [int(o) for o in v] for k, v in sorted(full.items())}
        state.pins_left = len(state.pins) + len(state.full_pins)
        # every answer is in: the mon's epoch now holds all that landed (the weight and its
        # pins may span two epochs); their check waits for the mgr's map to reach it, in the
        # background, rather than run on an epoch between them and count pins not yet there
        landed = ctx.mon_epoch() if ctx.mon_epoch is not None else None
        self.pinned_at = max(snap.epoch, landed - 1) if landed is not None else snap.epoch
        self.plan = state.id
        self.check_by = now + CHECK_WAIT
        self.landed = None
        self.want = {k: pins.want[k] for k in done}
        self.verified = None
        what = "PGs the weight change remaps" if lead else "remapped PGs"
        ex.log(now, Event.PIN, f"{len(done)} {what} pinned onto their data"
               + (f", {len(failed)} refused" if failed else ""))
        return out

    def verify(self, ex: Executor, snap: Snapshot, now: float) -> None:
        """Within a transaction: the PGs whose up set in `snap` is not the set they were
        pinned onto (each counted and logged; health names them)."""
        want, self.want = self.want, {}
        state = ex.find(self.plan)
        bad = ex.verify(snap, want, "pins", now, state)
        self.verified = {"checked": len(want), "mismatched": len(bad),
                         "mismatched_pgs": dict(sorted(bad.items())[:SKIP_SHOWN])}
        ex.log(now, Event.CHECKED, f"pins at epoch {self.pinned_at}, checked at epoch {snap.epoch}: "
                                   f"{len(want) - len(bad)} of {len(want)} PGs where their pins put them",
               state)

    def held(self) -> Dict[str, str]:
        """The plan whose pins wait for their check takes no round until then (its first
        round would take pins out before the check reads them): plan id -> why."""
        if not self.want or self.plan is None:
            return {}
        return {self.plan: f"its pins are checked first, on the first map after epoch {self.pinned_at}"}

    def expire(self, ex: Executor, now: float) -> None:
        """Within a transaction: pins whose map did not come within CHECK_WAIT are left
        unchecked (said in the history) and their plan goes on."""
        if not self.want or now < self.check_by:
            return
        n, self.want = len(self.want), {}
        state = ex.find(self.plan)
        ex.log(now, Event.CHECKED, f"pins at epoch {self.pinned_at} not checked: no later map came "
                                   f"in {CHECK_WAIT:.0f} s ({n} PGs)", state)

    def due(self, snap: Snapshot) -> bool:
        """Pins wait for their check, and `snap` is the first map that may hold them."""
        return bool(self.want) and snap.epoch > self.pinned_at

    def count(self, ex: Executor, snap: Snapshot) -> None:
        """Within a transaction: how many of each open plan's pins the map still has (a PG
        counts while any of its pin items, or its full pg-upmap, is there)."""
        if snap.epoch <= self.pinned_at:
            return
        for state in ex.opened:
            if not (state.pins or state.full_pins):
                continue
            left = sum(1 for pgid, pairs in state.pins.items()
                       if {tuple(p) for p in pairs} & set(snap.pg_upmap_items.get(pgid, ())))
            left += sum(1 for pgid, osds in state.full_pins.items()
                        if list(snap.pg_upmap.get(pgid, ())) == osds)
            if left != state.pins_left:
                state.pins_left = left
                ex.save()
