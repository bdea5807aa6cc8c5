"""The panel's HTTP server in the real mgr: its URL, its JSON, its metrics, its refusals."""
import json
import socket
import time
import urllib.error
import urllib.request
from typing import Any, Dict, Iterator, Tuple

import pytest

from ..cluster import Cluster, free_port, wait_until
from ..conftest import EVIL, PANEL_URL as URL


def url_of(c: Cluster) -> str:
    return str(c.json("mgr", "services").get("pg_advisor", ""))


def get(url: str, method: str = "GET") -> Tuple[int, str]:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric_samples(text: str) -> Dict[str, float]:
    samples: Dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("pg_advisor_osd_pgs{"):
            key, value = line.rsplit(" ", 1)
            samples[key] = float(value)
    return samples


@pytest.fixture
def panel(cluster: Cluster) -> Iterator[Tuple[Cluster, str]]:
    wait_until(lambda: url_of(cluster) != "", 60, "the panel's URL in ceph mgr services")
    yield cluster, url_of(cluster)


def test_url_json_and_metrics_match_the_status(panel: Tuple[Cluster, str]) -> None:
    c, url = panel
    assert url == URL
    code, page = get(url)
    assert code == 200 and "<title>pg_advisor</title>" in page
    # the same numbers as `ceph pg-advisor status -f json`, and /metrics the same as
    # /api/status. The panel serves the status of its last refresh (refresh_interval, 10 s)
    # and stats still move after earlier tests: read again, across several refreshes, until
    # the reads agree
    deadline = time.monotonic() + 90
    while True:
        live = c.advisor("status")
        api = json.loads(get(url + "api/status")[1])
        code, text = get(url + "metrics")
        samples = metric_samples(text)
        want = {f'pg_advisor_osd_pgs{{ceph_daemon="osd.{o["id"]}"}}': float(o["pgs"])
                for o in api["osds"] if o["pgs"] is not None}
        if (api == live and samples == want) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert api == live, "differ: " + str({k: (str(api.get(k))[:300], str(live.get(k))[:300])
                                          for k in set(api) | set(live)
                                          if api.get(k) != live.get(k)})
    assert code == 200
    assert samples == want
    # what the module adds: its mode, the misplaced ratio and budget, when it computed
    every = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    assert sorted(v for k, v in every.items() if k.startswith("pg_advisor_mode{")) == ["0", "0", "1"]
    assert float(every["pg_advisor_misplaced_budget_ratio"]) == float(
        c.ceph("config", "get", "mgr", "target_max_misplaced_ratio"))
    assert 0.0 <= float(every["pg_advisor_misplaced_ratio"]) <= 1.0
    assert abs(time.time() - float(every["pg_advisor_status_timestamp_seconds"])) < 120
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
    assert f'name="{EVIL}"' in text       # a label value: quotes are what could break it
    page = get(url)[1]
    assert EVIL not in page                # the page carries no data, only its script


def serving(url: str) -> bool:
    try:
        return get(url + "api/history")[0] == 200
    except OSError:      # refused while the server moves or the mgr restarts
        return False


def port_closed(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def mgr_pid(c: Cluster) -> int:
    return int((c.dir / "run" / "mgr.x.pid").read_text())


def test_disabling_the_module_releases_the_port(cluster: Cluster) -> None:
    c = cluster
    wait_until(lambda: url_of(c) != "", 60, "the panel")
    c.ceph("mgr", "module", "disable", "pg_advisor")
    try:
        wait_until(lambda: port_closed(9285), 60, "port 9285 to close")
    finally:
        c.ceph("mgr", "module", "enable", "pg_advisor", "--force")
    wait_until(lambda: serving(URL), 90, "the panel back after enable")


def test_a_new_port_moves_the_panel_and_a_busy_one_harms_nothing(cluster: Cluster) -> None:
    c = cluster
    wait_until(lambda: url_of(c) == URL, 60, "the panel")
    pid = mgr_pid(c)
    port = free_port()
    with c.options("mgr", {"server_port": port}):
        moved = f"http://127.0.0.1:{port}/"
        wait_until(lambda: url_of(c) == moved and serving(moved), 60, "the panel on the new port")
        wait_until(lambda: port_closed(9285), 30, "the old port released")
        # a port something else holds: logged, no URL, and the mgr carries on
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            with c.options("mgr", {"server_port": busy.getsockname()[1]}):
                wait_until(lambda: url_of(c) == "", 60, "the URL withdrawn")
                assert port_closed(port)
                assert mgr_pid(c) == pid and c.advisor("status")["pools"]
    wait_until(lambda: url_of(c) == URL and serving(URL), 60, "the panel back on its default port")
    assert mgr_pid(c) == pid


def test_a_mgr_failover_releases_the_port_for_the_next_mgr(cluster: Cluster) -> None:
    c = cluster
    wait_until(lambda: serving(URL), 60, "the panel")
    log = c.dir / "log" / "mgr.x.log"
    seen = log.stat().st_size
    gid = c.json("mgr", "dump")["active_gid"]
    c.ceph("mgr", "fail")
    wait_until(lambda: c.json("mgr", "dump")["active_gid"] not in (0, gid), 120, "a new active mgr")
    # the next mgr (this one, respawned) binds the same port: the old server let it go
    wait_until(lambda: url_of(c) == URL and serving(URL), 120, "the panel served by the new mgr")
    with log.open("rb") as f:
        f.seek(seen)
        after = f.read().decode(errors="replace")
    assert "panel not started" not in after
    assert "pg_advisor: panel at " + URL in after
