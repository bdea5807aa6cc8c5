"""PG counts per OSD and each OSD's share as its pools' rules allow, and the spread
statistics over them."""
import copy
from typing import Any, Dict

import numpy as np
import pytest

from pg_advisor.model import distribution, snapshot
from pg_advisor.rules import reach, share as shares
from pg_advisor.crush.placement import Placer
from pg_advisor.model.distribution import up_counts
from pg_advisor.analysis.status import status_report

from . import independent
from .layouts import (HOST_IN_RACK, HOST_WITHOUT_RACK, IN_HOSTLESS_RACK, OSDS_ANYWHERE, RACK_THEN_HOST,
                      RACK_WITHOUT_HOST, UNDER_ROOT, Layout, load, regrow, use_rule)


def test_pg_counts_match_a_plain_count(snap: snapshot.Snapshot, dumps: Dict[str, Any]) -> None:
    assert snap.pgs is not None
    pool_ids, counts = distribution.pg_counts(snap, snap.pgs)
    want = independent.pg_counts(dumps["pg_dump"])
    for (pool, osd), n in want.items():
        assert counts[pool_ids.index(pool), osd] == n
    assert counts.sum() == sum(want.values())


def test_shares_follow_rule_root_class_and_reweight(snap: snapshot.Snapshot,
                                                    dumps: Dict[str, Any]) -> None:
    want = independent.pool_shares(dumps["osd_dump"], dumps["crush"])
    for pool in snap.pools:
        share = shares.pool_share(pool, reach.rule_weights(snap, snap.rule(pool.crush_rule)))
        assert share.sum() == pytest.approx(pool.pg_num * pool.size)
        for osd in range(snap.osds.count):
            assert share[osd] == pytest.approx(want[pool.id].get(osd, 0.0)), (pool.name, osd)
    fast = snap.pool_by_name("fast")
    share = shares.pool_share(fast, reach.rule_weights(snap, snap.rule(fast.crush_rule)))
    # the ssd rule reaches only osd.4 and osd.5, and osd.5 is reweighted to 0.8
    assert set(np.flatnonzero(share).tolist()) == {4, 5}
    assert share[5] / share[4] == pytest.approx(0.8, rel=1e-4)


def test_out_osd_gets_no_share(dumps: Dict[str, Any]) -> None:
    dumps["osd_dump"]["osds"][0]["weight"] = 0
    dumps["osd_dump"]["osds"][0]["in"] = 0
    s = snapshot.load(dumps["osd_dump"], dumps["crush"])
    rbd = s.pool_by_name("rbd")
    share = shares.pool_share(rbd, reach.rule_weights(s, s.rule(rbd.crush_rule)))
    assert share[0] == 0 and share.sum() == pytest.approx(rbd.pg_num * rbd.size)


def test_spread_statistics() -> None:
    counts = np.array([3, 5, 0, 4])
    share = np.array([4.0, 4.0, 0.0, 4.0])  # osd 2 is outside the rule and holds nothing
    s = distribution.spread(counts, share)
    assert (s.osds, s.min, s.max) == (3, 3, 5)
    assert s.mean == pytest.approx(4.0) and s.stdev == pytest.approx(np.std([3, 5, 4]))
    assert s.max_deviation == pytest.approx(1.0)
    assert s.max_over == pytest.approx(1.0) and s.max_under == pytest.approx(1.0)


def test_spread_counts_an_osd_outside_the_rule_that_holds_pgs() -> None:
    s = distribution.spread(np.array([4, 4, 2]), np.array([4.0, 4.0, 0.0]))
    assert s.osds == 3 and s.max_deviation == pytest.approx(2.0)


def test_spread_of_nothing() -> None:
    assert distribution.spread(np.zeros(3), np.zeros(3)).osds == 0


# -- OSDs a rule can never reach ---------------------------------------------------------------

def crush_maps_to(snap: snapshot.Snapshot, pool: snapshot.Pool, osd: int) -> int:
    """Replicas CRUSH itself (our exact mapper) puts on `osd`, upmaps aside."""
    return int(up_counts(Placer(snap).map_pool(pool, upmaps=False).up, snap.osds.count)[osd])


