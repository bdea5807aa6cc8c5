"""Mode auto's policy, said in one place: when the background starts a plan by itself and
which. In order, each only while no plan is open and not within AUTO_COOLDOWN of an
abort: an OSDMap change that remapped more than the misplaced budget is pinned and then
drained (pin_on_change); the pg_num changes the sizing marks automatic, in pools
pg_autoscaler leaves alone; with none due and Ceph's balancer off, a plan of balance
rounds for the pools the balancer would change, else a round of primary changes. Beside
an operator's open plans (side_by_side.py), only the pg_num changes, of pools none of
them changes."""
from typing import Dict

from ..balance.primaries import allows_primaries, plan_primaries
from ..balance.budget import Guards, Limits
from ..balance.proposal import Aim, propose
from ..balance.remapped import pin_remapped
from ..model.distribution import object_copies
from ..model.misplaced import misplaced_max, misplaced_ratio
from ..model.options import Mode, Options
from ..model.snapshot import Snapshot
from ..analysis.plan import pg_num_plan
from .context import Context
from .executor import Executor
from .gates import cluster_blockers, sets_upmaps
from .history import Event
from .pacing import BYTES_SPREAD
from .pinning import PinBook
from .plan_state import Source
from .side_by_side import OPEN_MAX, changing
from .planning import plan_steps
from .rounds import Burst, set_primaries
from .steps import balance_step

AUTO_COOLDOWN = 3600.0      # after an abort, auto mode waits this long before a new plan


class AutoMode:
    def __init__(self) -> None:
        self.next_balance_check = 0.0     # the balancer's proposal is not rerun every poll
        self.next_side_check = 0.0        # nor the sizing while operators' plans run

    def tick(self, ex: Executor, pins: PinBook, ctx: Context) -> None:
        """Within a transaction: the plan mode auto starts now, if any."""
        snap, opts, now = ctx.snap, ctx.opts, ctx.now
        if opts.mode is not Mode.AUTO or not may_start(ex, now):
            return
        opened = ex.opened
        if any(p.source is Source.AUTO for p in opened) or len(opened) >= OPEN_MAX:
            return      # one plan of its own at a time, beside the operators'
        if opened:
            # beside an operator's plan, only pg_num changes of pools no plan changes
            # (pinning would undo that plan's moves; a balance plan would chase them), looked
            # for once a sleep_interval (the sizing is not rerun every poll)
            if now < self.next_side_check:
                return
            self.next_side_check = now + opts.sleep_interval
            busy = set().union(*(changing(p) for p in opened))
            want = {k: v for k, v in self.due(snap, ctx).items() if snap.pool_by_name(k).id not in busy}
            if want:
                ex.start(plan_steps(snap, opts, ctx.cluster_ratio, want),
                         [snap.pool_by_name(n) for n in want], Source.AUTO, now)
            return
        if (opts.pin_on_change and sets_upmaps(ctx.balancer_active)
                and misplaced_ratio(snap) > misplaced_max(opts, ctx.cluster_ratio)):
            # an OSDMap change remapped more than the budget: pin it, then drain it. When
            # nothing is pinnable (e.g. only degraded PGs remapped) CRUSH is not rerun every
            # poll: only on a new map, or after sleep_interval (recovery ends without one)
            if snap.epoch != pins.unpinnable[0] or now >= pins.unpinnable[1]:
                found = pin_remapped(snap)
                if found.items:
                    pins.pin(ex, ctx, found, Source.AUTO)
                else:
                    pins.unpinnable = (snap.epoch, now + opts.sleep_interval)
            if ex.open:
                return
        want = self.due(snap, ctx)
        if want:
            steps = plan_steps(snap, opts, ctx.cluster_ratio, want)
            ex.start(steps, [snap.pool_by_name(n) for n in want], Source.AUTO, now)
        elif sets_upmaps(ctx.balancer_active) and now >= self.next_balance_check:
            self.next_balance_check = now + opts.sleep_interval
            if not start_balancing(ex, snap, opts, now) and opts.read_balance:
                read_round(ex, snap, opts, ctx.sender(), now)

    @staticmethod
    def due(snap: Snapshot, ctx: Context) -> Dict[str, int]:
        """auto_targets of the pools Ceph is not changing already."""
        want = auto_targets(snap, ctx.opts, ctx.balanced)
        return {k: v for k, v in want.items()
                if snap.pool_by_name(k).pg_num == snap.pool_by_name(k).pg_num_target}


def auto_targets(snap: Snapshot, opts: Options, balanced: bool) -> Dict[str, int]:
    """What mode auto may change by itself: the plan's growth, and merges only under PG
    or memory pressure or the pool's own bounds; never a pool pg_autoscaler acts or
    warns on (one voice a pool)."""
    return {c.pool.name: c.pg_num for c in pg_num_plan(snap, opts, balanced).changes
            if c.automatic and snap.autoscaler_silent(c.pool)}


def may_start(ex: Executor, now: float) -> bool:
    """Not within AUTO_COOLDOWN of an abort, unless the operator set mode auto since:
    aborting says "not now", setting the mode again says "go on"."""
    for h in ex.events():
        if h.event == Event.MODE and h.detail == Mode.AUTO:
            return True
        if h.event == Event.ABORT:
            return now - h.time > AUTO_COOLDOWN
    return True


def start_balancing(ex: Executor, snap: Snapshot, opts: Options, now: float) -> bool:
    """A plan of balance rounds for the pools the balancer would change (none: no plan,
    and False)."""
    r = propose(snap, Aim(None, opts.balance_mode, opts.balance_min_gain, BYTES_SPREAD),
                Limits(guards=Guards.of(opts)))
    shards: Dict[int, int] = {}
    for pgid, pairs in r.items.items():   # a PG's items changed: at least one shard moves
        pid = int(pgid.split(".")[0])
        shards[pid] = shards.get(pid, 0) + max(len(pairs), 1)
    changed = [p for p in snap.pools if p.id in shards]
    if not changed:
        return False
    copies = object_copies(snap)
    steps = [balance_step(p, p.pg_num, p.pgp_num, shards[p.id], copies) for p in changed]
    # the plan's rounds balance every pool, as this proposal did: the OSDs' totals need
    # them all (a proposal over all pools whose items are all one pool's finds nothing
    # when rerun over that pool alone, with no total to even, and such plans would start
    # and end empty every sleep_interval)
    ex.start(steps, list(snap.pools), Source.AUTO, now)
    return True


def read_round(ex: Executor, snap: Snapshot, opts: Options, burst: Burst, now: float) -> None:
    """The counts even: one bounded round of primary changes where the cluster allows them
    and is clean (each changed PG peers), kept in the history."""
    if not allows_primaries(snap.require_min_compat_client) or cluster_blockers(snap):
        return
    plan = plan_primaries(snap, max_changes=opts.read_max_changes)
    cmds = plan.commands()
    if not cmds:
        return
    sent = set_primaries(cmds, burst)
    ex.log(now, Event.READ_BALANCE, f"{len(cmds) - len(sent.failed)} of {len(cmds)} primary "
           f"changes set" + (f"; refused: {sent.messages()[0]}" if sent.failed else ""))
