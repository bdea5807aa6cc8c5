"""Read (primary) balance: primaries per OSD as the real cluster reported them, their fair
share, and Reef's read_balance_score (OSDMap::calc_read_balance_score, fair distribution)."""
import copy
from typing import Any, Dict

import numpy as np
import pytest

from pg_advisor.analysis.read_balance import primaries, primary_share, r2, read_balance_score
from pg_advisor.model import snapshot
from pg_advisor.rules.reach import rule_weights

from . import fakes


def _snap(dumps: Dict[str, Any], stats: bool = True) -> snapshot.Snapshot:
    """With the PG stats (primaries as the cluster reported them) or without (CRUSH's)."""
    if not stats:
        return snapshot.load(dumps["osd_dump"], dumps["crush"])
    return snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])


def test_r2_rounds_as_ceph_and_keeps_a_32_bit_float() -> None:
    assert r2(1.5) == 1.5 and r2(2.0) == 2.0
    assert r2(1.33) == 1.3300000429153442          # what Reef's JSON prints
    assert r2(1.006) == float(np.float32(1.01)) and r2(-1.006) == float(np.float32(-1.01))


def test_primaries_without_stats_are_the_up_primaries_the_cluster_reported(dumps: Dict[str, Any]) -> None:
    """CRUSH with primary affinity (the fixture's osd.1 has 0.5), offline, against the
    real cluster's own up_primary of every PG."""
    snap = _snap(dumps, stats=False)
    assert snap.pgs is None
    stats = dumps["pg_dump"]["pg_map"]["pg_stats"]
    for pool in snap.pools:
        want = np.zeros(snap.osds.count, dtype=np.int64)
        for s in stats:
            if int(s["pgid"].split(".")[0]) == pool.id:
                want[s["up_primary"]] += 1
        assert primaries(snap, pool).tolist() == want.tolist(), pool.name


def test_the_score_of_a_replicated_pool(dumps: Dict[str, Any]) -> None:
    snap = _snap(dumps)
    rbd = snap.pool_by_name("rbd")                 # 32 PGs, size 3, on all 6 OSDs
    counts = primaries(snap, rbd)
    r = read_balance_score(snap, rbd)
    assert r is not None and "error_message" not in r
    avg = 32 / 6
    assert r["raw_score_stable"] == r2(counts.max() / avg)
    assert r["optimal_score"] == 1.0                # every rule OSD may be primary and holds PGs
    assert r["score_stable"] == r2(r["raw_score_stable"] / 1.0) and r["score_stable"] >= 1.0
    crush_only = read_balance_score(_snap(dumps, stats=False), rbd)     # stats or CRUSH: the same
    assert crush_only == {k: v for k, v in r.items() if not k.endswith("_acting")}
    # every PG clean (acting = up): the acting score is the stable one
    assert (r["score_acting"], r["raw_score_acting"]) == (r["score_stable"], r["raw_score_stable"])
    # the fixture's osd.1 has primary affinity 0.5, the others 1
    assert snap.osds.primary_affinity.tolist() == [1, 0.5, 1, 1, 1, 1]
    assert r["average_primary_affinity"] == r2(5.5 / 6)
    # fair shares: the pool's PGs, in proportion to weight x affinity
    share = primary_share(snap, rbd)
    w = rule_weights(snap, snap.rule(rbd.crush_rule))
    assert share.sum() == pytest.approx(32)
    wpa = w * snap.osds.primary_affinity
    assert (share / wpa).tolist() == pytest.approx([32 / wpa.sum()] * 6)


