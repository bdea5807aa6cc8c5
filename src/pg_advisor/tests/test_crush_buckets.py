"""uniform, list, tree and straw (v1) buckets against Ceph's own tools, from a fixture they
made (qa/maps/bucket_maps.py writes it; qa/maps/test_crush_exact.py checks it is still what
they say and compares many more maps): 15 OSDs in 5 hosts, one of each algorithm, under a
straw root, straw_calc_version 0, osd.4 out and osd.10 of CRUSH weight 0; a firstn rule
and an indep one; and the same checks on the fixture under argonaut's tunables
(test_crush_legacy.py). And crush_calc_straw itself against libceph-common's."""
import copy
import ctypes
import json
import random
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from pg_advisor.crush.buckets import LIST, STRAW, TREE, aux_row, straws, tree_depth
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor.model.errors import AdvisorError
from pg_advisor.model.mappable import TREE_MAX_ITEMS

from pg_advisor_testkit.dumps import FIXTURES, read
from pg_advisor_testkit.osdmaptool_output import parse_dump_all
from .test_crush import LIBCEPH, needs_lib
from .test_crush_msr import crush_results, differ

BUCKETS = FIXTURES / "buckets"
LEGACY = FIXTURES / "legacy"      # argonaut's tunables (test_crush_legacy.py)


def load(pool_rule: int, crush: Any = None, fixture: Path = BUCKETS) -> snapshot.Snapshot:
    crush = crush or read(f"crush_dump_rule{pool_rule}.json", fixture)
    return snapshot.load(read("osd_dump.json", fixture), crush)


def pg_mismatches(snap: snapshot.Snapshot, pool_rule: int, fixture: Path = BUCKETS,
                  pgs: int = 960) -> List[str]:
    """Each PG whose up set or primary differs from osdmaptool's in `fixture` (which holds
    `pgs` PGs)."""
    ref = parse_dump_all((fixture / f"osdmaptool_dump_all_rule{pool_rule}.txt").read_text())
    placer = Placer(snap)
    bad, seen = [], 0
    for pool in snap.pools:
        m = placer.map_pool(pool)
        for i in range(m.ps.size):
            got = (m.up_list(i), int(m.up_primary[i]))
            seen += 1
            if got != ref[m.pgid(i)]:
                bad.append(f"{m.pgid(i)}: ours {got}, Ceph {ref[m.pgid(i)]}")
    assert seen == len(ref) == pgs
    return bad


def bucket_runs(fixture: Path = BUCKETS) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = json.loads((fixture / "crushtool_test.json").read_text())
    return out


def test_the_fixture_holds_every_algorithm() -> None:
    crush = read("crush_dump_rule0.json", BUCKETS)
    assert {b["alg"] for b in crush["buckets"]} == {"uniform", "list", "tree", "straw", "straw2"}
    assert crush["tunables"]["straw_calc_version"] == 0


@pytest.mark.parametrize("fixture, pgs", [(BUCKETS, 960), (LEGACY, 768)], ids=["buckets", "legacy"])
@pytest.mark.parametrize("pool_rule", [0, 1], ids=["firstn", "indep"])
def test_every_pg_maps_as_osdmaptool_maps_it(pool_rule: int, fixture: Path, pgs: int) -> None:
    snap = load(pool_rule, fixture=fixture)
    assert not snap.unmapped and len(snap.pools) == 1
    bad = pg_mismatches(snap, pool_rule, fixture, pgs)
    assert not bad, f"{len(bad)} PGs differ, first: {bad[:5]}"


@pytest.mark.parametrize("fixture", [BUCKETS, LEGACY], ids=["buckets", "legacy"])
def test_crush_do_rule_as_crushtool_computes_it(fixture: Path) -> None:
    snap = load(0, fixture=fixture)
    got = bucket_runs(fixture)
    assert [(r["rule"], bool(r["reweight"])) for r in got] == [(0, False), (1, False), (0, True), (1, True)]
    for run in got:
        bad = differ(crush_results(snap, run), run)
        assert not bad, f"rule {run['rule']}, reweight {run['reweight']}: {bad[:5]}"


def test_straws_are_computed_with_the_maps_straw_calc_version() -> None:
    # the other version's straws put PGs elsewhere: the version is read, not assumed
    crush = copy.deepcopy(read("crush_dump_rule0.json", BUCKETS))
    crush["tunables"]["straw_calc_version"] = 1
    assert pg_mismatches(load(0, crush), 0)


def test_a_bucket_of_another_hash_is_still_set_aside() -> None:
    crush = copy.deepcopy(read("crush_dump_rule0.json", BUCKETS))
    next(b for b in crush["buckets"] if b["alg"] == "tree")["hash"] = "unknown"
    snap = load(0, crush)
    [(pool, why)] = snap.unmapped
    assert why.startswith("crush rule 'firstn' reaches bucket 'host2' of algorithm 'tree' (hash unknown)")


