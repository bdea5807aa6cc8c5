"""msr rules (Squid and later: types msr_firstn / msr_indep, steps choosemsr), ours against
Tentacle's own tools on every PG and every input: qa/maps/msr_maps.py builds the maps.

Inside the Tentacle chroot the tools are the system's; on the host they are the chroot's,
run through qa/cluster/tentacle.sh (as root). Without the chroot the tests are skipped, saying so.
Any mismatch fails the test and names the first PGs or inputs that differ.
"""
import dataclasses
import json
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np
import pytest

from pg_advisor.crush.descent import RunContext
from pg_advisor.crush.mapper import do_rule
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor.model.constants import CRUSH_ITEM_NONE, WEIGHT_ONE

from .crushgen import Layout, Tools, crush_test, tentacle_tools
from .msr_maps import CASES, FIXTURE, FIXTURE_RUNS, FIXTURE_X, MsrCase, with_foreign_items, write_fixture

TOOLS, WHY = tentacle_tools()
pytestmark = pytest.mark.skipif(TOOLS is None, reason=f"needs Tentacle's crushtool and osdmaptool: {WHY}")
MAX_X = 4095        # crushtool inputs 0..MAX_X per reweight


@pytest.fixture
def tools() -> Tools:
    assert TOOLS is not None
    return TOOLS


@pytest.fixture
def work(tools: Tools) -> Iterator[Path]:
    """A directory the tools can reach (the chroot's /tmp from the host), removed after."""
    with tools.work() as d:
        yield d


def as_erasure(osd_dump: Dict[str, Any], k: int) -> Dict[str, Any]:
    """The dump with its pool erasure-coded: osdmaptool makes only replicated pools, and we
    give a pool only a rule of its kind (msr_indep: erasure)."""
    d = json.loads(json.dumps(osd_dump))
    d.setdefault("erasure_code_profiles", {})["msr"] = {"k": str(k), "m": "2", "plugin": "isa"}
    for p in d["pools"]:
        p["type"], p["erasure_code_profile"] = 3, "msr"
    return d


def pg_mismatches(case: MsrCase, snap: snapshot.Snapshot,
                  ref: Dict[str, Tuple[List[int], int]]) -> Tuple[int, List[str]]:
    """(PGs compared, the ones that differ). For msr_indep our pool is erasure-coded and
    keeps holes at their positions; Ceph's replicated pool drops them: compared without."""
    placer = Placer(snap)
    bad, seen = [], 0
    for pool in snap.pools:
        m = placer.map_pool(pool)
        for i in range(m.ps.size):
            up = [o for o in m.up_list(i) if o != CRUSH_ITEM_NONE]
            got, want = (up, int(m.up_primary[i])), ref[m.pgid(i)]
            seen += 1
            if got != want:
                bad.append(f"{m.pgid(i)}: ours {got}, Ceph {want}")
    return seen, bad


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_pg_as_osdmaptool_maps_it(tools: Tools, work: Path, case: MsrCase) -> None:
    gm = case.make(tools, work)
    osd_dump, crush = gm.dumps()
    assert {r["type"] for r in crush["rules"]} == {4 if case.rule_type == "msr_firstn" else 5}
    ref = gm.reference()
    if case.rule_type == "msr_indep":
        osd_dump = as_erasure(osd_dump, (case.pool_size or case.size) - 2)
    snap = snapshot.load(osd_dump, crush)
    seen, bad = pg_mismatches(case, snap, ref)
    assert seen == len(ref) == snap.pools[0].pg_num >= 512
    assert not bad, f"{len(bad)} of {seen} PGs differ, first: {bad[:5]}"
    if case.mark_out:       # the out OSD is in no up set: CRUSH retried past it
        assert not [pg for pg, (up, _) in ref.items() if case.mark_out[0] in up]


