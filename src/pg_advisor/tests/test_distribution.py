from typing import Any, Dict

import numpy as np
import pytest

from pg_advisor import distribution, snapshot

from . import independent


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
        share = distribution.pool_share(pool, distribution.rule_weights(snap, snap.rule(pool.crush_rule)))
        assert share.sum() == pytest.approx(pool.pg_num * pool.size)
        for osd in range(snap.osds.count):
            assert share[osd] == pytest.approx(want[pool.id].get(osd, 0.0)), (pool.name, osd)
    fast = snap.pool_by_name("fast")
    share = distribution.pool_share(fast, distribution.rule_weights(snap, snap.rule(fast.crush_rule)))
    # the ssd rule reaches only osd.4 and osd.5, and osd.5 is reweighted to 0.8
    assert set(np.flatnonzero(share).tolist()) == {4, 5}
    assert share[5] / share[4] == pytest.approx(0.8, rel=1e-4)


def test_out_osd_gets_no_share(dumps: Dict[str, Any]) -> None:
    dumps["osd_dump"]["osds"][0]["weight"] = 0
    dumps["osd_dump"]["osds"][0]["in"] = 0
    s = snapshot.load(dumps["osd_dump"], dumps["crush"])
    rbd = s.pool_by_name("rbd")
    share = distribution.pool_share(rbd, distribution.rule_weights(s, s.rule(rbd.crush_rule)))
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
