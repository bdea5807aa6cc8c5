"""Benchmark: client latency while a pool splits, a host of OSDs comes in or an OSD is
drained, through Ceph's own path or pg_advisor's, on bluestore. Prints per scenario a table,
where the slow ops waited (by map epoch, by their PG's new interval) and the issue's goals.
Each run on a cluster of its own (the live tests run measure() on theirs); the methods and
figures: doc/testing.rst ("Client latency on bluestore"); qa/bench/split.py its shared core.
"""
import argparse
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...cluster import Cluster, wait_until
from ..split import double_pg_num, lines, ms3 as fmt, record, summarize
from .client import OBJECT, fill
from .intervals import EPOCH_KINDS, PG_KINDS, SLOW_MS, ChangeSpan, bursts, intervals, slow_by_pg

POOL = "latbench"
METHODS = {"split": ("ceph", "advisor", "advisor-unpinned"),
           "expand": ("ceph", "advisor", "advisor-weight", "advisor-auto"),
           "drain": ("ceph", "advisor", "advisor-weight")}
OSDS = {"split": 5, "expand": 4, "drain": 5}          # one host each
PG_NUM = {"split": 32, "expand": 128, "drain": 128}
MEMORY_TARGET = 1536 << 20
# ops a second per client in the live tests: enough to see every peering, not so many that
# the clients take the OSDs' CPU from the backfill (the bench runs them flat out)
LIVE_RATE = 150.0


@dataclass(frozen=True)
class ClientLoad:
    """`clients` processes, each `depth` ops in flight, at most `rate` a second (0: no limit)."""
    clients: int
    depth: int
    seed: int
    rate: float = 0.0


@dataclass(frozen=True)
class Trial:
    """The `scenario`'s change by `method` (a drain's of `last_osd`; `advisor_set`: module
    options) on `pg_num` PGs of `objects` objects, `window` s measured before and after."""
    scenario: str
    method: str
    objects: int
    pg_num: int
    last_osd: int
    window: float
    timeout: float
    advisor_set: Sequence[str] = ()


class Clients:
    """The measuring clients, a process each."""

    def __init__(self, c: Cluster, objects: int, load: ClientLoad, run_dir: Path) -> None:
        n = load.clients
        self.outs = [run_dir / f"client{k}.npy" for k in range(n)]
        self.done: Optional[Tuple[List[np.ndarray], List[Dict[str, Any]]]] = None
        self.procs = [subprocess.Popen(
            ["/usr/bin/python3", "-m", "qa.bench.latency.client", "--conf", c.env["CEPH_CONF"],
             "--pool", POOL, "--objects", str(objects), "--client", str(k), "--clients", str(n),
             "--depth", str(load.depth), "--seed", str(load.seed), "--rate", str(load.rate),
             "--out", str(self.outs[k])],
            cwd=Path(__file__).resolve().parents[3], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True) for k in range(n)]
        for p in self.procs:
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError("a latency client did not start")

    def finish(self) -> Tuple[List[np.ndarray], List[Dict[str, Any]]]:
        """Stop the clients, wait for their read-back: their ops and results (once)."""
        if self.done is None:
            results = [json.loads(p.communicate("stop\n", timeout=900)[0].strip().splitlines()[-1])
                       for p in self.procs]
            self.done = ([np.load(f) for f in self.outs], results)
        return self.done


def proc_cpu(stat: str) -> float:
    """User + system CPU seconds of a process or thread (its /proc/.../stat)."""
    fields = Path(stat).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(c: Cluster) -> Dict[str, float]:
    """CPU seconds so far of the cluster's daemons, summed per kind (mon, mgr, osd)."""
    out: Dict[str, float] = {}
    for f in (c.dir / "run").glob("*.pid"):
        try:
            kind = f.name.split(".")[0]
            out[kind] = out.get(kind, 0.0) + proc_cpu(f"/proc/{int(f.read_text().strip())}/stat")
        except (OSError, ValueError):
            continue
    return out


def recovery_bytes(c: Cluster) -> int:
    perf = [c.run("tell", f"osd.{o}", "perf", "dump", timeout=60) for o in c.osd_ids()]
    return sum(int(json.loads(out).get("osd", {}).get("recovery_bytes", 0))
               for code, out, _ in perf if code == 0)


