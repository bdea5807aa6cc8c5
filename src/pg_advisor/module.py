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

CommandResult = Tuple[int, str, str]


class Module(MgrModule):
    COMMANDS = [
        {
            "cmd": "pg-advisor status name=pool,type=CephString,req=false",
            "desc": "Show pools, OSDs and how evenly PGs are spread over the OSDs",
            "perm": "r",
        },
    ]
    MODULE_OPTIONS: list = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stop = threading.Event()
        self._handlers: Dict[str, Callable[[Dict[str, Any]], str]] = {
            "pg-advisor status": self._cmd_status,
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
