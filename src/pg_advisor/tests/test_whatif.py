"""What-if simulation: a pg_num change, an OSD out, reweights: the PGs that move and the
bytes, and bad changes refused."""
from typing import Any, Dict

import numpy as np
import pytest

from pg_advisor.model import snapshot
from pg_advisor.crush.placement import Placer, stable_mod
from pg_advisor.model.errors import AdvisorError
from pg_advisor.analysis.whatif import Change, pg_map, simulate


def test_map_lists_every_pg(snap: snapshot.Snapshot) -> None:
    m = pg_map(snap)
    assert len(m) == sum(p.pg_num for p in snap.pools)
    assert all(len(up) == 3 for k, up in m.items() if k.startswith("2."))   # EC keeps positions
    assert list(pg_map(snap, "fast")) == [f"3.{i:x}" for i in range(8)]


def test_out_osd_empties_it_and_moves_only_its_shards(snap: snapshot.Snapshot) -> None:
    r = simulate(snap, Change(out=(0,)))
    osds = {o["id"]: o for o in r["osds"]}
    assert osds[0]["pgs_after"] == 0 and osds[0]["pgs_before"] > 0
    # every PG that had osd.0 must move at least that shard; others may not move at all
    assert r["total"]["shards_moved"] >= osds[0]["pgs_before"]
    assert r["total"]["pgs_remapped"] >= osds[0]["pgs_before"]


def test_split_counts_and_movement(snap: snapshot.Snapshot) -> None:
    rbd = snap.pool_by_name("rbd")
    r = simulate(snap, Change(pool="rbd", pg_num=64))
    (p,) = r["pools"]
    assert p["pg_num"] == [32, 64] and p["pgp_num"] == [32, 64]   # pgp_num follows
    assert p["pgs"] == 64
    assert sum(o["pgs_after"] for o in r["osds"]) - sum(o["pgs_before"] for o in r["osds"]) \
        == 32 * rbd.size
    # independent count: children whose up set differs from their parent's before the split
    pl = Placer(snap)
    before = pl.map_pool(rbd)
    after = pl.map_pool(rbd, pg_num=64, pgp_num=64)
    changed = sum(set(after.up_list(c)) != set(before.up_list(int(stable_mod(np.array([c]), 32)[0])))
                  for c in range(64))
    assert p["pgs_remapped"] == changed
    # bytes: a child carries half its parent's bytes; nothing moves more than all replicas
    assert p["bytes_source"] == "pg_stats"
    assert rbd.stored is not None and 0 < p["bytes_moved"] <= rbd.stored * rbd.size


def test_split_without_placement_change_moves_nothing(snap: snapshot.Snapshot) -> None:
    r = simulate(snap, Change(pool="rbd", pg_num=64, pgp_num=32))
    # with pgp_num unchanged, children land where CRUSH put their parents; only a child
    # of a PG moved by an upmap item (1.0 -> 1.20) differs, as items are per PG id
    upmapped = [k for k in snap.pg_upmap_items if k.startswith("1.")]
    assert upmapped and r["total"]["pgs_remapped"] == len(upmapped)


def test_reweight_zero_is_out(snap: snapshot.Snapshot) -> None:
    a = simulate(snap, Change(out=(3,)))
    b = simulate(snap, Change(reweight={3: 0.0}))
    assert a["osds"] == b["osds"] and a["total"]["shards_moved"] == b["total"]["shards_moved"]


@pytest.mark.parametrize("change, code, message", [
    (Change(), -22, "nothing to simulate"),
    (Change(pg_num=64), -22, "need a pool"),
    (Change(pool="rbd"), -22, "give --pg-num"),
    (Change(pool="nope", pg_num=8), -2, "pool 'nope' does not exist"),
    (Change(pool="rbd", pg_num=0), -22, "pg_num must be between"),
    (Change(pool="rbd", pg_num=16, pgp_num=32), -22, "pgp_num must be between 1 and pg_num 16, not 32"),
    (Change(pool="rbd", pg_num=-1), -22, "between 1 and 65536 (mon_max_pool_pg_num)"),
    (Change(pool="rbd", pg_num=2 ** 31), -22, "between 1 and 65536"),
    (Change(pool="rbd", pg_num=10 ** 12), -22, "between 1 and 65536"),
    (Change(pool="rbd", pg_num=4096), -22, "over 1500 (mon_max_pg_per_osd 250 x 6 OSDs in)"),
    (Change(pool="rbd", pgp_num=0), -22, "pgp_num must be between 1 and pg_num 32, not 0"),
    (Change(out=(42,)), -2, "osd.42 does not exist"),
    (Change(reweight={1: 1.5}), -22, "within 0..1"),
])
def test_bad_changes(snap: snapshot.Snapshot, change: Change, code: int, message: str) -> None:
    with pytest.raises(AdvisorError) as e:
        simulate(snap, change)
    assert e.value.code == code and message in e.value.message


