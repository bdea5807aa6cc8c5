"""The crush layer against Ceph itself: its hash and tables in libceph-common, and the
mapping osdmaptool computed for the exact map the fixtures were captured from."""
import copy
import ctypes
import struct
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

from pg_advisor.model import options, snapshot
from pg_advisor.crush import ln_table
from pg_advisor.crush.hashing import SCALAR_MAX, hash32_2, hash32_3, hash32_4
from pg_advisor.crush.placement import Placer, stable_mod
from pg_advisor.model.errors import AdvisorError
from pg_advisor.sizing.sizer import recommend

from pg_advisor_testkit.dumps import CLUSTER6
from .fakes import crush_runs
from pg_advisor_testkit.osdmaptool_output import parse_dump_all

LIBCEPH = Path("/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2")
needs_lib = pytest.mark.skipif(not LIBCEPH.exists(), reason="libceph-common (ceph-common) not installed")


@needs_lib
def test_hash_matches_libceph_common() -> None:
    lib = ctypes.CDLL(str(LIBCEPH))
    u32 = ctypes.c_uint32
    lib.crush_hash32_2.restype = u32
    lib.crush_hash32_2.argtypes = [ctypes.c_int, u32, u32]
    lib.crush_hash32_3.restype = u32
    lib.crush_hash32_3.argtypes = [ctypes.c_int, u32, u32, u32]
    lib.crush_hash32_4.restype = u32
    lib.crush_hash32_4.argtypes = [ctypes.c_int, u32, u32, u32, u32]
    rng = np.random.default_rng(7)
    a, b, c, d = (rng.integers(0, 2**32, 2000, dtype=np.uint64).astype(np.uint32) for _ in range(4))
    h2, h3, h4 = hash32_2(a, b), hash32_3(a, b, c), hash32_4(a, b, c, d)
    for i in range(a.size):
        assert int(h2[i]) == lib.crush_hash32_2(0, int(a[i]), int(b[i]))
        assert int(h3[i]) == lib.crush_hash32_3(0, int(a[i]), int(b[i]), int(c[i]))
        assert int(h4[i]) == lib.crush_hash32_4(0, int(a[i]), int(b[i]), int(c[i]), int(d[i]))
    # few values take the scalar path, more the array one; both as straw2 calls them:
    # inputs down a column, signed bucket ids (negative: wrapped as C's cast) across
    for n in range(1, SCALAR_MAX + 3):
        x = rng.integers(0, 2**32, (n, 1), dtype=np.uint64).astype(np.int64)
        ids = rng.integers(-200, 200, (1, 2), dtype=np.int64)
        r = rng.integers(0, 100, (n, 1), dtype=np.int64)
        h3, h2, h4 = hash32_3(x, ids, r), hash32_2(x, ids), hash32_4(x, ids, r, -3)
        assert h3.shape == h2.shape == h4.shape == (n, 2) and h3.dtype == h2.dtype == h4.dtype == np.uint32
        for i, j in np.ndindex(n, 2):
            xi, idj, ri = int(x[i, 0]), int(ids[0, j]) & 0xFFFFFFFF, int(r[i, 0])
            assert int(h3[i, j]) == lib.crush_hash32_3(0, xi, idj, ri)
            assert int(h2[i, j]) == lib.crush_hash32_2(0, xi, idj)
            assert int(h4[i, j]) == lib.crush_hash32_4(0, xi, idj, ri, 0xFFFFFFFD)   # (list: bucket id -3)


@needs_lib
def test_ln_tables_are_the_ones_ceph_runs() -> None:
    data = LIBCEPH.read_bytes()
    for table in (ln_table.RH_LH, ln_table.LL):
        raw = struct.pack(f"<{table.size}Q", *table.tolist())
        assert data.find(raw) >= 0, "table not found verbatim in libceph-common"


def test_stable_mod() -> None:
    x = np.arange(16)
    # 12 of 16: seeds 12..15 fold onto 4..7, the rest stay
    assert stable_mod(x, 12).tolist() == list(range(12)) + [4, 5, 6, 7]
    assert stable_mod(x, 16).tolist() == list(range(16))
    assert stable_mod(x, 1).tolist() == [0] * 16


def osdmaptool_reference() -> Dict[str, Tuple[List[int], int]]:
    return parse_dump_all((CLUSTER6 / "osdmaptool_dump_all.txt").read_text())


def assert_maps_as_osdmaptool(snap: snapshot.Snapshot) -> int:
    """Every PG of the snapshot's pools as osdmaptool mapped the captured cluster (the
    up set and the up primary); how many PGs were compared."""
    ref = osdmaptool_reference()
    placer = Placer(snap)
    seen = 0
    for pool in snap.pools:
        m = placer.map_pool(pool)
        for i in range(m.ps.size):
            assert (m.up_list(i), int(m.up_primary[i])) == ref[m.pgid(i)], m.pgid(i)
            seen += 1
    assert seen == len(ref)
    return seen


