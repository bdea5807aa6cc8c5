"""Layer 7: the MgrModule. Thin: it fetches the maps, translates commands, prints answers.

Every decision lives in the layers it calls; this file only knows the mgr's API.
"""
import errno
import json
import threading
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

from mgr_module import MgrModule, Option

from . import options, snapshot
from .errors import AdvisorError
from .health import health_checks
from .gates import cluster_blockers
from .balance_report import balance_report, eval_report, misplaced_budget
from .balance_text import balance_text, eval_text
from .plan import plan_report
from .plan_text import plan_text
from .render import check_format, render
from .status import status_report
from .status_text import status_text
from .whatif import Change, pg_map, simulate
from .whatif_text import map_text, simulate_text

CommandResult = Tuple[int, str, str]


class Module(MgrModule):
    COMMANDS = [
        {
            "cmd": "pg-advisor status name=pool,type=CephString,req=false",
            "desc": "Show pools, OSDs and how evenly PGs are spread over the OSDs",
            "perm": "r",
        },
        {
            "cmd": "pg-advisor plan",
            "desc": "List the pg_num changes pg_advisor recommends, in order, with their cost",
            "perm": "r",
        },
        {
            "cmd": "pg-advisor eval name=pool,type=CephString,req=false",
            "desc": "Score the current PG distribution against each OSD's share",
            "perm": "r",
        },
        {
            "cmd": "pg-advisor balance name=pool,type=CephString,req=false "
                   "name=max_items,type=CephInt,req=false name=dry_run,type=CephBool,req=false "
                   "name=mode,type=CephChoices,strings=pgs|bytes,req=false",
            "desc": "Compute pg-upmap-items toward each OSD's share and set a bounded batch "
                    "of them (--dry-run: only show them)",
            "perm": "rw",
        },
        {
            "cmd": "pg-advisor map name=pool,type=CephString,req=false",
            "desc": "Show every PG's up set as CRUSH computes it",
            "perm": "r",
        },
        {
            "cmd": "pg-advisor simulate name=pool,type=CephString,req=false "
                   "name=pg_num,type=CephInt,req=false name=pgp_num,type=CephInt,req=false "
                   "name=out_osd,type=CephInt,req=false name=reweight,type=CephInt,req=false "
                   "name=weight,type=CephFloat,req=false",
            "desc": "What a pg_num/pgp_num change (<pool> --pg_num N [--pgp_num M]), an OSD "
                    "marked out (--out-osd OSD) or a reweight (--reweight OSD --weight W) would do",
            "perm": "r",
        },
    ]
    MODULE_OPTIONS = [Option(**o) for o in options.mgr_options()]
    # the cluster settings the sizing model reads, as the mgr sees them
    NATIVE_OPTIONS = ["mon_max_pg_per_osd", "mon_target_pg_per_osd", "osd_memory_target",
                      "osd_min_pg_log_entries", "osd_max_pg_log_entries",
                      "osd_target_pg_log_entries_per_osd", "osd_pg_log_dups_tracked"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wake = threading.Event()   # set to re-evaluate now (options changed, shutdown)
        self._stopping = False
        self._handlers: Dict[str, Callable[[Dict[str, Any]], str]] = {
            "pg-advisor status": self._cmd_status,
            "pg-advisor plan": self._cmd_plan,
            "pg-advisor eval": self._cmd_eval,
            "pg-advisor balance": self._cmd_balance,
            "pg-advisor map": self._cmd_map,
            "pg-advisor simulate": self._cmd_simulate,
        }

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
        return options.make({s.name: self.get_module_option(s.name) for s in options.SPECS})

    def balanced(self, opts: options.Options) -> bool:
        """Size against the balanced ideal when told to, or when the upmap balancer runs."""
        if opts.assume_balanced != "auto":
            return bool(opts.assume_balanced == "yes")
        active = self.get_module_option_ex("balancer", "active", False)
        mode = self.get_module_option_ex("balancer", "mode", "upmap")
        return str(active).lower() in ("true", "1") and mode == "upmap"

    def status(self, pool: Optional[str] = None) -> Dict[str, Any]:
        opts = self.current_options()
        return status_report(self.take_snapshot(), pool, opts, self.balanced(opts))

    # -- commands ------------------------------------------------------------------------------

    def _cmd_status(self, cmd: Dict[str, Any]) -> str:
        fmt = check_format(cmd.get("format"))
        return render(self.status(cmd.get("pool")), fmt, status_text)

    def _cmd_plan(self, cmd: Dict[str, Any]) -> str:
        fmt = check_format(cmd.get("format"))
        opts = self.current_options()
        return render(plan_report(self.take_snapshot(), opts, self.balanced(opts)), fmt, plan_text)

    def _cmd_eval(self, cmd: Dict[str, Any]) -> str:
        fmt = check_format(cmd.get("format"))
        pools = [cmd["pool"]] if cmd.get("pool") else None
        return render(eval_report(self.take_snapshot(), pools), fmt, eval_text)

    def _refuse_to_balance(self, snap: snapshot.Snapshot) -> Optional[str]:
        """Why balancing must not start now, or None."""
        if str(self.get_module_option_ex("balancer", "active", False)).lower() in ("true", "1"):
            return ("the built-in balancer is active: pg_advisor does not fight it "
                    "(`ceph balancer off` hands balancing over)")
        why = cluster_blockers(snap)
        return why[0] if why else None

    def _cmd_balance(self, cmd: Dict[str, Any]) -> str:
        fmt = check_format(cmd.get("format"))
        opts = self.current_options()
        max_items = cmd.get("max_items")
        max_items = int(max_items) if max_items is not None else int(opts.balance_max_items)
        snap = self.take_snapshot()
        ratio = float(self.get_ceph_option("target_max_misplaced_ratio"))
        pools = [cmd["pool"]] if cmd.get("pool") else None
        report = balance_report(snap, pools, max_items, cmd.get("mode") or opts.balance_mode,
                                object_budget=misplaced_budget(snap, ratio),
                                min_gain=float(opts.balance_min_gain))
        dry = bool(cmd.get("dry_run"))
        report["dry_run"] = dry
        if not dry:
            why = self._refuse_to_balance(snap)
            if why:
                raise AdvisorError(-errno.EBUSY, f"not balancing: {why}")
            report["applied"], report["failed"] = self._set_items(report["items"])
        return render(report, fmt, balance_text)

    def _set_items(self, items: Dict[str, List[List[int]]]) -> Tuple[int, List[str]]:
        """Set each PG's items with the mon, then check the mon kept them."""
        failed = []
        for pgid, pairs in items.items():
            if pairs:
                c = {"prefix": "osd pg-upmap-items", "pgid": pgid, "format": "json",
                     "id": [x for p in pairs for x in p]}
            else:
                c = {"prefix": "osd rm-pg-upmap-items", "pgid": pgid, "format": "json"}
            code, _, err = self.mon_command(c)
            if code != 0:
                failed.append(f"{pgid}: {err.strip()}")
        kept = {u["pgid"]: [[m["from"], m["to"]] for m in u["mappings"]]
                for u in self.get("osd_map").get("pg_upmap_items", [])}
        for pgid, pairs in items.items():
            if kept.get(pgid, []) != [list(p) for p in pairs] and not any(
                    f.startswith(pgid + ":") for f in failed):
                failed.append(f"{pgid}: the mon did not keep the items")
        return len(items) - len(failed), failed

    def _cmd_map(self, cmd: Dict[str, Any]) -> str:
        fmt = check_format(cmd.get("format"))
        return render(pg_map(self.take_snapshot(), cmd.get("pool")), fmt, map_text)

    def _cmd_simulate(self, cmd: Dict[str, Any]) -> str:
        fmt = check_format(cmd.get("format"))
        if (cmd.get("reweight") is None) != (cmd.get("weight") is None):
            raise AdvisorError.invalid("--reweight OSD goes with --weight W")
        change = Change(
            pool=cmd.get("pool"), pg_num=cmd.get("pg_num"), pgp_num=cmd.get("pgp_num"),
            out=(int(cmd["out_osd"]),) if cmd.get("out_osd") is not None else (),
            reweight=({int(cmd["reweight"]): float(cmd["weight"])}
                      if cmd.get("reweight") is not None else {}))
        return render(simulate(self.take_snapshot(), change), fmt, simulate_text)

    def handle_command(self, inbuf: Optional[str], cmd: Dict[str, Any]) -> CommandResult:
        handler = self._handlers.get(cmd.get("prefix", ""))
        if handler is None:
            return -errno.EINVAL, "", f"unknown command '{cmd.get('prefix')}'"
        try:
            return 0, handler(cmd), ""
        except AdvisorError as e:
            return e.code, "", e.message
        except Exception as e:  # a bug must not take the mgr down; say what failed
            self.log.error("pg_advisor: %s failed: %s", cmd.get("prefix"), traceback.format_exc())
            return -errno.EIO, "", f"internal error in {cmd.get('prefix')}: {e}"

    # -- lifecycle -----------------------------------------------------------------------------

    def refresh_health(self) -> None:
        """Evaluate the sizing model and raise or clear pg_advisor's health checks."""
        try:
            checks = health_checks(self.status())
        except AdvisorError as e:
            self.log.warning("pg_advisor: health not evaluated: %s", e.message)
            return
        self.set_health_checks(checks)

    def serve(self) -> None:
        self.log.info("pg_advisor: serving")
        while True:
            try:
                self.refresh_health()
            except Exception:
                self.log.error("pg_advisor: health evaluation failed: %s", traceback.format_exc())
            interval = self.get_module_option("sleep_interval")
            self._wake.wait(float(interval) if interval else 60.0)
            self._wake.clear()
            if self._stopping:
                break

    def shutdown(self) -> None:
        self._stopping = True
        self._wake.set()

    def config_notify(self) -> None:
        # new options (or a new sleep_interval) apply at once: re-evaluate now
        self._wake.set()
