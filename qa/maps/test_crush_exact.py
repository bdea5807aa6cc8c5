"""Every PG's up set, ours against Ceph's, on maps Ceph's own tools build and on the live mon.

Any mismatch fails the test and names the PG.
"""
import dataclasses
import json
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pytest

from pg_advisor.model import snapshot
from pg_advisor.balance.balancer import Balancer
from pg_advisor.crush.buckets import tree_nodes
from pg_advisor.rules.reach import rule_weights

from ..cluster import Cluster
from .bucket_maps import ALGS as BUCKET_ALGS, CASES as BUCKET_CASES, FIXTURE as BUCKET_FIXTURE
from .bucket_maps import (CLASS_RULES, LEGACY_CASES, LEGACY_FIXTURE, BucketCase, classes_over,
                          write_legacy_fixture)
from .bucket_maps import write_fixture as write_bucket_fixture
from .crushgen import (HOST, REPLICATED_HOST, TUNABLES, GeneratedMap, Layout, OsdMapSpec, crush_test,
                       generate, mismatches, rule, run)
from .test_crush_msr import crush_mismatches


def check(tmp: Path, layout: Layout, rules: Sequence[str], pg_num: Optional[int] = None,
          **kw: object) -> None:
    gm = generate(tmp, layout, rules, OsdMapSpec(**kw))  # type: ignore[arg-type]
    osd_dump, crush = gm.dumps(pg_num)
    ref = gm.reference(pg_num)
    bad = mismatches(snapshot.load(osd_dump, crush), ref)
    assert not bad, f"{len(bad)} of {len(ref)} PGs differ, first: {bad[:5]}"


def mixed_weight(osd: int) -> float:
    return (4.0, 8.0, 16.0)[osd % 3]      # 4, 8 and 16 TB drives


def two_classes(osd: int) -> str:
    return "ssd" if osd % 5 == 0 else "hdd"


def test_60_osds_5_hosts_of_12(tmp_path: Path) -> None:
    check(tmp_path, Layout(0, 5, 12), [REPLICATED_HOST], pg_bits=6)


def test_draws_in_blocks_of_a_few_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # straw2 draws a big map's rows a block at a time (for the CPU cache): blocks of 100
    # (row, item) pairs must give Ceph's answer on every PG as one block does
    from pg_advisor.crush import straw2
    monkeypatch.setattr(straw2, "BLOCK", 100)
    check(tmp_path, Layout(4, 5, 6, weight=mixed_weight), [REPLICATED_HOST], pg_bits=4, mark_out=[7])


def test_pgp_num_below_pg_num_and_osds_out(tmp_path: Path) -> None:
    # one OSD out (all osdmaptool can mark), two of CRUSH weight 0
    check(tmp_path, Layout(0, 5, 12), [REPLICATED_HOST], pg_bits=6, pgp_bits=5, mark_out=[59],
          crush_weights={0: 0.0, 13: 0.0})


def test_1000_osds_mixed_weights_racks_and_hosts(tmp_path: Path) -> None:
    check(tmp_path, Layout(10, 10, 10, weight=mixed_weight), [REPLICATED_HOST], pg_bits=3)


def test_rule_that_picks_racks_then_hosts(tmp_path: Path) -> None:
    r = rule(["take default", "choose firstn 2 type rack", "chooseleaf firstn 2 type host", "emit"])
    check(tmp_path, Layout(10, 10, 10, weight=mixed_weight), [r], pg_bits=2, size=4)


def test_indep_rule_of_6_like_ec_4_2_with_osds_out(tmp_path: Path) -> None:
    r = rule(["set_chooseleaf_tries 5", "set_choose_tries 100", "take default",
              "chooseleaf indep 0 type host", "emit"])
    check(tmp_path, Layout(10, 10, 10, weight=mixed_weight), [r], pg_bits=2, size=6,
          mark_out=[500], crush_weights={5: 0.0, 6: 0.0, 7: 0.0})


def test_indep_racks_then_osds(tmp_path: Path) -> None:
    r = rule(["take default", "choose indep 3 type rack", "choose indep 2 type osd", "emit"])
    check(tmp_path, Layout(10, 10, 10), [r], pg_bits=2, size=6)


