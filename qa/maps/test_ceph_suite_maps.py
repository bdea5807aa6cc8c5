"""Ceph's own crushtool test maps (qa/maps/ceph_suite.py, the maps in qa/maps/ceph_crushtool/)
on this release's tools: each map its crushtool compiles gets a pool per rule from a real
ceph-mon; every PG pg_advisor maps is osdmaptool's, in each state of the map and from the
binary CRUSH map too; crush_do_rule is crushtool's under reweights; and the offline CLI's
commands answer on each state. Runs on Tentacle (the chroot's session) and on Pacific (the
host's, in .ci's Pacific subset).
"""
import json
from pathlib import Path

import pytest

from .ceph_suite import COMMANDS, STATES, _hosted, check_map, release, suite_maps
from .crushgen import run

# The maps each release's crushtool refuses, and its words: a map missing here or refused
# otherwise fails (a map copied wrong, or a release that changed)
REFUSED = {
    16: {"check-overlapped-rules.crushmap.txt": "rule 0 already exists",
         "missing-bucket.crushmap.txt": "in rule 'rule-bad' item 'root-404' not defined",
         **{m: "error: parse error at '# rules'" for m in (
             "large-device-weight.crushmap.txt", "max-device-weight.crushmap.txt",
             "simple.template.adj.four", "simple.template.adj.two", "simple.template.three",
             "test-map-firstn-indep.txt", "too-large-device-weight.crushmap.txt",
             "weight-shift-too-large-device.crushmap.txt", "weight-shift-too-large-shift.crushmap.txt",
             "weight-shift.crushmap.txt")}},
    20: {"check-overlapped-rules.crushmap.txt": "rule 0 already exists",
         "missing-bucket.crushmap.txt": "in rule 'rule-bad' item 'root-404' not defined",
         **{m: "device weight limited to 100" for m in (
             "large-device-weight.crushmap.txt", "max-device-weight.crushmap.txt",
             "simple.template.adj.four", "too-large-device-weight.crushmap.txt")},
         **{m: "tunable weight_shift not recognized" for m in (
             "weight-shift-too-large-device.crushmap.txt", "weight-shift-too-large-shift.crushmap.txt",
             "weight-shift.crushmap.txt")}},
}


@pytest.fixture(scope="module")
def major() -> int:
    m = int(release().split(".")[0])
    if m not in REFUSED:
        pytest.skip(f"Ceph {m}: the suite's refusals are known for Pacific (16) and Tentacle (20)")
    return m


def test_the_suite_is_as_copied() -> None:
    # ORIGIN gives each file's length as read from Ceph's repository
    origin = (Path(__file__).parent / "ceph_crushtool" / "ORIGIN").read_text()
    lines = [ln.split("\t") for ln in origin.splitlines() if ln and not ln.startswith("#")]
    assert len(lines) == len(suite_maps()) == 33
    for name, commit, chars in lines:
        assert len(commit) == 40
        assert len((Path(__file__).parent / "ceph_crushtool" / name).read_text()) == int(chars), name


@pytest.mark.parametrize("name", suite_maps())
def test_ceph_test_map_is_mapped_as_ceph_maps_it(tmp_path: Path, major: int, name: str) -> None:
    row = check_map(name, tmp_path)
    if name in REFUSED[major] or row.not_compiled:
        assert REFUSED[major].get(name, "(compiled)") in row.not_compiled, row.not_compiled or "compiled"
        return
    assert not row.refused, f"the mon made no pool for: {row.refused}"
    assert not row.set_aside, f"set aside: {row.set_aside}"
    assert not row.bad, row.bad
    assert row.exact == row.pgs
    assert row.commands == len(row.states) * len(COMMANDS)
    crush = json.loads(run("crushtool", "-i", str(tmp_path / "crush.bin"), "--dump"))
    assert row.pools == len(crush["rules"])
    if row.pools:
        assert row.pgs > 0
    if _hosted(crush):       # a map without devices has only its fresh state, and crushtool no results
        assert row.states == list(STATES)
        assert row.inputs_exact == row.inputs >= row.pools * 2 * 512
