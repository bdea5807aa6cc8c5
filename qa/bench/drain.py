"""Benchmark: what `drain` proposes on maps made by a throw-away mon (qa/maps/monbuilt.py),
beside Ceph's own path in the same run.

    PYTHONPATH=src:. /usr/bin/python3 -m qa.bench.drain [--only 384,384b,10000] [--target osd.17]
                                                       [--tool-timeout 300]

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

Ceph's path without pg_advisor, on the same map file (not on "10000s", which has none):
`ceph osd crush reweight osd.N 0` for each drained OSD, CRUSH remapping every PG that used
them (the mon then cleans the items the new map breaks: `osdmaptool --upmap-cleanup`
says which), and then Ceph's balancer, `osdmaptool --upmap` at deviation 5 (Ceph's
default) on the reweighted map. Its moves are CRUSH's (against the up sets before, the
items of "384b" included: that map's items are set by the mon, monbuilt's `items`) plus
those of osdmaptool's items; measured as qa/bench/balance.py measures, with pg_advisor's
exact CRUSH; "items": PGs whose items the drain sets or changes (osdmaptool: those its
balancing sets, not those whose kept items its cleaning restates); "broken": PGs whose
set the items make break the rule's counts; "net": replicas on another OSD at the end than
at the start (a replica CRUSH moves and an item of osdmaptool's moves back counts twice in
"moves", as it moves twice once the reweight's backfill is done first, and not at all here).
"""
import argparse
import dataclasses
import tempfile
import time
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
from .balance import measure, run_tool, spread
from .large_inputs import CASES as LARGE

CASE = {"384": "multi384", "384b": "multi384", "10000": "10000", "10000s": "10000osd-stats"}
HEADER = (f"{'map':<6} {'drain':<32} {'replicas':>8} {'moves':>6} {'forced':>6} {'pool dev before':>15} "
          f"{'after':>6} {'total before':>12} {'after':>6} {'uneven':>6} {'seconds':>8} {'items':>6} "
          f"{'broken':>6} {'net':>6}  status")


def build(tmp: Path, case: str) -> Tuple[Optional[GeneratedMap], snapshot.Snapshot]:
    if case in LARGE:
        _, d = LARGE[case](tmp)
        return None, snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"])
    gm = build_case(tmp / case, case)
    return gm, snapshot.load(*gm.dumps())


def balanced(tmp: Path, case: str, snap: snapshot.Snapshot) -> Tuple[GeneratedMap, snapshot.Snapshot]:
    """The map evened by `balance`, its items set by the mon in a map file of its own (for
    osdmaptool), checked to map every PG as the items applied to `snap` do."""
    res = Balancer(snap).run()
    gm = build_case(tmp / f"{case}-balanced", case, res.items)
    got = snapshot.load(*gm.dumps())
    want, have = Placer(applied(snap, res.items)), Placer(got)
    off = sum(int((want.map_pool(p).up != have.map_pool(p).up).any(axis=1).sum()) for p in snap.pools)
    if off:
        raise RuntimeError(f"the mon's map with the balance items maps {off} PGs otherwise than the items")
    return gm, got


def worst(dev: Dict[str, Any], at: int) -> float:
    return max([v[at] for v in dev["pools"].values()] + [0.0])


def row(snap: snapshot.Snapshot, target: str, and_balance: bool) -> List[Any]:
    t0 = time.perf_counter()
    r = drain_report(snap, target, and_balance)
    dt = time.perf_counter() - t0
    d = r["deviation"]
    m = measure(snap, r["items"])      # the same legality check as Ceph's path gets
    return [target + (" --and-balance" if and_balance else ""), r["replicas"], r["moves"], r["forced"],
            worst(d, 0), worst(d, 1), d["total"][0], d["total"][1], len(r["uneven"]), f"{dt:.2f}",
            m["items"], m["broken"], r["moves"], ""]


