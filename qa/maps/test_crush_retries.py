"""CRUSH's retries, ours against `crushtool --test` on every input (qa/maps/retry_maps.py):
rules that cannot place every replica, OSDs out or reweighted, so rows retry to the last
try, leave holes, or stop early.

The mapper draws a retrying row's next tries at once and stops a row that holds every
item a try could still keep (crush/mapper.py); this is where either would show, and where
mapper.c leaves a rejected device as a chooseleaf indep's leaf.
"""
import json
from pathlib import Path

from pg_advisor.model import snapshot

from .crushgen import HOST
from .retry_maps import CASES, FIXTURE, REWEIGHTS, build, runs, write_fixture
from .test_crush_msr import crush_mismatches

MAX_X = 2047


def test_retries_as_crushtool_maps_them(tmp_path: Path) -> None:
    gm = build(HOST, tmp_path)
    snap = snapshot.load(*gm.dumps())
    short = set()
    for run in runs(HOST, gm, MAX_X):
        want = {int(x): m for x, m in run["mappings"].items()}
        assert len(want) == MAX_X + 1
        reweight = {int(k): v for k, v in run["reweight"].items()}
        bad = crush_mismatches(snap, run["rule"], run["num_rep"], reweight, want)
        assert not bad, f"{CASES[run['rule']][0]}, reweight {reweight}: {len(bad)} of {len(want)} " \
                        f"inputs differ, first: {bad[:5]}"
        out = {o for o, w in reweight.items() if w == 0}
        if any(len(set(v) - out - {0x7FFFFFFF}) < run["num_rep"] for v in want.values()):
            short.add(run["rule"])
    # every case asks more than some reweight leaves room for: rows short, with holes or
    # (a chooseleaf indep of devices) an out OSD left as a leaf
    assert short == set(range(len(CASES))) and len(REWEIGHTS) > 1


def test_retry_fixture_is_what_ceph_says(tmp_path: Path) -> None:
    # the unit tests' fixture made again gives the same results (the CRUSH dump compared
    # by its buckets and rules' steps: a later release's dump adds fields)
    write_fixture(HOST, tmp_path)
    got = json.loads((tmp_path / "crushtool_test.json").read_text())
    assert got == json.loads((FIXTURE / "crushtool_test.json").read_text())
    fresh, kept = (json.loads((d / "crush_dump.json").read_text()) for d in (tmp_path, FIXTURE))
    for key in ("id", "items"):
        assert [b[key] for b in fresh["buckets"]] == [b[key] for b in kept["buckets"]]
    assert [r["steps"] for r in fresh["rules"]] == [r["steps"] for r in kept["rules"]]
