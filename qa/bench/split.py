"""Benchmark: client latency while a pool's pg_num doubles, straight through Ceph or
through `ceph pg-advisor apply`. Prints one table.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.split [--objects 2000,20000] [--pg-num 16]
        [--methods ceph,advisor,advisor-pinned] [--concurrency 8] [--set OPTION=VALUE]
        [--osds 6] [--hosts 3] [--size N] [--zero] [--repeat K] [--crush spread|together]
        [--client-set OPTION=VALUE] [--dir DIR] [--keep]
    bash qa/cluster/tentacle.sh exec env PYTHONPATH=src:. python3 -m qa.bench.split ...   (on Tentacle)

It starts its own loopback cluster (qa/cluster/vstart.sh). Per object count and method: a
fresh pool of --pg-num PGs filled with that many 4 KiB objects; a client keeps --concurrency
writes in flight (--zero: new empty objects), every op timed; after 10 s pg_num doubles by
(ceph) `osd pool set` or (advisor) `pg-advisor apply`, split_pinning off or on, until 10 s
after the pool is active+clean at the new pg_num and pg_advisor's plan is done. Reported:
the longest stall and when it began, p50/p99/p99.9 of the ops started before, during and
after, failed ops, the time to clean, PGs per OSD at the end beside CRUSH alone's (--repeat,
--crush), "prim": acting primary changes (the mon's maps), "laggy": ops the client logged
as laggy. doc/execute.rst has the runs and the experiment of "The latency of Ceph placement
group splitting" (--pg-num 1 --size 1 --osds 2 --hosts 2 --zero --concurrency 1).
"""
import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from pg_advisor.model import snapshot
from pg_advisor.crush.placement import Placer

from ..cluster import Cluster, OPT, wait_until
from ..cluster.ceph_release import print_ceph_version
from ..cluster.rados_client import InFlight, Rados, fill as write_all
from .common import parser

POOL = "splitbench"
CLIENT_OBJECTS = 4096   # the client creates these, then keeps rewriting them (memstore OSDs
#                        hold everything in RAM: an ever-growing set would fill them)


class Client:
    """Writes small objects with a fixed number in flight; keeps (start, end, ok) per op;
    with `run_dir`, its admin socket and Objecter log there (objecter_counters)."""

    def __init__(self, conffile: str, pool: str, concurrency: int, zero: bool = False,
                 conf: Optional[Dict[str, str]] = None, run_dir: Optional[Path] = None) -> None:
        self.zero, self.run_dir = zero, run_dir
        self.counters: Dict[str, int] = {}
        conf = dict(conf or {})
        if run_dir is not None:     # (the Objecter's op_laggy counter is only the last tick's)
            conf.setdefault("admin_socket", str(run_dir / "bench-client.asok"))
            conf.setdefault("log_file", str(run_dir / "bench-client.log"))
            conf.setdefault("debug_objecter", "2/2")
        self.rados = Rados(conffile, conf=conf)
        self.io = self.rados.ioctx(pool)
        self.ops: List[Tuple[float, float, bool]] = []
        self.writes = InFlight(self.io, concurrency, lambda t0, t1, ok: self.ops.append((t0, t1, ok)))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        i = 0
        while not self.stop.is_set():
            # zero: a new empty object each time, as in the paper's client
            name, data = (f"z{i}", b"") if self.zero else (f"c{i % CLIENT_OBJECTS}", b"y" * 4096)
            i += self.writes.write_full(name, data, timeout=1.0)

    def start(self) -> None:
        self.thread.start()

    def finish(self) -> List[Tuple[float, float, bool]]:
        self.stop.set()
        self.thread.join(30)
        self.writes.flush()
        if self.run_dir is not None:
            self.counters = objecter_counters(self.run_dir)
        self.io.close()
        self.rados.shutdown()
        return sorted(self.ops)


def objecter_counters(run_dir: Path) -> Dict[str, int]:
    """The ops the client found laggy (unanswered within objecter_timeout), and resent."""
    p = subprocess.run(["ceph", "--admin-daemon", str(run_dir / "bench-client.asok"), "perf", "dump"],
                       capture_output=True, text=True, timeout=30)
    resent = int(json.loads(p.stdout).get("objecter", {}).get("op_resend", 0)) if p.returncode == 0 else -1
    log = run_dir / "bench-client.log"
    laggy = {ln.split(" tid ")[1].split()[0] for ln in log.read_text(errors="replace").splitlines()
             if ln.endswith(" is laggy")} if log.exists() else set()
    return {"op_laggy": len(laggy), "op_resend": resent}


def fill(conffile: str, pool: str, n: int, zero: bool = False) -> None:
    """n objects of 4 KiB (zero: empty), 64 writes in flight."""
    write_all(conffile, pool, ((f"f{i}", b"" if zero else b"x" * 4096) for i in range(n)))


def placement(c: Cluster) -> List[int]:
    """PGs of the pool per OSD, over the OSDs that hold any (largest first)."""
    return sorted(Counter(o for up in c.up_sets(POOL).values() for o in up).values(), reverse=True)


