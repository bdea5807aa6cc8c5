"""Sizing: rounding, data shares, hysteresis, the caps of the PG limit and OSD memory, and
the PG logs' entries and dups the memory model reads from the stats."""
import copy
import dataclasses
import math
from typing import Any, Dict

import numpy as np
import pytest

from pg_advisor.model import options, snapshot
from pg_advisor.crush.placement import Placer
from pg_advisor.rules.share import pool_share
from pg_advisor.rules.reach import rule_weights
from pg_advisor.model.distribution import up_counts
from pg_advisor.model.errors import AdvisorError
from pg_advisor.sizing.memory import MemoryModel, pg_log_lengths
from pg_advisor.sizing.policy import round_pow2 as _round_pow2
from pg_advisor.sizing.sizer import raw_rate, recommend


def load(d: Dict[str, Any]) -> snapshot.Snapshot:
    return snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])


def test_rounding_is_to_the_nearest_power_of_two_by_ratio() -> None:
    assert _round_pow2(142.9)[0] == 128 and _round_pow2(142.9)[1].code == "round_down"
    assert _round_pow2(182.0)[0] == 256 and _round_pow2(182.0)[1].code == "round_up"
    assert _round_pow2(64.0)[0] == 64
    # the midpoint is sqrt(2) x the lower power: 1.41 * 128 = 181.02
    assert _round_pow2(181.0)[0] == 128 and _round_pow2(181.1)[0] == 256


def test_shares_follow_the_data(snap: snapshot.Snapshot) -> None:
    r = recommend(snap, options.make())
    rbd, ec = r.by_name("rbd"), r.by_name("ecpool")
    # rbd and ecpool share the default root: their budget splits by raw bytes
    raw = {p.name: (p.stored or 0) * raw_rate(p) for p in snap.pools}
    assert rbd.data_share == pytest.approx(raw["rbd"] / (raw["rbd"] + raw["ecpool"]))
    n = rbd.osds
    # the default root holds the ssd OSDs too (overlapping roots), where the empty pool
    # fast has its floor, which (as in pg_autoscaler) is not taken off their budget
    fast = r.by_name("fast")
    assert fast.osds < n and "overlap" in [x.code for x in rbd.reasons]
    assert fast.recommended == 32 and fast.reasons[0].code == "near_empty"
    left = 100 * n
    assert rbd.ideal == pytest.approx(left * rbd.data_share / 3)
    assert ec.ideal == pytest.approx(left * ec.data_share / 3)
    for s in (rbd, ec):
        assert s.recommended & (s.recommended - 1) == 0
        assert abs(math.log2(s.recommended / s.ideal)) <= 0.5
    # fast is alone on the ssd subtree and empty: the floor
    assert r.by_name("fast").recommended == 32 and r.by_name("fast").reasons[0].code == "near_empty"


def test_ec_raw_rate(snap: snapshot.Snapshot) -> None:
    ec = snap.pool_by_name("ecpool")
    assert ec.data_chunks == 2 and raw_rate(ec) == pytest.approx(1.5)


def test_hysteresis_keeps_a_near_value(dumps: Dict[str, Any]) -> None:
    r = recommend(load(dumps), options.make())
    rec = r.by_name("rbd").recommended
    # a pool already at a power of two within the band stays there
    d = copy.deepcopy(dumps)
    for p in d["osd_dump"]["pools"]:
        if p["pool_name"] == "rbd":
            p["pg_num"] = p["pg_num_target"] = p["pg_placement_num"] = rec // 2
    s = recommend(load(d), options.make({"hysteresis": 1.0})).by_name("rbd")
    assert s.recommended == rec // 2 and "hysteresis" in [x.code for x in s.reasons]
    s = recommend(load(d), options.make({"hysteresis": 0.0})).by_name("rbd")
    assert s.recommended == rec


