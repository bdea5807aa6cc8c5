"""On Tentacle every mgr module runs in one Python interpreter: pg_advisor must change
nothing there that other modules share, not even for the span of one read. A probe module
(qa/cluster/mgr/interpreter_probe) loaded beside it samples that state every 2 ms while pg_advisor
reads the cluster both ways (full and brief PG stats), answers commands and serves its panel."""
import json
import urllib.request
from typing import Any, Dict, Iterator

import pytest

from ..cluster import Cluster, wait_until
from ..conftest import PANEL_URL


def probe(c: Cluster) -> Dict[str, Any]:
    return json.loads(c.ceph("interpreter-probe", "state"))


def ready(c: Cluster) -> bool:
    return c.run("interpreter-probe", "state")[0] == 0 and c.run("pg-advisor", "status")[0] == 0


@pytest.fixture
def probed(cluster: Cluster) -> Iterator[Cluster]:
    c = cluster
    if c.release() == "pacific":
        pytest.skip("Pacific gives each mgr module an interpreter of its own")
    c.ceph("mgr", "module", "enable", "interpreter_probe")
    try:
        wait_until(lambda: ready(c), 90, "the probe and pg_advisor to answer after the mgr restart")
        yield c
    finally:
        c.ceph("mgr", "module", "disable", "interpreter_probe")
        wait_until(lambda: c.run("pg-advisor", "status")[0] == 0, 90, "pg_advisor back")


def test_nothing_the_interpreter_shares_changes(probed: Cluster) -> None:
    c = probed
    first = probe(c)
    assert first["interpreter"] == "main", "the probe must share pg_advisor's interpreter"
    c.ceph("interpreter-probe", "reset")
    before = probe(c)["samples"]
    try:
        for full_max in (100000, 0):          # the full PG stats, then the brief ones
            with c.options("mgr", {"pg_stats_full_max": full_max}):
                for w in ("0.95", "1"):               # a new map each time: a fresh read
                    c.ceph("osd", "reweight", "0", w)
                    for cmd in (["status"], ["plan"], ["eval"], ["balance", "--dry-run"]):
                        c.advisor(*cmd)
                    for path in ("", "metrics", "api/status"):
                        with urllib.request.urlopen(PANEL_URL + path, timeout=30) as r:
                            assert r.status == 200
    finally:
        c.ceph("osd", "reweight", "0", "1")
    got = probe(c)
    assert got["changes"] == [] and got["now"] == got["first"], got["changes"]
    assert got["samples"] - before > 100, "the probe did not sample while pg_advisor worked"
    c.wait_clean()
