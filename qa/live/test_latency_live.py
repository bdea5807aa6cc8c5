"""Short variants of the latency bench's scenarios (qa/bench/latency/) on the test
cluster: the bench's own measure() with its two checking clients (4 KiB and 64 KiB reads
and writes, every read checked, every object read back), a small pool, pg_advisor's
path. No op may fail and every object must read back as last written. (The expansion's
short variant is in test_expand_live.py, which adds the OSDs for good.)"""
from typing import Any, Dict, Iterator

import pytest

from ..bench.latency.run import LIVE_RATE, POOL, ClientLoad, Trial, measure
from ..cluster import Cluster

# rounds wider than the defaults (2 PGs an OSD, 5 % misplaced: the expansion test holds
# those): the no-op-lost check is the same, the 16-PG drain not 30 rounds long;
# split_pinning (measure() sets it) is here to be put back after
FAST = {"step_interval": 2, "max_backfills_per_osd": 4, "misplaced_budget": 0.3, "split_pinning": "true"}


@pytest.fixture
def bench(cluster: Cluster) -> Iterator[Cluster]:
    c = cluster
    with c.options("mgr", FAST), c.config("osd", "osd_max_backfills", "4"):
        out = {o["osd"] for o in c.json("osd", "dump")["osds"] if not o["in"]}
        yield c
        c.abort_plan()
        c.run("osd", "unset", "norebalance")
        for o in c.json("osd", "dump")["osds"]:
            if not o["in"] and o["osd"] not in out:
                c.ceph("osd", "in", str(o["osd"]))         # the drain's OSD back for the others
        c.remove_pool(POOL, wait=False)                     # (measure() made it)
    c.wait_clean(600)


def check(r: Dict[str, Any]) -> None:
    print({k: r[k] for k in ("scenario", "method", "ops", "ops_during", "failed", "mismatches", "unknown",
                             "stall_s", "to_clean_s", "during", "bytes_moved", "primary_changes",
                             "peerings_per_pg", "bursts", "slow_by_pg", "cpu_s")})
    assert r["failed"] == 0 and r["mismatches"] == 0 and r["unknown"] == 0, r["mismatch_examples"]
    # the burst breakdown read the epochs' times (none parsed: no epoch inside the change)
    b = r["bursts"]
    assert 0 < b["up_epochs"] + b["acting_epochs"] + b["up_thru_epochs"] + b["other_epochs"] <= r["epochs"], b
    assert b["up_epochs"] > 0 and r["cpu_s"].get("osd", 0) > 0, (b, r["cpu_s"])
    assert r["ops_during"] > 0 and r["ops"] > r["ops_during"]
    # every slow op laid somewhere, at most one PG interval each, and the change's intervals read
    p = r["slow_by_pg"]
    kinds = ("move", "remap", "temp", "drop", "order")
    assert sum(p[k] for k in kinds) + p["none"] == b["slow_ops"], (p, b)
    assert p["move_intervals"] + p["remap_intervals"] > 0, p
    assert sum(p[k + "_intervals"] for k in kinds) <= r["peerings"], p
    assert all(p[k + "_with_slow"] <= min(p[k + "_intervals"], p[k]) for k in kinds), p
    assert r["peerings"] > 0 and r["epochs"] > 0


def test_a_split_through_pg_advisor_loses_no_op_and_no_data(bench: Cluster) -> None:
    c = bench
    r = measure(c, Trial("split", "advisor", objects=400, pg_num=8, last_osd=-1, window=5, timeout=600),
                ClientLoad(clients=2, depth=4, seed=1, rate=LIVE_RATE))
    check(r)
    pool = c.pool_detail(POOL)
    assert pool["pg_num"] == pool["pg_placement_num"] == 16
    assert r["pgs"] == 16


@pytest.mark.parametrize("method", ["advisor", "advisor-weight"])
def test_a_drain_through_pg_advisor_loses_no_op_and_no_data(bench: Cluster, method: str) -> None:
    """advisor: the drain, then the out with what it remaps pinned back; advisor-weight:
    the drain, then `crush-reweight --weight 0` (pins in the weight's own epoch), then the
    out, which then moves nothing."""
    c = bench
    osd = max(o["osd"] for o in c.json("osd", "dump")["osds"] if o["in"] and o["up"])
    weight = c.crush_weights()[osd]
    try:
        r = measure(c, Trial("drain", method, objects=400, pg_num=16, last_osd=osd, window=5, timeout=900),
                    ClientLoad(clients=2, depth=4, seed=2, rate=LIVE_RATE))
        check(r)
        assert r["bytes_moved"] > 0
        brief = c.json("pg", "dump", "pgs_brief")
        rows = brief["pg_stats"] if isinstance(brief, dict) else brief
        assert not [x["pgid"] for x in rows if osd in x["acting"] or osd in x["up"]]   # nothing left on it
        assert c.crush_weights()[osd] == (0 if method == "advisor-weight" else weight)
    finally:
        c.run("osd", "crush", "reweight", f"osd.{osd}", str(weight))     # for the tests after
