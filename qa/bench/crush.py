"""Benchmark: pg_advisor's numpy CRUSH beside osdmaptool on a large map, or the published unevenness table.

    /usr/bin/python3 -m qa.bench.crush [--osds-per-host 20] [--pg-num 131072]
    /usr/bin/python3 -m qa.bench.crush --mode table

--mode compare (the default): a map of racks x hosts x OSDs (mixed 1:2:4 weights) built with
crushtool/osdmaptool; in one run osdmaptool --test-map-pgs (Ceph's C++ mapper) and our Placer
on it, 100% of the up sets compared with osdmaptool --test-map-pgs-dump-all. osdmaptool can
set a pool's pg_num (--pg_num) but not its pgp_num, which --createsimple fixes at OSDs <<
pgp-bits: both mappers run at the map's own pgp_num; ours also at pgp_num == pg_num, the state
of a settled pool.

--mode table: the published CRUSH-unevenness table (a real cluster's, DESIGN.md) beside
ours: 60 OSDs (5 hosts x 12, equal weight), one pool of size 3 by host, pool id 1, the
standard deviation of PGs per OSD over the mean at growing pg_num = pgp_num.
"""
import sys
import tempfile
from pathlib import Path

import numpy as np

from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor.model.distribution import up_counts

from ..maps.crushgen import REPLICATED_HOST, Layout, OsdMapSpec, generate
from .common import osdmaptool, parser, self_peak_mib, table, timed

PUBLISHED = {60: 0.544, 240: 0.287, 960: 0.138, 3840: 0.073, 7680: 0.050, 15360: 0.030}


def unevenness() -> int:
    with tempfile.TemporaryDirectory(prefix="pga-table-") as tmp:
        gm = generate(Path(tmp), Layout(0, 5, 12), [REPLICATED_HOST], OsdMapSpec(pg_bits=0))
        snap = snapshot.load(*gm.dumps())
    placer, pool = Placer(snap), snap.pools[0]
    rows = []
    for pg_num, published in PUBLISHED.items():
        m = placer.map_pool(pool, pg_num=pg_num, pgp_num=pg_num)
        c = up_counts(m.up, snap.osds.count)[:60].astype(float)
        rows.append([pg_num, published, c.std() / c.mean(), f"{int(c.min()):>7}-{int(c.max()):<8}"])
    table([("pg_num", ">7"), ("published", ">10.3f"), ("pg_advisor", ">11.3f"), ("PGs/OSD min-max", ">16")],
          rows)
    # the binomial floor: PG replicas thrown at random, stdev/mean = sqrt((1-p)/(n p))
    print("(random placement would give sqrt((1 - 1/60) / (3 pg_num / 60)): "
          + ", ".join(f"{np.sqrt((1 - 1 / 60) / (3 * n / 60)):.3f}" for n in PUBLISHED) + ")")
    return 0


def main() -> int:
    ap = parser(__doc__, racks=20, hosts=25, osds_per_host=20, pg_num=131072, pg_bits=3, repeat=3)
    ap.add_argument("--mode", choices=("compare", "table"), default="compare")
    args = ap.parse_args()
    if args.mode == "table":
        return unevenness()
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
