"""The panel's HTTP server in the real mgr: its URL, its JSON, its metrics, its refusals."""
import json
import socket
import time
import urllib.error
import urllib.request
from typing import Any, Dict, Iterator, Tuple

import pytest

from .cluster import Cluster, wait_until
from .conftest import EVIL


def url_of(c: Cluster) -> str:
    return str(c.json("mgr", "services").get("pg_advisor", ""))


def get(url: str, method: str = "GET") -> Tuple[int, str]:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture
def panel(cluster: Cluster) -> Iterator[Tuple[Cluster, str]]:
    wait_until(lambda: url_of(cluster) != "", 60, "the panel's URL in ceph mgr services")
    yield cluster, url_of(cluster)


def test_url_json_and_metrics_match_the_status(panel: Tuple[Cluster, str]) -> None:
    c, url = panel
    assert url == "http://127.0.0.1:9285/"
    code, page = get(url)
    assert code == 200 and "<title>pg_advisor</title>" in page
    # the same numbers as `ceph pg-advisor status -f json` at the same moment (stats move:
    # take the pair again until two reads agree)
    for _ in range(5):
        live = json.loads(c.ceph("pg-advisor", "status", "-f", "json"))
        api = json.loads(get(url + "api/status")[1])
        if api == live:
            break
        time.sleep(2)
    assert api == live
    code, text = get(url + "metrics")
    assert code == 200
    samples: Dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("pg_advisor_osd_pgs{"):
            key, value = line.rsplit(" ", 1)
            samples[key] = float(value)
    assert samples == {f'pg_advisor_osd_pgs{{osd="{o["id"]}"}}': float(o["pgs"])
                       for o in api["osds"] if o["pgs"] is not None}
    assert json.loads(get(url + "api/progress")[1]).keys() >= {"plan"}
    assert "history" in json.loads(get(url + "api/history")[1])


def test_refusals_are_plain(panel: Tuple[Cluster, str]) -> None:
    c, url = panel
    for path in ("nope", "api/nope", "api/status/x", "../etc/passwd"):
        code, body = get(url + path)
        assert code == 404 and "Traceback" not in body, path
    code, body = get(url + "api/status", "POST")
    assert code == 405 and "Traceback" not in body


def test_an_evil_pool_name_stays_data(evil_pool: Cluster) -> None:
    c = evil_pool
    wait_until(lambda: url_of(c) != "", 60, "the panel")
    url = url_of(c)
    api: Any = None

    def listed() -> bool:
        nonlocal api
        api = json.loads(get(url + "api/status")[1])
        return any(p["name"] == EVIL for p in api["pools"])
    wait_until(listed, 60, "the pool in the panel's status")
    text = get(url + "metrics")[1]
    assert f'pool="{EVIL}"' in text       # a label value: quotes are what could break it
    page = get(url)[1]
    assert EVIL not in page                # the page carries no data, only its script


def test_disabling_the_module_releases_the_port(cluster: Cluster) -> None:
    c = cluster
    wait_until(lambda: url_of(c) != "", 60, "the panel")
    c.ceph("mgr", "module", "disable", "pg_advisor")
    try:
        def closed() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", 9285)) != 0
        wait_until(closed, 60, "port 9285 to close")
    finally:
        c.ceph("mgr", "module", "enable", "pg_advisor", "--force")

    def back() -> bool:
        try:
            return get("http://127.0.0.1:9285/api/history")[0] == 200
        except OSError:      # refused while the mgr restarts
            return False
    wait_until(back, 90, "the panel back after enable")