@pytest.mark.parametrize("layout", [UNDER_ROOT, IN_HOSTLESS_RACK], ids=["under-root", "hostless-rack"])
def test_an_osd_without_a_host_gets_no_share_of_host_rule_pools(
        dumps: Dict[str, Any], layout: Layout) -> None:
    new = regrow(dumps, layout)     # class ssd: the "fast" rule's shadow tree has it too
    s = load(dumps)
    report = status_report(s)
    row = next(o for o in report["osds"] if o["id"] == new)
    assert row["pg_share"] == 0 and set(row["pg_share_by_pool"].values()) == {0}
    assert any(f"cannot reach osd.{new}" in n for n in report["notes"])     # and it says so
    for pool in s.pools:                 # every rule of the fixture: chooseleaf type host
        share = shares.pool_share(pool, reach.rule_weights(s, s.rule(pool.crush_rule)))
        assert share[new] == 0, pool.name
        assert share.sum() == pytest.approx(pool.pg_num * pool.size), pool.name
        assert crush_maps_to(s, pool, new) == 0, pool.name    # as CRUSH itself does
    fast = s.pool_by_name("fast")
    share = shares.pool_share(fast, reach.rule_weights(s, s.rule(fast.crush_rule)))
    assert set(np.flatnonzero(share).tolist()) == {4, 5}


@pytest.mark.parametrize("layout, reachable", [(HOST_WITHOUT_RACK, False), (RACK_WITHOUT_HOST, False),
                                               (HOST_IN_RACK, True)],
                         ids=["host-without-rack", "rack-without-host", "host-in-rack"])
def test_a_two_step_rule_reaches_only_osds_under_each_steps_type(
        dumps: Dict[str, Any], layout: Layout, reachable: bool) -> None:
    new = regrow(dumps, layout, device_class="hdd")
    use_rule(dumps, "rbd", RACK_THEN_HOST)
    s = load(dumps)
    rbd = s.pool_by_name("rbd")
    share = shares.pool_share(rbd, reach.rule_weights(s, s.rule(rbd.crush_rule)))
    assert (share[new] > 0) == reachable
    assert share.sum() == pytest.approx(rbd.pg_num * rbd.size)
    assert (crush_maps_to(s, rbd, new) > 0) == reachable
    row = next(o for o in status_report(s)["osds"] if o["id"] == new)
    assert (row["pg_share_by_pool"][str(rbd.id)] > 0) == reachable


def test_a_choose_osd_rule_reaches_every_device_under_the_take(dumps: Dict[str, Any]) -> None:
    new = regrow(dumps, UNDER_ROOT, device_class="hdd")
    use_rule(dumps, "rbd", OSDS_ANYWHERE)
    s = load(dumps)
    rbd = s.pool_by_name("rbd")
    share = shares.pool_share(rbd, reach.rule_weights(s, s.rule(rbd.crush_rule)))
    assert share[new] > 0 and crush_maps_to(s, rbd, new) > 0
    assert share.sum() == pytest.approx(rbd.pg_num * rbd.size)


def test_rule_weights_follow_each_take_to_its_own_emit(dumps: Dict[str, Any]) -> None:
    # the first take's host step cannot reach osd.6; the second take's osd step can
    new = regrow(dumps, UNDER_ROOT, device_class="hdd")
    use_rule(dumps, "rbd", ["take default", "chooseleaf_firstn 1 host", "emit",
                            "take default", "choose_firstn -1 osd", "emit"])
    s = load(dumps)
    w = reach.rule_weights(s, s.rule(s.pool_by_name("rbd").crush_rule))
    assert w[new] > 0
    use_rule(dumps, "rbd", ["take default", "chooseleaf_firstn 0 host", "emit",
                            "take default~ssd", "chooseleaf_firstn 0 host", "emit"])
    s = load(dumps)
    assert reach.rule_weights(s, s.rule(s.pool_by_name("rbd").crush_rule))[new] == 0


def test_object_copies_are_each_pgs_objects_times_its_pools_size(dumps: Dict[str, Any]) -> None:
    d = copy.deepcopy(dumps)
    stats = d["pg_dump"]["pg_map"]["pg_stats"]
    # a PG of a pool the map no longer has (deleted since the stats) counts no copies
    stats.append(dict(stats[0], pgid="99.0"))
    snap = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])
    size = {p["pool"]: p["size"] for p in d["osd_dump"]["pools"]}
    want = sum(s["stat_sum"]["num_objects"] * size.get(int(s["pgid"].split(".")[0]), 0) for s in stats)
    assert want > 0 and distribution.object_copies(snap) == float(want)
    # Ceph's own count of each PG's copies agrees
    assert want == sum(s["stat_sum"]["num_object_copies"] for s in stats[:-1])


def test_osd_cells_skip_holes_padding_and_unknown_osds() -> None:
    none = 0x7FFFFFFF
    sets = np.array([[0, 2, -1], [none, 1, 5], [2, 2, 0]], dtype=np.int64)
    rows, osds = distribution.osd_cells(sets, 3)
    assert rows.tolist() == [0, 0, 1, 2, 2, 2]
    assert osds.tolist() == [0, 2, 1, 2, 2, 0]
    assert up_counts(sets, 3).tolist() == [2, 1, 3]
    empty = distribution.osd_cells(np.zeros((0, 3), dtype=np.int64), 3)
    assert empty[0].size == 0 and empty[1].size == 0