def test_primary_affinity_zero_moves_the_role_and_lowers_the_optimum(dumps: Dict[str, Any]) -> None:
    d = copy.deepcopy(dumps)
    for o in d["osd_dump"]["osds"]:
        if o["osd"] == 0:
            o["primary_affinity"] = 0.0
    snap = _snap(d, stats=False)                    # the stats predate the change
    rbd = snap.pool_by_name("rbd")
    assert primaries(snap, rbd)[0] == 0            # never primary while others can be
    assert primary_share(snap, rbd)[0] == 0
    r = read_balance_score(snap, rbd)
    assert r is not None and r["optimal_score"] == r2(6 / 5)
    assert r["score_stable"] == r2(r["raw_score_stable"] / r2(6 / 5))
    assert r["average_primary_affinity"] == r2(4.5 / 5)   # over the OSDs with affinity > 0


def test_refusals_as_reefs(dumps: Dict[str, Any]) -> None:
    snap = _snap(dumps)
    assert read_balance_score(snap, snap.pool_by_name("ecpool")) is None   # replicated pools only
    d = copy.deepcopy(dumps)
    for o in d["osd_dump"]["osds"]:
        o["primary_affinity"] = 0.0
    snap = _snap(d)
    r = read_balance_score(snap, snap.pool_by_name("rbd"))
    assert r is not None and "primary affinity 0" in r["error_message"] and r["score_stable"] == 0.0
    d = copy.deepcopy(dumps)
    for o in d["osd_dump"]["osds"]:
        if o["osd"] != 0:
            o["primary_affinity"] = 0.0
    snap = _snap(d)                                 # 1 OSD of 6 may be primary: below 1/size
    r = read_balance_score(snap, snap.pool_by_name("rbd"))
    assert r is not None and "below 1/size" in r["error_message"]


def test_the_status_pass_reads_each_pools_pgs_once_through_one_sort(dumps: Dict[str, Any],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The panel's refresh computes read_balance over every pool: the PG rows of a pool come
    from one sort kept in the snapshot's memo (no mask of every PG per pool), and each pool's
    up sets are read once for its primaries and its score alike."""
    from pg_advisor.analysis import read_balance as rb
    snap = _snap(dumps)
    assert snap.pgs is not None
    for pool in snap.pools:                           # the rows a mask would give, in order
        assert snap.pg_rows(pool.id).tolist() == np.flatnonzero(snap.pgs.pool == pool.id).tolist()
    assert snap.pg_rows(12345).size == 0
    fresh = _snap(dumps)
    sorts = fakes.calls(monkeypatch, np, "argsort")
    reads = fakes.calls(monkeypatch, rb, "_up")
    out = rb.read_balance(fresh, list(fresh.pools))
    assert sorted(a[1].id for a in reads) == sorted(p.id for p in fresh.pools)
    assert len(sorts) == 1
    # the same figures as pool by pool
    for p in fresh.pools:
        assert out["pools"][str(p.id)] == read_balance_score(snap, p)
    assert out["primaries"].tolist() == np.sum([primaries(snap, p) for p in snap.pools], axis=0).tolist()


def test_the_acting_score_follows_a_pg_temp(dumps: Dict[str, Any]) -> None:
    # Reef's headline score reads the acting primaries: while a pg_temp holds a PG (a
    # backfill), its first acting OSD serves the reads. Every PG of rbd acting on osd.2
    # first: the acting score rises, the stable one does not move
    snap0 = _snap(dumps)
    rbd = snap0.pool_by_name("rbd")
    before = read_balance_score(snap0, rbd)
    d = copy.deepcopy(dumps)
    for s in d["pg_dump"]["pg_map"]["pg_stats"]:
        if s["pgid"].startswith(f"{rbd.id}.") and 2 not in s["up"][:1]:
            s["acting"] = [2] + [o for o in s["up"] if o != 2][:2]
    r = read_balance_score(_snap(d), rbd)
    assert before is not None and r is not None
    assert r["score_stable"] == before["score_stable"]
    avg = rbd.pg_num / 6
    assert r["raw_score_acting"] == r2(rbd.pg_num / avg)           # all 32 on osd.2
    assert r["score_acting"] == r2(r["raw_score_acting"] / r["optimal_score"])