def test_the_fullest_osd_caps_the_recommendation(snap: snapshot.Snapshot) -> None:
    r = recommend(snap, options.make({"target_pgs_per_osd": 1000}))
    assert r.pgs_per_osd_after.max() <= r.limit_pgs == 200
    capped = [s for s in r.pools if any(x.code == "cap_pgs" for x in s.reasons)]
    assert capped
    # the prediction is CRUSH's: recompute the counts independently from the placer
    pl = Placer(snap)
    total = sum(up_counts(pl.map_pool(s.pool, pg_num=s.recommended, pgp_num=s.recommended).up,
                          snap.osds.count) for s in r.pools)
    assert np.array_equal(total, r.pgs_per_osd_after)


def test_balanced_ideal_is_the_ceiling_of_the_share(snap: snapshot.Snapshot) -> None:
    r = recommend(snap, options.make(), balanced=True)
    assert r.balanced and r.pgs_per_osd_after.max() <= r.limit_pgs
    # each OSD is counted at the ceiling of its weight-proportional share of each pool,
    # summed over the pools at their recommended pg_num (not CRUSH as it falls)
    want = np.zeros(snap.osds.count)
    for s in r.pools:
        rule = snap.rules[s.pool.crush_rule]
        share = pool_share(s.pool, rule_weights(snap, rule), s.recommended)
        want += np.ceil(share - 1e-9)
    assert np.array_equal(r.pgs_per_osd_after, want.astype(np.int64))
    crush = recommend(snap, options.make(), balanced=False)
    assert not np.array_equal(crush.pgs_per_osd_after, r.pgs_per_osd_after), \
        "the fixture shows nothing: CRUSH's counts equal the ceilings"


def test_memory_cap(snap: snapshot.Snapshot) -> None:
    opts = options.make({"pg_memory_fraction": 0.05, "target_pgs_per_osd": 400})
    r = recommend(snap, opts)
    # the cap bit: pg_num was halved for memory, and the result fits the budget
    assert any(x.code == "cap_memory" for s in r.pools for x in s.reasons)
    assert r.notes == [] and (r.memory_after <= r.memory_budget).all() and r.binding != "target"
    uncapped = recommend(snap, options.make({"target_pgs_per_osd": 400}))
    assert (uncapped.memory_after > r.memory_budget).any(), "the budget caps nothing here"
    assert sum(s.recommended for s in r.pools) < sum(s.recommended for s in uncapped.pools)
    # a budget no pg_num fits: every pool at its floor, and a note says the OSD stays over
    tight = recommend(snap, options.make({"pg_memory_fraction": 0.02, "target_pgs_per_osd": 400}))
    assert [s.recommended for s in tight.pools] == [32, 32, 32]
    assert (tight.memory_after > tight.memory_budget).any()
    assert any("stays over its limits even with every pool it holds at its floor" in n for n in tight.notes)


def test_pool_options_are_honoured(dumps: Dict[str, Any]) -> None:
    d = copy.deepcopy(dumps)
    for p in d["osd_dump"]["pools"]:
        if p["pool_name"] == "fast":
            p["options"] = {"pg_num_min": 64}
        if p["pool_name"] == "rbd":
            p["options"] = {"pg_num_max": 16}
        if p["pool_name"] == "ecpool":
            p["options"] = {"target_size_ratio": 0.9}
    r = recommend(load(d), options.make())
    assert r.by_name("fast").recommended == 64
    assert r.by_name("rbd").recommended == 16
    assert r.by_name("ecpool").data_share > 0.9


def test_every_recommendation_has_reasons_and_a_sentence(snap: snapshot.Snapshot) -> None:
    for s in recommend(snap, options.make()).pools:
        assert s.reasons and all(r.text for r in s.reasons)
        assert s.sentence().startswith(f"{s.pool.name}: ") and str(s.recommended) in s.sentence()