def pool_at(c: Cluster, pg_num: int) -> bool:
    p = next(x for x in c.json("osd", "pool", "ls", "detail") if x["pool_name"] == POOL)
    return bool(p["pg_num"] == p["pg_placement_num"] == p["pg_num_target"]
                == p["pg_placement_num_target"] == pg_num)


def spread(counts: List[int], osds: int, copies: int) -> bool:
    """PGs per OSD as even as the OSDs allow (counts over the OSDs that hold any)."""
    return max(counts) - min(counts) <= 1 and len(counts) == min(osds, copies)


def new_pool(c: Cluster, a: argparse.Namespace) -> None:
    """The pool (main's --pg-num, --size); with --crush spread or together, recreated (a new
    pool id: a new CRUSH placement) until CRUSH alone spreads its PGs after the split, or not."""
    for _ in range(40):
        c.create_pool(POOL, a.pg_num)
        if a.size is not None:
            c.ceph("osd", "pool", "set", POOL, "size", str(a.size), "--yes-i-really-mean-it")
        if a.crush == "any":
            return
        after = crush_alone(c, c.pool_id(POOL), 2 * a.pg_num)
        if spread(after, a.osds, 2 * a.pg_num * (a.size or 3)) == (a.crush == "spread"):
            return
        c.remove_pool(POOL, wait=False)
    raise RuntimeError(f"no pool id in 40 gave a CRUSH placement '{a.crush}'")


def double_pg_num(c: Cluster, pool: str, method: str, pg_num: int) -> None:
    """The split: by Ceph's own path (method "ceph") or pg_advisor's."""
    if method == "ceph":
        c.ceph("osd", "pool", "set", pool, "pg_num", str(2 * pg_num))
    else:
        c.ceph("pg-advisor", "apply", "--pool", pool, "--pg-num", str(2 * pg_num))


def run_one(c: Cluster, a: argparse.Namespace, method: str, objects: int) -> Dict[str, Any]:
    """A fresh pool (new_pool) of `objects` objects, split by `method` under main's options."""
    new_pool(c, a)
    fill(c.env["CEPH_CONF"], POOL, objects, a.zero)
    c.wait_clean(1800)
    with c.config("mgr", OPT + "split_pinning", str(method == "advisor-pinned").lower()):
        return split(c, a, method, objects)


def split(c: Cluster, a: argparse.Namespace, method: str, objects: int) -> Dict[str, Any]:
    """run_one()'s client, split and figures."""
    pg_num = a.pg_num
    run_dir = Path(tempfile.mkdtemp(prefix=f"bench-{method}-", dir=c.dir))
    client = Client(c.env["CEPH_CONF"], POOL, a.concurrency, a.zero,
                    dict(kv.split("=", 1) for kv in a.client_set), run_dir)
    client.start()
    time.sleep(10)
    first_epoch = int(c.json("osd", "dump")["epoch"])
    t_change = time.monotonic()
    wall_change = time.time()      # to find the stall in the daemons' and client's logs
    double_pg_num(c, POOL, method, pg_num)
    wait_until(lambda: pool_at(c, 2 * pg_num), 1800, "the new pg_num", step=1)
    if method != "ceph":    # pinned: the release rounds still move PGs after the split
        wait_until(lambda: c.plan()["status"] == "done", 1800, "the plan to finish", step=1)
    c.wait_clean(1800, pool=POOL)     # the stats lag a remap: clean as the OSDMap has it
    t_clean = time.monotonic()
    ended = placement(c)
    pool_id = c.pool_id(POOL)
    alone = crush_alone(c, pool_id)
    time.sleep(10)
    ops = client.finish()
    # when each happened, beside the stall's time: the epoch's own timestamp
    last_epoch = int(c.json("osd", "dump")["epoch"])
    changes = [(e, c.json("osd", "dump", str(e))["modified"][11:19], pg, a, b)
               for e, pg, a, b in c.primary_changes(pool_id, range(first_epoch + 1, last_epoch + 1))]
    c.remove_pool(POOL, wait=False)
    c.wait_clean(600)
    out = summarize(ops, t_change, t_clean)
    if out["stall_at_s"] is not None:
        out["stall_wall"] = time.strftime("%H:%M:%S", time.localtime(wall_change + out["stall_at_s"]))
    return out | {"method": method, "objects": objects, "ended": ended, "pool": pool_id, "crush": alone,
                  "primary_changes": changes} | client.counters


def crush_alone(c: Cluster, pool_id: int, pg_num: Optional[int] = None) -> List[int]:
    """PGs per OSD (as placement()) where CRUSH alone puts the pool's PGs at pg_num = pgp_num
    (default the pool's own): the pool id decides whether plain Ceph moves the child."""
    snap = snapshot.load(c.json("osd", "dump"), c.json("osd", "crush", "dump"))
    up = Placer(snap).map_pool(next(p for p in snap.pools if p.id == pool_id), pg_num, pg_num,
                               upmaps=False).up
    counts = np.bincount(up[up >= 0].ravel(), minlength=snap.osds.count)
    return sorted((int(x) for x in counts if x), reverse=True)


