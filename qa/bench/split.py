"""Benchmark: client latency while a pool's pg_num doubles, straight through Ceph or
through `ceph pg-advisor apply`. Prints one table.

One loopback cluster (on Tentacle: `bash qa/cluster/tentacle.sh exec env PYTHONPATH=src:.
python3 -m qa.bench.split ...`); per object count and method a fresh pool of 4 KiB objects,
a client keeping --concurrency writes in flight, pg_num doubled after 10 s until 10 s after
the pool is clean and the plan done. The columns and runs: doc/execute.rst. Also the core
the latency bench (qa/bench/latency/) shares: the split, the ops' figures, the tables.
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
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from pg_advisor.model import snapshot
from pg_advisor.crush.placement import Placer

from ..cluster import Cluster, OPT, wait_until
from ..cluster.ceph_release import print_ceph_version
from ..cluster.rados_client import InFlight, Rados, fill as write_all
from .common import Col, cell, parser

POOL = "splitbench"
CLIENT_OBJECTS = 4096   # the client rewrites these (memstore OSDs hold all in RAM)
TARGETS = ("pg_num", "pg_placement_num", "pg_num_target", "pg_placement_num_target")


class Client:
    """Writes small objects, `concurrency` in flight, keeping (start, end, ok) per op; with
    `run_dir`, its admin socket and Objecter log there (objecter_counters)."""

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


def double_pg_num(c: Cluster, pool: str, method: str, pg_num: int) -> None:
    """The split: by Ceph's own path (method "ceph") or pg_advisor's."""
    if method == "ceph":
        c.ceph("osd", "pool", "set", pool, "pg_num", str(2 * pg_num))
    else:
        c.ceph("pg-advisor", "apply", "--pool", pool, "--pg-num", str(2 * pg_num))


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


def lines(cols: Sequence[Col], rows: Iterable[Sequence[Any]]) -> List[str]:
    """A table: the titles, then the rows, each value to its column's spec (common.cell)."""
    return [" ".join(cell(v, spec) for (_, spec), v in zip(cols, r)) for r in [[t for t, _ in cols], *rows]]


def record(row: Dict[str, Any], path: Optional[Path] = None) -> None:
    """A run's figures as a JSON line on stderr, and appended to `path` if given."""
    print(json.dumps(row), file=sys.stderr, flush=True)
    if path:
        with path.open("a") as f:
            f.write(json.dumps(row) + "\n")


def crush_alone(c: Cluster, pool_id: int, pg_num: Optional[int] = None) -> List[int]:
    """PGs per OSD (largest first) where CRUSH alone puts the pool's PGs at pg_num = pgp_num
    (default the pool's own): the pool id decides whether plain Ceph moves the child."""
    snap = snapshot.load(c.json("osd", "dump"), c.json("osd", "crush", "dump"))
    up = Placer(snap).map_pool(next(p for p in snap.pools if p.id == pool_id), pg_num, pg_num,
                               upmaps=False).up
    counts = np.bincount(up[up >= 0].ravel(), minlength=snap.osds.count)
    return sorted((int(x) for x in counts if x), reverse=True)


def spread(counts: List[int], osds: int, copies: int) -> bool:
    """PGs per OSD as even as the OSDs allow (counts over the OSDs that hold any)."""
    return max(counts) - min(counts) <= 1 and len(counts) == min(osds, copies)


def new_pool(c: Cluster, a: argparse.Namespace) -> None:
    """The pool (--pg-num, --size); with --crush spread or together, recreated (a new pool
    id: a new CRUSH placement) until CRUSH alone spreads its PGs after the split, or not."""
    for _ in range(40):
        c.create_pool(POOL, a.pg_num)
        if a.size is not None:
            c.ceph("osd", "pool", "set", POOL, "size", str(a.size), "--yes-i-really-mean-it")
        if a.crush == "any" or spread(crush_alone(c, c.pool_id(POOL), 2 * a.pg_num), a.osds,
                                      2 * a.pg_num * (a.size or 3)) == (a.crush == "spread"):
            return
        c.remove_pool(POOL, wait=False)
    raise RuntimeError(f"no pool id in 40 gave a CRUSH placement '{a.crush}'")


