"""The operator's write commands on the Driver: `apply`, `balance`, `read-balance`,
`pin-remapped`, `crush-reweight`, `drain` and `abort`, each on one Context, under the
lock, refused while a plan owns what it would change."""
import errno
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..balance.drain import describe, drain_json, drain_plan
from ..balance.primaries import plan_primaries
from ..balance.read_report import read_report
from ..balance.remapped import pin_remapped, pins_report
from ..balance.reweighted import reweight_commands, reweight_pins, reweight_report
from ..balance.proposal import proposal_json, unkept
from ..crush.upmap import map_mismatches
from ..model.distribution import object_copies
from ..model.errors import AdvisorError
from .context import BalanceRequest, Context
from .history import Event
from .pacing import pacing
from .gates import balancer_conflict, cluster_blockers
from .plan_state import Source
from .plans import Plans
from .rounds import RoundSpec, balance_round, set_primaries
from .steps import balance_step

# the map's pg_upmap_primaries and those PGs' up primaries, after an epoch (the module's)
PrimariesAfter = Callable[[int, Sequence[str]], Tuple[Mapping[str, int], Mapping[str, int]]]


class OperatorCommands(Plans):
    """What an operator's write command does: each a method on one Context."""

    def apply(self, ctx: Context, pool: Optional[str], pg_num: Optional[int],
              dry_run: bool) -> Dict[str, Any]:
        """A plan to `pg_num` for `pool` (or to the sizing advice for it, or for every pool)."""
        snap, opts, cluster_ratio = ctx.snap, ctx.opts, ctx.cluster_ratio
        with self.lock:
            if not dry_run:
                self._check_store()
            if not dry_run:
                self.executor.check_free()      # before any work: start() would refuse it too
            pacing(opts, cluster_ratio)        # a malformed window is refused now
            targets = self.targets(snap, opts, ctx.balanced, pool, pg_num)
            if not targets:
                raise AdvisorError.invalid("nothing to apply: pg_num is where pg_advisor recommends"
                                           + (f" for pool {pool}" if pool else ""))
            steps = self.plan(snap, opts, cluster_ratio, targets)
            pools = [snap.pool_by_name(n) for n in targets]
            out: Dict[str, Any] = {"dry_run": dry_run, "targets": targets,
                                   "steps": [dict(s.to_json(), description=s.describe()) for s in steps]}
            if not dry_run:
                out["plan"] = self.executor.start(steps, pools, Source.APPLY, ctx.now).id
            return out

    def _check_round(self, ctx: Context, what: str, doing: str = "no balancing") -> None:
        """Refuse an operator's round (EBUSY) while a plan is open, Ceph's balancer is
        active, or the cluster is not fit to change (cluster_blockers)."""
        self.check_idle(what)
        why = [balancer_conflict(ctx.balancer_active, doing)] + cluster_blockers(ctx.snap)
        refused = next((w for w in why if w), None)
        if refused:
            raise AdvisorError.busy(f"not {what}: {refused}")

    def balance(self, ctx: Context, req: BalanceRequest,
                items_after: Callable[[int], Mapping[str, Sequence[Tuple[int, int]]]]) -> Dict[str, Any]:
        """One bounded round of pg-upmap-items toward each OSD's share (or its dry run), as
        the background's, within the misplaced budget; then what the mon kept of it
        (`items_after(epoch)`: the items in the first map after the snapshot's) and where
        the map puts the PGs it moved."""
        snap = ctx.snap
        rnd = balance_round(snap, RoundSpec(req.pools, req.max_items, req.mode, ctx.budget(),
                                            min_gain=ctx.opts.balance_min_gain))
        report = dict(proposal_json(rnd.proposal), dry_run=req.dry_run)
        if req.dry_run:
            return report
        with self.lock:
            self._check_round(ctx, "balancing")
            failed = rnd.apply(ctx.sender(), ctx.opts.prime_pg_temp).messages()
            # the mon acknowledges an item that breaks the rule and drops it: check the map,
            # and that it puts each PG where its items were meant to
            lost = unkept(rnd.taken(), items_after(snap.epoch))
            failed += [f"{pgid}: the mon did not keep the items" for pgid in lost]
            want = {k: v for k, v in rnd.wanted().items() if k not in lost}
            bad = map_mismatches(snap, want, self.executor.up_sets(snap, sorted(want)))
            failed += [f"{pgid}: {why}" for pgid, why in sorted(bad.items())]
            report.update(applied=len(rnd.items) - len(failed), failed=failed, mismatched=len(bad))
            return report

    def read_balance(self, ctx: Context, pools: Optional[List[str]], max_changes: int, dry_run: bool,
                     primaries_after: PrimariesAfter) -> Dict[str, Any]:
        """One bounded batch of pg-upmap-primary changes (or its dry run): each replicated
        pool's primaries toward the lowest maximum (balance/primaries.py); then what the mon
        kept (`primaries_after(epoch, pgids)`: the map's entries, and those PGs' up primaries,
        pgid -> OSD, in the first map after the snapshot's)."""
        snap = ctx.snap
        plan = plan_primaries(snap, pools, max_changes=max_changes)
        report = dict(read_report(snap, plan), dry_run=dry_run)
        if dry_run:
            return report
        if not report["allowed"]:
            raise AdvisorError(-errno.EOPNOTSUPP, "not read balancing: " + plan.notes[0])
        with self.lock:
            self._check_round(ctx, "read balancing", "no primaries")
            cmds = plan.commands()
            sent = set_primaries(cmds, ctx.sender())
            failed = sent.messages()
            if cmds:
                want = {pgid: osd for pgid, osd in plan.changes if pgid not in sent.failed}
                entries, primary = primaries_after(snap.epoch, sorted(want))
                for pgid, osd in sorted(want.items()):
                    if osd is None:
                        if pgid in entries:
                            failed.append(f"{pgid}: the mon kept the entry")
                    elif entries.get(pgid) != osd:
                        failed.append(f"{pgid}: the mon did not keep the entry")
                    elif primary.get(pgid) != osd:
                        failed.append(f"{pgid}: primary osd.{primary.get(pgid)}, not osd.{osd}")
                failed += [f"{pgid}: the mon kept the entry" for pgid in plan.cleanup
                           if pgid not in sent.failed and pgid in entries]
            report.update(applied=len(cmds) - len(failed), failed=failed)
            return report

    def pin_remapped(self, ctx: Context, dry_run: bool) -> Dict[str, Any]:
        """Pin every remapped PG onto the OSDs with its data (balance/remapped.py), then start the
        drain: balance rounds over every pool, within the budget, until each is even."""
        snap = ctx.snap
        with self.lock:
            pins = pin_remapped(snap)
            if dry_run:
                return dict(pins_report(snap, pins), dry_run=True)
            self.check_idle("pinning")
            conflict = balancer_conflict(ctx.balancer_active, "no pins", " and would undo the pins")
            if conflict:
                raise AdvisorError.busy(f"not pinning: {conflict}")
            # no flag holds the pins back: they stop data moving (with norebalance set while
            # OSDs are added, as operators do, they are the point); the drain waits for flags
            pacing(ctx.opts, ctx.cluster_ratio)   # a malformed window is refused before anything is set
            return self._pin(ctx, pins, Source.PIN_REMAPPED)

    def crush_reweight(self, ctx: Context, weights: Mapping[int, float], dry_run: bool) -> Dict[str, Any]:
        """Set the OSDs' CRUSH weights with the pins that keep every PG the change remaps on
        the OSDs with its data, in one burst for one map epoch (balance/reweighted.py), then
        start the drain as pin-remapped does."""
        snap = ctx.snap
        with self.lock:
            rw = reweight_pins(snap, weights)      # refuses a bad OSD or weight before anything
            if dry_run:
                return dict(reweight_report(snap, rw), dry_run=True)
            self.check_idle("reweighting")
            conflict = balancer_conflict(ctx.balancer_active, "no reweight",
                                         " and would undo the pins")
            if conflict:
                raise AdvisorError.busy(f"not reweighting: {conflict}")
            pacing(ctx.opts, ctx.cluster_ratio)
            out = self._pin(ctx, rw.pins, Source.CRUSH_REWEIGHT,
                            lead=reweight_commands(rw.weights), report=reweight_report(snap, rw))
            if out.get("lead_failed"):
                raise AdvisorError.invalid(f"the mon refused the weight: {out['lead_failed'][0]}")
            return out

    def drain(self, ctx: Context, target: str, dry_run: bool, and_balance: bool = False) -> Dict[str, Any]:
        """Empty the OSDs `target` names (balance/drain.py) in balance rounds within the budget;
        `and_balance`: the rounds even the pools too."""
        snap, now = ctx.snap, ctx.now
        with self.lock:
            plan = drain_plan(snap, target, and_balance)
            out = dict(drain_json(plan), dry_run=dry_run)
            osds, touched = plan.osds, plan.touched
            if dry_run:
                return out
            self.check_idle("draining")
            conflict = balancer_conflict(ctx.balancer_active, "no drain", " and would move PGs back")
            if conflict:
                raise AdvisorError.busy(f"not draining: {conflict}")
            pacing(ctx.opts, ctx.cluster_ratio)
            copies = object_copies(snap)
            shards = max(16, plan.replicas)      # a round spans the plan's pools
            steps = [balance_step(t.pool, t.pool.pg_num, t.pool.pgp_num, shards, copies) for t in touched]
            state = self.executor.start(steps, [t.pool for t in touched], Source.DRAIN, now, drain=osds)
            state.and_balance = and_balance
            what = f"{describe(osds)}: {plan.replicas} replicas in {len(touched)} pools to move"
            self.executor.log(now, Event.DRAIN, what)
            self.executor.save()
            out["plan"] = state.id
            return out

    def abort(self, ctx: Context) -> str:
        """End the plan; or forget a stored plan that could not be read."""
        now = ctx.now
        with self.lock:
            if self.store.error:
                why = self.store.error
                self.store.clear()
                self.error = None
                self.executor.state = None
                self.executor.log(now, Event.ABORT, f"cleared a stored plan that could not be read: {why}")
                self.executor.save()
                return "cleared the stored plan that could not be read (a copy is kept in exec_corrupt)"
            return self.executor.abort(ctx.snap, ctx.send, now)
