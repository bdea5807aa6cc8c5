"""A map where CRUSH retries to the end: 4 hosts of 3 OSDs, one rule per way to choose, each
asking more replicas than some reweights leave room for (rows retry every try, leave holes,
stop early, or keep a rejected device as their leaf). `python3 -m qa.maps.retry_maps [DEST]`
writes the unit tests' fixture (fixtures/retries) for inputs 0..FIXTURE_X.
"""
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

from pg_advisor_testkit.dumps import FIXTURES

from .crushgen import (GeneratedMap, Layout, OsdMapSpec, Tools, crushtool_runs, generate, map_files, rule,
                       write_files, write_fixture_main)

FIXTURE = FIXTURES / "retries"
FIXTURE_X = 63
LAYOUT = Layout(0, 4, 3)
# osd.0-2 (all of host0) out, others out or reweighted
REWEIGHTS: List[Dict[int, float]] = [
    {},
    {0: 0.0, 1: 0.0, 2: 0.0, 7: 0.5, 10: 0.3},
    {0: 0.0, 4: 0.0, 8: 0.0, 9: 0.0, 11: 0.7},
]
# (name, steps, replicas asked)
CASES: List[Tuple[str, List[str], int]] = [
    ("chooseleaf-indep-osd", ["set_choose_tries 100", "take default", "chooseleaf indep 0 type osd",
                              "emit"], 11),
    ("choose-indep-osd", ["set_choose_tries 100", "take default", "choose indep 0 type osd", "emit"], 11),
    ("chooseleaf-indep-host", ["set_chooseleaf_tries 5", "set_choose_tries 100", "take default",
                               "chooseleaf indep 0 type host", "emit"], 5),
    ("choose-host-then-osd-indep", ["take default", "choose indep 3 type host",
                                    "chooseleaf indep 2 type osd", "emit"], 6),
    ("chooseleaf-firstn-host", ["take default", "chooseleaf firstn 0 type host", "emit"], 5),
    ("choose-firstn-osd", ["take default", "choose firstn 0 type osd", "emit"], 11),
    ("choose-host-then-osd-firstn", ["take default", "choose firstn 3 type host",
                                     "chooseleaf firstn 2 type osd", "emit"], 6),
]


def build(tools: Tools, tmp: Path) -> GeneratedMap:
    """The map with every case's rule, rule id i for CASES[i]."""
    rules = [rule(steps, name=name.replace("-", "_"), rule_id=i,
                  rule_type="erasure" if any("indep" in s for s in steps) else "replicated")
             for i, (name, steps, _) in enumerate(CASES)]
    return generate(tmp, LAYOUT, rules, OsdMapSpec(pg_bits=2), tools=tools)


RUNS = [(i, size, w) for i, (_, _, size) in enumerate(CASES) for w in REWEIGHTS]


def runs(tools: Tools, gm: GeneratedMap, max_x: int) -> List[Dict[str, Any]]:
    """crushtool's result of every rule and reweight for inputs 0..max_x."""
    return crushtool_runs(tools, gm.path.parent / "crush.bin", RUNS, max_x)


def write_fixture(tools: Tools, dest: Path) -> None:
    with tools.work() as work:
        gm = build(tools, work)
        files = map_files(gm, RUNS, FIXTURE_X, dump_all=False, crush_bin=work / "crush.bin")
    write_files(dest, files)


if __name__ == "__main__":
    sys.exit(write_fixture_main(sys.argv[1:], "retry_maps", FIXTURE, write_fixture))
