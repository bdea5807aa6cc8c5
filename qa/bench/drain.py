"""Benchmark: what `drain` proposes on maps made by a throw-away mon (qa/maps/monbuilt.py).

    PYTHONPATH=src:. /usr/bin/python3 -m qa.bench.drain [--only 384,384b,10000] [--target osd.17]

Per map and target: the replicas on the drained OSDs, the replica moves proposed (and of
them the forced ones: a replica not on the drained OSDs that the rule makes move with
one that is), the largest deviation of any other OSD from its share (the share without
the drained OSDs) in any pool and in the OSDs' totals, before and after, and the wall
time; then the same with --and-balance. Maps: "384", the 384-OSD "multi384" case (EC
8+3 in 4 racks of 3 hosts, 4 replicas in 2 racks of 2 hosts, 6 in 3 rooms of 2 hosts, an
ssd pool; one OSD out, four of other CRUSH weights) as CRUSH maps it; "384b", the same
map evened by `balance` first (its items set), where the deviation rule binds; "10000":
10,000 OSDs in 25 racks of 20 hosts with one pool of 81,920 PGs; "10000s": 10,000 OSDs of
4, 8 and 16 TB with one pool of 320,000 PGs and PG stats (qa/bench/large_inputs.py's
10000osd-stats; its build takes minutes).
"""
import argparse
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from pg_advisor.balance.balancer import Balancer
from pg_advisor.balance.drain import drain_report
from pg_advisor.model import snapshot
from pg_advisor_testkit.proposals import applied

from ..maps.monbuilt import build_case
from .large_inputs import CASES as LARGE

CASE = {"384": "multi384", "384b": "multi384", "10000": "10000", "10000s": "10000osd-stats"}


def build(tmp: Path, case: str) -> snapshot.Snapshot:
    if case in LARGE:
        _, d = LARGE[case](tmp)
        return snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"])
    osd_dump, crush = build_case(tmp / case, case).dumps()
    return snapshot.load(osd_dump, crush)


def worst(dev: Dict[str, Any], at: int) -> float:
    return max([v[at] for v in dev["pools"].values()] + [0.0])


def row(snap: snapshot.Snapshot, target: str, and_balance: bool) -> List[Any]:
    t0 = time.perf_counter()
    r = drain_report(snap, target, and_balance)
    dt = time.perf_counter() - t0
    d = r["deviation"]
    return [target + (" --and-balance" if and_balance else ""), r["replicas"], r["moves"], r["forced"],
            worst(d, 0), worst(d, 1), d["total"][0], d["total"][1], len(r["uneven"]), dt]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="384,384b", help="maps: 384, 384b, 10000, 10000s")
    ap.add_argument("--target", action="append", help="osd.N or a bucket (default: osd.17 and host1)")
    a = ap.parse_args()
    targets = a.target or ["osd.17", "host1"]
    print(f"{'map':<6} {'drain':<26} {'replicas':>8} {'moves':>6} {'forced':>6} {'pool dev before':>15} "
          f"{'after':>6} {'total before':>12} {'after':>6} {'uneven':>6} {'seconds':>8}")
    with tempfile.TemporaryDirectory(prefix="drain-bench-") as d:
        built: Dict[str, snapshot.Snapshot] = {}
        for name in a.only.split(","):
            case = CASE[name]
            if case not in built:
                t0 = time.perf_counter()
                built[case] = build(Path(d) / case, case)
                print(f"# {case}: built in {time.perf_counter() - t0:.0f} s")
            snap = built[case]
            if name == "384b":
                res = Balancer(snap).run()
                snap = applied(snap, res.items)
            for t in targets:
                for both in (False, True):
                    v = row(snap, t, both)
                    print(f"{name:<6} {v[0]:<26} {v[1]:>8} {v[2]:>6} {v[3]:>6} {v[4]:>15.2f} {v[5]:>6.2f} "
                          f"{v[6]:>12.2f} {v[7]:>6.2f} {v[8]:>6} {v[9]:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
