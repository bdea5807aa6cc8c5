"""Benchmark: adding a host of OSDs while a client writes, plainly through Ceph or with
`ceph pg-advisor pin-remapped` and its drain. Prints one table.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.expand [--objects 20000] [--pg-num 64]
        [--methods ceph,advisor] [--concurrency 4] [--new-osds 2] [--repeat 1]
        [--timeout 900] [--osd-set OPTION=VALUE] [--dir DIR]
    bash qa/cluster/tentacle.sh exec env PYTHONPATH=src:. python3 -m qa.bench.expand ...   (on Tentacle)

Each run starts its own cluster (6 memstore OSDs on 3 hosts, PG logs of 10 entries: a new
OSD's copy is a backfill), fills a pool, keeps a client writing and adds the OSDs (expand).
The columns and runs: doc/expand.rst.
"""
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..cluster import Cluster, wait_until
from ..cluster.ceph_release import print_ceph_version
from .common import parser, table
from .split import Client, fill, summarize

POOL = "expandbench"
BUDGET = 0.05       # pg_advisor's misplaced budget (its default)
SHORT_LOG = {"osd_min_pg_log_entries": "10", "osd_max_pg_log_entries": "10", "osd_pg_log_trim_min": "10"}
COLS = [("method", "<8"), ("objects", ">7"), ("stall s", ">7"), ("during p50/p99/p99.9 ms", ">24"),
        ("failed", ">6"), ("peak mis%", ">9"), ("after pin", ">9"), (">5% s", ">6"), ("settled s", ">9"),
        ("even s", ">7"), ("score", ">5"), ("pinned", ">6")]


def misplaced(c: Cluster) -> float:
    return float(c.json("status")["pgmap"].get("misplaced_ratio", 0.0))


def settled(c: Cluster) -> bool:
    pgmap = c.json("status")["pgmap"]
    clean = sum(s["count"] for s in pgmap["pgs_by_state"] if s["state_name"] == "active+clean")
    plan = c.advisor("progress")["plan"]
    return clean == pgmap["num_pgs"] and not pgmap.get("misplaced_objects") and \
        (plan is None or plan["status"] not in ("running", "paused"))


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


def expand(c: Cluster, method: str, exp: Experiment) -> Dict[str, Any]:
    """The pool filled, the client started, the OSDs added (advisor: pinned): the figures,
    the client's ops summarized."""
    c.create_pool(POOL, exp.pg_num)
    fill(c.env["CEPH_CONF"], POOL, exp.objects)
    c.wait_clean()
    if method == "ceph":
        c.ceph("balancer", "mode", "upmap")
        c.ceph("balancer", "on")
    client = Client(c.env["CEPH_CONF"], POOL, exp.concurrency)
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
        pinned = c.advisor("pin-remapped")
        c.ceph("osd", "unset", "norebalance")
    t_pinned = time.monotonic()
    t_settled: Optional[float] = None
    t_even: Optional[float] = None
    score, next_eval = float("inf"), 0.0
    over, peak_after = 0, 0.0
    armed = method != "advisor"       # advisor: from when the pins show (misplaced back in budget)
    while time.monotonic() - t_change < exp.timeout:
        m = misplaced(c)
        armed = armed or m <= BUDGET
        peak = max(peak, m)
        peak_after = max(peak_after, m) if armed else peak_after
        over += int(m > BUDGET)
        now = time.monotonic()
        if t_settled is None and settled(c):
            t_settled = now
        if t_settled is not None and now >= next_eval:
            score, next_eval = float(c.advisor("eval")["score"]), now + 5
            if score <= 1.0 and settled(c):
                t_even = now
                break
            # Ceph's balancer stops at upmap_max_deviation (5 PGs by default): once it
            # says nothing is left to do, the score stays where it is
            if method == "ceph" and c.json("balancer", "status").get("no_optimization_needed"):
                break
        time.sleep(1)
    time.sleep(10)

    def since(t: Optional[float]) -> Optional[float]:
        return round(t - t_change, 1) if t else None
    return {"method": method, "objects": exp.objects, "peak_misplaced_pct": round(100 * peak, 2),
            "peak_after_pin_pct": round(100 * peak_after, 2) if method == "advisor" else None,
            "over_budget_s": over + over_before, "pin_s": since(t_pinned), "settled_s": since(t_settled),
            "even_s": since(t_even), "score": round(score, 2), "pinned": pinned.get("pinned"),
            **summarize(client.finish(), t_change, t_even or time.monotonic())}


def run_one(base: Path, method: str, exp: Experiment, first: bool) -> Dict[str, Any]:
    c = Cluster(Path(tempfile.mkdtemp(prefix=f"expand-{method}-", dir=base)))
    c.vstart("start", "--osds", "6", "--hosts", "3", "--no-pool")
    try:
        if first:      # the first cluster's mon, before any row
            print_ceph_version(c.env)
        with c.options("osd", {**SHORT_LOG, **exp.osd_conf}):
            return expand(c, method, exp)
    finally:
        c.vstart("stop")


def main(argv: Optional[List[str]] = None) -> int:
    ap = parser(__doc__, objects=20000, pg_num=64, methods="ceph,advisor", concurrency=4, new_osds=2,
                repeat=1, timeout=900.0, dir=None)
    ap.add_argument("--osd-set", action="append", default=[], metavar="OPTION=VALUE",
                    help="an OSD option for both methods (e.g. osd_recovery_sleep=0.05: slower "
                         "backfill, as of disks)")
    a = ap.parse_args(argv)
    experiment = Experiment(a.objects, a.pg_num, a.concurrency, a.new_osds, a.timeout,
                            dict(kv.split("=", 1) for kv in a.osd_set))
    base = Path(a.dir or tempfile.mkdtemp(prefix="bench-expand-"))
    rows: List[Dict[str, Any]] = []
    for _ in range(a.repeat):
        for m in a.methods.split(","):
            r = run_one(base, m, experiment, not rows)
            print(json.dumps(r), flush=True)
            rows.append(r)
    table(COLS, [[r["method"], r["objects"], r["stall_s"], "/".join(str(x) for x in r["during"]), r["failed"],
                  r["peak_misplaced_pct"], r["peak_after_pin_pct"], r["over_budget_s"], r["settled_s"],
                  r["even_s"], r["score"], r["pinned"]] for r in rows])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
