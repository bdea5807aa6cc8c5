"""The background, as ceph-mgr runs it in the module's serve(): the loop, what wakes it, its
shutdown, and each tick's jobs (the panel kept, the commands that act, a read a command
left, the plan's tick and its progress event, the status the panel serves, the health
checks).

The loop runs these jobs (not called from command handlers, as cephadm's serve.py is
not): a command that wants one done now wakes the loop (Module.wake), and a command that
acts is itself one of its jobs (intents.py). `abort`, done here too, closes the plan's
progress event and updates the panel's copy at once (PlanProgress closes an event once
under its lock; the panel's copy changes in one update).
"""
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Mapping, Optional

from ..analysis.status import status_of, with_ours
from ..balance.reweighted import EPOCHS_SEARCHED, weight_landing
from ..analysis.status_types import StatusReport
from ..model import health_checks as checks_of, snapshot
from ..model.errors import AdvisorError
from ..model.misplaced import misplaced_max, misplaced_ratio
from ..model.options import Mode
from ..analysis.health import health_checks
from .face import ModuleFace


Checks = Dict[str, Dict[str, Any]]


def module_checks(status_error: Optional[str], option_errors: List[str]) -> Checks:
    """The module's own health checks: a status it cannot compute, option values it ignores
    (an operator must see them, not only the mgr log)."""
    checks: Checks = {}
    if status_error is not None:
        checks.update(checks_of.status_failed(status_error))
    if option_errors:
        checks.update(checks_of.option_invalid(option_errors))
    return checks