def test_memory_model() -> None:
    m = MemoryModel(500, 50, 10000, min_log=250, max_log=10000, target_log_per_osd=300000,
                    dups_tracked=3000)
    # few PGs: each log at its max; many: the per-OSD target spread thin, floored at min
    assert m.log_entries_per_pg(np.array([10]))[0] == 10000
    assert m.log_entries_per_pg(np.array([100]))[0] == 3000
    assert m.log_entries_per_pg(np.array([2000]))[0] == 250
    # a busy PG keeps dups_tracked dups whatever its log's length (measured on Tentacle:
    # qa/bench/pg_memory.py)
    assert m.steady_state(np.array([100]))[0] == 100 * (3000 * 500 + 3000 * 50 + 10000)
    assert m.steady_state(np.array([2000]))[0] == 2000 * (250 * 500 + 3000 * 50 + 10000)
    # the peak: a returning OSD's missing set, up to one log of objects a PG
    assert m.peak(np.array([100]))[0] == 100 * (6000 * 500 + 3000 * 50 + 10000)
    # the most PGs whose steady state and peak fit: one more would not
    budget = MemoryModel(500, 50, 10000, 250, 10000, 300000, 3000, memory_target=2 << 30)
    n = int(budget.pgs_memory_allows(0.25))
    assert budget.steady_state(np.array([n]))[0] <= 0.25 * (2 << 30) and budget.peak(np.array([n]))[0] <= \
        budget.peak_budget()
    assert budget.steady_state(np.array([n + 1]))[0] > 0.25 * (2 << 30) or \
        budget.peak(np.array([n + 1]))[0] > budget.peak_budget()
    assert m.current(np.array([1000]), np.array([10]), np.array([2]))[0] == 1000 * 500 + 500 + 20000


@pytest.mark.parametrize("name, value, message", [
    ("target_pgs_per_osd", -5, "outside 0..1000"),
    ("target_pgs_per_osd", "many", "is not an int"),
    ("hysteresis", 2, "outside"),
    ("assume_balanced", "maybe", "not one of auto, yes, no"),
    ("no_such_option", 1, "unknown option"),
])
def test_bad_options(name: str, value: Any, message: str) -> None:
    with pytest.raises(AdvisorError) as e:
        options.make({name: value})
    assert e.value.code == -22 and message in e.value.message


def test_options_keep_their_types() -> None:
    # each option arrives as its spec's type, whatever form it was given in (the mgr hands
    # strings), so no caller casts
    kinds = {"int": int, "float": float, "str": str, "bool": bool}
    given = {"target_pgs_per_osd": "40", "hysteresis": "0.5", "split_pinning": "false",
             "mode": "auto", "step_interval": 7.0}
    opts = options.make(given)
    for spec in options.SPECS:
        value = getattr(opts, spec.name)
        assert type(value) is options.ENUMS.get(spec.name, kinds[spec.type]), (spec.name, value)
    assert opts.mode is options.Mode.AUTO and options.make().balance_mode is options.BalanceMode.BYTES
    # the mgr is handed plain values: the mon stores and checks them as strings
    assert {o["name"]: o["default"] for o in options.mgr_options()}["mode"].__class__ is str
    assert (opts.target_pgs_per_osd, opts.hysteresis, opts.split_pinning, opts.step_interval) == \
        (40, 0.5, False, 7)
    assert options.make().target_pgs_per_osd == 0     # 0: the cluster's mon_target_pg_per_osd
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.mode = options.Mode.OFF      # type: ignore[misc]


def test_option_schema_for_the_mgr() -> None:
    opts = {o["name"]: o for o in options.mgr_options()}
    assert opts["target_pgs_per_osd"]["min"] == 0 and opts["target_pgs_per_osd"]["default"] == 0
    assert opts["assume_balanced"]["enum_allowed"] == ["auto", "yes", "no"]


def _pgs(pool: Any, ps: Any, span: Any, tail: Any, split_bits: Any) -> snapshot.Pgs:
    n = len(ps)
    z = np.zeros(n, dtype=np.int64)
    osds = np.zeros((n, 1), dtype=np.int64)
    return snapshot.Pgs(pool=np.array(pool), ps=np.array(ps), up=osds, up_primary=z, bytes=z, objects=z,
                        state=("active+clean",) * n, acting=osds, log_size=np.array(span),
                        log_tail=np.array(tail, dtype=np.int64).reshape(n, 2),
                        split_bits=np.array(split_bits))


