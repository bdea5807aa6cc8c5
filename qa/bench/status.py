"""Benchmark: `status` on a 10,000-OSD map with 327,680 PGs, beside osdmaptool on the same map.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.status [--osds-per-host 20] [--pools 10]

The map is made by a throw-away mon (qa/maps/monbuilt.py): 20 racks x 25 hosts x 20 OSDs of
three sizes, 10 pools of 32,768 PGs (8 replicated size 3 by host, 2 EC 4+2), so
about 1.18 million PG replicas, ~118 per OSD. The PG stats are synthetic (qa/maps/crushgen.py:
each PG active+clean on its CRUSH set, sizes spread lognormally).

Each measurement runs in its own process, so its peak memory (ru_maxrss) is its own:
  - pg_advisor: the offline CLI's `status -f json` on the dumps (JSON parsing, the
    snapshot, CRUSH for every PG, the report), and the same split into its phases;
  - osdmaptool --test-map-pgs: Ceph's own tool mapping every PG of the map and counting
    them per OSD (its mapping alone: no shares, no stats, no report).
Goal: status under 5 s and 1 GiB.
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

from pg_advisor.model import snapshot

from ..maps.crushgen import REPLICATED_HOST, Layout, synthetic_pg_dump
from ..maps.monbuilt import PoolSpec, build

SRC = Path(__file__).resolve().parents[2] / "src"

# in a child process: the phases of `status` with their times, then the process's peak RSS
PHASES = """
import json, resource, sys, time
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
                  "osds": len(r["osds"]), "pools": len(r["pools"]), "bytes": len(text),
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


# runs one command as its only child, so that RUSAGE_CHILDREN is that command's peak alone
# (this process has had other children: the mon, crushtool, osdmaptool)
MEASURE = """
import json, resource, subprocess, sys, time
t0 = time.monotonic()
with open(sys.argv[1], "w") as out:
    p = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.PIPE, text=True)
print(json.dumps({"wall": time.monotonic() - t0, "rc": p.returncode, "err": p.stderr[-2000:],
                  "peak_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def timed(cmd: List[str], out: Path, env: Dict[str, str]) -> Tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and stdout of one command."""
    p = subprocess.run([sys.executable, "-c", MEASURE, str(out), *cmd], capture_output=True, text=True,
                       timeout=1800, env=env)
    r = json.loads(p.stdout)
    if r["rc"] != 0:
        raise RuntimeError(f"{cmd[:3]} failed: {r['err']}")
    return r["wall"], r["peak_kib"] / 1024, out.read_text()


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--osds-per-host", type=int, default=20)
    ap.add_argument("--pools", type=int, default=10)
    ap.add_argument("--pg-num", type=int, default=32768)
    a = ap.parse_args(argv)
    rules = [REPLICATED_HOST]
    pools = [PoolSpec(f"ec{i}", a.pg_num, ec=(4, 2)) if i >= a.pools - 2 else PoolSpec(f"rbd{i}", a.pg_num)
             for i in range(a.pools)]
    layout = Layout(20, 25, a.osds_per_host, weight=lambda o: (1.0, 2.0, 4.0)[o % 3])
    with tempfile.TemporaryDirectory(prefix="bench-status-") as tmp:
        d = Path(tmp)
        t0 = time.monotonic()
        gm = build(d / "map", layout, rules, pools)
        osd_dump, crush = gm.dumps()
        snap = snapshot.load(osd_dump, crush)
        pg_dump = {"pg_map": synthetic_pg_dump(snap, 1.0)}
        del snap
        for name, doc in (("osd_dump", osd_dump), ("crush", crush), ("pg_dump", pg_dump)):
            (d / f"{name}.json").write_text(json.dumps(doc))
        n_pgs = sum(p["pg_num"] for p in osd_dump["pools"])
        replicas = sum(len(s["up"]) for s in pg_dump["pg_map"]["pg_stats"])
        del pg_dump
        print(f"map: {gm.num_osds} OSDs, {len(osd_dump['pools'])} pools, {n_pgs} PGs, {replicas} replicas "
              f"(built in {time.monotonic() - t0:.0f} s); dumps: "
              + ", ".join(f"{p.name} {p.stat().st_size / 2**20:.0f} MiB" for p in sorted(d.glob("*.json"))))
        rows: List[Tuple[str, float, float, str]] = []
        env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
        o = d / "out.txt"
        dt, peak, text = timed(["osdmaptool", str(gm.path), *gm.state_args(), "--test-map-pgs"], o, env)
        rows.append(("osdmaptool --test-map-pgs (Ceph)", dt, peak, "maps every PG, counts per OSD"))
        dt, peak, text = timed([sys.executable, "-c", PHASES, str(d)], o, env)
        ph: Dict[str, Any] = json.loads(text)
        rows.append(("pg_advisor status, in phases", dt, ph["peak_mib"],
                     f"parse JSON {ph['parse_s']:.1f} s, snapshot {ph['load_s']:.1f} s, "
                     f"status {ph['status_s']:.1f} s, to JSON {ph['json_s']:.1f} s"))
        dt, peak, text = timed([sys.executable, "-m", "pg_advisor", "--osdmap", str(d / "osd_dump.json"),
                                "--crush", str(d / "crush.json"), "--pg-dump", str(d / "pg_dump.json"),
                                "status", "-f", "json"], o, env)
        out = json.loads(text)
        assert len(out["osds"]) == gm.num_osds and len(out["pools"]) == len(pools), (len(out["osds"]),)
        rows.append(("pg_advisor status -f json (CLI)", dt, peak, f"{len(text) / 2**20:.1f} MiB of JSON"))
    print(f"{'':34} {'wall s':>7} {'peak MiB':>9}  what")
    for name, dt, peak, what in rows:
        print(f"{name:34} {dt:7.1f} {peak:9.0f}  {what}")
    print("goal: status under 5 s and 1 GiB (the phases above: snapshot + status)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
