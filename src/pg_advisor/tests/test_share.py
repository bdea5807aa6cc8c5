"""The share the rule allows: weight-proportional within the caps its choose steps set."""
import copy
from typing import Any, Dict, List

import numpy as np
import pytest

from pg_advisor.model import snapshot
from pg_advisor.rules.share import pool_share
from pg_advisor.rules.reach import rule_weights
from pg_advisor.rules.legality import ancestors
from pg_advisor.rules.share import capped_share, fill, rule_levels, rule_share


def test_fill_spreads_by_weight_and_gives_what_a_full_unit_cannot_take_to_the_others() -> None:
    group = np.array([0, 0, 0, 1, 1])
    w = np.array([1.0, 1.0, 2.0, 1.0, 3.0])
    no_cap = np.full(5, 1e9)
    assert np.allclose(fill(group, np.array([8.0, 4.0]), w, no_cap), [2, 2, 4, 1, 3])
    # unit 2 may hold 3: its extra 1 goes to units 0 and 1 by their weights
    capped = fill(group, np.array([8.0, 4.0]), w, np.array([9, 9, 3, 9, 9.0]))
    assert np.allclose(capped, [2.5, 2.5, 3, 1, 3])
    # a cascade: capping unit 2 pushes unit 1 over its cap too
    assert np.allclose(fill(np.zeros(3, np.int64), np.array([9.0]), np.array([1.0, 2, 6]),
                            np.array([9, 3, 4.0])), [2, 3, 4])
    # more than the units hold: every unit full, the rest unplaced (CRUSH leaves a hole)
    assert np.allclose(fill(np.zeros(2, np.int64), np.array([10.0]), np.array([1.0, 1]),
                            np.array([3, 4.0])), [3, 4])
    # weightless units get nothing
    assert np.allclose(fill(np.zeros(2, np.int64), np.array([4.0]), np.array([0.0, 1]),
                            np.full(2, 9.0)), [0, 4])


def test_a_bucket_holds_no_more_than_the_buckets_under_it_can() -> None:
    """2 racks of 2 hosts, size 4, 3 racks: rack A's one host (weight 100) may hold one
    replica of each PG, so rack A holds pg_num, not its cap of 2 x pg_num; racks B and C
    (two hosts of weight 1 each) share the rest."""
    rack = np.array([-1, -2, -2, -3, -3])
    host = np.array([-10, -11, -12, -13, -14])
    anc = {0: np.arange(5), 1: host, 3: rack}
    w = np.array([100.0, 1, 1, 1, 1])
    share = capped_share(anc, [(3, 2), (1, 1)], 10, w, 40.0)
    assert np.allclose(share, [10, 7.5, 7.5, 7.5, 7.5])


def _snap(dumps: Dict[str, Any]) -> snapshot.Snapshot:
    return snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])


def _host_sums(snap: snapshot.Snapshot, share: np.ndarray) -> Dict[str, float]:
    return {b.name: float(share[b.items[b.items >= 0]].sum())
            for b in snap.buckets.values() if b.type_id == snap.crush_types["host"] and not b.is_shadow}


def test_three_hosts_at_size_three_each_hold_pg_num_whatever_their_weight(dumps: Dict[str, Any]) -> None:
    d = copy.deepcopy(dumps)
    for b in d["crush"]["buckets"]:      # host0 four times as heavy as the others
        if b["name"] == "host0":
            for it in b["items"]:
                it["weight"] *= 4
    s = _snap(d)
    rbd = s.pool_by_name("rbd")
    w = rule_weights(s, s.rules[rbd.crush_rule])
    plain = pool_share(rbd, w)
    assert _host_sums(s, plain)["host0"] > 1.5 * rbd.pg_num     # what no placement can give
    share = rule_share(s, rbd, w, ancestors(s))
    assert share.sum() == pytest.approx(rbd.pg_num * rbd.size)
    for name, total in _host_sums(s, share).items():
        assert total == pytest.approx(rbd.pg_num), name          # one replica of each PG
    # within a host, by weight (osd.5 is reweighted 0.8 in the fixture)
    assert share[5] / share[2] == pytest.approx(w[5] / w[2])
    # a pool of size 2 over 3 hosts is under no cap here: weight-proportional
    fast = s.pool_by_name("fast")
    wf = rule_weights(s, s.rules[fast.crush_rule])
    sf = rule_share(s, fast, wf, ancestors(s))
    assert max(_host_sums(s, sf).values()) <= fast.pg_num + 1e-9


