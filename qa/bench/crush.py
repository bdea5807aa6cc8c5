"""Benchmark: map every PG of a large map with pg_advisor's numpy CRUSH and with osdmaptool.

    /usr/bin/python3 -m qa.bench.crush [--osds 10000] [--pg-num 131072]

Builds a map of racks x hosts x OSDs (mixed 1:2:4 weights) with crushtool/osdmaptool,
then in one run: osdmaptool --test-map-pgs (Ceph's C++ mapper) and our Placer on the same
map, and compares 100% of the up sets with osdmaptool --test-map-pgs-dump-all.

osdmaptool can set a pool's pg_num (--pg_num) but not its pgp_num, which --createsimple
fixes at OSDs << pgp-bits. The comparison therefore runs both mappers at the map's own
pgp_num; our timing is also given at pgp_num == pg_num, the state of a settled pool.
"""
import sys
import tempfile
from pathlib import Path

from pg_advisor.model import snapshot
from pg_advisor.crush.placement import Placer

from ..maps.crushgen import REPLICATED_HOST, Layout, OsdMapSpec, generate
from .common import osdmaptool, parser, self_peak_mib, table, timed


def main() -> int:
    args = parser(__doc__, racks=20, hosts=25, osds_per_host=20, pg_num=131072, pg_bits=3,
                  repeat=3).parse_args()
    # 1:2:4 like 4/8/16 TB drives; absolute TB would overflow the root's 16.16 weight
    layout = Layout(args.racks, args.hosts, args.osds_per_host, weight=lambda o: (1.0, 2.0, 4.0)[o % 3])
    with tempfile.TemporaryDirectory(prefix="pga-bench-") as tmp:
        gm = generate(Path(tmp), layout, [REPLICATED_HOST], OsdMapSpec(pg_bits=args.pg_bits))
        osd_dump, crush = gm.dumps(args.pg_num)
        pool_pgp = osd_dump["pools"][0]["pg_placement_num"]
        tool = osdmaptool(gm, "--test-map-pgs", "--pg_num", str(args.pg_num)).ok()
        ref = gm.reference(args.pg_num)
        snap = snapshot.load(osd_dump, crush)
        pool = snap.pools[0]
        m, t_same = timed(lambda: Placer(snap).map_pool(pool))
        bad = sum((m.up_list(i), int(m.up_primary[i])) != ref[m.pgid(i)] for i in range(m.ps.size))
        best = min(timed(lambda: Placer(snap).map_pool(pool, pgp_num=args.pg_num))[1]
                   for _ in range(args.repeat))
    print(f"map: {layout.num_osds} OSDs ({args.racks} racks x {args.hosts} hosts x "
          f"{args.osds_per_host}, weights 1/2/4), one pool of size {pool.size}, "
          f"pg_num {args.pg_num}, rule chooseleaf firstn host")
    table([("mapper", "<44"), ("pgp_num", ">8"), ("seconds", ">8.2f"), ("peak MiB", ">9.0f")], [
        ["osdmaptool --test-map-pgs (C++)", pool_pgp, tool.seconds, tool.peak_mib],
        ["pg_advisor Placer (numpy), same map", pool_pgp, t_same, ""],
        [f"pg_advisor Placer (numpy), best of {args.repeat}", args.pg_num, best, self_peak_mib()]])
    print(f"up sets compared with osdmaptool --test-map-pgs-dump-all: {m.ps.size} PGs, "
          f"{bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
