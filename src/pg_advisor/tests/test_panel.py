"""The panel's metrics and HTTP server (a real server on loopback; no mgr needed)."""
import collections
import copy
import errno
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple

import cheroot.server
import pytest

from pg_advisor_testkit.loose import metrics, status_of, typed
from pg_advisor.analysis.status_types import StatusReport
from pg_advisor.model import snapshot
from pg_advisor.model.errors import AdvisorError
from pg_advisor.panel import server as server_module
from pg_advisor.panel.server import (ACCEPTED_QUEUE, KEEP_ALIVE_CONNECTIONS, RETRY_AFTER, SHUTDOWN_TIMEOUT,
                                     SOCKET_TIMEOUT, WORKERS, Server)
from pg_advisor.panel.metrics import FAMILIES, family
from pg_advisor.panel.page import PAGE

from pg_advisor_testkit.dumps import DUMP_FILES, read

from .conftest import free_port

EVIL = '<img src=x onerror=alert(1)>"\\'


def status_with_evil_pool() -> Dict[str, Any]:
    """The status of the 6-OSD fixture as this code computes it (every field it has), its
    first pool renamed to markup."""
    d = {k: read(f) for k, f in DUMP_FILES.items()}
    snap = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"],
                         autoscale=read("autoscale_status.json"))
    st = copy.deepcopy(status_of(snap))
    st["pools"][0]["name"] = EVIL
    st["distribution"]["pools"][0]["pool"] = EVIL
    return st


def _samples(text: str) -> Dict[str, str]:
    return dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))


def test_metrics_carry_the_status_figures_named_as_cephs() -> None:
    st = status_with_evil_pool()
    served = {"mode": "auto", "misplaced_ratio": 0.0125, "misplaced_budget": 0.05, "at": 1795000000.5}
    text = metrics(st, {"plan": None, "steps": []}, served)
    samples = _samples(text)
    for o in st["osds"]:       # each value reads back as the JSON's, exactly; OSDs as Ceph names them
        d = f'ceph_daemon="osd.{o["id"]}"'
        assert int(samples[f"pg_advisor_osd_pgs{{{d}}}"]) == o["pgs"]
        assert float(samples[f"pg_advisor_osd_pg_share{{{d}}}"]) == o["pg_share"]
        assert float(samples[f"pg_advisor_osd_pg_target{{{d}}}"]) == o["pg_target"]
        assert float(samples[f"pg_advisor_osd_pg_deviation{{{d}}}"]) == o["pgs"] - o["pg_target"]
        assert float(samples[f"pg_advisor_osd_utilization_ratio{{{d}}}"]) == o["utilization"] / 100
        assert int(samples[f"pg_advisor_osd_pg_memory_bytes{{{d}}}"]) == o["pg_memory_now"]
        for pid, x in o["pg_share_by_pool"].items():
            assert float(samples[f'pg_advisor_osd_pool_pg_share{{{d},pool_id="{pid}"}}']) == x
            assert int(samples[f'pg_advisor_osd_pool_pgs{{{d},pool_id="{pid}"}}']) == o["pgs_by_pool"][pid]
            t = o["pg_target_by_pool"][pid]
            assert float(samples[f'pg_advisor_osd_pool_pg_target{{{d},pool_id="{pid}"}}']) == t
            assert float(samples[f'pg_advisor_osd_pool_pg_deviation{{{d},pool_id="{pid}"}}']) == \
                o["pgs_by_pool"][pid] - t
    for p in st["pools"]:      # names only in the metadata series, as ceph_pool_metadata
        assert int(samples[f'pg_advisor_pool_pg_num{{pool_id="{p["id"]}"}}']) == p["pg_num"]
        assert int(samples[f'pg_advisor_pool_recommended_pg_num{{pool_id="{p["id"]}"}}']) == \
            p["recommended_pg_num"]
    budget = st["cluster"]["sizing"]["pg_memory_budget"]
    assert samples["pg_advisor_pg_memory_budget_bytes"] == str(int(budget))
    assert samples["pg_advisor_misplaced_ratio"] == "0.0125"
    assert samples["pg_advisor_misplaced_budget_ratio"] == "0.05"
    assert samples["pg_advisor_status_timestamp_seconds"] == "1795000000.5"
    assert [samples[f'pg_advisor_mode{{mode="{m}"}}'] for m in ("off", "advise", "auto")] == ["0", "0", "1"]
    # a label value cannot end early or add a line: quote and backslash are escaped
    assert 'name="<img src=x onerror=alert(1)>\\"\\\\"' in text
    assert all("pool=" not in k for k in samples)
    # no plan: state none, nothing blocked or pinned
    assert samples['pg_advisor_plan_state{state="none"}'] == "1"
    assert samples['pg_advisor_plan_state{state="running"}'] == "0"
    assert samples["pg_advisor_plan_blocked"] == "0" and samples["pg_advisor_pins_waiting"] == "0"


