"""Benchmark: pg_advisor's balancer beside `osdmaptool --upmap`, on the same maps, one run.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.balance [--only 60,1000,multi,10000,bytes]
                                                       [--only multi384,multi384rgw]
                                                       [--tool-timeout 300] [--bytes-sigma 0.5]
    bash qa/cluster/tentacle.sh exec env PYTHONPATH=src:. python3 -m qa.bench.balance ...   (Tentacle's tools)

Maps, all made by a throw-away mon (qa/maps/monbuilt.py): 60 OSDs (5 hosts x 12) with a
2048-PG pool; 1,000 OSDs of mixed weights in racks and hosts with a replicated pool per
rule (host; rack; 3 racks then a host in each) plus an EC 4+2 pool; "multi": 72 OSDs in 3
rooms of 2 racks of 3 hosts, rooms of weight 1 : 2 : 3, with a pool per rule of two choose
steps (EC 8+3 in 4 racks of 3 hosts, 4 replicas in 2 racks of 2 hosts, 6 in 3 rooms of 2
hosts) and an ssd pool, one OSD out and two of CRUSH weight 0; 10,000 OSDs with one
81,920-PG pool; "multi384" and "multi384rgw" (not by default: osdmaptool takes minutes
there), the same rules at 384 OSDs (3 rooms of 4 racks of 4 hosts of 8), the latter with a
pool of one replica per room, in the states monbuilt's STATES gives them (one OSD out,
others of other CRUSH weights: osdmaptool reads no reweight). osdmaptool runs at
--upmap-deviation 5 (Ceph's default) and 1 with a time limit; its commands are applied to
the map and every result is measured the same way, with pg_advisor's exact CRUSH: the
largest deviation from an OSD's share (what the rule allows, share.py) in any pool and in
the OSDs' totals, stdev of the totals' deviations, PGs with items, replica moves against
the lower bound, items that break the rule's counts
(src/pg_advisor_testkit/upmap_checker.py), PGs whose primary the items change ("prim": when such a PG's
backfill ends, the old primary drops the client ops in flight there), wall time, peak
memory (of the process so far: pg_advisor's own, osdmaptool's largest).
"bytes": the 60-OSD map with lognormally spread PG sizes, fullest/emptiest OSD against
the mean, by counts alone and in bytes mode.
"""
import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from pg_advisor.model import snapshot
from pg_advisor.balance.balancer import Balancer
from pg_advisor.balance.proposal import Aim, balance_report
from pg_advisor.crush.placement import Placer
from pg_advisor.model.distribution import up_counts
from pg_advisor.model.options import BalanceMode
from pg_advisor.rules.legality import breaks
from pg_advisor_testkit.proposals import applied, changed_primaries, replica_moves

from ..cluster.ceph_release import print_ceph_version
from ..maps.crushgen import GeneratedMap, synthetic_pg_dump
from ..maps.monbuilt import build_case

ITEM_RE = re.compile(r"^ceph osd pg-upmap-items (\S+) (.*)$")
RM_ITEM_RE = re.compile(r"^ceph osd rm-pg-upmap-items (\S+)$")
Items = Dict[str, Tuple[Tuple[int, int], ...]]


def make_map(name: str, tmp: Path) -> GeneratedMap:
    return build_case(tmp, "60" if name == "bytes" else name)


def spread(states: List[Any], ups: List[np.ndarray], n: int) -> Tuple[float, float, float]:
    """(largest deviation from an OSD's share in any pool, the same of the OSDs' totals, the
    totals' deviations' stdev) of the pools' up sets `ups`, against the states' shares."""
    total, share = np.zeros(n), np.zeros(n)
    pool_dev = 0.0
    for st, up in zip(states, ups):
        c = up_counts(up, n)
        pool_dev = max(pool_dev, float(np.abs(c - st.share)[st.share > 0].max()))
        total += c
        share += st.share
    live = share > 0
    return pool_dev, float(np.abs(total - share)[live].max()), float((total - share)[live].std())