def test_two_device_classes(tmp_path: Path) -> None:
    r = rule(["take default class ssd", "chooseleaf firstn 0 type host", "emit"])
    check(tmp_path, Layout(10, 10, 10, weight=mixed_weight, device_class=two_classes), [r],
          pg_bits=2)


@pytest.mark.parametrize("which", [0, 1], ids=["ssd-firstn", "hdd-indep"])
def test_device_classes_over_the_older_bucket_algorithms(tmp_path: Path, which: int) -> None:
    # the shadow trees of straw (v1), list and straw2 buckets: Ceph clones each with only
    # the class's items and recomputes straws and sums over them (issue 59); three classes
    lay = classes_over(("list", "straw", "straw2", "list", "straw"), ("list", "straw", "straw2"), "straw")
    check(tmp_path, lay, [CLASS_RULES[which]], pg_bits=4, size=(3, 6)[which], mark_out=[7],
          crush_weights={11: 0.0})


def test_device_classes_over_tree_buckets_are_set_aside(tmp_path: Path) -> None:
    # a shadow tree bucket's node weights are Ceph's builder's, known from the binary map
    # only (model/mappable.py): its rule's pools are set aside, not guessed
    gm = generate(tmp_path, classes_over(("tree", "straw2"), ("straw2",), "straw2"), [CLASS_RULES[0]],
                  OsdMapSpec(pg_bits=2))
    osd_dump, crush = gm.dumps()
    assert {b["alg"] for b in crush["buckets"] if b["name"].startswith("host0~")} == {"tree"}
    snap = snapshot.load(osd_dump, crush)
    assert snap.pools == () and len(snap.unmapped) == 1
    assert "a device-class shadow of a tree bucket" in snap.unmapped[0][1]


@pytest.mark.parametrize("which", [0, 1], ids=["ssd-firstn", "hdd-indep"])
def test_device_classes_over_tree_buckets_with_the_binary_map(tmp_path: Path, which: int) -> None:
    # with what Ceph stored (the binary map osdmaptool exports), shadow trees are exact:
    # three classes, trees at every level, shadow hosts of a single OSD or none. Where Ceph's
    # clone kept leftovers in a node that leads draws past the last item (Ceph then reads
    # beyond the bucket: seen as an ssd OSD in the hdd pool, and PGs short of OSDs), the
    # pool is set aside: the leftovers must be there, nodes other than the weights give.
    lay = classes_over(("tree", "tree", "straw2"), ("tree", "list"), "tree")
    spec = OsdMapSpec(pg_bits=4, size=(3, 6)[which], mark_out=[7], crush_weights={11: 0.0})
    gm = generate(tmp_path, lay, [CLASS_RULES[which]], spec)
    osd_dump, crush = gm.dumps()
    assert {"ssd", "hdd", "nvme"} <= {d.get("class") for d in crush["devices"]}
    binary = gm.path.with_suffix(".crush").read_bytes()
    snap = snapshot.load(osd_dump, crush, settings=snapshot.Settings(crush_binary=binary))
    assert snapshot.load(osd_dump, crush).unmapped      # from the dump alone: set aside
    if snap.unmapped:
        (_, why), = snap.unmapped
        assert "past its last item" in why, why
        b = next(b for b in snap.buckets.values() if f"bucket '{b.name}'" in why)
        built = tree_nodes(b.fixed_weights.tolist())
        assert b.alg == "tree" and list(b.stored[1:]) != built[1:], (b.name, b.stored)
        return
    ref = gm.reference()
    bad = mismatches(snap, ref)
    assert not bad, f"{len(bad)} of {len(ref)} PGs differ, first: {bad[:5]}"


def test_device_classes_over_uniform_buckets_are_refused_by_ceph(tmp_path: Path) -> None:
    # Ceph cannot clone a uniform bucket for a class, so no map holds one: crushtool
    # refuses a class rule over one
    lay = classes_over(("uniform", "straw2"), ("straw",), "straw")
    lay = dataclasses.replace(lay, weight=lambda o: 1.0)
    with pytest.raises(RuntimeError, match="has no class information"):
        generate(tmp_path, lay, [CLASS_RULES[0]])


