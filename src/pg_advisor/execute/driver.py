"""What the module runs in the background and for `apply`: plans from the sizing advice
or an operator's target, the executor's ticks, its health checks and progress event.

No mgr calls here: the module hands in a snapshot, the options, and functions to send a
mon command and to read and write the mgr store.
"""
import errno
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..analysis.plan import pg_num_plan
from ..balance.drain import describe, drain_json, drain_plan
from ..balance.primaries import allows_primaries, plan_primaries
from ..balance.read_report import read_report
from ..balance.remapped import SKIP_SHOWN, Pins, pin_remapped, pins_report
from ..balance.reweighted import reweight_commands, reweight_pins, reweight_report
from ..balance.proposal import items_json, proposal_json, propose, unkept
from ..crush.upmap import map_mismatches
from ..model.distribution import object_copies
from ..model import health_checks as hc
from ..model.errors import AdvisorError
from ..model.limits import check_pg_num
from ..model.misplaced import misplaced_max
from ..model.options import Mode, Options
from ..model.snapshot import Snapshot
from ..sizing.sizer import Sizer
from .context import BalanceRequest, Context
from .executor import Executor
from .history import Event
from .pacing import BYTES_SPREAD, pacing
from .gates import balancer_conflict, cluster_blockers, misplaced_ratio
from .plan_state import ACTIVE, Source, Status
from .plan_store import PlanStore
from .rounds import Burst, RoundSpec, balance_round, set_full, set_items, set_primaries, set_with, unset_full
from .steps import PlanStep, StepPlanner, Throttles, balance_step

# the map's pg_upmap_primaries and those PGs' up primaries, after an epoch (the module's)
PrimariesAfter = Callable[[int, Sequence[str]], Tuple[Mapping[str, int], Mapping[str, int]]]
AUTO_COOLDOWN = 3600.0      # after an abort, auto mode waits this long before a new plan


def throttles(opts: Options, cluster_ratio: float) -> Throttles:
    return Throttles(misplaced_max=misplaced_max(opts, cluster_ratio),
                     max_splitting=opts.max_pgs_splitting,
                     max_backfills_per_osd=opts.max_backfills_per_osd,
                     pin=opts.split_pinning)


