"""Benchmark: adding a host of OSDs while a client writes, plainly through Ceph or with
`ceph pg-advisor pin-remapped` and its drain. Prints one table.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.expand [--objects 20000] [--pg-num 64]
        [--methods ceph,advisor] [--concurrency 4] [--new-osds 2] [--repeat 1]
        [--timeout 900] [--osd-set OPTION=VALUE] [--dir DIR]
    bash qa/cluster/tentacle.sh exec env PYTHONPATH=src:. python3 -m qa.bench.expand ...   (on Tentacle)

Each run starts its own loopback cluster (qa/cluster/vstart.sh: 6 memstore OSDs on 3 hosts; the
test cluster's ports, so not beside it), with PG logs of 10 entries (so that a new OSD's
copy is a backfill, as with real PGs, not a replay of the log), a pool of --pg-num PGs
(size 3) filled with --objects objects of 4 KiB, and a client keeping --concurrency 4 KiB
writes in flight, each timed. After 10 s, --new-osds OSDs start on a new host:

- ceph: as Ceph is by default: the balancer on (upmap mode); Ceph backfills what CRUSH
  remapped at once (osd_max_backfills paces each OSD) and the balancer evens the rest;
- advisor: norebalance while the OSDs come in, `ceph pg-advisor pin-remapped`, norebalance
  off; the drain moves the data within the misplaced budget (5 %).

Reported: the client's longest stall (no op completing), p50/p99/p99.9 latency of the ops
started before the change, during it (until even) and after, failed ops, the peak misplaced
ratio (sampled every second; for advisor also its peak once the pins are set), the seconds
with more than the budget (5 %) misplaced (advisor: all of them until the pins are set),
the time until every PG is active+clean with nothing
misplaced and no plan running ("settled"), and until, besides, every OSD is within one PG of
its share per pool and in all (`pg-advisor eval` score <= 1: "even"; "-" if not reached,
with the score reached: within --timeout, or, for Ceph, once its balancer says there is
nothing left to do).
"""
import argparse
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..cluster import Cluster, wait_until
from ..cluster.ceph_release import print_ceph_version
from .split import Client, fill, summarize

POOL = "expandbench"
_VERSION_SAID: List[str] = []
SHORT_LOG = {"osd_min_pg_log_entries": "10", "osd_max_pg_log_entries": "10", "osd_pg_log_trim_min": "10"}


def misplaced(c: Cluster) -> float:
    return float(c.json("status")["pgmap"].get("misplaced_ratio", 0.0))


def settled(c: Cluster) -> bool:
    pgmap = c.json("status")["pgmap"]
    clean = sum(s["count"] for s in pgmap["pgs_by_state"] if s["state_name"] == "active+clean")
    plan = json.loads(c.ceph("pg-advisor", "progress", "-f", "json"))["plan"]
    return clean == pgmap["num_pgs"] and not pgmap.get("misplaced_objects") and \
        (plan is None or plan["status"] not in ("running", "paused"))


def score(c: Cluster) -> float:
    return float(json.loads(c.ceph("pg-advisor", "eval", "-f", "json"))["score"])


@dataclass(frozen=True)
class Experiment:
    """What each run does, whatever its method: a pool of `pg_num` PGs filled with `objects`
    objects, a client keeping `concurrency` writes in flight, `new_osds` OSDs added on a new
    host, at most `timeout` s after that to even out; `osd_conf`, OSD options."""
    objects: int
    pg_num: int
    concurrency: int
    new_osds: int
    timeout: float
    osd_conf: Dict[str, str]