def test_pg_num_beyond_the_maps_own(tmp_path: Path) -> None:
    # osdmaptool --pg_num changes pg_num only: pgp_num stays, so seeds fold with stable_mod
    check(tmp_path, Layout(0, 5, 12), [REPLICATED_HOST], pg_num=3000, pg_bits=5)


def _bucket(kind: str, name: str, bid: int, items: Sequence[Tuple[str, float]]) -> str:
    body = "".join(f"\titem {c} weight {w:.5f}\n" for c, w in items)
    return f"{kind} {name} {{\n\tid {bid}\n\talg straw2\n\thash 0\n{body}}}\n"


def _stray_map(tmp: Path, racked: bool, steps: Sequence[str]) -> GeneratedMap:
    """3 racks (or none) over 6 hosts of 2 OSDs, plus osd.12 in a host outside any rack
    (racked) or straight under the root, and osd.13 in a rack without a host."""
    out = [TUNABLES, "".join(f"device {o} osd.{o}\n" for o in range(14)),
           "type 0 osd\ntype 1 host\ntype 2 rack\ntype 3 root\n"]
    for h in range(6):
        out.append(_bucket("host", f"host{h}", -2 - h, [(f"osd.{2 * h}", 1.0), (f"osd.{2 * h + 1}", 1.0)]))
    top: List[Tuple[str, float]] = []
    if racked:
        for r in range(3):
            hosts = [(f"host{2 * r}", 2.0), (f"host{2 * r + 1}", 2.0)]
            out.append(_bucket("rack", f"rack{r}", -10 - r, hosts))
            top.append((f"rack{r}", 4.0))
        out.append(_bucket("host", "host9", -20, [("osd.12", 1.0)]))
        top.append(("host9", 1.0))
    else:
        top += [(f"host{h}", 2.0) for h in range(6)] + [("osd.12", 1.0)]
    out.append(_bucket("rack", "rack9", -21, [("osd.13", 1.0)]))
    top.append(("rack9", 1.0))
    out.append(_bucket("root", "default", -1, top))
    out.append(rule(steps))
    (tmp / "crush.txt").write_text("".join(out))
    run("crushtool", "-c", str(tmp / "crush.txt"), "-o", str(tmp / "crush.bin"))
    om = tmp / "osdmap.bin"
    run("osdmaptool", "--createsimple", "14", "--with-default-pool", "--clobber", "--pg-bits", "5",
        "--pgp-bits", "5", "--osd_pool_default_size=3", str(om))
    run("osdmaptool", str(om), "--import-crush", str(tmp / "crush.bin"))
    return GeneratedMap(path=om, num_osds=14)


@pytest.mark.parametrize("racked, steps", [
    (False, ["take default", "chooseleaf firstn 0 type host", "emit"]),
    (True, ["take default", "choose firstn 0 type rack", "chooseleaf firstn 1 type host", "emit"]),
], ids=["host-rule", "rack-then-host-rule"])
def test_osds_the_rule_cannot_reach_get_nothing(tmp_path: Path, racked: bool,
                                                steps: Sequence[str]) -> None:
    # Ceph maps no replica onto an OSD with no bucket of a type the rule chooses (it skips
    # the replica); ours agrees on every PG, gives those OSDs no share and no upmap
    gm = _stray_map(tmp_path, racked, steps)
    osd_dump, crush = gm.dumps()
    ref = gm.reference()
    stray = {12, 13}
    assert not [pg for pg, (up, _) in ref.items() if stray & set(up)]
    assert any(len(up) < 3 for up, _ in ref.values())   # the replicas CRUSH skipped
    snap = snapshot.load(osd_dump, crush)
    bad = mismatches(snap, ref)
    assert not bad, f"{len(bad)} of {len(ref)} PGs differ, first: {bad[:5]}"
    pool = snap.pools[0]
    w = rule_weights(snap, snap.rule(pool.crush_rule))
    assert sorted(np.flatnonzero(w == 0).tolist()) == sorted(stray)
    res = Balancer(snap).run()
    assert res.items and not [pg for pg, pairs in res.items.items() for _, to in pairs if to in stray]


