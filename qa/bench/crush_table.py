"""Reproduce the published CRUSH-unevenness table with pg_advisor's simulation.

    /usr/bin/python3 -m qa.bench.crush_table

60 OSDs (5 hosts x 12, equal weight), one pool of size 3 with failure domain host: the
standard deviation of PGs per OSD divided by the mean, at growing pg_num. The published
figures come from a real cluster (DESIGN.md); ours are computed with the crush layer on
a map built by crushtool/osdmaptool, for pool id 1, with pgp_num = pg_num.
"""
import sys
import tempfile
from pathlib import Path

import numpy as np

from pg_advisor.model import snapshot
from pg_advisor.crush.placement import Placer
from pg_advisor.model.distribution import up_counts

from ..maps.crushgen import REPLICATED_HOST, Layout, OsdMapSpec, generate
from .common import table

PUBLISHED = {60: 0.544, 240: 0.287, 960: 0.138, 3840: 0.073, 7680: 0.050, 15360: 0.030}


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pga-table-") as tmp:
        gm = generate(Path(tmp), Layout(0, 5, 12), [REPLICATED_HOST], OsdMapSpec(pg_bits=0))
        osd_dump, crush = gm.dumps()
    snap = snapshot.load(osd_dump, crush)
    placer = Placer(snap)
    pool = snap.pools[0]
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


if __name__ == "__main__":
    sys.exit(main())
