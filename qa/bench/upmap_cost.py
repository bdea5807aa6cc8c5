"""What pg_upmap_items cost the mons: how long a small OSDMap change takes to commit, and how
big the map is, with N PGs holding item lists, on a throw-away mon (qa/maps/monbuilt.py) whose
OSDs exist, are in and are down: the mon checks the items on each map it builds.

    PYTHONPATH=src:. /usr/bin/python3 -m qa.bench.upmap_cost [--racks 10] [--hosts 10]
        [--osds-per-host 20] [--pg-num 65536] [--lists 0,5000,20000] [--repeat 5]
"""
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot

from ..maps.crushgen import REPLICATED_HOST, Layout
from ..maps.monbuilt import PoolSpec, _Mon, build
from .common import line, parser, table


def item_lists(tmp: Path, layout: Layout, pg_num: int, n: int) -> Dict[str, List[Tuple[int, int]]]:
    """N PGs' item lists, each moving its first replica to a host the PG does not use."""
    osd_dump, crush = build(tmp / "plain", layout, [REPLICATED_HOST], [PoolSpec("rbd", pg_num)]).dumps()
    snap = snapshot.load(osd_dump, crush)
    pool = snap.pool_by_name("rbd")
    up = Placer(snap).map_pool(pool).up
    per, hosts = layout.osds_per_host, layout.num_osds // layout.osds_per_host
    out: Dict[str, List[Tuple[int, int]]] = {}
    for r in range(min(n, pg_num)):
        used = {o // per for o in up[r].tolist()}
        h = next(h for h in range((r * 7) % hosts, (r * 7) % hosts + hosts) if h % hosts not in used) % hosts
        out[f"{pool.id}.{r:x}"] = [(int(up[r][0]), h * per + r % per)]
    return out


def commit_seconds(osdmap: Path, repeat: int) -> Tuple[float, float]:
    """Median and largest seconds of `osd crush reweight osd.0` to 0.9 and back on a mon
    seeded with the map: each builds a map epoch, checks the items against its CRUSH map and
    commits it (a flag such as noout leaves the items unchecked)."""
    d = Path(tempfile.mkdtemp(prefix="upmap-cost-mon-"))
    mon = _Mon(d, osdmap)
    try:
        mon.connect()
        took = []
        for i in range(repeat):
            t0 = time.perf_counter()
            mon.command("osd crush reweight", name="osd.0", weight=1.0 if i % 2 else 0.9)
            took.append(time.perf_counter() - t0)
        return statistics.median(took), max(took)
    finally:
        mon.stop()
        shutil.rmtree(d, ignore_errors=True)


COLS = [("osds", ">6"), ("pgs", ">8"), ("asked", ">7"), ("held", ">7"), ("map MiB", ">8.2f"),
        ("set s", ">7.1f"), ("commit s", ">9.3f"), ("max s", ">7.3f")]


def main() -> None:
    a = parser(__doc__, racks=10, hosts=10, osds_per_host=20, pg_num=65536, lists="0,5000,20000",
               repeat=5).parse_args()
    layout = Layout(a.racks, a.hosts, a.osds_per_host)
    tmp = Path(tempfile.mkdtemp(prefix="upmap-cost-"))
    table(COLS, [])
    try:
        for n in [int(x) for x in a.lists.split(",")]:
            items = item_lists(tmp / f"n{n}", layout, a.pg_num, n)
            t0 = time.perf_counter()
            gm = build(tmp / f"n{n}", layout, [REPLICATED_HOST], [PoolSpec("rbd", a.pg_num)],
                       items=items)
            setting = time.perf_counter() - t0
            held = len(snapshot.load(*gm.dumps()).pg_upmap_items)
            med, worst = commit_seconds(gm.path, a.repeat)
            mib = gm.path.stat().st_size / 2**20
            line(COLS, (layout.num_osds, a.pg_num, n, held, mib, setting, med, worst))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
