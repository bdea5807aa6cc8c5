"""Benchmark: client latency while a pool splits, a host of OSDs comes in or an OSD is
drained, through Ceph's own path or pg_advisor's, on bluestore. Prints one table per
scenario.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.latency --scenario split|expand|drain[,...]
        [--store bluestore|memstore] [--repeat N] [--methods M,...] [--data-gib 2]
        [--osds N] [--pg-num N] [--depth 8] [--clients 2] [--window 30] [--timeout 3600]
        [--advisor-set KEY=VALUE ...] [--dir DIR] [--json FILE]

Every run starts its own loopback cluster (vstart.sh --recovery-defaults; bluestore on sparse
--block-gib files, osd_memory_target 1.5 GiB), fills one pool (size 3, a host each) with
--data-gib of 64 KiB objects and runs --clients checking clients (client.py) of --depth ops
each; after --window seconds, the change by one method (METHODS) until every PG is
active+clean, nothing misplaced and no plan running, then --window seconds more; the
methods' order reversed every other repeat. The live tests run measure() on their cluster.
doc/testing.rst ("Client latency on bluestore") says what each method does and each figure
means.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...cluster import Cluster, wait_until
from ..split import double_pg_num, summarize
from .client import OBJECT, fill
from .intervals import SLOW_MS, ChangeSpan, bursts, intervals, slow_by_pg
from .tables import burst_table, goals, pg_table, table

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
    """The `scenario`'s change by `method` (a drain's of `last_osd`; `advisor_set`: KEY=VALUE
    module options) on `pg_num` PGs of `objects` objects, `window` s measured before and
    after, `timeout` s for the change."""
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
        n, depth, seed, rate = load.clients, load.depth, load.seed, load.rate
        self.outs = [run_dir / f"client{k}.npy" for k in range(n)]
        self.done: Optional[Tuple[List[np.ndarray], List[Dict[str, Any]]]] = None
        self.procs = [subprocess.Popen(
            ["/usr/bin/python3", "-m", "qa.bench.latency.client", "--conf", c.env["CEPH_CONF"],
             "--pool", POOL, "--objects", str(objects), "--client", str(k), "--clients", str(n),
             "--depth", str(depth), "--seed", str(seed), "--rate", str(rate), "--out", str(self.outs[k])],
            cwd=Path(__file__).resolve().parents[3], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True) for k in range(n)]
        for p in self.procs:
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError("a latency client did not start")

    def finish(self) -> Tuple[List[np.ndarray], List[Dict[str, Any]]]:
        """Stop the clients, wait for their read-back: their ops and results (once)."""
        if self.done is None:
            results = []
            for p in self.procs:
                out, _ = p.communicate("stop\n", timeout=900)
                results.append(json.loads(out.strip().splitlines()[-1]))
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
    total = 0
    for o in c.osd_ids():
        code, out, _ = c.run("tell", f"osd.{o}", "perf", "dump", timeout=60)
        if code == 0:
            total += int(json.loads(out).get("osd", {}).get("recovery_bytes", 0))
    return total


def done(c: Cluster) -> bool:
    """Every PG active+clean, nothing misplaced, no pg_num change pending, no plan running."""
    pools = c.json("osd", "pool", "ls", "detail")
    if any(p["pg_num"] != p["pg_num_target"] or p["pg_placement_num"] != p["pg_placement_num_target"]
           for p in pools):
        return False
    pgmap = c.json("status")["pgmap"]
    clean = sum(s["count"] for s in pgmap["pgs_by_state"] if s["state_name"] == "active+clean")
    if clean != pgmap["num_pgs"] or pgmap.get("misplaced_objects"):
        return False
    return not running(c)


def running(c: Cluster) -> bool:
    """A plan is running or paused."""
    return c.plan().get("status") in ("running", "paused")


def device_class(c: Cluster) -> str:
    classes = sorted({n.get("device_class", "-") for n in c.json("osd", "tree")["nodes"] if n["id"] >= 0})
    rot = sorted({m.get("bluestore_bdev_rotational", m.get("rotational", "?"))
                  for m in c.json("osd", "metadata")})
    return f"class {','.join(classes)}, rotational {','.join(rot)}"


def change(c: Cluster, scenario: str, method: str, pg_num: int, last_osd: int) -> None:
    """Make the scenario's change by the method's path; returns once it is under way."""
    if scenario == "split":
        double_pg_num(c, POOL, method, pg_num)
        wait_until(lambda: c.json("osd", "pool", "get", POOL, "pg_num")["pg_num"] > pg_num, 600,
                   "the split to start")
    elif scenario == "expand":
        if method == "advisor":
            c.ceph("osd", "set", "norebalance")
        if method == "advisor-weight":
            # the others' weight (the same block files), read before the new ones come at 0
            weight = max(c.crush_weights().values())
            old = set(c.osd_ids())
        # advisor-weight: the OSDs start at CRUSH weight 0 (add-osds returns once they are in)
        with c.options("osd", {"osd_crush_initial_weight": 0} if method == "advisor-weight" else {}):
            c.vstart("add-osds", "--count", "2", "--host", "hostnew")
        if method == "advisor-weight":
            new = sorted(set(c.osd_ids()) - old)
            c.ceph("pg-advisor", "crush-reweight", "--osd", *map(str, new), "--weight", str(weight))
        if method == "advisor":
            wait_until(lambda: bool(c.json("status")["pgmap"].get("misplaced_objects")), 120,
                       "CRUSH to remap PGs onto the new OSDs")
            time.sleep(2)
            c.ceph("pg-advisor", "pin-remapped")
            c.ceph("osd", "unset", "norebalance")
    else:
        if method == "ceph":
            c.ceph("osd", "out", str(last_osd))
            return
        c.ceph("pg-advisor", "drain", f"osd.{last_osd}")
        wait_until(lambda: not running(c), 7200, "the drain", step=2)
        if method == "advisor-weight":
            c.ceph("pg-advisor", "crush-reweight", "--osd", str(last_osd), "--weight", "0")
            wait_until(lambda: not running(c), 7200, "the pins' drain", step=2)
            c.ceph("osd", "out", str(last_osd))     # weight 0 already: nothing moves
            return
        c.ceph("osd", "set", "norebalance")
        c.ceph("osd", "out", str(last_osd))
        time.sleep(3)
        c.ceph("pg-advisor", "pin-remapped")
        c.ceph("osd", "unset", "norebalance")


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
        # bluestore fills its sparse block files (some 4 GiB a run): not kept
        for block in c.dir.glob("osd.*/block"):
            block.unlink()
    return dict(r, osds=osds)


def measure(c: Cluster, trial: Trial, load: ClientLoad) -> Dict[str, Any]:
    """On a running cluster: the pool, filled; the method's settings; the clients; the change;
    its end; the figures. The pool stays (the live test removes it), the settings do not."""
    method = trial.method
    c.create_pool(POOL, trial.pg_num, application="rados")
    t0 = time.monotonic()
    fill(c.env["CEPH_CONF"], POOL, trial.objects)
    fill_s = time.monotonic() - t0
    c.wait_clean(1800)
    # the method's own settings, then whatever they do before the change is done
    opts: Dict[str, str] = {}
    if method == "ceph":
        c.ceph("balancer", "mode", "upmap")
        c.ceph("balancer", "on")
    else:
        opts = dict(kv.partition("=")[::2] for kv in trial.advisor_set)
        opts["split_pinning"] = str(method != "advisor-unpinned").lower()
        if method == "advisor-auto":
            # no pg_num change of its own in the middle: the comparison is of the move
            opts.update(hysteresis="1.0", pin_on_change="true", mode="auto")
    with c.options("mgr", opts):
        time.sleep(5)
        wait_until(lambda: done(c), 3600, "the method's own balancing before the change", step=5)
        return dict(observe(c, trial, load), fill_s=round(fill_s),
                    advisor_set=list(trial.advisor_set) if method != "ceph" else [])


def observe(c: Cluster, trial: Trial, load: ClientLoad) -> Dict[str, Any]:
    """measure()'s clients, change and figures."""
    pg_num = trial.pg_num
    cls = device_class(c)
    running = Clients(c, trial.objects, load, Path(tempfile.mkdtemp(prefix="clients-", dir=c.dir)))
    time.sleep(trial.window)
    first = int(c.json("osd", "dump")["epoch"])
    moved0 = recovery_bytes(c)
    cpu0 = cpu_seconds(c)
    t_change = time.monotonic()
    change(c, trial.scenario, trial.method, pg_num, trial.last_osd)
    time.sleep(5)
    wait_until(lambda: done(c), trial.timeout, "the change to end", step=2)
    t_clean = time.monotonic()
    cpu1 = cpu_seconds(c)
    wall_minus_mono = time.time() - time.monotonic()
    time.sleep(trial.window)
    ops, results = running.finish()
    moved = recovery_bytes(c) - moved0
    last = int(c.json("osd", "dump")["epoch"])
    pool_id = c.pool_id(POOL)
    iv, epochs, changes = intervals(c, pool_id, first, last)
    span = ChangeSpan(t_change, t_clean, wall_minus_mono)
    allops = np.concatenate(ops)
    s = summarize(allops[:, :3], t_change, t_clean)
    # the longest stall one client saw (the other may have had ops on other OSDs meanwhile)
    worst = max((summarize(o[:, :3], t_change, t_clean) for o in ops if len(o)), key=lambda x: x["stall_s"])
    during = int(((allops[:, 0] >= t_change) & (allops[:, 0] < t_clean)).sum())
    return {"scenario": trial.scenario, "method": trial.method, "pg_num": pg_num,
            "objects": trial.objects, "device": cls, **s, "ops_during": during,
            "stall_s": worst["stall_s"], "stall_at_s": worst["stall_at_s"],
            "mismatches": sum(r["mismatch_count"] for r in results),
            "mismatch_examples": [m for r in results for m in r["mismatches"]][:5],
            "unknown": sum(r["unknown"] for r in results), "bytes_moved": moved,
            "epochs": last - first, **iv,
            "peerings_per_pg": round(iv["peerings"] / max(iv["pgs"], 1), 2),
            "cpu_s": {k: round(cpu1[k] - cpu0.get(k, 0.0), 1) for k in sorted(cpu1)},
            "bursts": bursts(allops, epochs, span),
            "slow_by_pg": slow_by_pg(allops, changes, span, pool_id, (pg_num, iv["pgs"]))}


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
                rows.append(dict(run_one(base, scenario, m, a, seed=k), repeat=k))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
                if a.json:
                    with a.json.open("a") as f:
                        f.write(json.dumps(rows[-1]) + "\n")
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
