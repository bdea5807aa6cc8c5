"""Benchmark: `status` on a 10,000-OSD map with 327,680 PGs, beside osdmaptool on the same map.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.status [--osds-per-host 20] [--pools 10]

The map is made by a throw-away mon: 20 racks x 25 hosts x 20 OSDs of three sizes, 10 pools
of 32,768 PGs (8 replicated, 2 EC 4+2), with synthetic PG stats. Each measurement runs in a
process of its own: the offline CLI's `status -f json`, the same in its phases, and
osdmaptool --test-map-pgs. Goal: status under 5 s and 1 GiB (doc/status.rst).
"""
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

from pg_advisor.model import snapshot

from ..maps.crushgen import REPLICATED_HOST, Layout, synthetic_pg_dump
from ..maps.monbuilt import PoolSpec, build
from .common import cli, measured, osdmaptool, parser, table, timed, write_dumps

# in a child process: the phases of `status` with their times
PHASES = """
import json, sys, time
t0 = time.monotonic()
from pg_advisor.model import snapshot
from pg_advisor.model.options import make
from pg_advisor.analysis.status import status_report
d = sys.argv[1]
docs = {k: json.load(open(f"{d}/{k}.json")) for k in ("osd_dump", "crush", "pg_dump")}
t1 = time.monotonic()
snap = snapshot.load(docs["osd_dump"], docs["crush"], docs["pg_dump"], None)
t2 = time.monotonic()
r = status_report(snap, None, make({}), False)     # with sizing, as the mgr serves it
t3 = time.monotonic()
text = json.dumps(r)
t4 = time.monotonic()
print(json.dumps({"parse_s": t1 - t0, "load_s": t2 - t1, "status_s": t3 - t2, "json_s": t4 - t3,
                  "osds": len(r["osds"]), "pools": len(r["pools"]), "bytes": len(text)}))
"""
COLS = [("", "<34"), ("wall s", ">7.1f"), ("peak MiB", ">9.0f"), (" what", "")]


def main(argv: List[str]) -> int:
    a = parser(__doc__, osds_per_host=20, pools=10, pg_num=32768).parse_args(argv)
    pools = [PoolSpec(f"ec{i}", a.pg_num, ec=(4, 2)) if i >= a.pools - 2 else PoolSpec(f"rbd{i}", a.pg_num)
             for i in range(a.pools)]
    layout = Layout(20, 25, a.osds_per_host, weight=lambda o: (1.0, 2.0, 4.0)[o % 3])
    with tempfile.TemporaryDirectory(prefix="bench-status-") as tmp:
        d = Path(tmp)
        gm, secs = timed(lambda: build(d / "map", layout, [REPLICATED_HOST], pools))
        osd_dump, crush = gm.dumps()
        pg_dump = {"pg_map": synthetic_pg_dump(snapshot.load(osd_dump, crush), 1.0)}
        flags = write_dumps(d, {"osd_dump": osd_dump, "crush": crush, "pg_dump": pg_dump})
        n_pgs = sum(p["pg_num"] for p in osd_dump["pools"])
        replicas = sum(len(s["up"]) for s in pg_dump["pg_map"]["pg_stats"])
        del pg_dump
        print(f"map: {gm.num_osds} OSDs, {len(osd_dump['pools'])} pools, {n_pgs} PGs, {replicas} replicas "
              f"(built in {secs:.0f} s); dumps: "
              + ", ".join(f"{p.name} {p.stat().st_size / 2**20:.0f} MiB" for p in sorted(d.glob("*.json"))))
        r = osdmaptool(gm, "--test-map-pgs").ok()
        rows: List[List[Any]] = [["osdmaptool --test-map-pgs (Ceph)", r.seconds, r.peak_mib,
                                  " maps every PG, counts per OSD"]]
        r = measured([sys.executable, "-c", PHASES, str(d)]).ok()
        ph: Dict[str, Any] = json.loads(r.out)
        rows.append(["pg_advisor status, in phases", r.seconds, r.peak_mib,
                     f" parse JSON {ph['parse_s']:.1f} s, snapshot {ph['load_s']:.1f} s, "
                     f"status {ph['status_s']:.1f} s, to JSON {ph['json_s']:.1f} s"])
        r = cli(flags, "status", "-f", "json").ok()
        out = json.loads(r.out)
        assert len(out["osds"]) == gm.num_osds and len(out["pools"]) == len(pools), (len(out["osds"]),)
        rows.append(["pg_advisor status -f json (CLI)", r.seconds, r.peak_mib,
                     f" {len(r.out) / 2**20:.1f} MiB of JSON"])
    table(COLS, rows)
    print("goal: status under 5 s and 1 GiB (the phases above: snapshot + status)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