def test_without_pg_stats_bytes_are_spread_evenly(dumps: Dict[str, Any]) -> None:
    s = snapshot.load(dumps["osd_dump"], dumps["crush"], None, dumps["df"])
    r = simulate(s, Change(pool="rbd", pg_num=64))
    assert r["pools"][0]["bytes_source"] == "df_even" and r["notes"]
    s2 = snapshot.load(dumps["osd_dump"], dumps["crush"])
    assert simulate(s2, Change(pool="rbd", pg_num=64))["total"]["bytes_moved"] is None


@pytest.mark.parametrize("change", [
    {0: 0.0}, {4: 0.0}, {1: 0.0, 5: 0.0}, {2: 0.3}, {3: 0.7, 0: 0.0}, {0: 0.0, 1: 0.0, 2: 0.0},
])
def test_lowered_weights_remap_only_the_pgs_on_those_osds(snap: snapshot.Snapshot,
                                                          change: Dict[int, float]) -> None:
    # with_osds maps again only the PGs that hold a lowered OSD: the result must be
    # CRUSH's over every PG (a placer with no base computes them all)
    base = Placer(snap)
    fast = base.with_osds(change)
    full = base.with_osds(change)
    full._base = None
    redone = 0
    for pool in snap.pools:
        for pg_num in (pool.pg_num, 512):
            got, want = fast.crush_sets(pool, pg_num, pg_num)[1], full.crush_sets(pool, pg_num, pg_num)[1]
            assert np.array_equal(got, want), (pool.name, pg_num)
            redone += int((got != base.crush_sets(pool, pg_num, pg_num)[1]).any(axis=1).sum())
    assert redone > 0
    # raising a weight again may change any PG: that placer maps everything itself
    back = fast.with_osds({o: float(snap.osds.reweight[o]) for o in change})
    assert back._base is None
    for pool in snap.pools:
        assert np.array_equal(back.crush_sets(pool)[1], base.crush_sets(pool)[1])


def test_pools_of_one_rule_mapped_in_one_run_as_each_alone(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # the placer maps every pool sharing a rule, size and type in one CRUSH run: each pool's
    # sets must be what mapping it alone gives (own pg_num, pgp_num, hashpspool)
    import copy
    rbd = next(p for p in dumps["osd_dump"]["pools"] if p["pool_name"] == "rbd")
    for i, (pg, pgp, flags) in enumerate([(64, 64, 1), (100, 64, 1), (8, 8, 0), (1, 1, 1)]):
        p = copy.deepcopy(rbd)
        p.update(pool=10 + i, pool_name=f"more{i}", pg_num=pg, pg_placement_num=pgp,
                 pg_num_target=pg, pg_placement_num_target=pgp, flags=flags)
        dumps["osd_dump"]["pools"].append(p)
    snap = snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])
    batched = Placer(snap)
    sets = {p.id: batched.map_pool(p).up for p in snap.pools}
    assert batched._cached >= sum(p.pg_num * p.size for p in snap.pools if p.crush_rule == rbd["crush_rule"])
    # and with an OSD out: the PGs on it, of every pool of the rule, in one run
    out = batched.with_osds({0: 0.0})
    sets_out = {p.id: out.map_pool(p).up for p in snap.pools}
    assert out._cached >= sum(p.pg_num * p.size for p in snap.pools if p.crush_rule == rbd["crush_rule"])
    monkeypatch.setattr(Placer, "_batch", lambda self, pool: None)
    alone = Placer(snap)
    alone_out = alone.with_osds({0: 0.0})
    alone_out._base = None
    for p in snap.pools:
        assert np.array_equal(sets[p.id], alone.map_pool(p).up), p.name
        assert np.array_equal(sets_out[p.id], alone_out.map_pool(p).up), p.name
        assert not (sets_out[p.id] == 0).any()
