"""The panel's HTTP server (cherrypy, as Ceph's own prometheus module serves): read-only.

GET /                the page;  GET /api/status, /api/progress, /api/history  JSON;
GET /metrics         Prometheus text. Anything else is 404; a method other than GET or
HEAD is 405. The data comes from callables the module hands in; one that raises
AdvisorError with EAGAIN (nothing computed yet) makes the answer 503 with Retry-After.

Bounds (the same on cheroot 9, Pacific's Debian 12, and 11.1, Tentacle's forky). cheroot's
accepting thread hands every new connection straight to a worker thread, which then blocks
reading the request line and headers, each read waiting up to `timeout`; a client that
connects and stalls holds a worker that long. An idle keep-alive connection waits in that
accepting thread's selector instead, closed after `timeout`. The pool never grows; the
queue of accepted connections and the header and body sizes are unbounded unless set. So:
enough workers that a dozen stalled clients leave some free, a short timeout that frees
the others, a bounded queue, a connection beyond it closed at once (_BoundedServer: so file
descriptors and memory stay bounded), and small request limits: nothing served here takes
a body. Sockets held: the listener, one a worker, ACCEPTED_QUEUE, KEEP_ALIVE_CONNECTIONS
idle (checked as each answer starts: workers answering at once may each keep one more);
stop() closes them all. What remains: more stalled clients than workers delay the
next request by up to SOCKET_TIMEOUT a round, and past the queue a new connection is closed
unanswered; a client trickling a byte each second keeps its worker (the timeout is per
read); stop() waits for the stalled, at most about (1 + ACCEPTED_QUEUE / WORKERS) rounds.
"""
import errno
import json
import queue
import threading
from typing import Any, Callable, Dict, Mapping, Optional, TypeVar

import cherrypy
from cheroot import wsgi

from ..model.errors import AdvisorError
from ..analysis.status_types import StatusReport
from .metrics import metrics as metrics_text
from .page import PAGE

Source = Callable[[], Dict[str, Any]]
StatusSource = Callable[[], StatusReport]
T = TypeVar("T")

WORKERS = 16                 # threads serving requests: a fixed pool, cheroot never adds any
SOCKET_TIMEOUT = 2           # s a read or write may wait: then a stalled client gets 408
ACCEPTED_QUEUE = 16          # accepted connections waiting for a worker; beyond: closed at once
LISTEN_BACKLOG = 16          # connections the kernel holds before they are accepted
KEEP_ALIVE_CONNECTIONS = 10  # idle keep-alive connections kept (cheroot's default, stated)
MAX_HEADER_BYTES = 16 * 1024  # request line and headers; beyond: 414 or 413
MAX_BODY_BYTES = 1024        # read-only: no request needs a body (cheroot's 0 means unlimited)
SHUTDOWN_TIMEOUT = 2         # s stop() waits for a worker before cutting its connection
RETRY_AFTER = 10             # s a client is told to wait when the data is not computed yet


class _Root:
    def __init__(self, status: StatusSource, progress: Source, history: Source, served: Source,
                 status_json: Optional[Callable[[], bytes]] = None) -> None:
        self._status, self._progress, self._history = status, progress, history
        self._served = served
        self._status_json = status_json

    @staticmethod
    def _only_get() -> None:
        if cherrypy.request.method not in ("GET", "HEAD"):
            cherrypy.response.headers["Allow"] = "GET, HEAD"
            raise cherrypy.HTTPError(405)

    @staticmethod
    def _fetch(source: Callable[[], T]) -> T:
        """The source's document; 503 while it has none yet (the module's first refresh)."""
        try:
            return source()
        except AdvisorError as e:
            if e.code != -errno.EAGAIN:
                raise
            raise cherrypy.HTTPError(503, e.message)   # _error_page adds Retry-After

    @staticmethod
    def _json(doc: Mapping[str, Any]) -> bytes:
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
        sources: Dict[str, Callable[[], Mapping[str, Any]]] = {
            "status": self._status, "progress": self._progress, "history": self._history}
        source = sources.get(what)
        if source is None or rest or params:
            raise cherrypy.NotFound()
        if what == "status" and self._status_json is not None:
            # encoded once per status, not per request: 10,000 OSD rows are tens of ms of
            # the GIL each time, on a mgr whose other modules wait for it
            body = self._fetch(self._status_json)
            cherrypy.response.headers["Content-Type"] = "application/json"
            return body
        return self._json(self._fetch(source))

    @cherrypy.expose
    def metrics(self) -> bytes:
        self._only_get()
        cherrypy.response.headers["Content-Type"] = "text/plain; version=0.0.4"
        return metrics_text(self._fetch(self._status), self._fetch(self._progress),
                            self._fetch(self._served)).encode()


def _error_page(status: str, message: str, traceback: str, version: str) -> str:
    """Errors as one line of text: never a traceback."""
    cherrypy.response.headers["Content-Type"] = "text/plain"
    if status.startswith("503"):   # here: cherrypy drops a Retry-After set before the error
        cherrypy.response.headers["Retry-After"] = str(RETRY_AFTER)
    return f"{status}\n"


class _BoundedServer(wsgi.Server):
    """cheroot's WSGI server that closes a connection its full queue cannot take at once.

    cheroot 11 would hand it to a thread of its own, on an unbounded queue, that answers 503
    and then leaves the socket open (`linger`) until the garbage collector frees the
    connection: a crowd could hold any number of sockets, and still hold them after stop().
    """

    def process_conn(self, conn: Any) -> None:
        try:
            self.requests.put(conn)     # accepted_queue_timeout=0: Full at once
        except queue.Full:
            conn.close()                # FIN now, and the descriptor freed


def bounded_server(addr: str, port: int, app: Any) -> wsgi.Server:
    """cheroot's WSGI server with every resource it may take bounded (see the module doc)."""
    httpd = _BoundedServer(
        (addr, port), app, numthreads=WORKERS, server_name="pg_advisor",
        request_queue_size=LISTEN_BACKLOG, timeout=SOCKET_TIMEOUT,
        shutdown_timeout=SHUTDOWN_TIMEOUT, accepted_queue_size=ACCEPTED_QUEUE,
        # 0: a full queue closes the new connection at once; cheroot's default (10 s) would
        # stall its only accepting thread, and stop() with it, while the queue is full
        accepted_queue_timeout=0)
    httpd.max_request_header_size = MAX_HEADER_BYTES
    httpd.max_request_body_size = MAX_BODY_BYTES
    httpd.keep_alive_conn_limit = KEEP_ALIVE_CONNECTIONS
    return httpd


class Server:
    """cherrypy's application served by its WSGI server (cheroot) in a thread of our own.

    Not through cherrypy.engine: when the engine cannot bind its port, its bus calls
    os._exit(70), which would take the whole ceph-mgr down. cheroot's prepare() just raises.
    """

    def __init__(self, status: StatusSource, progress: Source, history: Source,
                 served: Source = lambda: {}, status_json: Optional[Callable[[], bytes]] = None) -> None:
        """`served`: what /metrics adds to the status (metrics.metrics); `status_json`: the
        status as /api/status serves it, already encoded (else the status, encoded each time)."""
        self.root = _Root(status, progress, history, served, status_json)
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
        # no access log on the mgr's stdout; cherrypy's global log is left as it is (other
        # modules in the mgr's interpreter share it)
        app.log.screen = False
        httpd = bounded_server(addr, port, app)
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
