"""The operator's write commands, each a function of the PlanService on one Context: `apply`,
`balance`, `read-balance`, `pin-remapped`, `crush-reweight`, `drain`, `abort`, `pause`,
`resume` and `mode`. Each runs under the plan's lock (a transaction where it changes the
plan), refused while a plan owns what it would change."""
import errno
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..balance.drain import describe, drain_json, drain_plan
from ..balance.primaries import plan_primaries
from ..balance.read_report import read_report
from ..balance.remapped import pin_remapped as remapped_pins, pins_report
from ..balance.reweighted import reweight_commands, reweight_pins, reweight_report
from ..balance.proposal import proposal_json
from ..balance.report_types import BalanceRun
from ..model.distribution import object_copies
from ..model.errors import AdvisorError
from ..model.snapshot import Snapshot
from .command_checks import CHECK_PGS_MAX, PendingCheck
from .context import BalanceRequest, Context
from .history import Event
from .pacing import pacing
from .gates import balancer_conflict, cluster_blockers
from .plan_state import Source
from .plan_service import PlanService
from .pinning import Landing
from .planning import plan_steps, targets
from ..model.options import Mode
from .rounds import RoundSpec, balance_round, set_primaries, topology_key
from .steps import spanning_steps

# where a write command's answer says its changes are checked
CHECKED = "by the background on the next map: `ceph pg-advisor history`"


def apply(plans: PlanService, ctx: Context, pool: Optional[str], pg_num: Optional[int],
          dry_run: bool) -> Dict[str, Any]:
    """A plan to `pg_num` for `pool` (or to the sizing advice for it, or for every pool)."""
    snap, opts, cluster_ratio = ctx.snap, ctx.opts, ctx.cluster_ratio
    with plans.change() as ex:
        if not dry_run:          # before any work: start() would refuse them too
            plans.check_store()
            ex.check_free()
        pacing(opts, cluster_ratio, snap)        # a malformed window is refused now
        want = targets(snap, opts, ctx.balanced, pool, pg_num)
        if not want:
            raise AdvisorError.invalid("nothing to apply: pg_num is where pg_advisor recommends"
                                       + (f" for pool {pool}" if pool else ""))
        steps = plan_steps(snap, opts, cluster_ratio, want)
        pools = [snap.pool_by_name(n) for n in want]
        out: Dict[str, Any] = {"dry_run": dry_run, "targets": want,
                               "steps": [dict(s.to_json(), description=s.describe()) for s in steps]}
        if not dry_run:
            out["plan"] = ex.start(steps, pools, Source.APPLY, ctx.now).id
        return out


def _check_round(plans: PlanService, ctx: Context, what: str, doing: str = "no balancing",
                 pools: Optional[Sequence[str]] = None) -> None:
    """Refuse an operator's round (EBUSY) while a plan is open, Ceph's balancer is
    active, or the cluster is not fit to change (cluster_blockers); with `pools` (names),
    as a plan's balance round: while a PG of those pools is not active (a PG that is not
    whole is not moved)."""
    plans.check_idle(what)
    scope = None if pools is None else [ctx.snap.pool_by_name(p).id for p in pools]
    why = [balancer_conflict(ctx.balancer_active, doing)] + cluster_blockers(
        ctx.snap, pools=scope or None, degraded=pools is None)
    refused = next((w for w in why if w), None)
    if refused:
        raise AdvisorError.busy(f"not {what}: {refused}")


