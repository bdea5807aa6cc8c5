"""The panel's HTTP server (cherrypy, as Ceph's own prometheus module serves): read-only.

GET /                the page;  GET /api/status, /api/progress, /api/history  JSON;
GET /metrics         Prometheus text. Anything else is 404; a method other than GET or
HEAD is 405. The data comes from callables the module hands in.
"""
import json
from typing import Any, Callable, Dict, Optional

import cherrypy

from .panel import PAGE, metrics as metrics_text

Source = Callable[[], Dict[str, Any]]


class _Root:
    def __init__(self, status: Source, progress: Source, history: Source) -> None:
        self._status, self._progress, self._history = status, progress, history

    @staticmethod
    def _only_get() -> None:
        if cherrypy.request.method not in ("GET", "HEAD"):
            cherrypy.response.headers["Allow"] = "GET, HEAD"
            raise cherrypy.HTTPError(405)

    @staticmethod
    def _json(doc: Dict[str, Any]) -> bytes:
        cherrypy.response.headers["Content-Type"] = "application/json"
        return json.dumps(doc).encode()

    @cherrypy.expose
    def index(self) -> bytes:
        self._only_get()
        cherrypy.response.headers["Content-Type"] = "text/html; charset=utf-8"
        # nothing from elsewhere: the page's own script and styles only
        cherrypy.response.headers["Content-Security-Policy"] = (
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "connect-src 'self'; img-src 'self'")
        return PAGE.encode()

    @cherrypy.expose
    def api(self, what: str = "", *rest: str, **params: Any) -> bytes:
        self._only_get()
        source = {"status": self._status, "progress": self._progress, "history": self._history}.get(what)
        if source is None or rest or params:
            raise cherrypy.NotFound()
        return self._json(source())

    @cherrypy.expose
    def metrics(self) -> bytes:
        self._only_get()
        cherrypy.response.headers["Content-Type"] = "text/plain; version=0.0.4"
        return metrics_text(self._status(), self._progress()).encode()


def _error_page(status: str, message: str, traceback: str, version: str) -> str:
    """Errors as one line of text: never a traceback."""
    cherrypy.response.headers["Content-Type"] = "text/plain"
    return f"{status}\n"


class Server:
    def __init__(self, status: Source, progress: Source, history: Source) -> None:
        self.root = _Root(status, progress, history)
        self.running: Optional[str] = None

    def start(self, addr: str, port: int) -> str:
        cherrypy.config.update({
            "server.socket_host": addr, "server.socket_port": port,
            "engine.autoreload.on": False, "checker.on": False, "log.screen": False,
            "request.show_tracebacks": False, "error_page.default": _error_page,
            "response.headers.server": "pg_advisor",
        })
        cherrypy.tree.mount(self.root, "/")
        cherrypy.engine.start()
        host = f"[{addr}]" if ":" in addr else addr
        self.running = f"http://{host}:{port}/"
        return self.running

    def stop(self) -> None:
        if self.running:
            cherrypy.engine.stop()
            cherrypy.server.httpserver = None    # so that a restart binds again
            self.running = None