def _chain_map(tmp: Path, steps: Sequence[str], size: int = 3) -> GeneratedMap:
    """Hosts under chains of one-child buckets (0 to 300 deep, a rack of one host, a
    chain that ends in an empty bucket, a host of one OSD): CRUSH takes a bucket's only
    child without a draw, and ours skips such chains in one hop (crush/mapper.hops)."""
    out = [TUNABLES, "".join(f"device {o} osd.{o}\n" for o in range(13)),
           "type 0 osd\ntype 1 host\ntype 2 chassis\ntype 3 rack\ntype 4 root\n"]
    ids = iter(range(-2, -2000, -1))
    depth = [0, 1, 5, 40, 300, 2, 3]

    def chain(name: str, weight: float, d: int) -> str:
        for k in range(d):
            out.append(_bucket("chassis", f"{name}-c{k}", next(ids), [(name, weight)]))
            name = f"{name}-c{k}"
        return name
    tops: Dict[int, List[Tuple[str, float]]] = {r: [] for r in range(5)}
    for h in range(7):
        osds = [(f"osd.{2 * h}", 1.0), (f"osd.{2 * h + 1}", 1.0)] if h < 6 else [("osd.12", 1.0)]
        out.append(_bucket("host", f"host{h}", next(ids), osds))
        tops[(0, 0, 1, 2, 2, 3, 3)[h]].append((chain(f"host{h}", float(len(osds)), depth[h]), len(osds)))
    out.append(_bucket("chassis", "empty", next(ids), []))
    tops[4].append((chain("empty", 0.0, 3), 0.0))
    for r, items in tops.items():
        out.append(_bucket("rack", f"rack{r}", next(ids), items))
    out.append(_bucket("root", "default", -1, [(f"rack{r}", sum(w for _, w in tops[r])) for r in tops]))
    out.append(rule(steps))
    (tmp / "crush.txt").write_text("".join(out))
    run("crushtool", "-c", str(tmp / "crush.txt"), "-o", str(tmp / "crush.bin"))
    om = tmp / "osdmap.bin"
    run("osdmaptool", "--createsimple", "13", "--with-default-pool", "--clobber", "--pg-bits", "6",
        "--pgp-bits", "6", f"--osd_pool_default_size={size}", str(om))
    run("osdmaptool", str(om), "--import-crush", str(tmp / "crush.bin"))
    return GeneratedMap(path=om, num_osds=13)


@pytest.mark.parametrize("steps, size", [
    (["take default", "chooseleaf firstn 0 type host", "emit"], 3),
    (["take default", "choose firstn 0 type rack", "chooseleaf firstn 1 type host", "emit"], 3),
    (["set_choose_tries 100", "take default", "chooseleaf indep 0 type host", "emit"], 3),
    (["take default", "chooseleaf firstn 0 type chassis", "emit"], 3),
    # more replicas than hosts: once every host is used, ours stops trying (mapper.reach)
    (["take default", "chooseleaf firstn 0 type host", "emit"], 10),
    (["set_choose_tries 100", "take default", "chooseleaf indep 0 type host", "emit"], 10),
    (["take default", "choose indep 0 type rack", "emit"], 6),
], ids=["host", "rack-then-host", "indep-host", "chassis", "host-size-10", "indep-host-size-10",
        "indep-rack-size-6"])
def test_chains_of_one_child_buckets(tmp_path: Path, steps: Sequence[str], size: int) -> None:
    gm = _chain_map(tmp_path, steps, size)
    osd_dump, crush = gm.dumps()
    ref = gm.reference()
    assert any(12 in up for up, _ in ref.values()) or size == 6   # the host of one OSD is used
    bad = mismatches(snapshot.load(osd_dump, crush), ref)
    assert not bad, f"{len(bad)} of {len(ref)} PGs differ, first: {bad[:5]}"