def test_every_pg_maps_as_ceph_maps_it(snap: snapshot.Snapshot) -> None:
    # the fixture has a replicated pool, an EC 2+1 pool, a device-class rule, a reweighted
    # OSD, a primary affinity and an upmap item: every PG must match osdmaptool
    assert assert_maps_as_osdmaptool(snap) == sum(p.pg_num for p in snap.pools)


def test_upmap_items_are_applied(snap: snapshot.Snapshot) -> None:
    placer = Placer(snap)
    rbd = snap.pool_by_name("rbd")
    (frm, to), = snap.pg_upmap_items["1.0"]
    with_upmap = placer.map_pool(rbd).up_list(0)
    without = placer.map_pool(rbd, upmaps=False).up_list(0)
    assert frm in without and to not in without
    assert with_upmap == [to if o == frm else o for o in without]


def test_marking_out_moves_pgs_off_the_osd(snap: snapshot.Snapshot) -> None:
    placer = Placer(snap).with_osds({0: 0.0})
    for pool in snap.pools:
        m = placer.map_pool(pool)
        assert not (m.up == 0).any(), pool.name


def test_a_placer_reuses_crush_results_only_where_they_hold(snap: snapshot.Snapshot) -> None:
    placer = Placer(snap)
    rbd = snap.pool_by_name("rbd")
    first = placer.map_pool(rbd, 64, 64)
    again = placer.map_pool(rbd, 64, 64)
    assert np.array_equal(first.up, again.up)
    assert placer.map_pool(rbd, 64, 32).up.tolist() != first.up.tolist()   # pgp_num is in the key
    with pytest.raises(ValueError):
        first.ps[0] = 5          # shared with later callers: read-only
    # other weights, other results: marking out osd.0 must not be answered from the cache
    out = placer.with_osds({0: 0.0}).map_pool(rbd, 64, 64)
    assert (first.up == 0).any() and not (out.up == 0).any()
    assert np.array_equal(placer.map_pool(rbd, 64, 64).up, first.up)


def _crush_with(dumps: Dict[str, Any], **bucket_fields: Any) -> snapshot.Snapshot:
    crush = copy.deepcopy(dumps["crush"])
    for b in crush["buckets"]:
        b.update(bucket_fields)
    return snapshot.load(dumps["osd_dump"], crush)


@pytest.mark.parametrize("alg", ["uniform", "list", "tree", "straw"])
def test_every_bucket_algorithm_ceph_maps_is_mapped(dumps: Dict[str, Any], alg: str) -> None:
    # (test_crush_buckets.py compares them with Ceph's own mapping); a class rule through
    # shadow tree buckets is set aside (test_not_mapped.py): its pool `fast` here
    s = _crush_with(dumps, alg=alg)
    assert [p.name for p, _ in s.unmapped] == (["fast"] if alg == "tree" else [])
    assert len(s.pools) == (2 if alg == "tree" else 3)
    for pool in s.pools:
        m = Placer(s).map_pool(pool)
        assert m.up.shape[0] == pool.pg_num and (m.up[:, 0] >= 0).all()


@pytest.mark.parametrize("fields, words", [
    ({"hash": "unknown"}, "(hash unknown)"),        # Ceph's name of a hash other than 0
    ({"alg": "unknown"}, "algorithm 'unknown'"),
])
def test_a_bucket_of_another_hash_or_algorithm_is_refused(dumps: Dict[str, Any], fields: Dict[str, str],
                                                          words: str) -> None:
    # the loader sets such pools aside (model/mappable.py); mapped anyway, CRUSH refuses
    s = _crush_with(dumps, **fields)
    assert s.pools == () and len(s.unmapped) == 3
    assert all(words in why and "rjenkins1 hash only" in why for _, why in s.unmapped)
    with pytest.raises(AdvisorError) as e:
        Placer(s).map_pool(s.unmapped[0][0])
    assert e.value.code == -22 and words in e.value.message and e.value.message == s.unmapped[0][1]


def test_legacy_tunables_and_local_tries_steps_are_mapped(dumps: Dict[str, Any]) -> None:
    # argonaut's local retries (crush/firstn_local.py; exact against Ceph's tools in
    # test_crush_legacy.py): every pool mapped, and they change where some PGs go
    before = snapshot.load(dumps["osd_dump"], dumps["crush"])
    dumps["crush"]["tunables"].update(choose_local_tries=2, choose_local_fallback_tries=5)
    dumps["crush"]["rules"][2]["steps"].insert(0, {"op": "set_choose_local_tries", "num": 1})
    s = snapshot.load(dumps["osd_dump"], dumps["crush"])
    assert s.unmapped == () and [p.name for p in s.pools] == [p.name for p in before.pools]
    for pool in s.pools:
        assert Placer(s).map_pool(pool).up.shape == Placer(before).map_pool(pool).up.shape