def test_metrics_are_the_documented_families_and_nothing_else() -> None:
    text = metrics(status_with_evil_pool(), {"plan": None, "steps": []},
                   {"mode": "advise", "misplaced_ratio": 0.0, "misplaced_budget": 0.05, "at": 1.0})
    helps = [line.split()[2] for line in text.splitlines() if line.startswith("# HELP")]
    assert helps == list(FAMILIES)
    assert {k.split("{")[0] for k in _samples(text)} <= set(FAMILIES)
    doc = (Path(__file__).resolve().parents[3] / "doc" / "panel.rst").read_text()
    assert [f for f in FAMILIES if f"``{f}``" not in doc] == []


def test_the_plan_state_is_one_series_a_state_and_blocked_says_why() -> None:
    plan = {"status": "running", "next": 2, "blockers": ["norebalance is set", 'pool "x" splits'],
            "pins_left": 7}
    text = metrics(status_with_evil_pool(), {"plan": plan, "steps": [{}, {}, {}, {}]})
    s = _samples(text)
    assert [s[f'pg_advisor_plan_state{{state="{k}"}}'] for k in
            ("none", "running", "paused", "stopped", "done", "aborted")] == ["0", "1", "0", "0", "0", "0"]
    assert (s["pg_advisor_plan_steps"], s["pg_advisor_plan_steps_done"]) == ("4", "2")
    assert s["pg_advisor_plan_blocked"] == "1" and s["pg_advisor_pins_waiting"] == "7"
    assert s['pg_advisor_plan_blocked_reason{reason="norebalance is set"}'] == "1"
    assert s['pg_advisor_plan_blocked_reason{reason="pool \\"x\\" splits"}'] == "1"
    # a done plan blocks nothing and pins nothing; what the module did not say has no sample
    text = metrics(status_with_evil_pool(), {"plan": dict(plan, status="done"), "steps": []})
    s = _samples(text)
    assert s["pg_advisor_plan_blocked"] == "0" and s["pg_advisor_pins_waiting"] == "0"
    assert not any(k.startswith(("pg_advisor_mode", "pg_advisor_misplaced", "pg_advisor_status_timestamp"))
                   for k in s)


def test_metric_values_are_exact() -> None:
    values = [1073741824, 2 ** 53 + 1, 0.1, 12.5, 1073741824.0, -3.0, 1e300, None,
              float("nan"), float("inf"), True]
    lines = family("x", "help", "gauge", [((("i", i),), v) for i, v in enumerate(values)])
    assert lines[2:] == ['x{i="0"} 1073741824', 'x{i="1"} 9007199254740993', 'x{i="2"} 0.1',
                         'x{i="3"} 12.5', 'x{i="4"} 1073741824', 'x{i="5"} -3', 'x{i="6"} 1e+300',
                         # None (not known): no sample; NaN and infinities as Prometheus spells them
                         'x{i="8"} NaN', 'x{i="9"} +Inf', 'x{i="10"} 1']
    assert family("y", "help", "gauge", [((), 0.0)])[2:] == ["y 0"]


def test_the_page_builds_no_markup_from_data() -> None:
    assert "innerHTML" not in PAGE and "outerHTML" not in PAGE and "document.write" not in PAGE
    assert "http://" not in PAGE.replace("http://www.w3.org/2000/svg", "")   # no CDN