def summarize(ops: Any, t_change: float, t_clean: float) -> Dict[str, Any]:
    """The figures of ops given as (start, end, ok) rows (a list, or an array's columns)."""
    start, end, ok = np.asarray(ops, dtype=np.float64).reshape(-1, 3).T
    lat = (end - start) * 1000.0
    out: Dict[str, Any] = {"ops": len(start), "failed": int((ok == 0).sum()),
                           "to_clean_s": round(t_clean - t_change, 1)}
    # to the client's end, 10 s after clean: the old copy's removal counts too
    ends = np.sort(end[end >= t_change - 5])
    gaps = np.diff(ends)
    out["stall_s"] = round(float(gaps.max(initial=0.0)), 2)
    # when it began, s after the change: at the split, or at a later move
    out["stall_at_s"] = round(float(ends[int(gaps.argmax())] - t_change), 1) if gaps.size else None
    for name, mask in (("before", start < t_change), ("during", (start >= t_change) & (start < t_clean)),
                       ("after", start >= t_clean)):
        v = lat[mask]
        out[name] = [round(float(np.percentile(v, q)), 1) if v.size else None for q in (50, 99, 99.9)]
    return out


def ms3(v: List[Optional[float]]) -> str:
    """p50/p99/p99.9 as summarize() gives them."""
    return "/".join("-" if x is None else f"{x:g}" for x in v)


def main(argv: Optional[List[str]] = None) -> int:
    ap = parser(__doc__, objects="2000,20000", pg_num=16, methods="ceph,advisor,advisor-pinned",
                concurrency=8, osds=6)
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--size", type=int, help="the pool's size (default: Ceph's)")
    ap.add_argument("--zero", action="store_true", help="zero-length objects, the client creating them")
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per object count and method, each with a new pool (and pool id)")
    ap.add_argument("--crush", choices=("any", "spread", "together"), default="any",
                    help="only pools whose PGs CRUSH alone spreads after the split (or leaves "
                    "on fewer OSDs): the same starting point for every method")
    ap.add_argument("--set", action="append", default=[], metavar="OPTION=VALUE",
                    help="a pg_advisor option for the advisor runs (repeatable)")
    ap.add_argument("--client-set", action="append", default=[], metavar="OPTION=VALUE",
                    help="a Ceph option for the measuring client only, e.g. objecter_timeout=2 "
                    "or debug_objecter=10 with log_file=PATH (repeatable)")
    args = ap.parse_args(argv)
    c = Cluster(args.dir or Path(tempfile.mkdtemp(prefix="pga-split-")))
    c.vstart("start", "--no-pool", "--osds", str(args.osds), "--hosts", str(args.hosts))
    rows = []
    objects = [int(x) for x in args.objects.split(",")]
    runs = [(n, m) for n in objects for _ in range(args.repeat) for m in args.methods.split(",")]
    try:
        with c.options("mgr", {"step_interval": 0, **dict(kv.split("=", 1) for kv in args.set)}), \
                c.options("mon", {"mon_allow_pool_size_one": "true"} if args.size == 1 else {}):
            print_ceph_version(c.env)
            for n, m in runs:
                rows.append(run_one(c, args, m, n))
                print(json.dumps(rows[-1]), file=sys.stderr)
    finally:
        if not args.keep:
            c.vstart("stop")
    what = "empty objects created" if args.zero else "writes of 4 KiB"
    print(f"pg_num {args.pg_num} -> {2 * args.pg_num}, {args.concurrency} {what} in flight, "
          f"{args.osds} OSDs on {args.hosts} hosts; latency ms p50/p99/p99.9; ended: PGs per OSD")
    print(f"{'objects':>8} {'method':<15} {'pool':>4} {'stall s':>7} {'at s':>5} {'before':>17} "
          f"{'during':>19} {'after':>17} {'failed':>6} {'ops':>7} {'to clean s':>10} {'prim':>4} "
          f"{'laggy':>5}  ended (CRUSH alone)")
    for r in rows:
        print(f"{r['objects']:>8} {r['method']:<15} {r['pool']:>4} {r['stall_s']:>7} "
              f"{r['stall_at_s']!s:>5} {ms3(r['before']):>17} {ms3(r['during']):>19} "
              f"{ms3(r['after']):>17} {r['failed']:>6} {r['ops']:>7} "
              f"{r['to_clean_s']:>10} {len(r['primary_changes']):>4} {r.get('op_laggy', '-')!s:>5}  "
              f"{'/'.join(map(str, r['ended']))} ({'/'.join(map(str, r['crush']))})")
    if args.repeat > 1:
        print(f"\nper object count and method, over {args.repeat} pools: longest stall s (median, "
              f"worst), runs that ended with the PGs spread as evenly as the OSDs allow")
        for n in objects:
            for m in args.methods.split(","):
                rs = [r for r in rows if r["objects"] == n and r["method"] == m]
                st = [r["stall_s"] for r in rs]
                even = sum(spread(r["ended"], args.osds, 2 * args.pg_num * (args.size or 3))
                           for r in rs)
                print(f"{n:>8} {m:<15} {float(np.median(st)):>7.2f} {max(st):>7.2f}  {even}/{len(rs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