def balance(plans: PlanService, ctx: Context, req: BalanceRequest) -> BalanceRun:
    """One bounded round of pg-upmap-items toward each OSD's share (or its dry run), as
    the background's, within the misplaced budget; answered with what the mon accepted.
    What its next map kept, and where that map puts the PGs moved, the background checks
    and keeps in the history (command_checks.py): no wait for a map here."""
    snap = ctx.snap
    rnd = balance_round(snap, RoundSpec(req.pools, req.max_items, req.mode, ctx.budget(),
                                        min_gain=ctx.opts.balance_min_gain, guards=ctx.guards()))
    report = proposal_json(rnd.proposal)
    report["dry_run"] = req.dry_run
    if req.dry_run:
        return report
    with plans.look():
        _check_round(plans, ctx, "balancing", pools=req.pools or [p.name for p in ctx.snap.pools])
        rnd.apply(ctx.sender(), ctx.opts.prime_pg_temp)
        failed = rnd.outcome.messages() if rnd.outcome else []
        plans.check_later(rnd.pending_check(ctx.now))
        report.update({"applied": len(rnd.items) - len(failed), "failed": failed, "checked": CHECKED})
        return report


def read_balance(plans: PlanService, ctx: Context,
                 pools: Optional[List[str]], max_changes: int, dry_run: bool) -> Dict[str, Any]:
    """One bounded batch of pg-upmap-primary changes (or its dry run): each replicated
    pool's primaries toward the lowest maximum (balance/primaries.py); answered with what
    the mon accepted, the rest checked by the background as `balance`'s."""
    snap = ctx.snap
    plan = plan_primaries(snap, pools, max_changes=max_changes)
    report = dict(read_report(snap, plan), dry_run=dry_run)
    if dry_run:
        return report
    if not report["allowed"]:
        raise AdvisorError(-errno.EOPNOTSUPP, "not read balancing: " + plan.notes[0])
    with plans.look():
        _check_round(plans, ctx, "read balancing", "no primaries")
        cmds = plan.commands()
        sent = set_primaries(cmds, ctx.sender())
        failed = sent.messages()
        if cmds:
            want: Dict[str, Optional[int]] = {pgid: osd for pgid, osd in plan.changes
                                              if pgid not in sent.failed}
            for pgid in plan.cleanup:          # entries removed: none may be left
                if pgid not in sent.failed:
                    want.setdefault(pgid, None)
            plans.check_later(PendingCheck("read-balance", snap.epoch, ctx.now, topology_key(snap),
                                           primaries=dict(sorted(want.items())[:CHECK_PGS_MAX])))
        report.update(applied=len(cmds) - len(failed), failed=failed, checked=CHECKED)
        return report


def pin_remapped(plans: PlanService, ctx: Context, dry_run: bool) -> Dict[str, Any]:
    """Pin every remapped PG onto the OSDs with its data (balance/remapped.py), then start the
    drain: balance rounds over every pool, within the budget, until each is even."""
    snap = ctx.snap
    with plans.change() as ex:
        pins = remapped_pins(snap)
        if dry_run:
            return dict(pins_report(snap, pins), dry_run=True)
        plans.check_idle("pinning")
        conflict = balancer_conflict(ctx.balancer_active, "no pins", " and would undo the pins")
        if conflict:
            raise AdvisorError.busy(f"not pinning: {conflict}")
        # no flag holds the pins back: they stop data moving (with norebalance set while
        # OSDs are added, as operators do, they are the point); the drain waits for flags
        pacing(ctx.opts, ctx.cluster_ratio, snap)   # a malformed window is refused before anything is set
        return plans.pins.pin(ex, ctx, pins, Source.PIN_REMAPPED)


def crush_reweight(plans: PlanService, ctx: Context,
                   weights: Mapping[int, float], dry_run: bool) -> Dict[str, Any]:
    """Set the OSDs' CRUSH weights with the pins that keep every PG the change remaps on
    the OSDs with its data, in one burst for one map epoch (balance/reweighted.py), then
    start the drain as pin-remapped does."""
    snap = ctx.snap
    with plans.change() as ex:
        rw = reweight_pins(snap, weights)      # refuses a bad OSD or weight before anything
        if dry_run:
            return dict(reweight_report(snap, rw), dry_run=True)
        plans.check_idle("reweighting")
        conflict = balancer_conflict(ctx.balancer_active, "no reweight",
                                     " and would undo the pins")
        if conflict:
            raise AdvisorError.busy(f"not reweighting: {conflict}")
        pacing(ctx.opts, ctx.cluster_ratio, snap)
        out = plans.pins.pin(ex, ctx, rw.pins, Source.CRUSH_REWEIGHT,
                             lead=reweight_commands(rw.weights), report=reweight_report(snap, rw))
        if out.get("lead_failed"):
            raise AdvisorError.invalid(f"the mon refused the weight: {out['lead_failed'][0]}")
        return out


