"""What the module runs in the background and asks of the plan: auto mode's new plans, the
executor's ticks, the pins' bookkeeping, health checks and the progress event; the
operator's commands come from OperatorCommands (operator_commands.py), plans from Plans
(plans.py).

No mgr calls here: the module hands in a snapshot, the options, and functions to send a
mon command and to read and write the mgr store.
"""
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..balance.primaries import allows_primaries, plan_primaries
from ..balance.remapped import SKIP_SHOWN, pin_remapped
from ..balance.proposal import Aim, propose
from ..model.distribution import object_copies
from ..model import health_checks as hc
from ..model.errors import AdvisorError
from ..model.misplaced import misplaced_max, misplaced_ratio
from ..model.options import Mode, Options
from ..model.snapshot import Snapshot
from .context import Context
from .history import Event
from .operator_commands import OperatorCommands
from .pacing import BYTES_SPREAD
from .gates import cluster_blockers
from .plan_state import ACTIVE, Source, Status
from .rounds import Burst, set_primaries
from .steps import balance_step

AUTO_COOLDOWN = 3600.0      # after an abort, auto mode waits this long before a new plan
TICK_ERRORS_STOP = 5        # a plan's ticks failing on a bug this many times running stop it


class Driver(OperatorCommands):
    """The plans, the operator's commands on them, and the background that runs them."""

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
                        self._pin(ctx, pins, Source.AUTO)
                    else:
                        self._unpinnable = (snap.epoch, now + opts.sleep_interval)
            if not ex.open and opts.mode is Mode.AUTO and self._auto_may_start(now):
                targets = self.auto_targets(snap, opts, ctx.balanced)
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
                self._plan_tick(ctx)
            self._count_pins(snap)
            if self._pins_want and snap.epoch > self._pinned_at:
                self._verify_pins(snap, now)

    def _plan_tick(self, ctx: Context) -> None:
        """The executor's tick. A bug that fails every tick (an exception other than the
        module's own errors) would keep the plan running for ever, retried each poll and
        nothing moving: after TICK_ERRORS_STOP in a row the plan stops, the error in its
        reason (the traceback in the mgr log), for the operator's `abort`."""
        ex = self.executor
        try:
            ex.tick(ctx.for_tick())
            self._tick_errors = 0
        except AdvisorError:
            raise
        except Exception as e:
            self._tick_errors += 1
            state = ex.state
            if self._tick_errors >= TICK_ERRORS_STOP and state is not None and state.status == Status.RUNNING:
                ex.stop(state, f"internal error on {self._tick_errors} ticks running ({type(e).__name__}: "
                        f"{e}; the mgr log has the traceback)", ctx.now)
                ex.save()
                self._tick_errors = 0
            raise

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
        r = propose(snap, Aim(None, opts.balance_mode, opts.balance_min_gain, BYTES_SPREAD))
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

    def plan_view(self) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
        """(plan_report, history) of one moment, for the panel."""
        with self.lock:
            return self.executor.report(), list(self.executor.history)

    @property
    def plan_active(self) -> bool:
        """A plan is running or paused: the background polls it."""
        return self.executor.active
