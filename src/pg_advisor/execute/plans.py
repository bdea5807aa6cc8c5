"""The plans the Driver starts: the executor and its store behind one lock, a plan's targets
(the operator's or the sizing advice) and steps, and the pins a drain plan then releases.
The Driver's commands (operator_commands.py) and its ticks (driver.py) build on it."""
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..analysis.plan import pg_num_plan
from ..balance.remapped import Pins, pins_report
from ..balance.proposal import items_json
from ..model.distribution import object_copies
from ..model.errors import AdvisorError
from ..model.limits import check_pg_num
from ..model.misplaced import misplaced_max
from ..model.options import Options
from ..model.snapshot import Snapshot
from ..sizing.sizer import Sizer
from .context import Context
from .executor import Executor
from .history import Event
from .plan_state import Source
from .plan_store import PlanStore
from .rounds import set_full, set_items, set_with, unset_full
from .steps import PlanStep, StepPlanner, Throttles, balance_step


def throttles(opts: Options, cluster_ratio: float) -> Throttles:
    return Throttles(misplaced_max=misplaced_max(opts, cluster_ratio),
                     max_splitting=opts.max_pgs_splitting,
                     max_backfills_per_osd=opts.max_backfills_per_osd,
                     pin=opts.split_pinning)


class Plans:
    """The executor behind the lock both the commands and the serve loop take, the plan
    store, and how a plan is made: its targets, its steps, a pinning and its drain."""

    def __init__(self, load: Callable[[str], Optional[str]],
                 store: Callable[[str, Optional[str]], None], now: float) -> None:
        self.store = PlanStore(load, store)
        state, history = self.store.read(now)      # never raises: what is unreadable is reported
        self.executor = Executor(state, history, self.store.write)
        self.lock = threading.Lock()     # commands and the serve loop share the executor
        self._next_balance_check = 0.0
        self.error: Optional[str] = None  # why the last tick could not run (e.g. a bad option)
        self._pinned_at = -1
        self._pins_want: Dict[str, List[int]] = {}   # pins not yet checked against the map
        self.pins_verified: Optional[Dict[str, Any]] = None    # what the last check found
        self._unpinnable = (-1, 0.0)     # (epoch, until when) pin_remapped found nothing to pin
        self._tick_errors = 0            # the plan's ticks that failed on a bug, running

    def _check_store(self) -> None:
        if self.store.error:
            raise AdvisorError.busy(self.store.error)

    def check_idle(self, what: str) -> None:
        """Refuse `what` (EBUSY) while a plan is open: its pins and rounds own the upmap
        items, and a manual round would overwrite them."""
        self._check_store()
        state = self.executor.state
        if self.executor.open and state is not None:
            raise AdvisorError.busy(f"not {what}: plan {state.id} is {state.status} and owns the "
                                    f"pool's upmap items; let it finish or `ceph pg-advisor abort` it")

    # -- planning -------------------------------------------------------------------------------

    def targets(self, snap: Snapshot, opts: Options, balanced: bool, pool: Optional[str],
                pg_num: Optional[int]) -> Dict[str, int]:
        """pool -> pg_num to reach: the operator's (`pg_num` goes with a `pool`: the command
        table checks it), or the sizing advice (shrinks first)."""
        if pool is not None:
            p = snap.pool_by_name(pool)
            if snap.autoscaler_acts(p):
                raise AdvisorError.busy(f"pool {pool}: pg_autoscaler manages it (pg_autoscale_mode "
                                        f"on); set it off to hand the pool to pg_advisor")
        if pool is not None and pg_num is not None:
            return {pool: int(pg_num)}
        changes = pg_num_plan(snap, opts, balanced).changes
        return {c.pool.name: c.pg_num for c in changes if pool is None or c.pool.name == pool}

    @staticmethod
    def auto_targets(snap: Snapshot, opts: Options, balanced: bool) -> Dict[str, int]:
        """What mode auto may change by itself: the plan's growth, and merges only under PG
        or memory pressure or the pool's own bounds; never a pool pg_autoscaler acts or
        warns on (one voice a pool)."""
        return {c.pool.name: c.pg_num for c in pg_num_plan(snap, opts, balanced).changes
                if c.automatic and snap.autoscaler_silent(c.pool)}

    def plan(self, snap: Snapshot, opts: Options, cluster_ratio: float,
             targets: Dict[str, int]) -> List[PlanStep]:
        planner = StepPlanner(snap, throttles(opts, cluster_ratio))
        steps: List[PlanStep] = []
        for name, target in targets.items():
            pool = snap.pool_by_name(name)
            check_pg_num(snap, pool, target)      # the mon's bounds first: they cost nothing
            if target == pool.pg_num_target:
                raise AdvisorError.invalid(f"pool {name} already has pg_num {target}")
            self._check_limit(snap, opts, name, target)
            steps.extend(planner.steps(pool, target))
        return steps

    @staticmethod
    def _check_limit(snap: Snapshot, opts: Options, name: str, target: int) -> None:
        """Refuse a target that would put more PGs on an OSD than the mon allows."""
        sizer = Sizer(snap, opts)
        pg = {p.id: (target if p.name == name else p.pg_num_target) for p in snap.pools}
        most = int(sizer.totals(pg).max(initial=0))
        if most > snap.mon_max_pg_per_osd:
            raise AdvisorError.invalid(
                f"pg_num {target} for pool {name} would put up to {most} PGs on an OSD, over "
                f"mon_max_pg_per_osd {snap.mon_max_pg_per_osd}")

    def _pin(self, ctx: Context, pins: Pins, source: Source, lead: Sequence[Dict[str, Any]] = (),
             report: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Set the pins in small bursts, then start the drain plan. With `lead` (a weight
        change), the lead and every pin go out in one burst instead, the lead first, so that
        the mon takes them into one map epoch."""
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
        shards = max(16, sum(max(len(pins.items.get(k, ())), 1) for k in done))
        steps = [balance_step(p, p.pg_num, p.pgp_num, shards, copies) for p in pools]
        state = self.executor.start(steps, pools, source, now, hold=True)
        out["plan"] = state.id
        # what PG_ADVISOR_PINNED counts down as the drain takes the items out (a PG pinned
        # by removing its items has none to count)
        state.pins = items_json({k: pins.items[k] for k in done if pins.items.get(k)})
        state.full_pins = {k: [int(o) for o in v] for k, v in sorted(full.items())}
        state.pins_left = len(state.pins) + len(state.full_pins)
        self._pinned_at = snap.epoch     # maps up to this one do not show the pins yet
        self._pins_want = {k: pins.want[k] for k in done}
        self.pins_verified = None
        what = "PGs the weight change remaps" if lead else "remapped PGs"
        self.executor.log(now, Event.PIN, f"{len(done)} {what} pinned onto their data"
                          + (f", {len(failed)} refused" if failed else ""))
        self.executor.save()
        return out
