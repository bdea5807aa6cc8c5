"""Benchmark: map every PG of a large map with pg_advisor's numpy CRUSH and with osdmaptool.

    /usr/bin/python3 -m qa.bench.crush [--osds 10000] [--pg-num 131072]

Builds a map of racks x hosts x OSDs (mixed 1:2:4 weights) with crushtool/osdmaptool,
then in one run: osdmaptool --test-map-pgs (Ceph's C++ mapper) and our Placer on the same
map, and compares 100% of the up sets with osdmaptool --test-map-pgs-dump-all.

osdmaptool can set a pool's pg_num (--pg_num) but not its pgp_num, which --createsimple
fixes at OSDs << pgp-bits. The comparison therefore runs both mappers at the map's own
pgp_num; our timing is also given at pgp_num == pg_num, the state of a settled pool.
"""
import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pg_advisor.model import snapshot
from pg_advisor.crush.placement import Placer

from ..maps.crushgen import REPLICATED_HOST, Layout, OsdMapSpec, generate


def mixed(osd: int) -> float:
    # 1:2:4 like 4/8/16 TB drives; absolute TB would overflow the root's 16.16 weight
    return (1.0, 2.0, 4.0)[osd % 3]


def child_peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", type=int, default=20)
    ap.add_argument("--hosts", type=int, default=25, help="hosts per rack")
    ap.add_argument("--osds-per-host", type=int, default=20)
    ap.add_argument("--pg-num", type=int, default=131072)
    # (pgp_num may not pass pg_num: 10,000 OSDs << 3 = 80,000 of 131,072)
    ap.add_argument("--pg-bits", type=int, default=3, help="createsimple: pgp_num = OSDs << this")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    layout = Layout(args.racks, args.hosts, args.osds_per_host, weight=mixed)
    with tempfile.TemporaryDirectory(prefix="pga-bench-") as tmp:
        gm = generate(Path(tmp), layout, [REPLICATED_HOST], OsdMapSpec(pg_bits=args.pg_bits))
        osd_dump, crush = gm.dumps(args.pg_num)
        pool_pgp = osd_dump["pools"][0]["pg_placement_num"]

        t0 = time.perf_counter()
        subprocess.run(["osdmaptool", str(gm.path), "--mark-up-in", "--test-map-pgs",
                        "--pg_num", str(args.pg_num)], check=True, capture_output=True)
        t_tool = time.perf_counter() - t0
        tool_peak = child_peak_mib()
        ref = gm.reference(args.pg_num)

        snap = snapshot.load(osd_dump, crush)
        pool = snap.pools[0]
        t0 = time.perf_counter()
        placer = Placer(snap)
        m = placer.map_pool(pool)
        t_ours_same = time.perf_counter() - t0
        bad = sum((m.up_list(i), int(m.up_primary[i])) != ref[m.pgid(i)] for i in range(m.ps.size))
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            Placer(snap).map_pool(pool, pgp_num=args.pg_num)
            times.append(time.perf_counter() - t0)
        ours_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"map: {layout.num_osds} OSDs ({args.racks} racks x {args.hosts} hosts x "
          f"{args.osds_per_host}, weights 1/2/4), one pool of size {pool.size}, "
          f"pg_num {args.pg_num}, rule chooseleaf firstn host")
    print(f"{'mapper':<44} {'pgp_num':>8} {'seconds':>8} {'peak MiB':>9}")
    print(f"{'osdmaptool --test-map-pgs (C++)':<44} {pool_pgp:>8} {t_tool:>8.2f} {tool_peak:>9.0f}")
    print(f"{'pg_advisor Placer (numpy), same map':<44} {pool_pgp:>8} {t_ours_same:>8.2f} {'':>9}")
    print(f"{'pg_advisor Placer (numpy), best of ' + str(args.repeat):<44} {args.pg_num:>8} "
          f"{min(times):>8.2f} {ours_peak:>9.0f}")
    print(f"up sets compared with osdmaptool --test-map-pgs-dump-all: {m.ps.size} PGs, "
          f"{bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
