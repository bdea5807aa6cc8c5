"""The MgrModule. Thin: it fetches the maps, translates commands, prints answers.

Every decision lives in the layers it calls; this file only knows the mgr's API.
"""
import ctypes
import errno
import functools
import inspect
import json
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from mgr_module import MgrModule, Option
from mgr_module import CommandResult as MonResult

from . import mgr_compat
from .analysis.status import status_of
from .execute.context import BalanceRequest, Context
from .execute.driver import Driver, misplaced_max
from .execute.gates import misplaced_ratio
from .execute.plan_state import ACTIVE, Status
from .commands import table
from .commands.answers import Inputs, answer
from .model import options, snapshot
from .model.pg_brief import brief_pg_map, parse_brief
from .model.reuse import ChangeKey, SnapshotReuse
from .model.errors import AdvisorError
from .panel.server import Server
from .render.format import check_format
from .render.health import health_checks
from .render.views import show

CommandResult = Tuple[int, str, str]
Report = Dict[str, Any]
MAP_WAIT = 10.0     # seconds a write command waits for the mgr's map to show what it set
BURST_WAIT = 120.0  # seconds a command of a burst may take to answer
# the fields of `pg_status` (PGMapDigest::print_summary) whose change means the PG stats did:
# not the I/O rates, which change every report and decide nothing here
# the modes of Ceph's balancer that even PG counts with pg-upmap-items (Reef's upmap-read
# also evens primaries; read moves only primaries, crush-compat only weights)
BALANCER_EVENS_PGS = ("upmap", "upmap-read")
PARSE_PAUSE = 0.002     # seconds without the GIL between chunks of a big JSON text
PG_SUMMARY_KEYS = ("pgs_by_state", "num_pgs", "num_pools", "num_objects", "data_bytes",
                   "degraded_objects", "misplaced_objects", "unfound_objects")


def give_back_memory() -> None:
    """Hand the heap's free pages back to the system (glibc's malloc_trim: the mgr uses
    glibc's allocator, one arena per thread): a read of 320,000 PGs passes through some
    300 MiB that would otherwise stay in the mgr's RSS."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Optional[Callable[[int], int]]:
    """glibc's malloc_trim, looked up once; None where the C library is not glibc."""
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def declare(cmd: table.Command) -> None:
    """Declare `ceph pg-advisor NAME` from its entry in the command table, the upstream way
    (the registry reads the arguments from the typed signature, the help from the
    docstring), with `-f` as an argument as pg_autoscaler declares it. The reply is
    the report in the format asked (`views.show`), or an AdvisorError's code and message.
    The format and the arguments are checked (table.check, as offline) before anything
    runs, so a bad one changes nothing."""
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    for arg in cmd.args:
        kind: Any = arg.kind
        if arg.many:
            kind = List[kind]    # Ceph's n=N
        if arg.required:
            params.append(P(arg.name, P.POSITIONAL_OR_KEYWORD, annotation=kind))
        elif arg.kind is bool:
            params.append(P(arg.name, P.POSITIONAL_OR_KEYWORD, default=False, annotation=bool))
        else:
            params.append(P(arg.name, P.POSITIONAL_OR_KEYWORD, default=None, annotation=Optional[kind]))
    params.append(P("format", P.POSITIONAL_OR_KEYWORD, default="plain", annotation=str))

    def reply(self: "Module", format: str = "plain", **given: Any) -> CommandResult:
        try:
            checked = check_format(format)
            return 0, show(cmd.view, self.answer(cmd, table.check(cmd, given, live=True)), checked), ""
        except AdvisorError as e:
            return e.code, "", e.message
    setattr(reply, "__signature__", inspect.Signature(params, return_annotation=CommandResult))
    reply.__doc__ = cmd.help
    reply.__name__ = reply.__qualname__ = "_cmd_" + cmd.name.replace("-", "_")
    mgr_compat.register("pg-advisor " + cmd.name, reply, cmd.write)