class Driver:
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
            if p.autoscale_mode == "on":
                raise AdvisorError.busy(f"pool {pool}: pg_autoscaler manages it (pg_autoscale_mode "
                                        f"on); set it off to hand the pool to pg_advisor")
        if pool is not None and pg_num is not None:
            return {pool: int(pg_num)}
        changes = pg_num_plan(snap, opts, balanced).changes
        return {c.pool.name: c.pg_num for c in changes if pool is None or c.pool.name == pool}

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
            return self._pin(snap, pins, ctx.sender(), Source.PIN_REMAPPED, ctx.now)

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
            out = self._pin(snap, rw.pins, ctx.sender(), Source.CRUSH_REWEIGHT, ctx.now,
                            lead=reweight_commands(rw.weights), report=reweight_report(snap, rw))
            if out.get("lead_failed"):
                raise AdvisorError.invalid(f"the mon refused the weight: {out['lead_failed'][0]}")
            return out

    def _pin(self, snap: Snapshot, pins: Pins, burst: Burst, source: Source, now: float,
             lead: Sequence[Dict[str, Any]] = (), report: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Set the pins in small bursts, then start the drain plan. With `lead` (a weight
        change), the lead and every pin go out in one burst instead, the lead first, so that
        the mon takes them into one map epoch."""
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

    def drain(self, ctx: Context, target: str, dry_run: bool) -> Dict[str, Any]:
        """Empty the OSDs `target` names (balance/drain.py) in balance rounds within the budget."""
        snap, now = ctx.snap, ctx.now
        with self.lock:
            plan = drain_plan(snap, target)
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

    # -- the background -------------------------------------------------------------------------

    def tick(self, ctx: Context) -> None:
        """One step of the background: auto mode's new plans, then the plan's next step."""
        try:
            self._tick(ctx)
            self.error = None
        except AdvisorError as e:
            self.error = e.message
            raise

    def _tick(self, ctx: Context) -> None:
        snap, opts, cluster_ratio, now = ctx.snap, ctx.opts, ctx.cluster_ratio, ctx.now
        balancer_active = ctx.balancer_active
        with self.lock:
            self._check_store()
            ex = self.executor
            if (not ex.open and opts.mode is Mode.AUTO and opts.pin_on_change and not balancer_active
                    and self._auto_may_start(now)
                    and misplaced_ratio(snap) > misplaced_max(opts, cluster_ratio)):
                # an OSDMap change remapped more than the budget: pin it, then drain it. When
                # nothing is pinnable (e.g. only degraded PGs remapped) CRUSH is not rerun every
                # poll: only on a new map, or after sleep_interval (recovery ends without one)
                if snap.epoch != self._unpinnable[0] or now >= self._unpinnable[1]:
                    pins = pin_remapped(snap)
                    if pins.items:
                        self._pin(snap, pins, ctx.sender(), Source.AUTO, now)
                    else:
                        self._unpinnable = (snap.epoch, now + opts.sleep_interval)
            if not ex.open and opts.mode is Mode.AUTO and self._auto_may_start(now):
                targets = self.targets(snap, opts, ctx.balanced, None, None)
                targets = {k: v for k, v in targets.items()
                           if snap.pool_by_name(k).pg_num == snap.pool_by_name(k).pg_num_target}
                if targets:
                    steps = self.plan(snap, opts, cluster_ratio, targets)
                    ex.start(steps, [snap.pool_by_name(n) for n in targets], Source.AUTO, now)
                elif not balancer_active and now >= self._next_balance_check:
                    self._next_balance_check = now + opts.sleep_interval
                    if not self._start_balancing(snap, opts, now) and opts.read_balance:
                        self._read_round(snap, opts, ctx.sender(), now)
            if ex.active:
                ex.tick(ctx.for_tick())
            self._count_pins(snap)
            if self._pins_want and snap.epoch > self._pinned_at:
                self._verify_pins(snap, now)

    def verify_pins(self, snap: Snapshot, now: float) -> Optional[Dict[str, Any]]:
        """Once the map holds the pins just set: the PGs whose up set there is not the set
        they were pinned onto (each counted and logged; health names them). The check runs
        once, here or on the tick that first sees the map: either way this is its answer."""
        with self.lock:
            if self._pins_want:
                self._verify_pins(snap, now)
            return self.pins_verified

    def _verify_pins(self, snap: Snapshot, now: float) -> None:
        want, self._pins_want = self._pins_want, {}
        bad = self.executor.verify(snap, want, "pins", now)
        self.executor.save()
        self.pins_verified = {"checked": len(want), "mismatched": len(bad),
                              "mismatched_pgs": dict(sorted(bad.items())[:SKIP_SHOWN])}

    def _count_pins(self, snap: Snapshot) -> None:
        """How many of the plan's pins the map still has (a PG counts while any of its pin
        items, or its full pg-upmap, is there)."""
        state = self.executor.state
        if state is None or not (state.pins or state.full_pins) or not self.executor.open \
                or snap.epoch <= self._pinned_at:
            return
        left = sum(1 for pgid, pairs in state.pins.items()
                   if {tuple(p) for p in pairs} & set(snap.pg_upmap_items.get(pgid, ())))
        left += sum(1 for pgid, osds in state.full_pins.items() if list(snap.pg_upmap.get(pgid, ())) == osds)
        if left != state.pins_left:
            state.pins_left = left
            self.executor.save()

    def _read_round(self, snap: Snapshot, opts: Options, burst: Burst, now: float) -> None:
        """Auto mode, the counts even: one bounded round of primary changes where the
        cluster allows them and is clean (each changed PG peers), kept in the history."""
        if not allows_primaries(snap.require_min_compat_client) or cluster_blockers(snap):
            return
        plan = plan_primaries(snap, max_changes=opts.read_max_changes)
        cmds = plan.commands()
        if not cmds:
            return
        sent = set_primaries(cmds, burst)
        self.executor.log(now, Event.READ_BALANCE, f"{len(cmds) - len(sent.failed)} of {len(cmds)} primary "
                          f"changes set" + (f"; refused: {sent.messages()[0]}" if sent.failed else ""))
        self.executor.save()

    def _start_balancing(self, snap: Snapshot, opts: Options, now: float) -> bool:
        """Auto mode with no pg_num change due: a plan of balance rounds for the pools the
        balancer would change (none: no plan, and False)."""
        r = propose(snap, None, 1 << 20, opts.balance_mode, min_gain=opts.balance_min_gain,
                    min_spread=BYTES_SPREAD)
        shards: Dict[int, int] = {}
        for pgid, pairs in r.items.items():   # a PG's items changed: at least one shard moves
            pid = int(pgid.split(".")[0])
            shards[pid] = shards.get(pid, 0) + max(len(pairs), 1)
        changed = [p for p in snap.pools if p.id in shards]
        if changed:
            copies = object_copies(snap)
            steps = [balance_step(p, p.pg_num, p.pgp_num, shards[p.id], copies) for p in changed]
            # the plan's rounds balance every pool, as this proposal did: the OSDs' totals
            # need them all (a proposal over all pools whose items are all one pool's finds
            # nothing when rerun over that pool alone, with no total to even, and such plans
            # would start and end empty every sleep_interval)
            self.executor.start(steps, list(snap.pools), Source.AUTO, now)
            return True
        return False

    def _auto_may_start(self, now: float) -> bool:
        """Not within AUTO_COOLDOWN of an abort, unless the operator set mode auto since:
        aborting says "not now", setting the mode again says "go on"."""
        for h in self.executor.events():
            if h.event == Event.MODE and h.detail == Mode.AUTO:
                return True
            if h.event == Event.ABORT:
                return now - h.time > AUTO_COOLDOWN
        return True

    def mode_set(self, mode: Mode, now: float) -> None:
        """The operator's `mode` command, kept in the history (auto re-arms after an abort)."""
        with self.lock:
            self.executor.log(now, Event.MODE, mode.value)
            self.executor.save()

    def health(self) -> hc.Checks:
        state = self.executor.state
        checks: hc.Checks = {}
        if self.store.error and self.store.error != self.error:
            checks.update(hc.plan_error(self.store.error))
        elif self.error:
            checks.update(hc.plan_error(self.error))
        if state is not None and state.mismatched and state.status != Status.ABORTED:
            checks.update(hc.upmap_mismatch(state.id, state.mismatched, state.mismatch_detail))
        if state is None or state.status not in (*ACTIVE, Status.STOPPED):
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

    def progress(self) -> Optional[Tuple[str, str, float, Status]]:
        """(event id, message, fraction, plan status) of the current or last plan."""
        state = self.executor.state
        if state is None:
            return None
        frac, msg = self.executor.progress()
        return f"pg_advisor-{state.id}", msg, frac, state.status

    # -- what the mgr adapter asks of the plan: the executor stays behind the lock ---------------

    def map_with(self, up_sets: Callable[[Snapshot, Sequence[str]], Dict[str, List[int]]]) -> None:
        """Check the items a plan sets against `up_sets` (pgid -> up set: in the mgr, Ceph's
        own mapping) instead of the model's."""
        with self.lock:
            self.executor.up_sets = up_sets

    def pause(self, now: float) -> None:
        with self.lock:
            self.executor.pause(now)

    def resume(self, now: float) -> None:
        with self.lock:
            self.executor.resume(now)

    def plan_report(self) -> Dict[str, Any]:
        """The plan, its steps and where it is (`ceph pg-advisor progress`): a copy."""
        with self.lock:
            return self.executor.report()

    def history(self) -> List[Dict[str, Any]]:
        """The plans' events, oldest first: a copy."""
        with self.lock:
            return list(self.executor.history)

    @property
    def plan_active(self) -> bool:
        """A plan is running or paused: the background polls it."""
        return self.executor.active