@pytest.fixture(scope="module")
def live_map(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GeneratedMap]:
    """The live mon's map with an EC 4+2 pool, a reweight, an out OSD, a zero CRUSH weight,
    a primary affinity, an upmap item and choose_args weight sets (compat and positional);
    the cluster is put back as it was afterwards."""
    c = cluster
    c.ceph("osd", "erasure-code-profile", "set", "ec42", "k=4", "m=2", "crush-failure-domain=osd")
    c.create_pool("ec42", 32, "erasure", "ec42")
    c.ceph("osd", "reweight", "1", "0.6")
    c.ceph("osd", "primary-affinity", "2", "0.3")
    c.ceph("osd", "out", "4")
    # zero CRUSH weight can only be tested on a real map: osdmaptool --mark-up-in lifts it to 1
    w3 = next(i["weight"] for b in c.json("osd", "crush", "dump")["buckets"]
              if b["name"] == "host0" for i in b["items"] if i["id"] == 3)
    c.ceph("osd", "crush", "reweight", "osd.3", "0")
    # choose_args: a compat weight set (key -1) and a positional one for the EC pool
    c.ceph("osd", "crush", "weight-set", "create-compat")
    c.ceph("osd", "crush", "weight-set", "reweight-compat", "osd.0", "0.0005")
    c.ceph("osd", "crush", "weight-set", "create", "ec42", "positional")
    c.ceph("osd", "crush", "weight-set", "reweight", "ec42", "osd.2",
           "0.0004", "0.0005", "0.0006", "0.0007", "0.0008", "0.0009")
    # an upmap item on a replicated PG: one replica to the other OSD of its host
    pg = f"{c.pool_id('rbd')}.3"       # (Tentacle's mgr pool .mgr may hold pool id 1)
    up = c.json("pg", "map", pg)["up"]
    mates = c.host_mates()
    src, dst = next((o, m) for o in up for m in mates[o] if m not in up and m not in (3, 4))
    c.ceph("osd", "pg-upmap-items", pg, str(src), str(dst))
    path = tmp_path_factory.mktemp("live") / "osdmap.bin"
    c.ceph("osd", "getmap", "-o", str(path))
    try:
        yield GeneratedMap(path=path, num_osds=6, as_is=True)
    finally:
        c.ceph("osd", "crush", "weight-set", "rm", "ec42")
        c.ceph("osd", "crush", "weight-set", "rm-compat")
        c.remove_pool("ec42", wait=False)
        c.ceph("osd", "rm-pg-upmap-items", pg)
        c.ceph("osd", "in", "4")
        c.ceph("osd", "reweight", "1", "1")
        c.ceph("osd", "primary-affinity", "2", "1")
        c.ceph("osd", "crush", "reweight", "osd.3", f"{w3 / 0x10000:.9f}")
        c.wait_clean()


def test_live_map_every_pool(live_map: GeneratedMap) -> None:
    # the dumps come from the very map getmap saved, so nothing can move in between
    osd_dump, crush = live_map.dumps()
    ref = live_map.reference()
    snap = snapshot.load(osd_dump, crush)
    assert {p.type for p in snap.pools} == {"replicated", "erasure"}
    assert snap.pg_upmap_items and not snap.osds.in_[4] and snap.osds.up[4]
    assert snap.osds.crush_weight[3] == 0
    ec = snap.pool_by_name("ec42")      # another test's EC pool may be there too
    assert set(snap.choose_args) == {-1, ec.id}
    bad = mismatches(snap, ref)
    assert not bad, f"{len(bad)} of {len(ref)} PGs differ, first: {bad[:5]}"
    # the weight sets matter here: ignoring them must change some PGs
    assert mismatches(dataclasses.replace(snap, choose_args={}), ref)


# -- every bucket algorithm Ceph maps (qa/maps/bucket_maps.py) -------------------------------

BUCKET_X = 2047         # crushtool inputs 0..BUCKET_X per reweight


def bucket_case_maps(tmp: Path, case: BucketCase) -> List[Tuple[GeneratedMap, snapshot.Snapshot]]:
    """The case's map with its pool under the firstn rule, then under the indep one."""
    out = []
    for pool_rule in (0, 1):
        gm = case.make(HOST, tmp / f"rule{pool_rule}", pool_rule)
        osd_dump, crush = gm.dumps()
        assert crush["tunables"]["straw_calc_version"] == case.straw_calc_version
        out.append((gm, snapshot.load(osd_dump, crush)))
    return out


@pytest.mark.parametrize("case", BUCKET_CASES + LEGACY_CASES,
                         ids=[c.name for c in BUCKET_CASES + LEGACY_CASES])