def _rule(d: Dict[str, Any], pool: str, steps: List[Dict[str, Any]]) -> None:
    p = next(p for p in d["osd_dump"]["pools"] if p["pool_name"] == pool)
    rule = next(r for r in d["crush"]["rules"] if r["rule_id"] == p["crush_rule"])
    rule["steps"] = [rule["steps"][0], *steps, {"op": "emit"}]


@pytest.mark.parametrize("steps, size, levels", [
    ([{"op": "chooseleaf_firstn", "num": 0, "type": "host"}], 3, ([(1, 1)], 3)),
    ([{"op": "choose_indep", "num": 4, "type": "rack"},
      {"op": "chooseleaf_indep", "num": 3, "type": "host"}], 11, ([(3, 3), (1, 1)], 11)),
    ([{"op": "choose_firstn", "num": 2, "type": "rack"},
      {"op": "chooseleaf_firstn", "num": 2, "type": "host"}], 4, ([(3, 2), (1, 1)], 4)),
    # 0 and negative counts resolve against the size; the fan-out may exceed it
    ([{"op": "choose_firstn", "num": 0, "type": "room"},
      {"op": "chooseleaf_firstn", "num": -1, "type": "host"}], 3, ([(7, 2), (1, 1)], 3)),
    ([{"op": "choose_firstn", "num": 2, "type": "rack"},
      {"op": "chooseleaf_firstn", "num": 1, "type": "host"}], 3, ([(3, 1), (1, 1)], 2)),
    ([{"op": "choose_firstn", "num": -3, "type": "host"}], 3, None),       # picks nothing
    # two takes: not one set of caps (weight-proportional)
    ([{"op": "chooseleaf_firstn", "num": 1, "type": "host"}, {"op": "emit"},
      {"op": "take", "item": -1}, {"op": "chooseleaf_firstn", "num": -1, "type": "host"}], 3, None),
])
def test_rule_levels(dumps: Dict[str, Any], steps: List[Dict[str, Any]], size: int,
                     levels: Any) -> None:
    d = copy.deepcopy(dumps)
    _rule(d, "rbd", steps)
    rbd = next(p for p in d["osd_dump"]["pools"] if p["pool_name"] == "rbd")
    rbd["size"] = size
    s = snapshot.load(d["osd_dump"], d["crush"])
    assert rule_levels(s, s.pool_by_name("rbd")) == levels


def test_the_share_over_sparse_ids_is_the_dense_one_and_weighs_only_the_osds_of_weight(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # ids that hold no OSD (an OSD at 2^20 - 1 makes a million of them) take no share and
    # add zeros to every sum: the share is computed over the OSDs of weight alone
    from pg_advisor.rules import share as share_module
    s = _snap(dumps)
    anc = ancestors(s)
    n, high = s.osds.count, (1 << 20) - 1
    sparse = {t: np.concatenate([a, np.full(high + 1 - n, a.min() - 1 if t else 0)]) for t, a in anc.items()}
    sparse[0] = np.arange(high + 1)
    sizes: List[int] = []
    real_fill = share_module.fill

    def counted(group: np.ndarray, totals: np.ndarray, w: np.ndarray, cap: np.ndarray) -> np.ndarray:
        sizes.append(w.shape[0])
        return real_fill(group, totals, w, cap)
    monkeypatch.setattr(share_module, "fill", counted)
    for pool in s.pools:
        w = rule_weights(s, s.rules[pool.crush_rule])
        dense = rule_share(s, pool, w, anc)
        wide = np.zeros(high + 1)
        wide[:n] = w
        got = rule_share(s, pool, wide, sparse)
        assert np.array_equal(got[:n], dense) and not got[n:].any(), pool.name
    assert sizes and max(sizes) <= n
