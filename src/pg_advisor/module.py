"""The MgrModule. Thin: it fetches the maps, translates commands, prints answers.

Every decision lives in the layers it calls; this file only knows the mgr's API.
"""
import enum
import errno
import functools
import inspect
import json
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from mgr_module import CLIReadCommand, CLIWriteCommand, MgrModule, Option

from .analysis.growth import growth_report
from .analysis.plan import plan_report
from .analysis.status import status_report
from .analysis.whatif import Change, pg_map, simulate
from .balance.report import eval_report, misplaced_copies, proposal_json, unkept
from .crush.upmap import mismatches
from .execute.driver import Driver, misplaced_max
from .execute.gates import cluster_blockers
from .execute.rounds import balance_round
from .model import options, snapshot
from .model.errors import AdvisorError
from .panel.server import Server
from .render.format import check_format
from .render.health import health_checks
from .render.views import show

CommandResult = Tuple[int, str, str]
Report = Dict[str, Any]
MAP_WAIT = 10.0     # seconds a write command waits for the mgr's map to show what it set


class Mode(str, enum.Enum):
    OFF = "off"
    ADVISE = "advise"
    AUTO = "auto"


class BalanceMode(str, enum.Enum):
    PGS = "pgs"
    BYTES = "bytes"


def command(name: str, view: str, write: bool = False
            ) -> Callable[[Callable[..., Report]], Callable[..., CommandResult]]:
    """Declare `ceph pg-advisor NAME` the upstream way (CLIReadCommand/CLIWriteCommand: the
    arguments from the method's typed parameters, the help from its docstring), with `-f`
    as an argument as pg_autoscaler declares it. The method returns a report; the reply is
    that report in the format asked (`views.show`: the view's text, json, json-pretty), or
    an AdvisorError's code and message. The format is checked before the method runs, so a
    bad one changes nothing."""
    def declare(f: Callable[..., Report]) -> Callable[..., CommandResult]:
        sig = inspect.signature(f)
        fmt = inspect.Parameter("format", inspect.Parameter.POSITIONAL_OR_KEYWORD, default="plain",
                                annotation=str)

        @functools.wraps(f)
        def reply(self: Any, *args: Any, format: str = "plain", **kwargs: Any) -> CommandResult:
            try:
                checked = check_format(format)
                return 0, show(view, f(self, *args, **kwargs), checked), ""
            except AdvisorError as e:
                return e.code, "", e.message
        # CLICommand reads the arguments from the signature: the method's, and -f
        setattr(reply, "__signature__", sig.replace(parameters=[*sig.parameters.values(), fmt],
                                                    return_annotation=CommandResult))
        (CLIWriteCommand if write else CLIReadCommand)("pg-advisor " + name)(reply)
        return reply
    return declare


