"""The panel's HTTP server (cherrypy, as Ceph's own prometheus module serves): read-only.

GET /                the page;  GET /api/status, /api/progress, /api/history  JSON;
GET /metrics         Prometheus text. Anything else is 404; a method other than GET or
HEAD is 405. The data comes from callables the module hands in.
"""
import json
import threading
from typing import Any, Callable, Dict, Optional

import cherrypy
from cheroot import wsgi

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
    """cherrypy's application served by its WSGI server (cheroot) in a thread of our own.

    Not through cherrypy.engine: when the engine cannot bind its port, its bus calls
    os._exit(70), which would take the whole ceph-mgr down. cheroot's prepare() just raises.
    """

    def __init__(self, status: Source, progress: Source, history: Source) -> None:
        self.root = _Root(status, progress, history)
        self.running: Optional[str] = None
        self._httpd: Optional[wsgi.Server] = None
        self._thread: Optional[threading.Thread] = None

    def start(self, addr: str, port: int) -> str:
        """Bind and serve; OSError (the address, the port in use) if it cannot bind."""
        app = cherrypy.Application(self.root, "", {"/": {
            "request.show_tracebacks": False, "error_page.default": _error_page,
            "tools.response_headers.on": True,
            "tools.response_headers.headers": [("Server", "pg_advisor")],
        }})
        app.log.screen = False     # no access log on the mgr's stdout
        cherrypy.log.screen = False
        httpd = wsgi.Server((addr, port), app, numthreads=4, server_name="pg_advisor")
        httpd.prepare()       # binds now: a port in use raises here, and nothing runs
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve, name="pg_advisor-http", daemon=True)
        self._thread.start()
        host = f"[{addr}]" if ":" in addr else addr
        self.running = f"http://{host}:{port}/"
        return self.running

    def stop(self) -> None:
        """Stop serving and release the port (no-op when not serving)."""
        if self._httpd is not None:
            self._httpd.stop()
            if self._thread is not None:
                self._thread.join(10)
        self._httpd, self._thread, self.running = None, None, None
