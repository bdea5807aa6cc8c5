"""The panel's metrics and HTTP server (a real server on loopback; no mgr needed)."""
import copy
import json
import socket
import urllib.error
import urllib.request
from typing import Any, Dict, Iterator, Tuple

import pytest

from pg_advisor.http_server import Server
from pg_advisor.panel import PAGE, metrics

from .conftest import free_port, read

EVIL = '<img src=x onerror=alert(1)>"\\'


def status_with_evil_pool() -> Dict[str, Any]:
    st = copy.deepcopy(read("live_status.json"))
    st["pools"][0]["name"] = EVIL
    st["distribution"]["pools"][0]["pool"] = EVIL
    return st


def test_metrics_carry_the_status_figures_with_escaped_labels() -> None:
    st = status_with_evil_pool()
    text = metrics(st, {"plan": None, "steps": []})
    for o in st["osds"]:
        assert f'pg_advisor_osd_pgs{{osd="{o["id"]}"}} {o["pgs"]:g}' in text
        assert f'pg_advisor_osd_utilization_percent{{osd="{o["id"]}"}} {o["utilization"]:g}' in text
        for pid, x in o["pg_share_by_pool"].items():
            assert f'pg_advisor_osd_pool_pg_share{{osd="{o["id"]}",pool_id="{pid}"}} {x:g}' in text
    budget = st["cluster"]["sizing"]["pg_memory_budget"]
    assert f"pg_advisor_pg_memory_budget_bytes {budget:g}" in text
    # a label value cannot end early or add a line: quote and backslash are escaped
    assert 'pool="<img src=x onerror=alert(1)>\\"\\\\"' in text
    for line in text.splitlines():
        assert line.startswith("#") or line.startswith("pg_advisor_")
    assert "pg_advisor_plan_running 0" in text


def test_the_page_builds_no_markup_from_data() -> None:
    assert "innerHTML" not in PAGE and "outerHTML" not in PAGE and "document.write" not in PAGE
    assert "http://" not in PAGE.replace("http://www.w3.org/2000/svg", "")   # no CDN


@pytest.fixture
def server() -> Iterator[Tuple[str, Dict[str, Any], int]]:
    st = status_with_evil_pool()
    progress: Dict[str, Any] = {"plan": None, "steps": []}
    srv = Server(lambda: st, lambda: progress, lambda: {"history": []})
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


def test_port_is_free_after_stop() -> None:
    port = free_port()
    srv = Server(lambda: {}, lambda: {}, lambda: {})
    srv.start("127.0.0.1", port)
    srv.stop()
    with socket.socket() as s:     # binds again: the port was released
        s.bind(("127.0.0.1", port))
    srv.start("127.0.0.1", port)   # and the server can start again on it
    assert get(f"http://127.0.0.1:{port}/")[0] == 200
    srv.stop()