def crush_mismatches(snap: snapshot.Snapshot, rule_id: int, num_rep: int,
                     reweight: Dict[int, float], want: Dict[int, List[int]]) -> List[str]:
    """crush_do_rule's results, ours against crushtool's, for its inputs and reweights."""
    cm = Placer(snap).crush
    rule = cm.rules[rule_id]
    # crushtool: (int)(w * 0x10000) in float, 0x10000 for every device CRUSH holds
    weight = np.full(max(snap.osds.count, cm.max_devices), WEIGHT_ONE, dtype=np.int64)
    for osd, w in reweight.items():
        weight[osd] = int(np.float32(w) * np.float32(WEIGHT_ONE))
    xs = np.array(sorted(want), dtype=np.int64)
    args = cm.choose_args.get(0, cm.choose_args.get(-1))   # crushtool's key 0, else the default
    res, rlen = do_rule(RunContext(cm, args, weight), rule, xs, num_rep)
    bad = []
    for i, x in enumerate(xs.tolist()):
        got = res[i, :rlen[i]].tolist()
        if got != want[x]:
            bad.append(f"x {x}: ours {got}, Ceph {want[x]}")
    return bad


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_crush_do_rule_as_crushtool_computes_it(tools: Tools, work: Path, case: MsrCase) -> None:
    gm = case.make(tools, work)
    osd_dump, crush = gm.dumps()
    snap = snapshot.load(osd_dump, crush)
    for reweight in case.reweights:
        want = crush_test(tools, gm.path.with_suffix(".crush"), 0, case.size, MAX_X, reweight)
        assert len(want) == MAX_X + 1
        bad = crush_mismatches(snap, 0, case.size, reweight, want)
        assert not bad, f"reweight {reweight}: {len(bad)} of {len(want)} inputs differ, first: {bad[:5]}"
        for osd, w in reweight.items():     # an out OSD is never chosen
            assert w > 0 or not [x for x, v in want.items() if osd in v]


def test_weight_sets_matter(tools: Tools, work: Path) -> None:
    # the weight-set case must tell: without its weight sets, PGs and inputs map elsewhere
    case = next(c for c in CASES if c.name == "weight-sets")
    gm = case.make(tools, work)
    osd_dump, crush = gm.dumps()
    ref = gm.reference()
    snap = snapshot.load(as_erasure(osd_dump, 4), crush)
    assert set(snap.choose_args) == {0, 1}
    assert pg_mismatches(case, dataclasses.replace(snap, choose_args={}), ref)[1]
    want = crush_test(tools, gm.path.with_suffix(".crush"), 0, case.size, 511)
    assert crush_mismatches(dataclasses.replace(snap, choose_args={}), 0, case.size, {}, want)


def test_upmap_items_on_an_msr_pool_and_what_the_mon_keeps(tools: Tools, work: Path) -> None:
    # items Ceph's balancer made under another rule, then an msr rule: our up sets (items
    # applied as _apply_upmap does) are Ceph's on every PG
    gm = with_foreign_items(tools, work)
    osd_dump, crush = gm.dumps()
    assert len(osd_dump["pg_upmap_items"]) > 100
    ref = gm.reference()
    snap = snapshot.load(osd_dump, crush)
    case = MsrCase("foreign-items", Layout(0, 4, 3), (), 4, 7, rule_type="msr_firstn")
    seen, bad = pg_mismatches(case, snap, ref)
    assert seen == len(ref) == 1536
    assert not bad, f"{len(bad)} of {seen} PGs differ, first: {bad[:5]}"
    # and the mon keeps items that put 3 replicas on a host: verify_upmap skips choosemsr
    # steps, so the msr rule's caps are the balancer's to keep (rules/legality.py)
    tools.run("osdmaptool", gm.path, *gm.state_args(), "--upmap-cleanup", work / "cleanup.txt")
    lines = (work / "cleanup.txt").read_text().splitlines()
    dropped = {ln.split()[-1] for ln in lines if "rm-pg-upmap" in ln}
    three = [pg for pg, (up, _) in ref.items() if max(np.bincount(np.array(up) // 3)) > 2]
    assert three and not set(three) & dropped and dropped


def test_unit_fixture_is_what_tentacle_says(tools: Tools, work: Path) -> None:
    # the unit tests' fixture (pg_advisor_testkit/fixtures/msr) made again must give the same answers
    write_fixture(tools, work / "fresh")
    for name in ("osdmaptool_dump_all.txt", "crushtool_test.json"):
        assert (work / "fresh" / name).read_text() == (FIXTURE / name).read_text(), name
    fresh = json.loads((work / "fresh" / "crush_dump.json").read_text())
    assert fresh == json.loads((FIXTURE / "crush_dump.json").read_text())
    assert [r["rule"] for r in json.loads((FIXTURE / "crushtool_test.json").read_text())] == \
        [r for r, _, _ in FIXTURE_RUNS] and FIXTURE_X == 1023
