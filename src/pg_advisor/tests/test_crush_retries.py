"""CRUSH's retries against crushtool, from a fixture it made (qa/maps/retry_maps.py writes
it; qa/maps/test_crush_retries.py checks it is still what Ceph says, on more inputs): 4
hosts of 3 OSDs, a rule per way to choose, each asking more than some reweights leave room
for. The mapper's two shortcuts (a retrying row's next tries drawn at once; a row stopped
once it holds every item a try could keep) must give what the literal algorithm gives, and
cost fewer runs of the descent."""
from typing import Any, Dict, List

import numpy as np
import pytest

from pg_advisor.crush import descent, mapper
from pg_advisor.model import snapshot

from pg_advisor_testkit.dumps import FIXTURES, read
from .test_crush_msr import crush_results, differ

RETRIES = FIXTURES / "retries"


def load() -> snapshot.Snapshot:
    return snapshot.load(read("osd_dump.json", RETRIES), read("crush_dump.json", RETRIES))


def runs() -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = read("crushtool_test.json", RETRIES)
    return out


def literal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mapper without its shortcuts: one try at a time, rows stopped only when every
    item is placed (the reach of the map's tree, whatever the weights)."""
    monkeypatch.setattr(mapper, "AHEAD_MAX", 1)
    plain = descent.RunContext.reach
    monkeypatch.setattr(descent.RunContext, "reach",
                        lambda self, type_id, accepted=False: plain(self, type_id))


def descents(monkeypatch: pytest.MonkeyPatch) -> List[int]:
    """A counter of the rows the descent is run on."""
    seen = [0]
    run = descent.RunContext.descend_r

    def counted(self: descent.RunContext, b: np.ndarray, *a: Any, **k: Any) -> Any:
        seen[0] += 1
        return run(self, b, *a, **k)
    monkeypatch.setattr(descent.RunContext, "descend_r", counted)
    return seen


def test_every_input_as_crushtool_maps_it() -> None:
    snap = load()
    kinds = set()
    for run in runs():
        got = crush_results(snap, run)
        assert not differ(got, run), (run["rule"], run["reweight"])
        kinds.add(run["rule"])
    assert kinds == set(range(7))


def test_a_chooseleaf_indep_of_devices_keeps_a_rejected_device_as_its_leaf() -> None:
    # mapper.c writes the leaf before the out test: a position no try fills holds the
    # last device tried, out or not (even twice in one set)
    run = next(r for r in runs() if r["rule"] == 0 and r["reweight"])
    out = {int(o) for o, w in run["reweight"].items() if w == 0}
    kept = [m for m in run["mappings"].values() if out & set(m)]
    assert kept
    assert crush_results(load(), run) == {int(x): m for x, m in run["mappings"].items()}


def test_the_shortcuts_change_nothing_and_save_descents(monkeypatch: pytest.MonkeyPatch) -> None:
    # the runs where rows retry longest (osd.0-2 out, others reweighted): chooseleaf and
    # choose indep of devices, hosts then devices, and firstn of devices
    heavy = [r for r in runs() if r["rule"] in (0, 1, 3, 5) and "7" in r["reweight"]]
    seen = descents(monkeypatch)
    fast = [crush_results(load(), run) for run in heavy]
    quick = seen[0]
    literal(monkeypatch)
    seen[0] = 0
    assert [crush_results(load(), run) for run in heavy] == fast
    # each run of the descent costs numpy's fixed cost however few its rows: the retries'
    # last few rows are where the time went
    assert len(heavy) == 4 and quick * 3 < seen[0], (quick, seen[0])
