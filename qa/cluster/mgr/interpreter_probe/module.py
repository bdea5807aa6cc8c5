"""A ceph-mgr module for the integration tests only: whether the state every module in the
mgr's interpreter shares ever changed, sampled every few ms (a change made for one read shows
too). `ceph interpreter-probe state`: {"now", "first", "changes", "samples", "interpreter"}."""
import gc
import json
import logging
import signal
import sys
import threading
import time
import warnings
from typing import Any, Dict, List, Tuple

import mgr_module
from mgr_module import MgrModule

SAMPLE = 0.002     # s between samples: well under a read of the test cluster


def shared_state() -> Dict[str, Any]:
    root = logging.getLogger()
    state = {
        "gc_enabled": gc.isenabled(),
        "gc_threshold": list(gc.get_threshold()),
        "root_handlers": [type(h).__name__ for h in root.handlers],
        "root_level": root.level,
        "warnings_filters": len(warnings.filters),
        "switch_interval": sys.getswitchinterval(),
        "recursion_limit": sys.getrecursionlimit(),
        "signals": {s.name: str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)},
    }
    cp = sys.modules.get("cherrypy")
    if cp is not None:     # only once some module imported it
        state["cherrypy_log_screen"] = bool(getattr(cp.log, "screen", None))
    return state


class Module(MgrModule):
    COMMANDS = [
        {"cmd": "interpreter-probe state", "desc": "what the shared interpreter looked like", "perm": "r"},
        {"cmd": "interpreter-probe reset", "desc": "forget the changes seen", "perm": "w"},
    ]
    if hasattr(getattr(mgr_module, "CLICommandBase", None), "make_registry_subtype"):
        CLICommand = mgr_module.CLICommandBase.make_registry_subtype("InterpreterProbeCLICommand")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._first = shared_state()
        self._changes: List[Tuple[float, str, Any, Any]] = []
        self._samples = 0

    def serve(self) -> None:
        while not self._stop.wait(SAMPLE):
            now = shared_state()
            with self._lock:
                self._samples += 1
                for k, v in now.items():
                    if self._first.get(k) != v and len(self._changes) < 100:
                        self._changes.append((time.time(), k, self._first.get(k), v))

    def shutdown(self) -> None:
        self._stop.set()

    def handle_command(self, inbuf: str, cmd: Dict[str, Any]) -> Tuple[int, str, str]:
        with self._lock:
            if cmd["prefix"] == "interpreter-probe reset":
                self._first, self._changes = shared_state(), []
                return 0, "", ""
            doc = {"now": shared_state(), "first": self._first, "samples": self._samples,
                   "changes": [{"at": t, "what": k, "was": a, "became": b} for t, k, a, b in self._changes],
                   # the mgr's shared interpreter: pg_advisor, loaded there, is imported here too
                   "interpreter": "main" if "pg_advisor" in sys.modules else "own"}
        return 0, json.dumps(doc), ""