@pytest.fixture
def server() -> Iterator[Tuple[str, Dict[str, Any], int]]:
    st = status_with_evil_pool()
    progress: Dict[str, Any] = {"plan": None, "steps": []}
    srv = Server(lambda: typed(st), lambda: progress, lambda: {"history": []})
    port = free_port()
    url = srv.start("127.0.0.1", port)
    try:
        yield url, st, port
    finally:
        srv.stop()


def get(url: str, method: str = "GET") -> Tuple[int, str, str]:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def test_server_answers_and_refuses(server: Tuple[str, Dict[str, Any], int]) -> None:
    url, st, port = server
    code, kind, body = get(url)
    assert code == 200 and kind.startswith("text/html") and body == PAGE
    code, kind, body = get(url + "api/status")
    assert code == 200 and json.loads(body) == st
    code, _, body = get(url + "metrics")
    assert code == 200 and "pg_advisor_osd_pgs" in body
    for path in ("nope", "api/nope", "api/status/extra", "api"):
        code, _, body = get(url + path)
        assert code == 404 and "Traceback" not in body, path
    code, _, body = get(url + "api/status", "POST")
    assert code == 405 and "Traceback" not in body


def test_a_source_not_ready_is_503_and_a_failing_one_500_in_one_line() -> None:
    def not_yet() -> StatusReport:
        raise AdvisorError(-errno.EAGAIN, "the status is not computed yet")

    def broken() -> Dict[str, Any]:
        raise RuntimeError("boom")
    srv, port = Server(not_yet, broken, lambda: {"history": []}), free_port()
    url = srv.start("127.0.0.1", port)
    try:
        for path in ("api/status", "metrics"):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(url + path, timeout=10)
            assert e.value.code == 503 and e.value.headers["Retry-After"] == str(RETRY_AFTER)
            assert e.value.read().decode() == "503 Service Unavailable\n"
        code, _, body = get(url + "api/progress")     # (cherrypy pads some errors with spaces)
        assert code == 500 and body.rstrip() == "500 Internal Server Error" and "boom" not in body
        assert get(url + "api/history")[0] == 200
    finally:
        srv.stop()


def test_port_is_free_after_stop() -> None:
    port = free_port()
    srv = Server(lambda: typed({}), lambda: {}, lambda: {})
    srv.start("127.0.0.1", port)
    srv.stop()
    with socket.socket() as s:     # binds again: the port was released
        s.bind(("127.0.0.1", port))
    srv.start("127.0.0.1", port)   # and the server can start again on it
    assert get(f"http://127.0.0.1:{port}/")[0] == 200
    srv.stop()


# --- bounds: what clients that stall, send too much or come in crowds can take ---------

def tiny_server() -> Server:
    return Server(lambda: typed({"pools": []}), lambda: {"plan": None, "steps": []}, lambda: {"history": []})


@pytest.fixture
def tiny() -> Iterator[Tuple[Server, int]]:
    srv, port = tiny_server(), free_port()
    srv.start("127.0.0.1", port)
    try:
        yield srv, port
    finally:
        srv.stop()