def done(c: Cluster) -> bool:
    """Every PG active+clean, nothing misplaced, no pg_num change pending, no plan running."""
    if any(p["pg_num"] != p["pg_num_target"] or p["pg_placement_num"] != p["pg_placement_num_target"]
           for p in c.json("osd", "pool", "ls", "detail")):
        return False
    pgmap = c.json("status")["pgmap"]
    clean = sum(s["count"] for s in pgmap["pgs_by_state"] if s["state_name"] == "active+clean")
    return clean == pgmap["num_pgs"] and not pgmap.get("misplaced_objects") and not running(c)


def running(c: Cluster) -> bool:
    """A plan is running or paused."""
    return c.plan().get("status") in ("running", "paused")


def device_class(c: Cluster) -> str:
    classes = sorted({n.get("device_class", "-") for n in c.json("osd", "tree")["nodes"] if n["id"] >= 0})
    rot = sorted({m.get("bluestore_bdev_rotational", m.get("rotational", "?"))
                  for m in c.json("osd", "metadata")})
    return f"class {','.join(classes)}, rotational {','.join(rot)}"


def pinned(c: Cluster, move: Callable[[], None], pause: float) -> None:
    """move() under norebalance, then its remapped PGs pinned where their data is."""
    c.ceph("osd", "set", "norebalance")
    move()
    time.sleep(pause)
    c.ceph("pg-advisor", "pin-remapped")
    c.ceph("osd", "unset", "norebalance")


def change(c: Cluster, scenario: str, method: str, pg_num: int, last_osd: int) -> None:
    """Make the scenario's change by the method's path; returns once it is under way."""
    def add() -> None:
        c.vstart("add-osds", "--count", "2", "--host", "hostnew")
        if method == "advisor":
            wait_until(lambda: bool(c.json("status")["pgmap"].get("misplaced_objects")), 120,
                       "CRUSH to remap PGs onto the new OSDs")

    def out() -> None:
        c.ceph("osd", "out", str(last_osd))
    if scenario == "split":
        double_pg_num(c, POOL, method, pg_num)
        wait_until(lambda: c.json("osd", "pool", "get", POOL, "pg_num")["pg_num"] > pg_num, 600,
                   "the split to start")
    elif scenario == "expand" and method == "advisor":
        pinned(c, add, 2)
    elif scenario == "expand" and method == "advisor-weight":
        # the others' weight (the same block files), read before the new ones come at 0
        weight, old = max(c.crush_weights().values()), set(c.osd_ids())
        with c.options("osd", {"osd_crush_initial_weight": 0}):     # add-osds returns once they are in
            add()
        c.ceph("pg-advisor", "crush-reweight", "--osd", *map(str, sorted(set(c.osd_ids()) - old)),
               "--weight", str(weight))
    elif scenario == "expand":
        add()
    elif method == "ceph":
        out()
    else:
        c.ceph("pg-advisor", "drain", f"osd.{last_osd}")
        wait_until(lambda: not running(c), 7200, "the drain", step=2)
        if method != "advisor-weight":
            pinned(c, out, 3)
            return
        c.ceph("pg-advisor", "crush-reweight", "--osd", str(last_osd), "--weight", "0")
        wait_until(lambda: not running(c), 7200, "the pins' drain", step=2)
        out()     # weight 0 already: nothing moves


def run_one(base: Path, scenario: str, method: str, a: argparse.Namespace, seed: int) -> Dict[str, Any]:
    """A cluster of its own for one run (every method starts alike), then measure()."""
    osds = a.osds or OSDS[scenario]
    c = Cluster(Path(tempfile.mkdtemp(prefix=f"lat-{scenario}-{method}-", dir=base)))
    c.vstart("start", "--store", a.store, "--osds", str(osds), "--hosts", str(osds), "--no-pool",
             "--block-gib", str(a.block_gib), "--recovery-defaults")
    trial = Trial(scenario, method, int(a.data_gib * (1 << 30)) // OBJECT, a.pg_num or PG_NUM[scenario],
                  osds - 1, a.window, a.timeout, a.advisor_set or ())
    try:
        with c.options("osd", {"osd_memory_target": MEMORY_TARGET} if a.store == "bluestore" else {}):
            r = measure(c, trial, ClientLoad(a.clients, a.depth, seed))
    finally:
        c.vstart("stop")
        for block in c.dir.glob("osd.*/block"):     # bluestore's sparse files fill: some 4 GiB a run
            block.unlink()
    return dict(r, osds=osds)


