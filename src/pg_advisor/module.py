"""Layer 7: the MgrModule. Thin: it fetches the maps, translates commands, prints answers.

Every decision lives in the layers it calls; this file only knows the mgr's API.
"""
import errno
import threading
import traceback
from typing import Any, Callable, Dict, Optional, Tuple

from mgr_module import MgrModule

from . import snapshot
from .errors import AdvisorError
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
    MODULE_OPTIONS: list = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stop = threading.Event()
        self._handlers: Dict[str, Callable[[Dict[str, Any]], str]] = {
            "pg-advisor status": self._cmd_status,
            "pg-advisor map": self._cmd_map,
            "pg-advisor simulate": self._cmd_simulate,
        }

    # -- reading the cluster -------------------------------------------------------------------

    def take_snapshot(self) -> snapshot.Snapshot:
        """The same four documents the offline CLI reads from files, straight from the mgr."""
        return snapshot.load(
            self.get("osd_map"), self.get("osd_map_crush"), self.get("pg_dump"), self.get("df"),
            mon_max_pg_per_osd=int(self.get_ceph_option("mon_max_pg_per_osd")))

    # -- commands ------------------------------------------------------------------------------

    def _cmd_status(self, cmd: Dict[str, Any]) -> str:
        fmt = check_format(cmd.get("format"))
        report = status_report(self.take_snapshot(), cmd.get("pool"))
        return render(report, fmt, status_text)

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

    def serve(self) -> None:
        self.log.info("pg_advisor: serving")
        while not self._stop.wait(60):
            pass

    def shutdown(self) -> None:
        self._stop.set()