class MgrServe:
    """`wake` is set to run the loop's jobs at once (options changed, a command asked, shutdown)."""

    def __init__(self, mgr: ModuleFace, wake: threading.Event) -> None:
        self.mgr = mgr
        self._wake = wake
        self._stopping = False
        self._sizing_checks: Checks = {}
        self._status_error: Optional[str] = None     # why the last status could not be computed
        self._next_sizing = self._next_status = 0.0

    # -- the loop --------------------------------------------------------------------------------

    def serve(self) -> None:
        self.mgr.log.info("pg_advisor: serving")
        try:
            while not self._stopping:
                if self._wake.wait(self.tick()):
                    self._wake.clear()
                    self._next_sizing = self._next_status = 0.0   # options changed or a command asked: now
        finally:
            self.mgr.panel.stop()    # module disabled or mgr failing over: release the port

    def shutdown(self) -> None:
        self._stopping = True
        self.mgr.intents.close("the module is stopping (disabled, or the mgr failing over)")
        self._wake.set()

    def tick(self) -> float:
        """One pass of the loop, each job under _guard; the seconds until the next is due."""
        self._guard(self.keep_panel)
        if self.mgr.intents.waiting:
            self._guard(self.run_intents)
        if self.mgr.reader.snaps.due:
            self._guard(self.read_due)
        self._guard(self.run_plan)
        self._guard(self.publish_plan)
        opts = self.mgr.current_options()
        if self.mgr.panel.running and time.time() >= self._next_status:
            self._guard(self.refresh_status)      # for the panel, while it serves
            self._next_status = time.time() + opts.refresh_interval
        if time.time() >= self._next_sizing:
            self._guard(self.refresh_health)
            self._next_sizing = time.time() + opts.sleep_interval
        else:
            self._guard(self.publish_health)
        due = min(self._next_sizing, self._next_status) if self.mgr.panel.running else self._next_sizing
        wait = due - time.time()
        if self.mgr.driver.plan_active or self.mgr.driver.plans.checks_owed:
            wait = min(wait, opts.poll_interval)
        return max(wait, 0.1)

    def _guard(self, job: Callable[[], None]) -> None:
        try:
            job()
        except Exception:   # a bug must not end the loop
            self.mgr.log.error("pg_advisor: %s failed: %s", job.__name__, traceback.format_exc())

    # -- its jobs --------------------------------------------------------------------------------

    def keep_panel(self) -> None:
        """The panel's HTTP server on server_addr:server_port, moved when they change; its
        URL shows in `ceph mgr services` (and leaves it while nothing serves)."""
        opts = self.mgr.current_options()
        want = (opts.server_addr, opts.server_port)
        if want == self.mgr.panel.at:     # serving there, or failed there: wait for new options
            return
        try:
            url = self.mgr.panel.move(*want)
        except Exception as e:   # a port in use must not stop the rest of the module
            self.mgr.log.error("pg_advisor: panel not started on %s:%s: %s", *want, e)
            self.mgr.set_uri("")
            return
        self.mgr.set_uri(url)
        self.mgr.log.info("pg_advisor: panel at %s", url)

    def run_intents(self) -> None:
        """The commands queued since the last tick, oldest first, each on a fresh snapshot
        (read again only where the one before changed something); an outcome the handler
        no longer waits for goes to the history."""
        for intent in self.mgr.intents.take():
            report: Optional[Mapping[str, Any]] = None
            error: Optional[Exception] = None
            try:
                report = intent.act(self.mgr.reader.take_snapshot(fresh=True))
            except AdvisorError as e:
                error = e
            except Exception as e:    # raised again in the handler, as if it had run there
                self.mgr.log.error("pg_advisor: %s failed: %s", intent.name, traceback.format_exc())
                error = e
            if self.mgr.intents.finish(intent, report, error):
                self.mgr.driver.note(intent.outcome(), time.time())

    def read_due(self) -> None:
        """The read a lazy command left to the background (it took an older snapshot of a
        big cluster rather than wait for the read)."""
        self.mgr.reader.take_snapshot()

    def check_landing(self) -> None:
        """Where a crush-reweight's weights landed: the map epoch after the command's that
        holds them, and the pinned PGs whose pins missed it (past maps asked of the mon, at
        most EPOCHS_SEARCHED; in this thread, so that the command's handler waits for no
        map). Searched again while it is not found, for LANDING_WAIT."""
        driver = self.mgr.driver
        ask = driver.plans.pins.landing
        if ask is None:
            return
        now_epoch = self.mgr.reader.maps.epoch()
        if now_epoch <= ask.first:
            return
        found = weight_landing(self.mgr.reader.past_map, ask.first, now_epoch, ask.weights, ask.report)
        if found["epoch"] is None and now_epoch < ask.first + EPOCHS_SEARCHED and time.time() < ask.until:
            return
        driver.weights_landed(found, time.time())

    def run_plan(self) -> None:
        """One tick of the executor (and, in auto mode, a new plan when one is due)."""
        driver = self.mgr.driver
        self.check_landing()
        if self.mgr.current_options().mode is Mode.OFF:      # nothing in the background: a plan waits
            if driver.plans.checks_owed:      # (only the checks of commands)
                driver.check_commands(self.mgr.context(self.mgr.reader.take_snapshot()))
            return
        try:
            driver.tick(self.mgr.context(self.mgr.reader.take_snapshot()))
        except AdvisorError as e:
            self.mgr.log.warning("pg_advisor: plan not advanced: %s", e.message)
        self.mgr.progress.update(self.mgr, driver.progress())

    def publish_plan(self) -> None:
        """Copies of the plan and its history for the panel's thread (the serve loop and
        commands change the originals)."""
        driver = self.mgr.driver
        self.mgr.panel.show_plan(*driver.plan_view())

    def status(self, pool: Optional[str] = None, snap: Optional[snapshot.Snapshot] = None) -> StatusReport:
        opts = self.mgr.current_options()
        snap = snap or self.mgr.reader.take_snapshot()
        report = status_of(snap, pool, opts, self.mgr.balanced(opts))
        return with_ours(report, self.mgr.owned.ours(snap.pg_upmap_items))

    def refresh_status(self) -> None:
        """The status the panel and /metrics serve (and the sizing checks read): the costly
        part, computed here once per refresh."""
        try:
            snap = self.mgr.reader.take_snapshot()       # one snapshot serves the status and the figures
            doc = self.status(snap=snap)
            opts = self.mgr.current_options()
            # what /metrics adds to the status (panel/metrics.py)
            figures = {"mode": opts.mode.value,
                       "misplaced_budget": misplaced_max(opts, self.mgr.cluster_ratio()),
                       "misplaced_ratio": misplaced_ratio(snap) if snap.pgs is not None else None}
        except AdvisorError as e:
            self.mgr.log.warning("pg_advisor: status not computed: %s", e.message)
            self._status_error = e.message
            return
        self._status_error = None
        self.mgr.panel.show_status(doc, figures)

    def refresh_health(self) -> None:
        """Evaluate the sizing model (from a fresh status), then publish all health checks."""
        self._sizing_checks = {}
        opts = self.mgr.current_options()
        if opts.mode is not Mode.OFF:
            if time.time() - self.mgr.panel.status_at > opts.refresh_interval:
                self.refresh_status()
            doc = self.mgr.panel.status
            if doc is not None:
                self._sizing_checks = health_checks(doc)
        self.publish_health()

    def publish_health(self) -> None:
        """The sizing checks as last evaluated, and the plan's and the module's, as they are now."""
        if self.mgr.current_options().mode is Mode.OFF:
            self.mgr.set_health_checks({})
            return
        self.mgr.set_health_checks({**self._sizing_checks, **self.mgr.driver.health(),
                                    **module_checks(self._status_error, self.mgr.option_errors)})