def _rbd_copies(dumps: Dict[str, Any], n: int) -> snapshot.Snapshot:
    """The fixture with n more pools like rbd (one rule, size and type: one CRUSH group)."""
    pools = dumps["osd_dump"]["pools"]
    rbd = next(p for p in pools if p["pool_name"] == "rbd")
    top = max(p["pool"] for p in pools)
    pools += [dict(copy.deepcopy(rbd), pool=top + 1 + i, pool_name=f"copy{i}") for i in range(n)]
    return snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"])


def test_prefetch_maps_a_group_of_pools_in_one_crush_run_as_each_alone(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    snap = _rbd_copies(dumps, 5)
    like = [p for p in snap.pools if p.crush_rule == snap.pool_by_name("rbd").crush_rule
            and p.size == 3 and p.type == "replicated"]
    wanted = [(p, n, n) for p, n in zip(like, (8, 16, 64, 128, 32, 256, 4))]
    # the reference: each pool mapped alone, by a placer of its own
    alone = {p.id: Placer(snap).map_pool(p, n, m).up for p, n, m in wanted}
    alone_out = {p.id: Placer(snap).with_osds({0: 0.0}).map_pool(p, n, m).up for p, n, m in wanted}
    runs = crush_runs(monkeypatch)
    placer = Placer(snap)
    placer.prefetch(wanted)
    assert len(runs) == 1 and runs[0] == sum(n for _, n, _ in wanted)
    for p, n, m in wanted:
        assert np.array_equal(placer.map_pool(p, n, m).up, alone[p.id]), p.name
    assert len(runs) == 1, "map_pool mapped again what prefetch had mapped"
    # a base placer's derived one maps only the PGs on the lowered OSD, still in one run
    out = placer.with_osds({0: 0.0})
    out.prefetch(wanted)
    assert len(runs) == 2 and 0 < runs[1] < runs[0]
    for p, n, m in wanted:
        assert np.array_equal(out.map_pool(p, n, m).up, alone_out[p.id]), p.name
    assert len(runs) == 2
    # CRUSH's work is counted: every input's replicas, and at least one draw each
    assert placer.work.replicas == 3 * (runs[0] + runs[1]) and placer.work.draws >= placer.work.replicas


def test_a_seed_is_mapped_once_whatever_pg_num_and_pgp_num_ask_for_it(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # a PG is placed by its seed folded over pgp_num, and the seed alone decides CRUSH's
    # set: the placer maps each seed once (a split plan's search over pgp_num and the
    # sizer's pg_nums ask for the same seeds again and again)
    snap = snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"])
    rbd = snap.pool_by_name("rbd")
    want = {(n, m): Placer(snap).crush_sets(rbd, n, m)[1] for n, m in
            ((32, 32), (64, 32), (64, 64), (128, 48), (16, 16))}
    rows = np.array([0, 5, 31, 47, 63, 100, 127])
    want_rows = Placer(snap).raw_rows(rbd, 100, rows)
    runs = crush_runs(monkeypatch)
    placer = Placer(snap)
    # new seeds: 0-31; none (folded onto 0-31); 32-63; none (over 48: 0-47); none
    for ((n, m), sets), new in zip(want.items(), [32, 0, 32, 0, 0]):
        before = sum(runs)
        assert np.array_equal(placer.crush_sets(rbd, n, m)[1], sets), (n, m)
        assert sum(runs) - before == new, (n, m, runs)
    # seeds folded over 100: 100 and 127 fold onto 36 and 63 (known); none is new
    before = sum(runs)
    assert np.array_equal(placer.raw_rows(rbd, 100, rows), want_rows)
    assert sum(runs) == before
    # a seed past every table so far is mapped, alone
    assert np.array_equal(placer.raw_rows(rbd, 256, np.array([200])), Placer(snap).raw_rows(
        rbd, 256, np.array([200])))
    assert runs[-1] == 1


def test_sizing_a_thousand_like_pools_costs_a_few_crush_runs(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    snap = _rbd_copies(dumps, 40)
    runs = crush_runs(monkeypatch)
    r = recommend(snap, options.make())
    assert len(r.pools) == len(snap.pools)
    # the pools now and at their recommended pg_num, a run per group (3 rules here), not
    # one per pool (before: 43 runs here, 5 ms each; 2,000 for a thousand pools)
    assert len(runs) <= 2 * 3 + 2, len(runs)


def test_crush_tests_map_every_input_themselves() -> None:
    # the unit tests' memo of CRUSH runs (pg_advisor_testkit/crush_memo.py) is off here
    from pg_advisor_testkit import crush_memo
    assert crush_memo.MEMO is None or crush_memo.MEMO.bypass