def test_a_tree_bucket_past_64_items_is_set_aside() -> None:
    # its node count (8 bits) wraps: Ceph cannot build such a bucket nor draw from it
    crush = copy.deepcopy(read("crush_dump_rule0.json", BUCKETS))
    tree = next(b for b in crush["buckets"] if b["alg"] == "tree")
    pad = [{"id": 0, "weight": 0, "pos": p} for p in range(len(tree["items"]), 65)]
    assert not load(0, copy.deepcopy(crush)).unmapped
    tree["items"] += pad
    [(pool, why)] = load(0, crush).unmapped
    assert why == ("crush rule 'firstn' reaches bucket 'host2' of algorithm 'tree' with 65 items; "
                   "Ceph's tree buckets hold at most 64 (it cannot place anything under a bigger one)")
    with pytest.raises(AdvisorError) as e:
        Placer(load(0, crush)).map_pool(pool)
    assert e.value.message == why


def _builder() -> Tuple[Any, int]:
    """libceph-common's CRUSH builder (crush_create, crush_make_bucket) and a new map."""
    lib = ctypes.CDLL(str(LIBCEPH))
    lib.crush_create.restype = ctypes.c_void_p
    lib.crush_make_bucket.restype = ctypes.c_void_p
    lib.crush_make_bucket.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                      ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
    cmap = lib.crush_create()
    return lib, cmap


@needs_lib
def test_tree_node_weights_and_list_sums_match_libceph_common() -> None:
    # crush_make_bucket builds them from the item weights (crush.h's structs on x86-64)
    lib, cmap = _builder()
    rng = random.Random(2)

    def array(bucket: int, offset: int, n: int) -> List[int]:
        at = ctypes.c_void_p.from_address(bucket + offset).value
        assert at is not None
        return list((ctypes.c_uint32 * n).from_address(at))
    for _ in range(200):
        n = rng.randint(1, TREE_MAX_ITEMS)
        ws = [rng.choice([0, 0x10000, rng.randint(0, 0x100000)]) for _ in range(n)]
        items, weights = (ctypes.c_int * n)(*range(n)), (ctypes.c_int * n)(*ws)
        tree = lib.crush_make_bucket(cmap, TREE, 0, 1, n, items, weights)
        nodes = ctypes.c_uint8.from_address(tree + 24).value        # num_nodes
        assert nodes == 1 << tree_depth(n)
        assert aux_row(TREE, ws, 1) == array(tree, 32, nodes), ws  # node_weights
        listed = lib.crush_make_bucket(cmap, LIST, 0, 1, n, items, weights)
        assert aux_row(LIST, ws, 1)[1:] == array(listed, 32, n), ws  # sum_weights


@needs_lib
def test_straws_match_libceph_common() -> None:
    # crush_make_bucket(map, straw, ...) runs crush_calc_straw with the map's
    # straw_calc_version; read back from the bucket (crush.h's structs on x86-64)
    lib, cmap = _builder()
    raw = (ctypes.c_uint8 * 96).from_address(cmap)
    # struct crush_map as crush_create leaves it: choose_total_tries 50 at 36, then (the
    # releases add fields between) the byte straw_calc_version 4 bytes before the u32
    # allowed_bucket_algs 54 (Pacific: 56 and 60; Tentacle: 64 and 68)
    assert raw[36] == 50
    algs = [o for o in range(48, 92, 4) if bytes(raw[o:o + 4]) == (54).to_bytes(4, "little")]
    assert len(algs) == 1, bytes(raw)
    calc_version = algs[0] - 4

    def ceph(weights: List[int], version: int) -> List[int]:
        raw[calc_version] = version             # straw_calc_version
        n = len(weights)
        b = lib.crush_make_bucket(cmap, STRAW, 0, 1, n, (ctypes.c_int * n)(*range(n)),
                                  (ctypes.c_int * n)(*weights))
        assert ctypes.c_uint32.from_address(b + 12).value == n          # h.size
        lengths = ctypes.c_void_p.from_address(b + 32).value                 # straws
        assert lengths is not None
        return list((ctypes.c_uint32 * n).from_address(lengths))

    rng = random.Random(1)
    told = 0
    for _ in range(400):
        ws = [rng.choice([0, 0x10000, 0x10000, 0x20000, 0x8000, rng.randint(0, 0x1000000)])
              for _ in range(rng.randint(1, 14))]
        v0, v1 = straws(ws, 0), straws(ws, 1)
        assert ceph(ws, 0) == v0 and ceph(ws, 1) == v1, ws
        told += v0 != v1
    assert told > 100       # ties and zero weights: the versions differ