def test_log_lengths_share_a_split_family_s_log() -> None:
    pgs = _pgs(pool=[1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3],
               ps=[0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1],
               # pool 1 never split: every span is the PG's own log
               # pool 2 went 2 -> 8 PGs: 0's family (0, 2, 4, 6) logged nothing since; 1's
               # (1, 3, 5, 7): 3 logged 20 more, 7 had trimmed (its tail moved: its own log)
               # pool 3: 1 was born in a split but its parent trimmed since: not shared
               span=[10, 20, 30, 40, 40, 60, 40, 80, 40, 60, 40, 25, 50, 70],
               tail=[(0, 0)] * 4 + [(5, 0)] * 7 + [(9, 90)] + [(4, 30), (3, 0)],
               split_bits=[0] * 4 + [0, 0, 3, 3, 3, 3, 3, 3] + [0, 2])
    entries, _ = pg_log_lengths(pgs, 3000)
    assert entries.tolist() == [10, 20, 30, 40,
                                10, 20, 10, 40, 10, 20, 10, 25,
                                50, 70]
    # what the family logged before the split is there once in all: 0's four hold its 40
    assert entries[[4, 6, 8, 10]].sum() == 40


def test_log_dups_are_the_trimmed_entries_up_to_dups_tracked() -> None:
    pgs = _pgs(pool=[1, 1, 1, 1], ps=[0, 1, 2, 3], span=[30, 30, 150, 30],
               tail=[(7, 500), (7, 20), (7, 500), (0, 0)], split_bits=[0] * 4)
    _, dups = pg_log_lengths(pgs, 100)
    # 500 trimmed: 100 kept (Tentacle drops dups only past dups_tracked of them, however
    # long the log: measured 298-299 dups at 300 beside 85-1000 entries); 20 trimmed: all
    # 20; a log never trimmed has none
    assert dups.tolist() == [100, 20, 100, 0]


def test_log_dups_the_stats_give_are_taken_as_they_are() -> None:
    # log_dups_size (Tentacle; Pacific since 16.2.11): a split child copied its parent's
    # dups, a PG the stats say nothing of (-1) falls back on the trimmed entries
    pgs = dataclasses.replace(
        _pgs(pool=[1, 1, 1], ps=[0, 1, 2], span=[30, 30, 30], tail=[(7, 500), (7, 500), (7, 20)],
             split_bits=[0] * 3),
        log_dups=np.array([250, -1, 7]))
    _, dups = pg_log_lengths(pgs, 100)
    assert dups.tolist() == [250, 100, 7]


def test_the_loader_reads_log_dups_size_and_marks_it_absent() -> None:
    from pg_advisor.model.load_pgs import load_pgs
    row = {"pgid": "1.0", "up": [0], "acting": [0], "up_primary": 0, "state": "active+clean",
           "stat_sum": {"num_bytes": 0, "num_objects": 0}, "log_size": 5, "log_start": "1'2"}
    got = load_pgs({"pg_stats": [dict(row, log_dups_size=42), dict(row, pgid="1.1")]})
    assert got.log_dups is not None and got.log_dups.tolist() == [42, -1]
    # the careful loader (a field it must check row by row) gives the same
    odd = load_pgs({"pg_stats": [dict(row, log_dups_size=42, up_primary="0"), dict(row, pgid="1.1")]})
    assert odd.log_dups is not None and odd.log_dups.tolist() == [42, -1]
    with pytest.raises(AdvisorError, match="log_dups_size"):
        load_pgs({"pg_stats": [dict(row, log_dups_size=-5)]})


def test_log_lengths_of_no_pgs() -> None:
    entries, dups = pg_log_lengths(_pgs(pool=[], ps=[], span=[], tail=[], split_bits=[]), 3000)
    assert entries.size == dups.size == 0


def test_an_ideal_below_one_pg_is_not_called_a_power_of_two() -> None:
    from pg_advisor.sizing.policy import round_pow2 as _round_pow2
    n, why = _round_pow2(0.0)
    assert n == 1 and "power of two" not in why.text and "fewest" in why.text
    assert _round_pow2(32.0)[0] == 32 and "32 is a power of two" in _round_pow2(32.0)[1].text
