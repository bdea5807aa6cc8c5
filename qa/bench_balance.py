"""Benchmark: pg_advisor's balancer beside `osdmaptool --upmap`, on the same maps, one run.

    /usr/bin/python3 -m qa.bench_balance [--only 60,1000,10000] [--tool-timeout 300]

Maps come from crushtool/osdmaptool (qa/crushgen.py), one replicated pool each at the
pg_num osdmaptool --createsimple gives (OSDs << pg-bits). osdmaptool runs at
--upmap-deviation 5 (Ceph's default) and 1, with a time limit; its commands are applied
to the map and everything is measured the same way, with pg_advisor's exact CRUSH:
max deviation from the weight-proportional share (pool and total), stdev of PGs per OSD,
PGs with items, replica moves against the lower bound, wall time, peak memory.
"stdev" is the standard deviation of (PGs - share) over the OSDs.
"""
import argparse
import dataclasses
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np

from pg_advisor import snapshot
from pg_advisor.balance import Balancer
from pg_advisor.crush.placement import Placer
from pg_advisor.distribution import up_counts

from .crushgen import REPLICATED_HOST, Layout, generate

MAPS = {
    "60": (Layout(0, 5, 12), 5),
    "1000": (Layout(10, 10, 10, weight=lambda o: (4.0, 8.0, 16.0)[o % 3]), 3),
    "10000": (Layout(20, 25, 20, weight=lambda o: (1.0, 2.0, 4.0)[o % 3]), 3),
}
ITEM_RE = re.compile(r"^ceph osd pg-upmap-items (\S+) (.*)$")


def measure(snap: snapshot.Snapshot, items: Dict[str, Tuple[Tuple[int, int], ...]]) -> Dict[str, Any]:
    new = dict(snap.pg_upmap_items)
    new.update(items)
    pl0, pl1 = Placer(snap), Placer(dataclasses.replace(snap, pg_upmap_items=new))
    pool = snap.pools[0]
    before, after = pl0.map_pool(pool).up, pl1.map_pool(pool).up
    n = snap.osds.count
    b = Balancer(snap, pl0)
    st = b.states[0]
    c = up_counts(after, n)
    dev = np.abs(c - st.share)[st.share > 0]
    moves = int(sum(len(set(a.tolist()) - set(x.tolist())) for a, x in zip(after, before)))
    return {"max_dev": float(dev.max()), "stdev": float((c - st.share)[st.share > 0].std()),
            "items": len(items), "moves": moves, "lower_bound": b.lower_bound()}


def run_tool(path: Path, deviation: int, timeout: float, out: Path) -> Tuple[Dict[str, Any], float, str]:
    t0 = time.perf_counter()
    try:
        subprocess.run(["osdmaptool", str(path), "--mark-up-in", "--upmap", str(out),
                        "--upmap-deviation", str(deviation), "--upmap-max", "1000000"],
                       capture_output=True, timeout=timeout, check=True)
        status = "done"
    except subprocess.TimeoutExpired:
        status = f"hit the {timeout:.0f} s limit"
    dt = time.perf_counter() - t0
    items: Dict[str, Tuple[Tuple[int, int], ...]] = {}
    if out.exists():
        for line in out.read_text().splitlines():
            m = ITEM_RE.match(line)
            if m:
                v = [int(x) for x in m.group(2).split()]
                items[m.group(1)] = tuple(zip(v[0::2], v[1::2]))
    return items, dt, status


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="60,1000,10000")
    ap.add_argument("--tool-timeout", type=float, default=300.0)
    args = ap.parse_args()
    rows: List[List[Any]] = []
    for name in args.only.split(","):
        layout, bits = MAPS[name]
        with tempfile.TemporaryDirectory(prefix="pga-bal-") as tmp:
            gm = generate(Path(tmp), layout, [REPLICATED_HOST], pg_bits=bits)
            osd_dump, crush = gm.dumps()
            snap = snapshot.load(osd_dump, crush)
            label = f"{layout.num_osds} OSDs, {snap.pools[0].pg_num} PGs"
            m = measure(snap, {})
            rows.append([label, "CRUSH alone", m, 0.0, "-", ""])
            for dev in (5, 1):
                items, dt, status = run_tool(gm.path, dev, args.tool_timeout, Path(tmp) / f"up{dev}")
                peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
                rows.append([label, f"osdmaptool --upmap-deviation {dev}", measure(snap, items), dt,
                             f"{peak:.0f}", status])
            t0 = time.perf_counter()
            res = Balancer(snap).run()
            dt = time.perf_counter() - t0
            items = {k: tuple(v) for k, v in res.items.items() if v}
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            rows.append([label, "pg_advisor", measure(snap, items), dt, f"{peak:.0f}", "done"])
    print(f"{'map':<24} {'balancer':<30} {'max_dev':>7} {'stdev':>6} {'items':>6} {'moves':>6} "
          f"{'bound':>6} {'seconds':>8} {'peak MiB':>8}  status")
    for label, who, m, dt, peak, status in rows:
        print(f"{label:<24} {who:<30} {m['max_dev']:>7.2f} {m['stdev']:>6.2f} {m['items']:>6} "
              f"{m['moves']:>6} {m['lower_bound']:>6} {dt:>8.2f} {peak:>8}  {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