def measure(snap: snapshot.Snapshot, items: Items) -> Dict[str, Any]:
    pl0, pl1 = Placer(snap), Placer(applied(snap, items))
    b = Balancer(snap, pl0)
    moves, broken, primaries = 0, 0, 0
    ups: List[np.ndarray] = []
    for st in b.states:
        m0, m1 = pl0.map_pool(st.pool), pl1.map_pool(st.pool)
        before, after = m0.up, m1.up
        # PGs whose primary the items change: each drops the client ops in flight at the old
        # primary when its backfill ends (a client then waits objecter_timeout to resend)
        primaries += int(((m0.up_primary != m1.up_primary) & (m0.up_primary >= 0)).sum())
        # sets that break the rule's counts (osdmaptool checks fewer of them than the rule means)
        broken += int((breaks(st.shape, b.anc, after) & ~breaks(st.shape, b.anc, st.raw)).sum())
        ups.append(after)
        moves += replica_moves(st.pool.type, before, after)
    pool_dev, total_dev, stdev = spread(b.states, ups, snap.osds.count)
    return {"pool_dev": pool_dev, "total_dev": total_dev, "stdev": stdev,
            "items": sum(1 for v in items.values() if v), "moves": moves,
            "lower_bound": b.lower_bound(), "broken": broken, "primaries": primaries}


def run_tool(gm: GeneratedMap, deviation: Optional[int], timeout: float,
             out: Path) -> Tuple[Items, float, str]:
    """osdmaptool --upmap at `deviation` (None: --upmap-cleanup alone) on the map in its
    state: (pgid -> its item list, empty where the PG's items are removed; seconds; status).
    Both first clean the map's items as the mon does after a change (OSDMap::clean_pg_upmaps),
    writing rm-pg-upmap-items (and a PG's items left) before any new ones."""
    t0 = time.perf_counter()
    args = ["--upmap-cleanup", str(out)] if deviation is None else \
        ["--upmap", str(out), "--upmap-deviation", str(deviation), "--upmap-max", "1000000"]
    try:
        subprocess.run(["osdmaptool", str(gm.path), *gm.state_args(), *args],
                       capture_output=True, timeout=timeout, check=True)
        status = "done"
    except subprocess.TimeoutExpired:
        status = f"hit the {timeout:.0f} s limit"
    dt = time.perf_counter() - t0
    items: Items = {}
    if out.exists():
        for line in out.read_text().splitlines():
            m = ITEM_RE.match(line)
            if m:
                v = [int(x) for x in m.group(2).split()]
                items[m.group(1)] = tuple(zip(v[0::2], v[1::2]))
            elif m := RM_ITEM_RE.match(line):
                items[m.group(1)] = ()
    return items, dt, status


def peak(who: int) -> str:
    return f"{resource.getrusage(who).ru_maxrss / 1024:.0f}"


def count_rows(name: str, gm: GeneratedMap, timeout: float) -> List[List[Any]]:
    osd_dump, crush = gm.dumps()
    snap = snapshot.load(osd_dump, crush)
    pgs = sum(p.pg_num for p in snap.pools)
    label = f"{gm.num_osds} OSDs, {len(snap.pools)} pool{'s' if len(snap.pools) > 1 else ''}, {pgs} PGs"
    rows: List[List[Any]] = [[label, "CRUSH alone", measure(snap, {}), 0.0, "-", ""]]
    for dev in (5, 1):
        items, dt, status = run_tool(gm, dev, timeout, gm.path.parent / f"up{dev}")
        rows.append([label, f"osdmaptool --upmap-deviation {dev}", measure(snap, items), dt,
                     peak(resource.RUSAGE_CHILDREN), status])
    t0 = time.perf_counter()
    res = Balancer(snap).run()
    dt = time.perf_counter() - t0
    items = {k: tuple(v) for k, v in res.items.items() if v}
    removed = [k for k, v in res.items.items() if not v]
    assert not removed, removed      # a fresh map has no items to remove
    rows.append([label, "pg_advisor", measure(snap, items), dt, peak(resource.RUSAGE_SELF), "done"])
    return rows


