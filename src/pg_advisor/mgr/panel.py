"""The panel inside the mgr: its HTTP server (panel/server.py), started where the options
say and moved when they change, and what it serves: copies the serve loop makes (a
command that changes the plan makes one too), never computed per request, so that a
scrape or a page does not cost a CRUSH and sizing run each."""
import copy
import errno
import json
import time
from typing import Any, Dict, List, Optional, Tuple

from ..model.errors import AdvisorError
from ..panel.server import Server
from ..analysis.status_types import StatusReport


class Panel:
    def __init__(self) -> None:
        self.served: Dict[str, Any] = {"status": None, "status_json": b"", "at": 0.0,
                                       "progress": {"plan": None}, "history": {"history": []},
                                       "figures": {}}
        self.server = Server(self._status, lambda: self.served["progress"],
                             lambda: self.served["history"],
                             lambda: dict(self.served["figures"], at=self.served["at"]),
                             self._status_json)
        self.at: Optional[Tuple[str, int]] = None     # where it was last started (or failed to)

    def _status(self) -> StatusReport:
        doc: Optional[StatusReport] = self.served["status"]
        if doc is None:
            raise AdvisorError(-errno.EAGAIN, "the status is not computed yet")
        return copy.copy(doc)

    def _status_json(self) -> bytes:
        """The status as JSON, as show_status encoded it."""
        if self.served["status"] is None:
            raise AdvisorError(-errno.EAGAIN, "the status is not computed yet")
        body: bytes = self.served["status_json"]
        return body

    @property
    def running(self) -> bool:
        return bool(self.server.running)

    def move(self, addr: str, port: int) -> str:
        """Serve on addr:port (and no longer where it served); its URL. Raises what binding
        raises (a port in use); `at` says where it was asked to serve either way."""
        self.server.stop()
        self.at = (addr, port)
        return self.server.start(addr, port)

    def stop(self) -> None:
        self.server.stop()

    def show_status(self, doc: StatusReport, figures: Dict[str, Any]) -> None:
        """The status and what /metrics adds to it, as computed now; its JSON encoded here,
        by the caller (the serve loop), so that no request of the panel's thread encodes it:
        at 10,000 OSDs on a busy mgr that one request took 13-21 s, each step of the encoding
        waiting for the GIL behind other modules."""
        self.served.update(status=doc, status_json=json.dumps(doc).encode(), at=time.time(),
                           figures=figures)

    def show_plan(self, progress: Dict[str, Any], history: List[Dict[str, Any]]) -> None:
        # one update (a reader sees both of one moment)
        self.served.update(progress=progress, history={"history": history})

    @property
    def status(self) -> Optional[StatusReport]:
        """The status last shown (None before the first)."""
        doc: Optional[StatusReport] = self.served["status"]
        return doc

    @property
    def status_at(self) -> float:
        """When it was computed (0 before the first)."""
        return float(self.served["at"])