def ceph_rows(gm: GeneratedMap, snap: snapshot.Snapshot, target: str, timeout: float) -> List[List[Any]]:
    """`ceph osd crush reweight` to 0 of the target's OSDs, then `osdmaptool --upmap`."""
    osds = drain_osds(snap, target)
    zero = {o: 0.0 for o in osds}
    gm0 = dataclasses.replace(gm, crush_weights={**gm.crush_weights, **zero})
    reweighted = snapshot.load(*gm0.dumps())
    tag = target.replace(".", "")
    cleaned, _, status = run_tool(gm0, None, timeout, gm.path.parent / f"clean-{tag}")
    assert status == "done", status
    crushed = applied(reweighted, cleaned)     # as the mon leaves it after the change
    # pg_advisor's own model of the change and of the mon's cleaning agrees on every PG
    model = placer_after(with_crush_weights(snap, zero))
    pc = Placer(crushed)
    off = sum(int((model.map_pool(p).up != pc.map_pool(p).up).any(axis=1).sum()) for p in snap.pools)
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
    items, dt, status = run_tool(gm0, 5, timeout, gm.path.parent / f"up5-{tag}")
    after = measure(crushed, items)
    # the PGs whose items osdmaptool's balancing sets (not those its cleaning restates)
    after["items"] = sum(1 for k, v in items.items() if v and tuple(v) != crushed.pg_upmap_items.get(k))
    final = Placer(applied(crushed, items))
    # a replica CRUSH moves and an item moves back is in `moves` twice, once in `net`
    net = sum(replica_moves(st.pool.type, up, final.map_pool(st.pool).up) for st, up in zip(states, ups))
    rows = []
    for label, moves, m, dev, secs, n in (
            (f"{target} crush reweight 0", crush_moves, alone, devs(pc), "-", crush_moves),
            (f"{target} + osdmaptool dev 5", crush_moves + after["moves"], after, devs(final),
             f"{dt:.2f}", net)):
        rows.append([label, replicas, moves, moves - replicas, before[0], dev[0], before[1], dev[1], "-",
                     secs, m["items"], m["broken"], n, "" if secs == "-" else status])
    return rows


def print_row(name: str, v: List[Any]) -> None:
    print(f"{name:<6} {v[0]:<32} {v[1]:>8} {v[2]:>6} {v[3]:>6} {v[4]:>15.2f} {v[5]:>6.2f} "
          f"{v[6]:>12.2f} {v[7]:>6.2f} {v[8]:>6} {v[9]:>8} {v[10]:>6} {v[11]:>6} {v[12]:>6}  "
          f"{v[13]}".rstrip(), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="384,384b", help="maps: 384, 384b, 10000, 10000s")
    ap.add_argument("--target", action="append", help="osd.N or a bucket (default: osd.17 and host1)")
    ap.add_argument("--tool-timeout", type=float, default=300.0, help="osdmaptool's limit, seconds")
    a = ap.parse_args()
    targets = a.target or ["osd.17", "host1"]
    print_ceph_version()      # osdmaptool's and the throw-away mons'
    print(HEADER)
    with tempfile.TemporaryDirectory(prefix="drain-bench-") as d:
        built: Dict[str, Tuple[Optional[GeneratedMap], snapshot.Snapshot]] = {}
        for name in a.only.split(","):
            case = CASE[name]
            if case not in built:
                t0 = time.perf_counter()
                built[case] = build(Path(d) / case, case)
                print(f"# {case}: built in {time.perf_counter() - t0:.0f} s")
            gm, snap = built[case]
            if name == "384b":
                t0 = time.perf_counter()
                gm, snap = balanced(Path(d), case, snap)
                print(f"# {case} balanced, its items set by a mon: {time.perf_counter() - t0:.0f} s")
            for t in targets:
                for both in (False, True):
                    print_row(name, row(snap, t, both))
                if gm is not None:
                    for v in ceph_rows(gm, snap, t, a.tool_timeout):
                        print_row(name, v)


if __name__ == "__main__":
    main()
