"""Benchmark: client latency while a pool splits, a host of OSDs comes in or an OSD is
drained, through Ceph's own path or pg_advisor's, on bluestore. Prints one table per
scenario.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.latency --scenario split|expand|drain[,...]
        [--store bluestore|memstore] [--repeat N] [--methods M,...] [--data-gib 2]
        [--osds N] [--pg-num N] [--depth 8] [--clients 2] [--window 30] [--timeout 3600]
        [--advisor-set KEY=VALUE ...] [--dir DIR] [--json FILE]

Every run starts its own loopback cluster (qa/cluster/vstart.sh --recovery-defaults: Ceph's own
recovery, backfill and deletion settings for the device class the OSDs report, which
the table's head names; bluestore OSDs on sparse files of --block-gib, osd_memory_target
1.5 GiB so that the OSDs, the clients and the mgr fit this machine), one pool (size 3,
a host each), filled with --data-gib of 64 KiB objects. Two clients (qa/bench/latency/client.py,
a process each) keep --depth ops in flight each, 4 KiB and 64 KiB reads and writes, every
op timed, every read checked, every object read back at the end. After --window seconds
the change:

- split: the pool's pg_num doubles. ceph: `osd pool set pg_num` (Ceph's mgr steps
  pgp_num within target_max_misplaced_ratio; its balancer on, upmap mode, as by default);
  advisor: `pg-advisor apply --pool --pg-num` (split_pinning on, its default);
  advisor-unpinned: the same with split_pinning off.
- expand: 2 OSDs start on a new host. ceph: Ceph backfills what CRUSH remapped, its
  balancer evens the rest; advisor: norebalance while they come in, `pin-remapped`, then
  the drain; advisor-weight: the OSDs start at CRUSH weight 0 (osd_crush_initial_weight),
  then `crush-reweight` gives them the others' weight with the pins in the same map
  epoch, then the drain; advisor-auto: mode auto with pin_on_change, the OSDs simply added.
- drain: the last OSD (a host of its own) goes. ceph: `osd out`; advisor: `pg-advisor
  drain osd.N`, then norebalance, out, `pin-remapped` (what the out remaps once more goes
  back where the drain put it), norebalance off; advisor-weight: the drain, then
  `crush-reweight --osd N --weight 0` (what CRUSH remaps once more pinned where the drain
  put it, in the weight's own epoch), then out.

The change ends when every PG is active+clean with nothing misplaced and no plan running
("to clean"); the clients run --window seconds more. Reported per run: p50/p99/p99.9 latency
of the ops started before, during and after the change; the longest stall (the longest
gap between two completions of one client, from 5 s before the change to the end); failed
ops; reads that returned other data than written; the time to clean; bytes moved (the
OSDs' recovery_bytes); changes of a PG's acting primary; and peering events per PG (new
intervals as Ceph's PastIntervals::is_new_interval counts them from the maps: the up or
acting set or either primary changed, or the PG split), all from the mon's own maps by
osdmaptool. The methods of a scenario run in turn, the order reversed every other repeat.
Below each table: the issue's goals, pair by pair. A second table takes the slow ops apart
by map epoch: each epoch of the change is "up" (some PG's up set changed: a remap or
split), "acting" (only acting sets: pg_temp set or cleared by backfill), "up_thru" (only
an OSD's up_thru: what a primary's peering waits for) or "other"; per
kind the epochs, the median and largest of the slowest op in flight when each was made
(and, as a baseline, the same at each whole second of the change), and how many ops over
250 ms had an epoch of each kind made while they waited; and the mon's, mgr's and OSDs'
CPU seconds during the change. A third lays each slow op at its own PG (the object's PG,
qa/maps/object_hash.py): at the PG's newest new interval made while the op waited or just before
it started, by kind ("move": its up set's OSDs changed, its acting set held by a pg_temp;
"remap": both changed, unprimed; "temp": a pg_temp set; "drop": its pg_temp dropped, as
when its backfill ends; "order": the same OSDs in another order), or "none" when the PG
did not peer then.
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