def print_counts(rows: List[List[Any]]) -> None:
    print(f"{'map':<32} {'balancer':<30} {'pool_dev':>8} {'tot_dev':>7} {'stdev':>6} {'items':>6} "
          f"{'moves':>6} {'bound':>6} {'broken':>6} {'prim':>5} {'seconds':>8} {'peak MiB':>8}  status")
    for label, who, m, dt, pk, status in rows:
        print(f"{label:<32} {who:<30} {m['pool_dev']:>8.2f} {m['total_dev']:>7.2f} {m['stdev']:>6.2f} "
              f"{m['items']:>6} {m['moves']:>6} {m['lower_bound']:>6} {m['broken']:>6} "
              f"{m['primaries']:>5} {dt:>8.2f} "
              f"{pk:>8}  {status}")


def fullness(snap: snapshot.Snapshot, items: Items, sizes: Dict[str, int]) -> Tuple[float, float]:
    used = np.zeros(snap.osds.count)
    pl = Placer(applied(snap, items))
    for pool in snap.pools:
        m = pl.map_pool(pool)
        for r in range(m.up.shape[0]):
            used[m.up_list(r)] += sizes[m.pgid(r)]
    live = used[snap.osds.crush_weight > 0]
    return float(live.max() / live.mean()), float(live.min() / live.mean())


def bytes_rows(gm: GeneratedMap, timeout: float, sigma: float) -> List[List[Any]]:
    osd_dump, crush = gm.dumps()
    bare = snapshot.load(osd_dump, crush)
    pg_dump = synthetic_pg_dump(bare, sigma)
    sizes = {s["pgid"]: s["stat_sum"]["num_bytes"] for s in pg_dump["pg_stats"]}
    snap = snapshot.load(osd_dump, crush, pg_dump)
    out: List[List[Any]] = [["CRUSH alone", fullness(snap, {}, sizes), 0, 0, 0.0]]
    items, dt, _ = run_tool(gm, 1, timeout, gm.path.parent / "upbytes")
    out.append(["osdmaptool --upmap-deviation 1", fullness(snap, items, sizes), len(items),
                changed_primaries(snap, items), dt])
    for mode in BalanceMode:
        t0 = time.perf_counter()
        r = balance_report(snap, Aim(mode=mode))
        dt = time.perf_counter() - t0
        got: Items = {k: tuple((int(p[0]), int(p[1])) for p in v) for k, v in r["items"].items() if v}
        out.append([f"pg_advisor --mode {mode} ({r['moves']} moves)", fullness(snap, got, sizes),
                    len(got), changed_primaries(snap, got), dt])
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--only", default="60,1000,multi,10000,bytes")
    ap.add_argument("--tool-timeout", type=float, default=300.0)
    ap.add_argument("--bytes-sigma", type=float, default=0.5,
                    help="spread of the PG sizes on the bytes map (lognormal sigma)")
    args = ap.parse_args(argv)
    print_ceph_version()      # osdmaptool's and the throw-away mons' (no cluster runs)
    rows: List[List[Any]] = []
    byte_rows: List[List[Any]] = []
    for name in args.only.split(","):
        with tempfile.TemporaryDirectory(prefix="pga-bal-") as tmp:
            gm = make_map(name, Path(tmp))
            if name == "bytes":
                byte_rows = bytes_rows(gm, args.tool_timeout, args.bytes_sigma)
            else:
                rows += count_rows(name, gm, args.tool_timeout)
    if rows:
        print_counts(rows)
    if byte_rows:
        print(f"\n60 OSDs, 2048 PGs of lognormal(0, {args.bytes_sigma}) sizes: OSD fullness against "
              "the mean")
        print(f"{'balancer':<40} {'fullest':>8} {'emptiest':>8} {'items':>6} {'prim':>5} "
              f"{'seconds':>8}")
        for who, (hi, lo), n_items, prim, dt in byte_rows:
            print(f"{who:<40} {hi:>8.3f} {lo:>8.3f} {n_items:>6} {prim:>5} {dt:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