def test_every_bucket_algorithm_as_ceph_maps_it(tmp_path: Path, case: BucketCase) -> None:
    maps = bucket_case_maps(tmp_path, case)
    for gm, snap in maps:
        assert not snap.unmapped
        ref = gm.reference()
        bad = mismatches(snap, ref)
        assert not bad, f"{len(bad)} of {len(ref)} PGs differ, first: {bad[:5]}"
        assert not [pg for pg, (up, _) in ref.items() if set(case.mark_out) & set(up)]
    gm, snap = maps[0]          # rule 0 firstn, rule 1 indep: crush_do_rule under reweights
    for rule_id, num_rep, reweight in case.runs():
        want = crush_test(HOST, gm.path.with_suffix(".crush"), rule_id, num_rep, BUCKET_X, reweight)
        assert len(want) == BUCKET_X + 1
        bad = crush_mismatches(snap, rule_id, num_rep, reweight, want)
        assert not bad, (f"rule {rule_id} x{num_rep}, reweight {reweight}: {len(bad)} of {len(want)} "
                         f"inputs differ, first: {bad[:5]}")


def test_the_cases_hold_every_algorithm(tmp_path: Path) -> None:
    seen = set()
    for case in BUCKET_CASES:
        seen |= {case.layout.bucket_alg(k, n) for k, n in
                 [("root", "default")] + [("host", f"host{h}") for h in range(10)]
                 + [("rack", f"rack{r}") for r in range(3)]}
    assert seen == set(BUCKET_ALGS)


@pytest.mark.parametrize("version", [0, 1])
def test_the_straw_calc_version_matters(tmp_path: Path, version: int) -> None:
    # the straws of each version are Ceph's own: computed with the other, PGs move
    case = next(c for c in BUCKET_CASES if c.name == f"hosts-of-every-alg-v{version}")
    gm = case.make(HOST, tmp_path)
    osd_dump, crush = gm.dumps()
    crush["tunables"]["straw_calc_version"] = 1 - version
    assert mismatches(snapshot.load(osd_dump, crush), gm.reference())


@pytest.mark.parametrize("fixture, write", [(BUCKET_FIXTURE, write_bucket_fixture),
                                            (LEGACY_FIXTURE, write_legacy_fixture)],
                         ids=["buckets", "legacy"])
def test_bucket_fixture_is_what_ceph_says(tmp_path: Path, fixture: Path, write: Any) -> None:
    # the unit tests' fixtures (pg_advisor_testkit/fixtures/buckets, .../legacy) made again give
    # the same answers (the osd dump is a new map's: its fsid and dates differ each time)
    write(HOST, tmp_path / "fresh")
    names = sorted(f.name for f in fixture.iterdir())
    assert names == sorted(f.name for f in (tmp_path / "fresh").iterdir()) and len(names) == 6
    for f in sorted(f for f in fixture.iterdir() if f.name != "osd_dump.json"):
        got = (tmp_path / "fresh" / f.name).read_text()
        if f.name.startswith("crush_dump"):
            _same_map(json.loads(got), json.loads(f.read_text()), f.name)
        elif f.suffix == ".json":
            _holds(json.loads(got), json.loads(f.read_text()), f.name)
        else:
            assert got == f.read_text(), f.name


def _same_map(got: Dict[str, Any], want: Dict[str, Any], where: str) -> None:
    """The same CRUSH map in two releases' dumps (captured with Pacific's tools: a later
    release adds fields and drops the rules' ruleset, min_size and max_size)."""
    for key in ("devices", "types", "buckets"):
        _holds(got[key], want[key], f"{where}.{key}")
    placed = ("rule_id", "rule_name", "type", "steps")
    _holds([{k: r[k] for k in placed} for r in got["rules"]],
           [{k: r[k] for k in placed} for r in want["rules"]], f"{where}.rules")
    common = set(got["tunables"]) & set(want["tunables"])
    assert {"choose_total_tries", "straw_calc_version"} <= common, where
    _holds({k: got["tunables"][k] for k in common}, {k: want["tunables"][k] for k in common},
           f"{where}.tunables")


def _holds(got: Any, want: Any, where: str) -> None:
    """`got` has every field of `want` with the same value (lists item for item)."""
    if isinstance(want, dict):
        assert isinstance(got, dict), where
        for k, v in want.items():
            assert k in got, f"{where}: no {k}"
            _holds(got[k], v, f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _holds(g, w, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"