def measure(c: Cluster, trial: Trial, load: ClientLoad) -> Dict[str, Any]:
    """On a running cluster: the pool, filled; the method's settings; the clients; the change
    until done; the figures. The pool stays (the live test removes it), the settings do not."""
    method = trial.method
    c.create_pool(POOL, trial.pg_num, application="rados")
    t0 = time.monotonic()
    fill(c.env["CEPH_CONF"], POOL, trial.objects)
    fill_s = time.monotonic() - t0
    c.wait_clean(1800)
    opts: Dict[str, str] = {}
    if method == "ceph":
        c.ceph("balancer", "mode", "upmap")
        c.ceph("balancer", "on")
    else:
        opts = dict(kv.partition("=")[::2] for kv in trial.advisor_set)
        opts["split_pinning"] = str(method != "advisor-unpinned").lower()
        if method == "advisor-auto":     # no pg_num change of its own: the comparison is of the move
            opts.update(hysteresis="1.0", pin_on_change="true", mode="auto")
    with c.options("mgr", opts):
        time.sleep(5)
        wait_until(lambda: done(c), 3600, "the method's own balancing before the change", step=5)
        cls = device_class(c)
        clients = Clients(c, trial.objects, load, Path(tempfile.mkdtemp(prefix="clients-", dir=c.dir)))
        time.sleep(trial.window)
        first = int(c.json("osd", "dump")["epoch"])
        moved0, cpu0 = recovery_bytes(c), cpu_seconds(c)
        t_change = time.monotonic()
        change(c, trial.scenario, method, trial.pg_num, trial.last_osd)
        time.sleep(5)
        wait_until(lambda: done(c), trial.timeout, "the change to end", step=2)
        t_clean = time.monotonic()
        cpu1 = cpu_seconds(c)
        wall_minus_mono = time.time() - time.monotonic()
        time.sleep(trial.window)
        ops, results = clients.finish()
        moved = recovery_bytes(c) - moved0
        last = int(c.json("osd", "dump")["epoch"])
        pool_id = c.pool_id(POOL)
        iv, epochs, changes = intervals(c, pool_id, first, last)
    span = ChangeSpan(t_change, t_clean, wall_minus_mono)
    allops = np.concatenate(ops)
    # the longest stall one client saw (the other may have had ops on other OSDs meanwhile)
    worst = max((summarize(o[:, :3], t_change, t_clean) for o in ops if len(o)), key=lambda x: x["stall_s"])
    return {"scenario": trial.scenario, "method": method, "pg_num": trial.pg_num,
            "objects": trial.objects, "device": cls, **summarize(allops[:, :3], t_change, t_clean),
            "ops_during": int(((allops[:, 0] >= t_change) & (allops[:, 0] < t_clean)).sum()),
            "stall_s": worst["stall_s"], "stall_at_s": worst["stall_at_s"],
            "mismatches": sum(r["mismatch_count"] for r in results),
            "mismatch_examples": [m for r in results for m in r["mismatches"]][:5],
            "unknown": sum(r["unknown"] for r in results), "bytes_moved": moved,
            "epochs": last - first, **iv,
            "peerings_per_pg": round(iv["peerings"] / max(iv["pgs"], 1), 2),
            "cpu_s": {k: round(cpu1[k] - cpu0.get(k, 0.0), 1) for k in sorted(cpu1)},
            "bursts": bursts(allops, epochs, span),
            "slow_by_pg": slow_by_pg(allops, changes, span, pool_id, (trial.pg_num, iv["pgs"])),
            "fill_s": round(fill_s), "advisor_set": list(trial.advisor_set) if method != "ceph" else []}