def stalled_clients(port: int, n: int) -> List[socket.socket]:
    """n clients that connect, send part of a request line or of the headers, and stall."""
    parts = (b"GET /api/sta", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: ")
    return [_stall(port, parts[i % 2]) for i in range(n)]


def _stall(port: int, part: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(part)
    return s


def raw_request(port: int, request: bytes) -> bytes:
    """Send a whole request, then read the answer until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return answer


def held_sockets(port: int) -> int:
    """Sockets of this process bound to the server's port: the listener and the connections
    the server has accepted (not those still in the kernel's backlog, nor the clients')."""
    ours = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            ours.add(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:      # closed meanwhile (the listing's own fd, a worker's)
            pass
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and f"socket:[{fields[9]}]" in ours:
                count += 1
    return count


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def until(done: Callable[[], bool], what: str, polls: int = 200) -> None:
    """Poll `done` every 50 ms until it holds; fail after `polls` of them (a hang)."""
    for _ in range(polls):
        if done():
            return
        time.sleep(0.05)
    raise AssertionError(f"not reached in {polls} polls: {what}")


def workers_held(srv: Server) -> int:
    """The server's workers busy with a connection (cheroot's pool counts the idle)."""
    assert srv._httpd is not None
    return WORKERS - int(srv._httpd.requests.idle)


def srv_queue(srv: Server) -> int:
    """Accepted connections waiting for a worker."""
    assert srv._httpd is not None
    return int(srv._httpd.requests.qsize)


def unanswered(client: socket.socket) -> bool:
    """Nothing came back on the connection and the server has not closed it."""
    client.setblocking(False)
    try:
        return not client.recv(1)         # b"": closed by the server
    except BlockingIOError:
        return True
    finally:
        client.setblocking(True)


def test_stalled_clients_do_not_starve_a_get(monkeypatch: pytest.MonkeyPatch) -> None:
    # the stalled clients' reads would wait an hour: the GET is answered while every one
    # of them still holds its worker, not after the server timed them out
    monkeypatch.setattr(server_module, "SOCKET_TIMEOUT", 3600)
    srv, port = tiny_server(), free_port()
    srv.start("127.0.0.1", port)
    clients = stalled_clients(port, 12)
    try:
        until(lambda: workers_held(srv) == 12, "each stalled client held by a worker")
        assert get(f"http://127.0.0.1:{port}/api/history")[0] == 200
        # (the GET's own worker may still be closing its connection)
        assert workers_held(srv) >= 12 and all(unanswered(c) for c in clients)
    finally:
        for c in clients:
            c.close()
        srv.stop()


def test_oversized_headers_are_refused_and_the_server_serves_on(tiny: Tuple[Server, int]) -> None:
    _, port = tiny
    big = b"a" * 100 * 1024
    for request in (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + big + b"\r\n\r\n",      # one header
                    b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Many: b\r\n" * 10240 + b"\r\n",  # many
                    b"GET /" + big + b" HTTP/1.1\r\nHost: x\r\n\r\n"):                 # the URI
        answer = raw_request(port, request)
        status = answer.split(b"\r\n", 1)[0]
        assert status.startswith(b"HTTP/1.1 4"), status
        assert b"Traceback" not in answer
    assert get(f"http://127.0.0.1:{port}/")[0] == 200


def test_a_crowd_of_connections_takes_bounded_threads_and_memory(tiny: Tuple[Server, int]) -> None:
    srv, port = tiny
    get(f"http://127.0.0.1:{port}/")                    # warm: the first request's allocations
    threads, rss = threading.active_count(), rss_bytes()
    crowd = []
    for _ in range(200):                                # opened at once: none waits for accept
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        crowd.append(s)
    try:
        # the peak over 2.5 s: the kernel retries the connections its backlog dropped after 1 s
        held, most_threads, most_rss = 0, 0, 0
        for _ in range(25):
            time.sleep(0.1)
            held = max(held, held_sockets(port))
            most_threads, most_rss = max(most_threads, threading.active_count()), max(most_rss, rss_bytes())
        # the listener, a worker's connection each, the accept queue, idle keep-alives
        assert held <= 1 + WORKERS + ACCEPTED_QUEUE + KEEP_ALIVE_CONNECTIONS, held
        assert most_threads <= threads
        assert most_rss - rss < 16 << 20
    finally:
        for s in crowd:
            s.close()
    # the server accepts and drops what its backlog still holds: no worker, no queued
    # connection and no socket but the listener's is left of the crowd, so a GET waits on
    # none of them
    until(lambda: (workers_held(srv), srv_queue(srv), held_sockets(port)) == (0, 0, 1),
          "the crowd's connections all released")
    for _ in range(5):
        assert get(f"http://127.0.0.1:{port}/api/history")[0] == 200
    assert threading.active_count() <= threads


def test_stop_releases_the_port_with_stalled_clients_connected(monkeypatch: pytest.MonkeyPatch) -> None:
    # stop() waits SHUTDOWN_TIMEOUT for the workers, cuts the connections they hold, and
    # each worker then waits out at most its share of the queue (a read of SOCKET_TIMEOUT
    # each) before it ends: counted here as the connections each worker starts on
    # during stop(); the seconds that bound comes to are the constants' (below 8)
    rounds = -(-ACCEPTED_QUEUE // WORKERS)
    assert SHUTDOWN_TIMEOUT + rounds * SOCKET_TIMEOUT < 8
    started: "collections.Counter[str]" = collections.Counter()
    communicate = cheroot.server.HTTPConnection.communicate

    def counted(conn: Any) -> Any:
        started[threading.current_thread().name] += 1
        return communicate(conn)
    srv, port = tiny_server(), free_port()
    srv.start("127.0.0.1", port)
    clients = stalled_clients(port, 12 + WORKERS + ACCEPTED_QUEUE)    # workers busy, queue full
    try:
        # every worker busy, connections queued, and those past the queue closed by the
        # server, not left for stop() (or the garbage collector, which could free them by
        # chance) to release
        until(lambda: workers_held(srv) == WORKERS and srv_queue(srv) > 0
              and held_sockets(port) <= 1 + WORKERS + ACCEPTED_QUEUE,
              "every worker busy, connections queued, the connections past the queue closed")
        serving = srv._thread
        monkeypatch.setattr(cheroot.server.HTTPConnection, "communicate", counted)
        stopper = threading.Thread(target=srv.stop)
        stopper.start()
        stopper.join(120)                     # a hang, not a pace: stop() must return
        assert not stopper.is_alive() and serving is not None and not serving.is_alive()
        monkeypatch.undo()
        assert sum(started.values()) <= ACCEPTED_QUEUE and max(started.values(), default=0) <= rounds, \
            started
        with pytest.raises(ConnectionRefusedError):               # nothing listens any more
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        assert held_sockets(port) == 0                            # nor holds a connection
        srv.start("127.0.0.1", port)                              # the next server binds it
        assert get(f"http://127.0.0.1:{port}/")[0] == 200
    finally:
        srv.stop()
        for c in clients:
            c.close()


def test_read_balance_figures_per_osd_and_pool() -> None:
    st = status_with_evil_pool()
    st["osds"][0].update(primaries=9, primary_share=5.818182)
    st["pools"][0]["read_balance"] = {"score_stable": 1.3300000429153442}
    st["pools"][1]["read_balance"] = None                  # erasure-coded: no score
    s = _samples(metrics(st, {"plan": None, "steps": []}))
    d = f'ceph_daemon="osd.{st["osds"][0]["id"]}"'
    assert s[f"pg_advisor_osd_primaries{{{d}}}"] == "9"
    assert s[f"pg_advisor_osd_primary_share{{{d}}}"] == "5.818182"
    score = f'pg_advisor_pool_read_balance_score{{pool_id="{st["pools"][0]["id"]}"}}'
    assert s[score] == "1.3300000429153442"
    assert f'pg_advisor_pool_read_balance_score{{pool_id="{st["pools"][1]["id"]}"}}' not in s


def test_the_status_is_encoded_once_per_status_by_the_serve_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    from pg_advisor.mgr import panel as mgr_panel
    encoded: List[Any] = []
    real = json.dumps

    def counted(doc: Any, *args: Any, **kw: Any) -> str:
        encoded.append(doc)
        return real(doc, *args, **kw)
    monkeypatch.setattr(mgr_panel.json, "dumps", counted)
    p = mgr_panel.Panel()
    url = p.move("127.0.0.1", free_port()) + "api/status"
    try:
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url, timeout=10)
        assert e.value.code == 503                  # nothing computed yet
        first = typed({"epoch": 7, "osds": [{"osd": i} for i in range(100)]})
        p.show_status(first, {})
        assert encoded == [first], "encoded by the caller of show_status, before any request"
        bodies = []
        for _ in range(3):
            with urllib.request.urlopen(url, timeout=10) as r:
                assert r.headers["Content-Type"] == "application/json"
                bodies.append(r.read())
        assert bodies == [real(first).encode()] * 3 and encoded == [first]
        second = typed({"epoch": 8, "osds": []})
        p.show_status(second, {})
        with urllib.request.urlopen(url, timeout=10) as r:
            assert json.loads(r.read()) == {"epoch": 8, "osds": []}
        assert encoded == [first, second]
    finally:
        p.stop()