def mon_mapping(osdmap: Any, pgid: str) -> Dict[str, Any]:
    """A PG's mapping ("up", "up_primary", "acting", ...) computed by Ceph itself, in the
    mgr's OSDMap."""
    head, tail = pgid.split(".")
    return dict(osdmap.pg_to_up_acting_osds(int(head), int(tail, 16)))


class Module(MgrModule):
    # filled by MgrModule._register_commands from the declarations (the command table) below
    COMMANDS: List[Dict[str, Any]] = []
    CLICommand = mgr_compat.REGISTRY     # where Tentacle's mgr finds them (Pacific: unused)
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
        self._status_error: Optional[str] = None     # why the last status could not be computed
        # what the panel serves: computed in the serve loop, once per refresh, never per
        # request (a scrape or a page must not cost a CRUSH and sizing run each)
        self._served: Dict[str, Any] = {"status": None, "at": 0.0, "progress": {"plan": None},
                                        "history": {"history": []}, "figures": {}}
        self._server = Server(self._served_status, lambda: self._served["progress"],
                              lambda: self._served["history"],
                              lambda: dict(self._served["figures"], at=self._served["at"]))
        self._closed_events: set = set()
        self._panel_at: Optional[Tuple[str, int]] = None
        self._snaps = SnapshotReuse()

    # -- reading the cluster -------------------------------------------------------------------

    def take_snapshot(self, fresh: bool = False, lazy: bool = False) -> snapshot.Snapshot:
        """The cluster as a snapshot: the last one while nothing it depends on has changed,
        or while a costly read of a change is not due yet (model/reuse.py), else read anew.
        A command that changes the cluster asks for a `fresh` one: changes read at once. A
        command that only looks is `lazy`: where a read is costly it takes the last one and
        leaves the read to the background, which it wakes."""
        # one read of the PG summary and of the settings serves the key and the snapshot
        pg_status = self._pg_status()
        config = {k: self.get_ceph_option(k) for k in self.NATIVE_OPTIONS}
        snap = self._snaps.get(self._change_key(pg_status, config),
                               functools.partial(self._read_snapshot, pg_status, config),
                               time.monotonic(), fresh, lazy)
        if lazy and self._snaps.due:
            self._wake.set()
        return snap

    def _change_key(self, pg: Dict[str, Any], config: Dict[str, Any]) -> Optional[ChangeKey]:
        """What changes when the answers may: the OSDMap epoch, the PG map's summary `pg`
        (PG states, objects, bytes, misplaced: `pg_status` is a few hundred bytes however
        many PGs there are) and the cluster settings the model reads. None if any is
        unreadable."""
        if not pg:
            return None
        try:
            summary = json.dumps({k: pg.get(k) for k in PG_SUMMARY_KEYS}, sort_keys=True, default=str)
            # (the option that says how the PG stats are read changes the snapshot too)
            how = self.current_options().pg_stats_full_max
            settings = (tuple(str(config[k]) for k in self.NATIVE_OPTIONS), how)
            return ChangeKey(map=self.get_osdmap().get_epoch(), stats=summary, settings=settings)
        except Exception:   # e.g. no PG map yet: read everything, keep nothing
            return None

    def _read_snapshot(self, pg_status: Dict[str, Any], config: Dict[str, Any]) -> snapshot.Snapshot:
        """The same documents the offline CLI reads from files, straight from the mgr;
        `pg_status` (the PG map's summary) and `config` (the settings) were read for the
        change key."""
        self.log.debug("pg_advisor: reading the cluster (snapshot %d)", self._snaps.loads + 1)
        try:
            return self._read_documents(pg_status, config)
        finally:
            give_back_memory()      # what the read's documents took, once they are gone

    def _read_documents(self, pg_status: Dict[str, Any], config: Dict[str, Any]) -> snapshot.Snapshot:
        took: Dict[str, float] = {}

        def timed(what: str, read: Callable[[], Any]) -> Any:
            t0 = time.monotonic()
            out = read()
            took[what] = time.monotonic() - t0
            return out
        osd_map, crush, df = (timed(k, functools.partial(self.get, k))
                              for k in ("osd_map", "osd_map_crush", "df"))
        # the full PG stats while they are small; the brief ones past pg_stats_full_max
        num_pgs = pg_status.get("num_pgs", 0)
        if not isinstance(num_pgs, int) or num_pgs <= self.current_options().pg_stats_full_max:
            pg_dump = timed("pg_dump", functools.partial(self.get, "pg_dump"))
        else:
            pg_dump = timed("pg_stats_brief", lambda: self._brief_pg_map(pg_status, df))
        auto = timed("pg_autoscaler", self._autoscale_status)
        snap: snapshot.Snapshot = timed("load", lambda: snapshot.load(
            osd_map, crush, pg_dump, df, mon_max_pg_per_osd=int(config["mon_max_pg_per_osd"]),
            config=config, autoscale=auto))
        # what a read costs, by part: on a big cluster this is where the mgr's time goes
        total = sum(took.values())
        (self.log.info if total > 1.0 else self.log.debug)(
            "pg_advisor: read the cluster in %.2f s (%s)", total,
            ", ".join(f"{k} {v:.2f} s" for k, v in took.items()))
        return snap

    def _pg_status(self) -> Dict[str, Any]:
        """The PG map's summary, {} if the mgr has none to give (no PG map yet)."""
        try:
            got = self.get("pg_status")
        except Exception:
            return {}
        return got if isinstance(got, dict) else {}

    def _brief_pg_map(self, pg_status: Dict[str, Any], df: Any) -> Dict[str, Any]:
        """The PG stats a big cluster is read through (model/pg_brief.py): `pg dump
        pgs_brief`, which the mgr writes without our GIL, and two narrow getters."""
        code, out, err = self.mon_command({"prefix": "pg dump", "dumpcontents": ["pgs_brief"],
                                           "format": "json"})
        if code != 0:
            raise AdvisorError(code, f"pg dump pgs_brief: {err}")
        try:     # a chunk of rows at a time, letting the mgr's other threads run between
            brief = parse_brief(out, functools.partial(time.sleep, PARSE_PAUSE))
        except ValueError as e:
            raise AdvisorError.invalid(f"pg dump pgs_brief: not JSON: {e}") from None
        try:
            return brief_pg_map(brief, self.get("pg_progress"), self.get("osd_stats"), pg_status, df)
        except ValueError as e:
            raise AdvisorError.invalid(str(e)) from None

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
            return opts.assume_balanced == "yes"
        return (self.balancer_active()
                and self.get_module_option_ex("balancer", "mode", "upmap") in BALANCER_EVENS_PGS)

    def status(self, pool: Optional[str] = None,
               snap: Optional[snapshot.Snapshot] = None) -> Dict[str, Any]:
        opts = self.current_options()
        return status_of(snap or self.take_snapshot(), pool, opts, self.balanced(opts))

    def _served_status(self) -> Dict[str, Any]:
        doc = self._served["status"]
        if doc is None:
            raise AdvisorError(-errno.EAGAIN, "the status is not computed yet")
        return dict(doc)

    # -- commands ------------------------------------------------------------------------------

    def inputs(self) -> Inputs:
        opts = self.current_options()
        return Inputs(self.take_snapshot(lazy=True), opts, self.balanced(opts), self.cluster_ratio())

    def answer(self, cmd: table.Command, v: table.Values) -> Report:
        """Command `cmd` with its checked values: the ones that only read are answered as the
        offline CLI answers them; the ones that act, here."""
        act = getattr(self, "_act_" + cmd.name.replace("-", "_"), None)
        if act is not None:
            report: Report = act(v)
            return report
        return answer(cmd.name, self.inputs(), v)

    def balancer_active(self) -> bool:
        return str(self.get_module_option_ex("balancer", "active", False)).lower() in ("true", "1")

    def _act_balance(self, v: table.Values) -> Report:
        """One bounded batch of pg-upmap-items toward each OSD's share (or only its dry run):
        one round, as the background's, within the misplaced budget."""
        ctx = self.context(self._snapshot_to_act(v))
        opts = ctx.opts
        # (table.check held --max-items to the option's bound: one round stays small)
        items = v["max_items"] if v["max_items"] is not None else opts.balance_max_items
        req = BalanceRequest([v["pool"]] if v["pool"] else None, items, v["mode"] or opts.balance_mode,
                             bool(v["dry_run"]))
        return self.driver.balance(ctx, req, self._items_after)

    def _act_read_balance(self, v: table.Values) -> Report:
        """One bounded batch of pg-upmap-primary changes (or only its dry run)."""
        ctx = self.context(self._snapshot_to_act(v))
        most = v["max_changes"] if v["max_changes"] is not None else ctx.opts.read_max_changes
        return self.driver.read_balance(ctx, [v["pool"]] if v["pool"] else None, most, bool(v["dry_run"]),
                                        self._primaries_after)

    def _primaries_after(self, epoch: int, pgids: Sequence[str]) -> Tuple[Dict[str, int], Dict[str, int]]:
        """The pg_upmap_primaries of the mgr's first OSDMap newer than `epoch` (or its newest,
        after MAP_WAIT), and the up primary Ceph computes there for each of `pgids`."""
        self._wait_for_map(epoch)
        osdmap = self.get_osdmap()
        entries = dict(snapshot.load_upmap_primaries(self.get("osd_map")))
        primary: Dict[str, int] = {}
        for pgid in pgids:
            primary[pgid] = int(mon_mapping(osdmap, pgid)["up_primary"])
        return entries, primary

    def context(self, snap: snapshot.Snapshot) -> Context:
        """What a command or a tick acts on: `snap` and all else read from the mgr now."""
        opts = self.current_options()
        return Context(snap, opts, self.cluster_ratio(), time.time(), self.send, self.burst,
                       self.balanced(opts), self.balancer_active())

    def _items_after(self, epoch: int) -> Mapping[str, Sequence[Tuple[int, int]]]:
        """The upmap items in the mgr's first OSDMap newer than `epoch` (or its newest, after
        MAP_WAIT): what the mon kept of those just set."""
        self._wait_for_map(epoch)
        return snapshot.load_upmaps(self.get("osd_map"))[1]

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
            if int(pgid.split(".")[0]) in pools:
                out[pgid] = list(mon_mapping(osdmap, pgid)["up"])
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

    def send_nowait(self, cmd: Dict[str, Any]) -> Callable[[], Tuple[int, str]]:
        """Send a mon command without waiting; the function returned waits for its answer."""
        result = MonResult("")
        self.send_command(result, "mon", "", json.dumps(dict(cmd, format="json")), "")

        def wait() -> Tuple[int, str]:
            if not result.ev.wait(BURST_WAIT):
                return -errno.ETIMEDOUT, f"no answer from the mon within {BURST_WAIT:g} s"
            code, _, err = result.wait()
            return code, err
        return wait

    def burst(self, cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
        """Send commands together, in order, none waiting for the one before (no thread
        each: a weight change and its hundreds of pins go out as one), so that the mon takes
        them into one map epoch; answers in the same order."""
        waits = [self.send_nowait(c) for c in cmds]
        return [w() for w in waits]

    def _act_mode(self, v: table.Values) -> Report:
        if v["mode"] is not None:
            self.set_module_option("mode", v["mode"].value)
            self.driver.mode_set(v["mode"], time.time())
            self._wake.set()
        return {"mode": self.current_options().mode}

    def _snapshot_to_act(self, v: table.Values) -> snapshot.Snapshot:
        """A command that acts reads every change at once; its --dry-run only looks."""
        return self.take_snapshot(fresh=not v["dry_run"], lazy=bool(v["dry_run"]))

    def _act_apply(self, v: table.Values) -> Report:
        report = self.driver.apply(self.context(self._snapshot_to_act(v)), v["pool"], v["pg_num"],
                                   v["dry_run"])
        self._wake.set()
        return report

    def _act_pin_remapped(self, v: table.Values) -> Report:
        snap, dry_run = self._snapshot_to_act(v), v["dry_run"]
        report = self.driver.pin_remapped(self.context(snap), dry_run)
        if not dry_run and report.get("plan"):
            self._wait_for_map(snap.epoch)
            report["verified"] = self.driver.verify_pins(snap, time.time())
        self._wake.set()
        return report

    def _act_crush_reweight(self, v: table.Values) -> Report:
        snap, dry_run = self._snapshot_to_act(v), v["dry_run"]
        weights = {int(o): float(v["weight"]) for o in v["osd"]}
        report = self.driver.crush_reweight(self.context(snap), weights, dry_run)
        if not dry_run and report.get("plan"):
            # every answer is in: the mon's epoch now has all that landed; the mgr's map follows
            code, out, _ = self.mon_command({"prefix": "osd stat", "format": "json"})
            self._wait_for_map(int(json.loads(out)["epoch"]) - 1 if code == 0 else snap.epoch)
            report["verified"] = self.driver.verify_pins(snap, time.time())
        self._wake.set()
        return report

    def _act_drain(self, v: table.Values) -> Report:
        report = self.driver.drain(self.context(self._snapshot_to_act(v)), v["osd_or_bucket"], v["dry_run"])
        self._wake.set()
        return report

    def _act_pause(self, v: table.Values) -> Report:
        with self.driver.lock:
            self.driver.executor.pause(time.time())
        self._wake.set()
        return self._progress()

    def _act_resume(self, v: table.Values) -> Report:
        with self.driver.lock:
            self.driver.executor.resume(time.time())
        self._wake.set()
        return self._progress()

    def _act_abort(self, v: table.Values) -> Report:
        summary = self.driver.abort(self.context(self.take_snapshot(fresh=True)))
        self._report_progress()
        self._serve_plan()
        self._wake.set()          # health follows at once
        return {"aborted": True, "summary": summary}

    def _act_progress(self, v: table.Values) -> Report:
        return self._progress()

    def _progress(self) -> Report:
        with self.driver.lock:
            return self.driver.executor.report()

    def _act_history(self, v: table.Values) -> Report:
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
            if status in ACTIVE:
                self.remote("progress", "update", ev_id, ev_msg=msg, ev_progress=frac,
                            add_to_ceph_s=True)
            else:
                self._closed_events.add(ev_id)
                if status == Status.DONE:
                    self.remote("progress", "complete", ev_id)
                else:
                    self.remote("progress", "fail", ev_id, f"plan {status}")
        except Exception as e:   # progress is optional: never let it stop the plan
            self.log.warning("pg_advisor: progress event: %s", e)

    def _handle_command(self, inbuf: Optional[str], cmd: Dict[str, Any]) -> Any:
        """The mgr's entry for every command: MgrModule dispatches to the declarations; a
        bug must not take the mgr down, so it becomes an error that says what failed. The
        arguments are checked first: the mgr's own cast would fail on a value the `ceph`
        CLI never sends (a raw mon command can), as an internal error."""
        known = table.BY_NAME.get(str(cmd.get("prefix", "")).removeprefix("pg-advisor "))
        if known is not None:
            try:
                table.check(known, {a.name: cmd[a.name] for a in known.args if a.name in cmd}, live=True)
            except AdvisorError as e:
                return e.code, "", e.message
        try:
            return super()._handle_command(inbuf or "", cmd)
        except Exception as e:
            self.log.error("pg_advisor: %s failed: %s", cmd.get("prefix"), traceback.format_exc())
            return -errno.EIO, "", f"internal error in {cmd.get('prefix')}: {e}"

    def handle_command(self, inbuf: Optional[str], cmd: Dict[str, Any]) -> CommandResult:
        """A prefix none of the declarations has (MgrModule sends it here)."""
        return -errno.EINVAL, "", f"unknown command '{cmd.get('prefix')}'"

    # -- lifecycle -----------------------------------------------------------------------------

    def refresh_status(self) -> None:
        """The status the panel and /metrics serve (and the sizing checks read): the costly
        part, computed here once per refresh."""
        try:
            snap = self.take_snapshot()       # one snapshot serves the status and the figures
            doc = self.status(snap=snap)
            opts = self.current_options()
            # what /metrics adds to the status (panel/metrics.py)
            figures = {"mode": opts.mode.value, "misplaced_budget": misplaced_max(opts, self.cluster_ratio()),
                       "misplaced_ratio": misplaced_ratio(snap) if snap.pgs is not None else None}
        except AdvisorError as e:
            self.log.warning("pg_advisor: status not computed: %s", e.message)
            self._status_error = e.message
            return
        self._status_error = None
        self._served.update(status=doc, at=time.time(), figures=figures)

    def refresh_health(self) -> None:
        """Evaluate the sizing model (from a fresh status), then publish all health checks."""
        self._sizing_checks = {}
        if self.current_options().mode != "off":
            if time.time() - self._served["at"] > self.current_options().refresh_interval:
                self.refresh_status()
            if self._served["status"] is not None:
                self._sizing_checks = health_checks(self._served["status"])
        self.publish_health()

    def publish_health(self) -> None:
        """The sizing checks as last evaluated, and the plan's, as they are now."""
        if self.current_options().mode == "off":
            self.set_health_checks({})
            return
        checks = {**self._sizing_checks, **self.driver.health()}
        if self._status_error is not None:     # an operator must see it, not only the mgr log
            checks["PG_ADVISOR_STATUS_FAILED"] = {
                "severity": "warning", "count": 1, "detail": [self._status_error],
                "summary": f"pg_advisor cannot compute its status: {self._status_error}"}
        if self._option_errors:
            checks["PG_ADVISOR_OPTION_INVALID"] = {
                "severity": "warning", "count": len(self._option_errors), "detail": self._option_errors,
                "summary": f"pg_advisor ignores {len(self._option_errors)} option value(s): "
                           f"{self._option_errors[0]}"}
        self.set_health_checks(checks)

    def read_due(self) -> None:
        """The read a lazy command left to the background (it took an older snapshot of a
        big cluster rather than wait for the read)."""
        self.take_snapshot()

    def run_plan(self) -> None:
        """One tick of the executor (and, in auto mode, a new plan when one is due)."""
        opts = self.current_options()
        if opts.mode == "off":      # nothing in the background: a plan waits
            return
        try:
            self.driver.tick(self.context(self.take_snapshot()))
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
        opts = self.current_options()
        want = (opts.server_addr, opts.server_port)
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
            if self._snaps.due:
                self._guard(self.read_due)
            self._guard(self.run_plan)
            self._guard(self._serve_plan)
            if self._server.running and time.time() >= next_status:
                self._guard(self.refresh_status)      # for the panel, while it serves
                next_status = time.time() + self.current_options().refresh_interval
            if time.time() >= next_sizing:
                self._guard(self.refresh_health)
                next_sizing = time.time() + self.current_options().sleep_interval
            else:
                self._guard(self.publish_health)
            wait = (min(next_sizing, next_status) if self._server.running else next_sizing) - time.time()
            if self.driver.executor.active:
                wait = min(wait, self.current_options().poll_interval)
            if self._wake.wait(max(wait, 0.1)):
                self._wake.clear()
                next_sizing = next_status = 0.0   # options changed or a command asked: now

    def shutdown(self) -> None:
        self._stopping = True
        self._wake.set()

    def config_notify(self) -> None:
        # new options (or a new sleep_interval) apply at once: re-evaluate now
        self._wake.set()


for _cmd in table.COMMANDS:
    declare(_cmd)
