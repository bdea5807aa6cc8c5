"""Benchmark: what `drain` proposes on maps made by a throw-away mon (qa/maps/monbuilt.py),
beside Ceph's own path in the same run.

    PYTHONPATH=src:. /usr/bin/python3 -m qa.bench.drain [--only 384,384b,10000] [--target osd.17]
                                                       [--tool-timeout 300]

Per map and target, plain and with --and-balance: the replicas on the drained OSDs, the moves
(and of them the forced ones), the other OSDs' largest deviation from their share in any
pool and in total, before and after, and the time; beside Ceph's path on the same map file:
`ceph osd crush reweight osd.N 0` for each drained OSD (the mon's cleaning of the items, as
`osdmaptool --upmap-cleanup` says), then `osdmaptool --upmap` at deviation 5, measured as
qa/bench/balance.py measures. Maps: "384", monbuilt's "multi384"; "384b", the same evened by
`balance` first (its items set by the mon); "10000"; "10000s", qa/bench/large_inputs.py's
10000osd-stats (no map file: no Ceph path). The columns and runs: doc/balance.rst.
"""
import dataclasses
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from pg_advisor.analysis.growth import placer_after
from pg_advisor.balance.balancer import Balancer
from pg_advisor.balance.drain import drain_osds, drain_report
from pg_advisor.balance.reweighted import with_crush_weights
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor_testkit.proposals import applied, replica_moves

from ..cluster.ceph_release import print_ceph_version
from ..maps.crushgen import GeneratedMap
from ..maps.monbuilt import build_case
from .balance import measure, spread
from .common import line, parser, table, timed, upmap
from .large_inputs import CASES as LARGE

CASE = {"384": "multi384", "384b": "multi384", "10000": "10000", "10000s": "10000osd-stats"}
COLS = [("map", "<6"), ("drain", "<32"), ("replicas", ">8"), ("moves", ">6"), ("forced", ">6"),
        ("pool dev before", ">15.2f"), ("after", ">6.2f"), ("total before", ">12.2f"), ("after", ">6.2f"),
        ("uneven", ">6"), ("seconds", ">8.2f"), ("items", ">6"), ("broken", ">6"), ("net", ">6"),
        ("status", "")]


def build(tmp: Path, case: str) -> Tuple[Optional[GeneratedMap], snapshot.Snapshot]:
    if case in LARGE:
        _, d = LARGE[case](tmp)
        return None, snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"])
    gm = build_case(tmp / case, case)
    return gm, snapshot.load(*gm.dumps())


def mapped_off(a: Placer, b: Placer, snap: snapshot.Snapshot) -> int:
    """PGs the two map otherwise."""
    return sum(int((a.map_pool(p).up != b.map_pool(p).up).any(axis=1).sum()) for p in snap.pools)


def balanced(tmp: Path, case: str, snap: snapshot.Snapshot) -> Tuple[GeneratedMap, snapshot.Snapshot]:
    """The map evened by `balance`, its items set by the mon in a map file of its own (for
    osdmaptool), checked to map every PG as the items applied to `snap` do."""
    res = Balancer(snap).run()
    gm = build_case(tmp / f"{case}-balanced", case, res.items)
    got = snapshot.load(*gm.dumps())
    off = mapped_off(Placer(applied(snap, res.items)), Placer(got), snap)
    if off:
        raise RuntimeError(f"the mon's map with the balance items maps {off} PGs otherwise than the items")
    return gm, got


def worst(dev: Dict[str, Any], at: int) -> float:
    return max([v[at] for v in dev["pools"].values()] + [0.0])


def row(snap: snapshot.Snapshot, target: str, and_balance: bool) -> List[Any]:
    r, dt = timed(lambda: drain_report(snap, target, and_balance))
    d = r["deviation"]
    m = measure(snap, r["items"])      # the same legality check as Ceph's path gets
    return [target + (" --and-balance" if and_balance else ""), r["replicas"], r["moves"], r["forced"],
            worst(d, 0), worst(d, 1), d["total"][0], d["total"][1], len(r["uneven"]), dt,
            m["items"], m["broken"], r["moves"], ""]