def drain(plans: PlanService, ctx: Context,
          target: str, dry_run: bool, and_balance: bool = False) -> Dict[str, Any]:
    """Empty the OSDs `target` names (balance/drain.py) in balance rounds within the budget;
    `and_balance`: the rounds even the pools too."""
    snap, now = ctx.snap, ctx.now
    with plans.change() as ex:
        if not dry_run:          # before any work: start() would refuse them too
            plans.check_store()
            ex.check_free()
        plan = drain_plan(snap, target, and_balance, ctx.guards())
        out = dict(drain_json(plan), dry_run=dry_run)
        osds, touched = plan.osds, plan.touched
        if dry_run:
            return out
        conflict = balancer_conflict(ctx.balancer_active, "no drain", " and would move PGs back")
        if conflict:
            raise AdvisorError.busy(f"not draining: {conflict}")
        pacing(ctx.opts, ctx.cluster_ratio, snap)
        copies = object_copies(snap)
        steps = spanning_steps([t.pool for t in touched], plan.replicas, copies)
        state = ex.start(steps, [t.pool for t in touched], Source.DRAIN, now, drain=osds)
        state.and_balance = and_balance
        what = f"{describe(osds)}: {plan.replicas} replicas in {len(touched)} pools to move"
        ex.log(now, Event.DRAIN, what)
        out["plan"] = state.id
        return out


def abort(plans: PlanService, ctx: Context, plan: Optional[str] = None) -> str:
    """End the plan (`plan`; none named: the one open); or forget a stored plan that could
    not be read."""
    now = ctx.now
    with plans.change() as ex:
        cleared = plans.clear_unreadable(ex, now)
        if cleared is not None:
            return cleared
        return ex.abort(ctx.snap, ctx.send, now, plan)


def pause(plans: PlanService, now: float, plan: Optional[str] = None) -> str:
    """Pause the plan (`plan`; none named: the one active); its id."""
    with plans.change() as ex:
        return ex.pause(now, plan).id


def resume(plans: PlanService, now: float, plan: Optional[str] = None) -> str:
    with plans.change() as ex:
        return ex.resume(now, plan).id


def mode_set(plans: PlanService, mode: Mode, now: float) -> None:
    """The operator's `mode` command, kept in the history (auto re-arms after an abort)."""
    with plans.change() as ex:
        ex.log(now, Event.MODE, mode.value)


LANDING_WAIT = 120.0      # seconds the background looks for a crush-reweight's epoch


def find_landing(plans: PlanService, first: int, weights: Mapping[int, float],
                 report: Mapping[str, Any], now: float) -> None:
    """Ask the background to find the map epoch after `first` that holds `weights`, and the
    pins of `report` that missed it (Driver.weights_landed)."""
    with plans.look():
        plans.pins.landing = Landing(first, dict(weights), {k: report.get(k, {}) for k in ("items", "full")},
                                     now + LANDING_WAIT)
        plans.pins.landed = None


def verify_pins(plans: PlanService, snap: Snapshot, now: float) -> Optional[Dict[str, Any]]:
    """Once the map holds the pins just set: the PGs whose up set there is not the set
    they were pinned onto (each counted and logged; health names them). The check runs
    once, here or on the tick that first sees the map: either way this is its answer."""
    with plans.change() as ex:
        if plans.pins.want:
            plans.pins.verify(ex, snap, now)
        return plans.pins.verified