def run_one(base: Path, method: str, exp: Experiment) -> Dict[str, Any]:
    objects, pg_num, timeout = exp.objects, exp.pg_num, exp.timeout
    c = Cluster(Path(tempfile.mkdtemp(prefix=f"expand-{method}-", dir=base)))
    c.vstart("start", "--osds", "6", "--hosts", "3", "--no-pool")
    try:
        if not _VERSION_SAID:      # the first cluster's mon, before any row
            _VERSION_SAID.append(print_ceph_version(c.env))
        for k, v in {**SHORT_LOG, **exp.osd_conf}.items():
            c.ceph("config", "set", "osd", k, v)
        c.ceph("osd", "pool", "create", POOL, str(pg_num), str(pg_num))
        c.ceph("osd", "pool", "set", POOL, "pg_autoscale_mode", "off")
        conf = c.env["CEPH_CONF"]
        fill(conf, POOL, objects)
        c.wait_clean()
        if method == "ceph":
            c.ceph("balancer", "mode", "upmap")
            c.ceph("balancer", "on")
        client = Client(conf, POOL, exp.concurrency)
        client.start()
        time.sleep(10)
        t_change = time.monotonic()
        if method == "advisor":
            c.ceph("osd", "set", "norebalance")
        c.vstart("add-osds", "--count", str(exp.new_osds), "--host", "hostnew")
        peak = misplaced(c)
        pinned: Dict[str, Any] = {}
        over_before = 0
        if method == "advisor":
            wait_until(lambda: misplaced(c) > 0, 60, "CRUSH to remap PGs onto the new OSDs")
            time.sleep(2)
            peak = max(peak, misplaced(c))
            over_before = int(time.monotonic() - t_change)    # counted as over: nothing pinned yet
            pinned = json.loads(c.ceph("pg-advisor", "pin-remapped", "-f", "json"))
            c.ceph("osd", "unset", "norebalance")
        t_pinned = time.monotonic()
        t_settled: Optional[float] = None
        t_even: Optional[float] = None
        last_score, next_eval = float("inf"), 0.0
        budget, over, peak_after = 0.05, 0, 0.0
        armed = method != "advisor"       # advisor: from when the pins show (misplaced back in budget)
        while time.monotonic() - t_change < timeout:
            m = misplaced(c)
            armed = armed or m <= budget
            peak = max(peak, m)
            peak_after = max(peak_after, m) if armed else peak_after
            over += int(m > budget)
            now = time.monotonic()
            if t_settled is None and settled(c):
                t_settled = now
            if t_settled is not None and now >= next_eval:
                last_score, next_eval = score(c), now + 5
                if last_score <= 1.0 and settled(c):
                    t_even = now
                    break
                # Ceph's balancer stops at upmap_max_deviation (5 PGs by default): once it
                # says nothing is left to do, the score stays where it is
                if method == "ceph" and c.json("balancer", "status").get("no_optimization_needed"):
                    break
            time.sleep(1)
        time.sleep(10)
        ops = client.finish()
        s = summarize(ops, t_change, t_even or time.monotonic())
        return {"method": method, "objects": objects, "peak_misplaced_pct": round(100 * peak, 2),
                "peak_after_pin_pct": round(100 * peak_after, 2) if method == "advisor" else None,
                "over_budget_s": over + over_before, "pin_s": round(t_pinned - t_change, 1),
                "settled_s": round(t_settled - t_change, 1) if t_settled else None,
                "even_s": round(t_even - t_change, 1) if t_even else None, "score": round(last_score, 2),
                "pinned": pinned.get("pinned"), **s}
    finally:
        c.vstart("stop")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--objects", type=int, default=20000)
    ap.add_argument("--pg-num", type=int, default=64)
    ap.add_argument("--methods", default="ceph,advisor")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--new-osds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--osd-set", action="append", default=[], metavar="OPTION=VALUE",
                    help="an OSD option for both methods (e.g. osd_recovery_sleep=0.05: slower "
                         "backfill, as of disks)")
    a = ap.parse_args(argv)
    experiment = Experiment(a.objects, a.pg_num, a.concurrency, a.new_osds, a.timeout,
                            dict(kv.split("=", 1) for kv in a.osd_set))
    base = Path(a.dir or tempfile.mkdtemp(prefix="bench-expand-"))
    rows = []
    for _ in range(a.repeat):
        for m in a.methods.split(","):
            r = run_one(base, m, experiment)
            print(json.dumps(r), flush=True)
            rows.append(r)
    head = (f"{'method':8} {'objects':>7} {'stall s':>7} {'during p50/p99/p99.9 ms':>24} {'failed':>6} "
            f"{'peak mis%':>9} {'after pin':>9} {'>5% s':>6} {'settled s':>9} {'even s':>7} {'score':>5} "
            f"{'pinned':>6}")
    print(head)

    def show(v: Any) -> str:
        return "-" if v is None else str(v)
    for r in rows:
        during = "/".join(str(x) for x in r["during"])
        print(f"{r['method']:8} {r['objects']:>7} {r['stall_s']:>7} {during:>24} {r['failed']:>6} "
              f"{r['peak_misplaced_pct']:>9} {show(r['peak_after_pin_pct']):>9} {r['over_budget_s']:>6} "
              f"{show(r['settled_s']):>9} {show(r['even_s']):>7} {r['score']:>5} {show(r['pinned']):>6}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