def ceph_rows(gm: GeneratedMap, snap: snapshot.Snapshot, target: str, limit: float) -> List[List[Any]]:
    """`ceph osd crush reweight` to 0 of the target's OSDs, then `osdmaptool --upmap`."""
    osds = drain_osds(snap, target)
    zero = {o: 0.0 for o in osds}
    gm0 = dataclasses.replace(gm, crush_weights={**gm.crush_weights, **zero})
    tag = target.replace(".", "")
    cleaned, run = upmap(gm0, None, gm.path.parent / f"clean-{tag}", limit)
    assert run.status == "done", run.status
    crushed = applied(snapshot.load(*gm0.dumps()), cleaned)     # as the mon leaves it after the change
    # pg_advisor's own model of the change and of the mon's cleaning agrees on every PG
    pc = Placer(crushed)
    off = mapped_off(placer_after(with_crush_weights(snap, zero)), pc, snap)
    assert not off, f"{target}: the model of the reweight maps {off} PGs otherwise than Ceph"
    states = Balancer(crushed).states
    p0 = Placer(snap)
    ups = [p0.map_pool(st.pool).up for st in states]
    replicas = int(sum(np.isin(up, osds).sum() for up in ups))
    crush_moves = sum(replica_moves(st.pool.type, up, pc.map_pool(st.pool).up) for st, up in zip(states, ups))
    # the deviations of the pools the drain touches, as drain_report's
    touched = [st for st, up in zip(states, ups) if np.isin(up, osds).any()]

    def devs(pl: Placer) -> Tuple[float, float, float]:
        return spread(touched, [pl.map_pool(st.pool).up for st in touched], snap.osds.count)
    before = devs(p0)
    alone = measure(crushed, {})
    items, run = upmap(gm0, 5, gm.path.parent / f"up5-{tag}", limit)
    after = measure(crushed, items)
    # the PGs whose items osdmaptool's balancing sets (not those its cleaning restates)
    after["items"] = sum(1 for k, v in items.items() if v and tuple(v) != crushed.pg_upmap_items.get(k))
    final = Placer(applied(crushed, items))
    # a replica CRUSH moves and an item moves back is in `moves` twice, once in `net`
    net = sum(replica_moves(st.pool.type, up, final.map_pool(st.pool).up) for st, up in zip(states, ups))
    rows = []
    for label, moves, m, dev, secs, n, status in (
            (f"{target} crush reweight 0", crush_moves, alone, devs(pc), None, crush_moves, ""),
            (f"{target} + osdmaptool dev 5", crush_moves + after["moves"], after, devs(final), run.seconds,
             net, run.status)):
        rows.append([label, replicas, moves, moves - replicas, before[0], dev[0], before[1], dev[1], None,
                     secs, m["items"], m["broken"], n, status])
    return rows


def main() -> None:
    ap = parser(__doc__, only="384,384b", tool_timeout=300.0)
    ap.add_argument("--target", action="append", help="osd.N or a bucket (default: osd.17 and host1)")
    a = ap.parse_args()
    targets = a.target or ["osd.17", "host1"]
    print_ceph_version()      # osdmaptool's and the throw-away mons'
    table(COLS, [])
    with tempfile.TemporaryDirectory(prefix="drain-bench-") as d:
        built: Dict[str, Tuple[Optional[GeneratedMap], snapshot.Snapshot]] = {}
        for name in a.only.split(","):
            case = CASE[name]
            if case not in built:
                built[case], secs = timed(lambda: build(Path(d) / case, case))
                print(f"# {case}: built in {secs:.0f} s")
            gm, snap = built[case]
            if name == "384b":
                (gm, snap), secs = timed(lambda: balanced(Path(d), case, snap))
                print(f"# {case} balanced, its items set by a mon: {secs:.0f} s")
            for t in targets:
                for both in (False, True):
                    line(COLS, [name, *row(snap, t, both)])
                if gm is not None:
                    for v in ceph_rows(gm, snap, t, a.tool_timeout):
                        line(COLS, [name, *v])


if __name__ == "__main__":
    main()