class Module(MgrModule):
    # filled by MgrModule._register_commands from the @command declarations below
    COMMANDS: List[Dict[str, Any]] = []
    MODULE_OPTIONS = [Option(**o) for o in options.mgr_options()]
    # the cluster settings the sizing model reads, as the mgr sees them
    NATIVE_OPTIONS = list(snapshot.CONFIG_DEFAULTS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wake = threading.Event()   # set to re-evaluate now (options changed, shutdown)
        self._stopping = False
        self._driver: Optional[Driver] = None
        self._sizing_checks: Dict[str, Any] = {}
        self._option_errors: List[str] = []
        # what the panel serves: computed in the serve loop, once per refresh, never per
        # request (a scrape or a page must not cost a CRUSH and sizing run each)
        self._served: Dict[str, Any] = {"status": None, "at": 0.0, "progress": {"plan": None},
                                        "history": {"history": []}}
        self._server = Server(self._served_status, lambda: self._served["progress"],
                              lambda: self._served["history"])
        self._closed_events: set = set()
        self._panel_at: Optional[Tuple[str, int]] = None

    # -- reading the cluster -------------------------------------------------------------------

    def take_snapshot(self) -> snapshot.Snapshot:
        """The same documents the offline CLI reads from files, straight from the mgr."""
        config = {k: self.get_ceph_option(k) for k in self.NATIVE_OPTIONS}
        return snapshot.load(
            self.get("osd_map"), self.get("osd_map_crush"), self.get("pg_dump"), self.get("df"),
            mon_max_pg_per_osd=int(config["mon_max_pg_per_osd"]), config=config,
            autoscale=self._autoscale_status())

    def _autoscale_status(self) -> Optional[List[Dict[str, Any]]]:
        """What Ceph's pg_autoscaler would pick: its own `autoscale-status -f json`."""
        try:
            code, out, err = self.remote("pg_autoscaler", "_command_autoscale_status", format="json")
        except Exception as e:  # the autoscaler is an always-on module, but may be failing
            self.log.warning("pg_advisor: pg_autoscaler status unavailable: %s", e)
            return None
        if code != 0:
            return None
        status: List[Dict[str, Any]] = json.loads(out)
        return status

    def current_options(self) -> options.Options:
        """The module's options; one the mon let through that we cannot use (it passes
        'nan' for a float) falls back to its default and is reported, so that one bad
        value does not stop every command and the background."""
        good: Dict[str, Any] = {}
        bad: List[str] = []
        for spec in options.SPECS:
            raw = self.get_module_option(spec.name)
            if raw is None:
                continue
            try:
                options.coerce(spec.name, raw)
                good[spec.name] = raw
            except AdvisorError as e:
                bad.append(f"{e.message}; using the default {spec.default}")
        self._option_errors = bad
        return options.make(good)

    def balanced(self, opts: options.Options) -> bool:
        """Size against the balanced ideal when told to, or when the upmap balancer runs."""
        if opts.assume_balanced != "auto":
            return bool(opts.assume_balanced == "yes")
        return self.balancer_active() and self.get_module_option_ex("balancer", "mode", "upmap") == "upmap"

    def status(self, pool: Optional[str] = None) -> Dict[str, Any]:
        opts = self.current_options()
        return status_report(self.take_snapshot(), pool, opts, self.balanced(opts))

    def _served_status(self) -> Dict[str, Any]:
        doc = self._served["status"]
        if doc is None:
            raise AdvisorError(-errno.EAGAIN, "the status is not computed yet")
        return dict(doc)

    # -- commands ------------------------------------------------------------------------------

    @command("status", "status")
    def _cmd_status(self, pool: Optional[str] = None) -> Report:
        """Show pools, OSDs and how evenly PGs are spread over the OSDs"""
        return self.status(pool)

    @command("plan", "plan")
    def _cmd_plan(self) -> Report:
        """List the pg_num changes pg_advisor recommends, in order, with their cost"""
        opts = self.current_options()
        return plan_report(self.take_snapshot(), opts, self.balanced(opts))

    @command("eval", "eval")
    def _cmd_eval(self, pool: Optional[str] = None) -> Report:
        """Score the current PG distribution against each OSD's share"""
        return eval_report(self.take_snapshot(), [pool] if pool else None)

    def balancer_active(self) -> bool:
        return str(self.get_module_option_ex("balancer", "active", False)).lower() in ("true", "1")

    def _refuse_to_balance(self, snap: snapshot.Snapshot) -> Optional[str]:
        """Why balancing must not start now, or None."""
        if self.balancer_active():
            return ("the built-in balancer is active: pg_advisor does not fight it "
                    "(`ceph balancer off` hands balancing over)")
        why = cluster_blockers(snap)
        return why[0] if why else None

    @command("balance", "balance", write=True)
    def _cmd_balance(self, pool: Optional[str] = None, max_items: Optional[int] = None,
                     dry_run: bool = False, mode: Optional[BalanceMode] = None) -> Report:
        """Compute pg-upmap-items toward each OSD's share and set a bounded batch of them
        (--dry-run: only show them)"""
        opts = self.current_options()
        items = int(max_items) if max_items is not None else int(opts.balance_max_items)
        most = int(options.BY_NAME["balance_max_items"].max or 0)
        if not 1 <= items <= most:     # as the option itself: one round stays small
            raise AdvisorError.invalid(f"--max-items must be between 1 and {most}, not {items}")
        snap = self.take_snapshot()
        rnd = balance_round(snap, [pool] if pool else None, items,
                            mode.value if mode is not None else str(opts.balance_mode),
                            misplaced_copies(snap, self.cluster_ratio()), float(opts.balance_min_gain))
        report = proposal_json(rnd.proposal)
        dry = bool(dry_run)
        report["dry_run"] = dry
        if not dry:
            self.driver.check_idle("balancing")
            why = self._refuse_to_balance(snap)
            if why:
                raise AdvisorError(-errno.EBUSY, f"not balancing: {why}")
            failed = rnd.apply(self.burst, bool(self.get_module_option("prime_pg_temp"))).messages()
            # the mon acknowledges an item that breaks the rule and drops it: check the map,
            # and that it puts each PG where its items were meant to
            self._wait_for_map(snap.epoch)
            kept = snapshot.load_upmaps(self.get("osd_map"))[1]
            lost = unkept(rnd.taken(), kept)
            failed += [f"{pgid}: the mon did not keep the items" for pgid in lost]
            want = {k: v for k, v in rnd.wanted().items() if k not in lost}
            replicated = {p.id for p in snap.pools if p.type == "replicated"}
            bad = mismatches(want, self.mon_up_sets(snap, sorted(want)), replicated,
                             snap.osds.up & snap.osds.exists)
            failed += [f"{pgid}: {why}" for pgid, why in sorted(bad.items())]
            report["applied"], report["failed"] = len(rnd.items) - len(failed), failed
            report["mismatched"] = len(bad)
        return report

    @command("map", "map")
    def _cmd_map(self, pool: Optional[str] = None) -> Report:
        """Show every PG's up set as CRUSH computes it"""
        return pg_map(self.take_snapshot(), pool)

    @command("simulate", "simulate")
    def _cmd_simulate(self, pool: Optional[str] = None, pg_num: Optional[int] = None,
                      pgp_num: Optional[int] = None, out_osd: Optional[int] = None,
                      reweight: Optional[int] = None, weight: Optional[float] = None,
                      add_host: Optional[str] = None, osds: Optional[int] = None,
                      device_class: Optional[str] = None, root: Optional[str] = None,
                      backfill_mib_s: Optional[float] = None) -> Report:
        """What a pg_num/pgp_num change (<pool> --pg_num N [--pgp_num M]), an OSD marked out
        (--out-osd OSD), a reweight (--reweight OSD --weight W) or a new host (--add-host NAME
        --osds N --weight W [--device-class C] [--root R] [--backfill-mib-s RATE]) would do"""
        if add_host is not None:
            if any(v is not None for v in (pool, pg_num, pgp_num, out_osd, reweight)):
                raise AdvisorError.invalid("--add-host is simulated on its own (no pool, out or reweight)")
            return self._grow(add_host, osds, weight, device_class, root, backfill_mib_s)
        if (reweight is None) != (weight is None):
            raise AdvisorError.invalid("--reweight OSD goes with --weight W")
        weights = {int(reweight): float(weight)} if reweight is not None and weight is not None else {}
        change = Change(pool=pool, pg_num=pg_num, pgp_num=pgp_num,
                        out=(int(out_osd),) if out_osd is not None else (), reweight=weights)
        return simulate(self.take_snapshot(), change)

    def _grow(self, host: str, osds: Optional[int], weight: Optional[float], device_class: Optional[str],
              root: Optional[str], rate: Optional[float]) -> Report:
        if osds is None or weight is None:
            raise AdvisorError.invalid("--add-host NAME goes with --osds N and --weight W (each OSD's "
                                       "CRUSH weight)")
        opts = self.current_options()
        return growth_report(self.take_snapshot(), str(host), int(osds), float(weight), device_class,
                             str(root or "default"), misplaced_max(opts, self.cluster_ratio()),
                             float(rate) * (1 << 20) if rate is not None else None)

    # -- execution -----------------------------------------------------------------------------

    @property
    def driver(self) -> Driver:
        if self._driver is None:    # the store is readable only once the module runs
            self._driver = Driver(self.get_store, self.set_store, time.time())
            self._driver.executor.up_sets = self.mon_up_sets
        return self._driver

    def mon_up_sets(self, snap: snapshot.Snapshot, pgids: Sequence[str]) -> Dict[str, List[int]]:
        """pgid -> its up set in the mgr's OSDMap, computed by Ceph itself (EC holes as
        CRUSH_ITEM_NONE): what items are checked against once they are set. `snap` is
        not read: the map is the mgr's newest."""
        osdmap = self.get_osdmap()
        pools = {p.id for p in snap.pools}
        out: Dict[str, List[int]] = {}
        for pgid in pgids:
            head, tail = pgid.split(".")
            if int(head) in pools:
                out[pgid] = list(osdmap.pg_to_up_acting_osds(int(head), int(tail, 16))["up"])
        return out

    def _wait_for_map(self, epoch: int, timeout: float = MAP_WAIT) -> None:
        """Until the mgr's OSDMap is newer than `epoch` (the mon answers a command once its
        map has the change; the mgr hears of that map a moment later), at most `timeout`."""
        end = time.monotonic() + timeout
        while self.get_osdmap().get_epoch() <= epoch and time.monotonic() < end:
            time.sleep(0.2)

    def cluster_ratio(self) -> float:
        return float(self.get_ceph_option("target_max_misplaced_ratio"))

    def send(self, cmd: Dict[str, Any]) -> Tuple[int, str]:
        code, _, err = self.mon_command(dict(cmd, format="json"))
        return code, err

    def burst(self, cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
        """Send commands together, in order, each from its own thread, so that the mon
        takes them into one map epoch; answers in the same order."""
        results: List[Tuple[int, str]] = [(-errno.EIO, "not sent")] * len(cmds)

        def one(i: int, c: Dict[str, Any]) -> None:
            results[i] = self.send(c)
        threads = [threading.Thread(target=one, args=(i, c)) for i, c in enumerate(cmds)]
        for t in threads:
            t.start()
            time.sleep(0.002)     # keep them in order at the mon
        for t in threads:
            t.join(120)
        return results

    @command("mode", "mode", write=True)
    def _cmd_mode(self, mode: Optional[Mode] = None) -> Report:
        """Show or set what pg_advisor does in the background (off, advise: warn only, auto:
        apply recommended pg_num changes in throttled steps)"""
        if mode is not None:
            self.set_module_option("mode", mode.value)
            self._wake.set()
        return {"mode": self.get_module_option("mode")}

    @command("apply", "apply", write=True)
    def _cmd_apply(self, pool: Optional[str] = None, pg_num: Optional[int] = None,
                   dry_run: bool = False) -> Report:
        """Apply the recommended pg_num changes (or --pool P --pg-num N) in throttled steps
        (--dry-run: only show the steps)"""
        opts = self.current_options()
        report = self.driver.apply(self.take_snapshot(), opts, self.cluster_ratio(), self.balanced(opts),
                                   pool, int(pg_num) if pg_num is not None else None, bool(dry_run),
                                   time.time())
        self._wake.set()
        return report

    @command("pin-remapped", "pin-remapped", write=True)
    def _cmd_pin_remapped(self, dry_run: bool = False) -> Report:
        """Map every remapped PG back onto the OSDs that hold its data (pg-upmap-items), then
        drain the pins in throttled balance rounds (--dry-run: only show them)"""
        snap = self.take_snapshot()
        report = self.driver.pin_remapped(snap, self.current_options(), self.cluster_ratio(),
                                          bool(dry_run), self.burst, time.time(), self.balancer_active())
        if not dry_run and report.get("plan"):
            self._wait_for_map(snap.epoch)
            report["verified"] = self.driver.verify_pins(snap, time.time())
        self._wake.set()
        return report

    # (not `target`: the ceph CLI keeps that name for itself, see test_module.py)
    @command("drain", "drain", write=True)
    def _cmd_drain(self, osd_or_bucket: str, dry_run: bool = False) -> Report:
        """Empty an OSD (osd.N) or a CRUSH bucket such as a host through pg-upmap-items, in
        throttled balance rounds, before it is taken out (--dry-run: only show it)"""
        report = self.driver.drain(self.take_snapshot(), self.current_options(), self.cluster_ratio(),
                                   str(osd_or_bucket), bool(dry_run), time.time(), self.balancer_active())
        self._wake.set()
        return report

    @command("pause", "progress", write=True)
    def _cmd_pause(self) -> Report:
        """Take no new step of the running plan"""
        with self.driver.lock:
            self.driver.executor.pause(time.time())
        self._wake.set()
        return self._progress()

    @command("resume", "progress", write=True)
    def _cmd_resume(self) -> Report:
        """Continue the paused plan"""
        with self.driver.lock:
            self.driver.executor.resume(time.time())
        self._wake.set()
        return self._progress()

    @command("abort", "abort", write=True)
    def _cmd_abort(self) -> Report:
        """Stop the plan, leaving pg_num and pgp_num consistent; say what remains"""
        summary = self.driver.abort(self.take_snapshot(), self.send, time.time())
        self._report_progress()
        self._serve_plan()
        self._wake.set()          # health follows at once
        return {"aborted": True, "summary": summary}

    @command("progress", "progress")
    def _cmd_progress(self) -> Report:
        """The plan in progress: its steps and where it stands"""
        return self._progress()

    def _progress(self) -> Report:
        with self.driver.lock:
            return self.driver.executor.report()

    @command("history", "history")
    def _cmd_history(self) -> Report:
        """The steps pg_advisor took (the last 200 events)"""
        with self.driver.lock:
            return {"history": list(self.driver.executor.history)}

    def _serve_plan(self) -> None:
        """Copies of the plan and its history for the panel's thread (the serve loop and
        commands change the originals; report() builds its copy)."""
        with self.driver.lock:
            self._served["progress"] = self.driver.executor.report()
            self._served["history"] = {"history": list(self.driver.executor.history)}

    def _report_progress(self) -> None:
        """The plan as an event in `ceph -s`: updated while it runs, closed once."""
        ev = self.driver.progress()
        if ev is None or ev[0] in self._closed_events:
            return
        ev_id, msg, frac, status = ev
        try:
            if status in ("running", "paused"):
                self.remote("progress", "update", ev_id, ev_msg=msg, ev_progress=frac,
                            add_to_ceph_s=True)
            else:
                self._closed_events.add(ev_id)
                if status == "done":
                    self.remote("progress", "complete", ev_id)
                else:
                    self.remote("progress", "fail", ev_id, f"plan {status}")
        except Exception as e:   # progress is optional: never let it stop the plan
            self.log.warning("pg_advisor: progress event: %s", e)

    def _handle_command(self, inbuf: Optional[str], cmd: Dict[str, Any]) -> Any:
        """The mgr's entry for every command: MgrModule dispatches to the @command
        declarations; a bug must not take the mgr down, so it becomes an error that says
        what failed."""
        try:
            return super()._handle_command(inbuf or "", cmd)
        except Exception as e:
            self.log.error("pg_advisor: %s failed: %s", cmd.get("prefix"), traceback.format_exc())
            return -errno.EIO, "", f"internal error in {cmd.get('prefix')}: {e}"

    def handle_command(self, inbuf: Optional[str], cmd: Dict[str, Any]) -> CommandResult:
        """A prefix none of the declarations has (MgrModule sends it here)."""
        return -errno.EINVAL, "", f"unknown command '{cmd.get('prefix')}'"

    # -- lifecycle -----------------------------------------------------------------------------

    def _interval(self, name: str, default: float) -> float:
        return float(self.get_module_option(name) or default)

    def refresh_status(self) -> None:
        """The status the panel and /metrics serve (and the sizing checks read): the costly
        part, computed here once per refresh."""
        try:
            doc = self.status()
        except AdvisorError as e:
            self.log.warning("pg_advisor: status not computed: %s", e.message)
            return
        self._served.update(status=doc, at=time.time())

    def refresh_health(self) -> None:
        """Evaluate the sizing model (from a fresh status), then publish all health checks."""
        self._sizing_checks = {}
        if self.get_module_option("mode") != "off":
            if time.time() - self._served["at"] > self._interval("refresh_interval", 10):
                self.refresh_status()
            if self._served["status"] is not None:
                self._sizing_checks = health_checks(self._served["status"])
        self.publish_health()

    def publish_health(self) -> None:
        """The sizing checks as last evaluated, and the plan's, as they are now."""
        if self.get_module_option("mode") == "off":
            self.set_health_checks({})
            return
        checks = {**self._sizing_checks, **self.driver.health()}
        if self._option_errors:
            checks["PG_ADVISOR_OPTION_INVALID"] = {
                "severity": "warning", "count": len(self._option_errors), "detail": self._option_errors,
                "summary": f"pg_advisor ignores {len(self._option_errors)} option value(s): "
                           f"{self._option_errors[0]}"}
        self.set_health_checks(checks)

    def run_plan(self) -> None:
        """One tick of the executor (and, in auto mode, a new plan when one is due)."""
        opts = self.current_options()
        if opts.mode == "off":      # nothing in the background: a plan waits
            return
        try:
            self.driver.tick(self.take_snapshot(), opts, self.cluster_ratio(), self.balanced(opts),
                             self.send, time.time(), self.burst, self.balancer_active())
        except AdvisorError as e:
            self.log.warning("pg_advisor: plan not advanced: %s", e.message)
        self._report_progress()

    def _guard(self, job: Callable[[], None]) -> None:
        try:
            job()
        except Exception:   # a bug must not end the loop
            self.log.error("pg_advisor: %s failed: %s", job.__name__, traceback.format_exc())

    def keep_panel(self) -> None:
        """The panel's HTTP server on server_addr:server_port, moved when they change; its
        URL shows in `ceph mgr services` (and leaves it while nothing serves)."""
        want = (str(self.get_module_option("server_addr")), int(self.get_module_option("server_port")))
        if want == self._panel_at:     # serving there, or failed there: wait for new options
            return
        self._server.stop()
        self._panel_at = want
        try:
            url = self._server.start(*want)
        except Exception as e:   # a port in use must not stop the rest of the module
            self.log.error("pg_advisor: panel not started on %s:%s: %s", *want, e)
            self.set_uri("")
            return
        self.set_uri(url)
        self.log.info("pg_advisor: panel at %s", url)

    def serve(self) -> None:
        self.log.info("pg_advisor: serving")
        try:
            self._loop()
        finally:
            self._server.stop()    # module disabled or mgr failing over: release the port

    def _loop(self) -> None:
        next_sizing = next_status = 0.0
        while not self._stopping:
            self._guard(self.keep_panel)
            self._guard(self.run_plan)
            self._guard(self._serve_plan)
            if self._server.running and time.time() >= next_status:
                self._guard(self.refresh_status)      # for the panel, while it serves
                next_status = time.time() + self._interval("refresh_interval", 10)
            if time.time() >= next_sizing:
                self._guard(self.refresh_health)
                next_sizing = time.time() + self._interval("sleep_interval", 60)
            else:
                self._guard(self.publish_health)
            wait = (min(next_sizing, next_status) if self._server.running else next_sizing) - time.time()
            if self.driver.executor.active:
                wait = min(wait, self._interval("poll_interval", 2))
            if self._wake.wait(max(wait, 0.1)):
                self._wake.clear()
                next_sizing = next_status = 0.0   # options changed or a command asked: now

    def shutdown(self) -> None:
        self._stopping = True
        self._wake.set()

    def config_notify(self) -> None:
        # new options (or a new sleep_interval) apply at once: re-evaluate now
        self._wake.set()
