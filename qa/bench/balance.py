"""Benchmark: pg_advisor's balancer beside `osdmaptool --upmap`, on the same maps, one run.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.balance [--only 60,1000,multi,10000,bytes]
                                                       [--only multi384,multi384rgw]
                                                       [--tool-timeout 300] [--bytes-sigma 0.5]
    bash qa/cluster/tentacle.sh exec env PYTHONPATH=src:. python3 -m qa.bench.balance ...   (Tentacle's tools)

Maps: qa/maps/monbuilt.py's cases, made by a throw-away mon ("multi384" and "multi384rgw" not
by default: osdmaptool takes minutes there); "bytes": the 60-OSD map with lognormally spread
PG sizes, by counts alone and in bytes mode. osdmaptool runs at --upmap-deviation 5 (Ceph's
default) and 1; every result is measured the same way, with pg_advisor's exact CRUSH; peak
RSS is osdmaptool's own, pg_advisor's this process's so far. The columns: doc/balance.rst.
"""
import sys
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
from .common import Items, each_map, map_label, parser, self_peak_mib, table, timed, upmap

COUNT_COLS = [("map", "<32"), ("balancer", "<30"), ("pool_dev", ">8.2f"), ("tot_dev", ">7.2f"),
              ("stdev", ">6.2f"), ("items", ">6"), ("moves", ">6"), ("bound", ">6"), ("broken", ">6"),
              ("prim", ">5"), ("seconds", ">8.2f"), ("peak MiB", ">8.0f"), ("status", "")]
FIGURES = ("pool_dev", "total_dev", "stdev", "items", "moves", "lower_bound", "broken", "primaries")
BYTES_COLS = [("balancer", "<40"), ("fullest", ">8.3f"), ("emptiest", ">8.3f"), ("items", ">6"),
              ("prim", ">5"), ("seconds", ">8.2f")]


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
        # PGs whose primary the items change: each drops the client ops in flight at the old
        # primary when its backfill ends (a client then waits objecter_timeout to resend)
        primaries += int(((m0.up_primary != m1.up_primary) & (m0.up_primary >= 0)).sum())
        # sets that break the rule's counts (osdmaptool checks fewer of them than the rule means)
        broken += int((breaks(st.shape, b.anc, m1.up) & ~breaks(st.shape, b.anc, st.raw)).sum())
        ups.append(m1.up)
        moves += replica_moves(st.pool.type, m0.up, m1.up)
    pool_dev, total_dev, stdev = spread(b.states, ups, snap.osds.count)
    return {"pool_dev": pool_dev, "total_dev": total_dev, "stdev": stdev,
            "items": sum(1 for v in items.values() if v), "moves": moves,
            "lower_bound": b.lower_bound(), "broken": broken, "primaries": primaries}


def advised(b: Balancer) -> Tuple[Items, float]:
    """The items a run of `b` sets, and its seconds."""
    res, dt = timed(b.run)
    assert all(res.items.values()), "a fresh map has no items to remove"
    return {k: tuple(v) for k, v in res.items.items()}, dt


def count_rows(gm: GeneratedMap, limit: float) -> List[List[Any]]:
    snap = snapshot.load(*gm.dumps())
    label = map_label(gm.num_osds, snap)
    m = measure(snap, {})
    rows: List[List[Any]] = [[label, "CRUSH alone", *(m[k] for k in FIGURES), 0.0, None, ""]]
    for dev in (5, 1):
        items, run = upmap(gm, dev, gm.path.parent / f"up{dev}", limit)
        m = measure(snap, items)
        rows.append([label, f"osdmaptool --upmap-deviation {dev}", *(m[k] for k in FIGURES), run.seconds,
                     run.peak_mib, run.status])
    items, dt = advised(Balancer(snap))
    m = measure(snap, items)
    rows.append([label, "pg_advisor", *(m[k] for k in FIGURES), dt, self_peak_mib(), "done"])
    return rows


def fullness(snap: snapshot.Snapshot, items: Items, sizes: Dict[str, int]) -> Tuple[float, float]:
    used = np.zeros(snap.osds.count)
    pl = Placer(applied(snap, items))
    for pool in snap.pools:
        m = pl.map_pool(pool)
        for r in range(m.up.shape[0]):
            used[m.up_list(r)] += sizes[m.pgid(r)]
    live = used[snap.osds.crush_weight > 0]
    return float(live.max() / live.mean()), float(live.min() / live.mean())


def bytes_rows(gm: GeneratedMap, limit: float, sigma: float) -> List[List[Any]]:
    osd_dump, crush = gm.dumps()
    pg_dump = synthetic_pg_dump(snapshot.load(osd_dump, crush), sigma)
    sizes = {s["pgid"]: s["stat_sum"]["num_bytes"] for s in pg_dump["pg_stats"]}
    snap = snapshot.load(osd_dump, crush, pg_dump)
    out: List[List[Any]] = [["CRUSH alone", *fullness(snap, {}, sizes), 0, 0, 0.0]]
    items, run = upmap(gm, 1, gm.path.parent / "upbytes", limit)
    out.append(["osdmaptool --upmap-deviation 1", *fullness(snap, items, sizes), len(items),
                changed_primaries(snap, items), run.seconds])
    for mode in BalanceMode:
        r, dt = timed(lambda: balance_report(snap, Aim(mode=mode)))
        got: Items = {k: tuple((int(p[0]), int(p[1])) for p in v) for k, v in r["items"].items() if v}
        out.append([f"pg_advisor --mode {mode} ({r['moves']} moves)", *fullness(snap, got, sizes),
                    len(got), changed_primaries(snap, got), dt])
    return out


def main(argv: Optional[List[str]] = None) -> int:
    args = parser(__doc__, only="60,1000,multi,10000,bytes", tool_timeout=300.0,
                  bytes_sigma=0.5).parse_args(argv)
    print_ceph_version()      # osdmaptool's and the throw-away mons' (no cluster runs)
    names = args.only.split(",")
    rows = each_map([n for n in names if n != "bytes"], "pga-bal-",
                    lambda name, tmp: count_rows(build_case(tmp, name), args.tool_timeout))
    byte_rows = each_map([n for n in names if n == "bytes"][:1], "pga-bal-", lambda _, tmp: bytes_rows(
        build_case(tmp, "60"), args.tool_timeout, args.bytes_sigma))
    if rows:
        table(COUNT_COLS, rows)
    if byte_rows:
        print(f"\n60 OSDs, 2048 PGs of lognormal(0, {args.bytes_sigma}) sizes: OSD fullness against the mean")
        table(BYTES_COLS, byte_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