# ---- the tables, and the goals checked pair by pair ----

def table(rows: List[Dict[str, Any]]) -> List[str]:
    cols = [("method", "<17"), ("before ms", ">15"), ("during ms", ">19"), ("after ms", ">15"),
            ("stall s", ">7"), ("failed", ">6"), ("bad", ">3"), ("clean s", ">7"), ("moved MiB", ">9.0f"),
            ("prim", ">5"), ("peer/PG", ">7")]
    return lines(cols, ([r["method"], fmt(r["before"]), fmt(r["during"]), fmt(r["after"]), r["stall_s"],
                         r["failed"], r["mismatches"], r["to_clean_s"], r["bytes_moved"] / (1 << 20),
                         r["primary_changes"], r["peerings_per_pg"]] for r in rows))


def burst_table(rows: List[Dict[str, Any]]) -> List[str]:
    """bursts() per run, and the daemons' CPU seconds."""
    cols = [("method", "<17"), *((k + ": n, worst ms, slow", ">27") for k in EPOCH_KINDS),
            ("each second: worst ms", ">22"), ("none", ">5"), (" cpu s mon/mgr/osd", "")]
    return lines(cols, ([r["method"], *(f"{b[k + '_epochs']}, {fmt(b[k + '_worst_ms'] or [None])}, "
                                        f"{b['slow_at_' + k]}" for k in EPOCH_KINDS),
                         fmt(b["any_second_worst_ms"] or [None]), b["slow_at_none"],
                         "{:>8g}/{:g}/{:g}".format(*(r["cpu_s"].get(k, 0) for k in ("mon", "mgr", "osd")))]
                        for r in rows for b in [r["bursts"]]))


def pg_table(rows: List[Dict[str, Any]]) -> List[str]:
    """slow_by_pg() per run."""
    cols = [("method", "<17"), ("slow ops", ">8"), *((k + ": slow, held/n", ">19") for k in PG_KINDS),
            ("none", ">5")]
    return lines(cols, ([r["method"], sum(p[k] for k in PG_KINDS) + p["none"],
                         *(f"{p[k]}, {p[k + '_with_slow']}/{p[k + '_intervals']}" for k in PG_KINDS),
                         p["none"]] for r in rows for p in [r["slow_by_pg"]]))


def goals(rows: List[Dict[str, Any]], methods: List[str]) -> List[str]:
    """The issue's goals, per pg_advisor method against the ceph runs of the same repeat."""
    out = []
    ceph = [r for r in rows if r["method"] == "ceph"]
    for m in methods:
        ours = [r for r in rows if r["method"] == m]
        pairs = list(zip(ours, ceph))
        if m == "ceph" or not pairs:
            continue
        p999 = [(o["during"][2], t["during"][2]) for o, t in pairs]
        each = all(x is not None and y is not None and x <= y for x, y in p999)
        med_o = float(np.median([x for x, _ in p999 if x is not None] or [np.nan]))
        med_c = float(np.median([y for _, y in p999 if y is not None] or [np.nan]))
        stall = max(o["stall_s"] for o in ours)
        slow = max(o["to_clean_s"] / t["to_clean_s"] for o, t in pairs if t["to_clean_s"])
        out.append(f"{m}: p99.9 during <= Ceph's in every pair: {'yes' if each else 'NO'} "
                   f"({', '.join(f'{x}/{y}' for x, y in p999)} ms); median {med_o:g} vs Ceph's {med_c:g} "
                   f"(goal <= half: {'yes' if med_o <= med_c / 2 else 'NO'}); longest stall {stall} s "
                   f"(goal <= 5: {'yes' if stall <= 5 else 'NO'}); time to clean up to {slow:.2f} x "
                   f"Ceph's (goal <= 2: {'yes' if slow <= 2 else 'NO'}); failed ops "
                   f"{sum(o['failed'] for o in ours)}, bad reads {sum(o['mismatches'] for o in ours)}")
    return out


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
    ap.add_argument("--osds", type=int, help=f"OSDs before, a host each (default: {OSDS})")
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
                rows.append(dict(run_one(base, scenario, m, a, seed=k), repeat=k))
                record(rows[-1], a.json)
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
