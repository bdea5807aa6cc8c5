"""Benchmark: client latency while a pool splits, a host of OSDs comes in or an OSD is
drained, through Ceph's own path or pg_advisor's, on bluestore. Prints one table per
scenario.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.latency --scenario split|expand|drain[,...]
        [--store bluestore|memstore] [--repeat N] [--methods M,...] [--data-gib 2]
        [--osds N] [--pg-num N] [--depth 8] [--clients 2] [--window 30] [--timeout 3600]
        [--advisor-set KEY=VALUE ...] [--dir DIR] [--json FILE]

Every run starts its own loopback cluster (vstart.sh --recovery-defaults: Ceph's recovery
settings for the OSDs' device class; bluestore on sparse --block-gib files, osd_memory_target
1.5 GiB), fills one pool (size 3, a host each) with --data-gib of 64 KiB objects, and runs
--clients checking clients (client.py) of --depth ops each; after --window seconds, the
change by one method (split: ceph, advisor, advisor-unpinned; expand, 2 OSDs on a new host:
ceph, advisor, advisor-weight, advisor-auto; drain of the last OSD: ceph, advisor,
advisor-weight), until every PG is active+clean, nothing misplaced and no plan running,
then --window seconds more. Per run: latency p50/p99/p99.9 before, during and after, the
longest stall, failed ops and bad reads, the time to clean, bytes moved, acting primary
changes and peerings per PG (from the mon's maps by osdmaptool); the methods' order
reversed every other repeat; the issue's goals pair by pair; the slow ops by map epoch
kind and by their own PG's new interval (intervals.py). doc/testing.rst ("Client latency
on bluestore") says what each method does and each figure means.
"""
import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

from .intervals import SLOW_MS
from .run import METHODS, run_one
from .tables import burst_table, goals, pg_table, table


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m qa.bench.latency",
                                 description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--scenario", default="split")
    ap.add_argument("--store", choices=("bluestore", "memstore"), default="bluestore")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--start", type=int, default=0, help="the first repeat's number (a series resumed: "
                    "its order and seed follow the number)")
    ap.add_argument("--methods", help="comma-separated (default: the scenario's all)")
    ap.add_argument("--data-gib", type=float, default=2.0)
    ap.add_argument("--block-gib", type=int, default=8)
    ap.add_argument("--osds", type=int, help="OSDs before the change, one host each (default: "
                    "split 5, expand 4, drain 5)")
    ap.add_argument("--pg-num", type=int, help="the pool's pg_num (default: split 32, else 128)")
    ap.add_argument("--depth", type=int, default=8, help="ops in flight per client")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--window", type=float, default=30, help="seconds measured before and after")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds the change may take")
    ap.add_argument("--advisor-set", action="append", metavar="KEY=VALUE",
                    help="a pg_advisor option for its methods' runs (mgr/pg_advisor/KEY), repeatable")
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--json", type=Path, help="append each run's figures here, a line each")
    a = ap.parse_args(argv)
    scenarios = a.scenario.split(",")
    if any(s not in METHODS for s in scenarios):
        ap.error(f"--scenario: one or more of {', '.join(METHODS)}")
    if a.repeat < 1 or a.start < 0 or a.clients < 1 or a.depth < 1 or a.data_gib <= 0:
        ap.error("--repeat, --clients, --depth and --data-gib must be positive")
    base = a.dir or Path(tempfile.mkdtemp(prefix="bench-latency-"))
    base.mkdir(parents=True, exist_ok=True)
    for scenario in scenarios:
        methods = a.methods.split(",") if a.methods else list(METHODS[scenario])
        rows = []
        for k in range(a.start, a.start + a.repeat):
            for m in (methods if k % 2 == 0 else methods[::-1]):
                r = run_one(base, scenario, m, a, seed=k)
                r["repeat"] = k
                print(json.dumps(r), file=sys.stderr, flush=True)
                if a.json:
                    with a.json.open("a") as f:
                        f.write(json.dumps(r) + "\n")
                rows.append(r)
        rows.sort(key=lambda r: (r["repeat"], methods.index(r["method"])))
        r0 = rows[0]
        print(f"\n{scenario}: {r0['osds']} {a.store} OSDs ({r0['device']}), pool of {r0['pg_num']} PGs, "
              f"{r0['objects']} objects of 64 KiB, {a.clients} clients x {a.depth} ops in flight "
              f"(4 KiB / 64 KiB, reads / writes); latency p50/p99/p99.9")
        print("\n".join(table(rows)))
        print(f"\nWhere the slow ops (over {SLOW_MS:g} ms) waited, and the daemons' CPU during the change:")
        print("\n".join(burst_table(rows)))
        print("\nThe slow ops by their own PG's new interval while they waited (move: its up set changed, "
              "its acting set held; remap: both changed; temp: a pg_temp set; drop: its pg_temp dropped; "
              "order: the same OSDs reordered; none: it did not peer):")
        print("\n".join(pg_table(rows)))
        print("\n".join(goals(rows, methods)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