def run_one(c: Cluster, a: argparse.Namespace, method: str, objects: int) -> Dict[str, Any]:
    """A fresh pool of `objects` objects; the client; the split by `method`; the figures."""
    new_pool(c, a)
    fill(c.env["CEPH_CONF"], POOL, objects, a.zero)
    c.wait_clean(1800)
    with c.config("mgr", OPT + "split_pinning", str(method == "advisor-pinned").lower()):
        run_dir = Path(tempfile.mkdtemp(prefix=f"bench-{method}-", dir=c.dir))
        client = Client(c.env["CEPH_CONF"], POOL, a.concurrency, a.zero,
                        dict(kv.split("=", 1) for kv in a.client_set), run_dir)
        client.start()
        time.sleep(10)
        first_epoch = int(c.json("osd", "dump")["epoch"])
        t_change = time.monotonic()
        wall_change = time.time()      # to find the stall in the daemons' and client's logs
        double_pg_num(c, POOL, method, a.pg_num)
        wait_until(lambda: all(c.pool_detail(POOL)[k] == 2 * a.pg_num for k in TARGETS), 1800,
                   "the new pg_num")
        if method != "ceph":    # pinned: the release rounds still move PGs after the split
            wait_until(lambda: c.plan()["status"] == "done", 1800, "the plan to finish")
        c.wait_clean(1800, pool=POOL)     # the stats lag a remap: clean as the OSDMap has it
        t_clean = time.monotonic()
        ended = sorted(Counter(o for up in c.up_sets(POOL).values() for o in up).values(), reverse=True)
        pool_id = c.pool_id(POOL)
        alone = crush_alone(c, pool_id)
        time.sleep(10)
        ops = client.finish()
        # when each happened, beside the stall's time: the epoch's own timestamp
        last_epoch = int(c.json("osd", "dump")["epoch"])
        changes = [(e, c.json("osd", "dump", str(e))["modified"][11:19], pg, old, new)
                   for e, pg, old, new in c.primary_changes(pool_id, range(first_epoch + 1, last_epoch + 1))]
        c.remove_pool(POOL, wait=False)
        c.wait_clean(600)
    out = summarize(ops, t_change, t_clean)
    if out["stall_at_s"] is not None:
        out["stall_wall"] = time.strftime("%H:%M:%S", time.localtime(wall_change + out["stall_at_s"]))
    return out | {"method": method, "objects": objects, "ended": ended, "pool": pool_id, "crush": alone,
                  "primary_changes": changes} | client.counters


COLS = [("objects", ">8"), ("method", "<15"), ("pool", ">4"), ("stall s", ">7"), ("at s", ">5"),
        ("before", ">17"), ("during", ">19"), ("after", ">17"), ("failed", ">6"), ("ops", ">7"),
        ("to clean s", ">10"), ("prim", ">4"), ("laggy", ">5"), (" ended (CRUSH alone)", "")]


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
    objects, methods = [int(x) for x in args.objects.split(",")], args.methods.split(",")
    try:
        with c.options("mgr", {"step_interval": 0, **dict(kv.split("=", 1) for kv in args.set)}), \
                c.options("mon", {"mon_allow_pool_size_one": "true"} if args.size == 1 else {}):
            print_ceph_version(c.env)
            for n, m in [(n, m) for n in objects for _ in range(args.repeat) for m in methods]:
                rows.append(run_one(c, args, m, n))
                record(rows[-1])
    finally:
        if not args.keep:
            c.vstart("stop")
    what = "empty objects created" if args.zero else "writes of 4 KiB"
    print(f"pg_num {args.pg_num} -> {2 * args.pg_num}, {args.concurrency} {what} in flight, "
          f"{args.osds} OSDs on {args.hosts} hosts; latency ms p50/p99/p99.9; ended: PGs per OSD")
    print("\n".join(lines(COLS, ([r["objects"], r["method"], r["pool"], r["stall_s"], str(r["stall_at_s"]),
                                  *map(ms3, (r["before"], r["during"], r["after"])), r["failed"], r["ops"],
                                  r["to_clean_s"], len(r["primary_changes"]), r.get("op_laggy", "-"),
                                  f" {'/'.join(map(str, r['ended']))} ({'/'.join(map(str, r['crush']))})"]
                                 for r in rows))))
    if args.repeat > 1:
        print(f"\nper object count and method, over {args.repeat} pools: longest stall s (median, "
              f"worst), runs that ended with the PGs spread as evenly as the OSDs allow")
        for n, m in [(n, m) for n in objects for m in methods]:
            rs = [r for r in rows if r["objects"] == n and r["method"] == m]
            st = [r["stall_s"] for r in rs]
            even = sum(spread(r["ended"], args.osds, 2 * args.pg_num * (args.size or 3)) for r in rs)
            print(f"{n:>8} {m:<15} {float(np.median(st)):>7.2f} {max(st):>7.2f}  {even}/{len(rs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
