"""One run of the latency benchmark (python3 -m qa.bench.latency, its __main__ says what
is measured): a cluster of its own, the pool filled, the clients, the change by one method,
its end, the figures. The live tests run measure() on the session's cluster."""
import argparse
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...cluster import Cluster, wait_until
from ..split import summarize
from .client import OBJECT, fill
from .intervals import ChangeSpan, bursts, intervals, slow_by_pg

POOL = "latbench"
METHODS = {"split": ("ceph", "advisor", "advisor-unpinned"),
           "expand": ("ceph", "advisor", "advisor-weight", "advisor-auto"),
           "drain": ("ceph", "advisor", "advisor-weight")}
OSDS = {"split": 5, "expand": 4, "drain": 5}          # one host each
PG_NUM = {"split": 32, "expand": 128, "drain": 128}
MEMORY_TARGET = 1536 << 20
# ops a second per client in the live tests' short variants (test_latency_live,
# test_expand_live): enough to see every peering, not so many that the clients take the
# OSDs' CPU from the backfill (the bench itself runs them flat out)
LIVE_RATE = 150.0


@dataclass(frozen=True)
class ClientLoad:
    """The measuring clients: `clients` processes, each keeping `depth` ops in flight, at
    most `rate` ops a second (0: as many as they can), their ops drawn from `seed`."""
    clients: int
    depth: int
    seed: int
    rate: float = 0.0


@dataclass(frozen=True)
class Trial:
    """One run's change: the `scenario`'s by `method` (a drain's of `last_osd`; `advisor_set`:
    KEY=VALUE pg_advisor options for its methods) on a pool of `pg_num` PGs filled with
    `objects` objects; measured `window` s before it and after its end, which may take
    `timeout` s."""
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
        """Stop the clients, wait for their read-back; their ops and results (once: a
        second call returns the same)."""
        if self.done is None:
            results = []
            for p in self.procs:
                out, _ = p.communicate("stop\n", timeout=900)
                results.append(json.loads(out.strip().splitlines()[-1]))
            self.done = ([np.load(f) for f in self.outs], results)
        return self.done


def cpu_seconds(c: Cluster) -> Dict[str, float]:
    """CPU time (user + system) so far of the cluster's daemons, summed per kind (mon,
    mgr, osd), from their pid files and /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    out: Dict[str, float] = {}
    for f in (c.dir / "run").glob("*.pid"):
        try:
            fields = Path(f"/proc/{int(f.read_text().strip())}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, ValueError):
            continue
        kind = f.name.split(".")[0]
        out[kind] = out.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / tick
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
    return (c.advisor("progress")["plan"] or {}).get("status") in ("running", "paused")


def device_class(c: Cluster) -> str:
    classes = sorted({n.get("device_class", "-") for n in c.json("osd", "tree")["nodes"] if n["id"] >= 0})
    rot = sorted({m.get("bluestore_bdev_rotational", m.get("rotational", "?"))
                  for m in c.json("osd", "metadata")})
    return f"class {','.join(classes)}, rotational {','.join(rot)}"


def change(c: Cluster, scenario: str, method: str, pg_num: int, last_osd: int) -> None:
    """Make the scenario's change by the method's path; returns once it is under way."""
    if scenario == "split":
        if method == "ceph":
            c.ceph("osd", "pool", "set", POOL, "pg_num", str(2 * pg_num))
        else:
            c.ceph("pg-advisor", "apply", "--pool", POOL, "--pg-num", str(2 * pg_num))
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
        # bluestore fills its sparse block files (some 4 GiB each a run): only the figures,
        # the clients' ops and the logs are kept
        for block in c.dir.glob("osd.*/block"):
            block.unlink()
    return dict(r, osds=osds)


def measure(c: Cluster, trial: Trial, load: ClientLoad) -> Dict[str, Any]:
    """On a running cluster: the pool, filled; the method's settings; the clients; the change
    (the drain's of `trial.last_osd`); its end; the figures. The pool stays (the live test
    removes it); the settings are restored."""
    method = trial.method
    c.create_pool(POOL, trial.pg_num, application="rados")
    t0 = time.monotonic()
    fill(c.env["CEPH_CONF"], POOL, trial.objects)
    fill_s = time.monotonic() - t0
    c.wait_clean(1800)
    # the method's own settings (--advisor-set: the module's options tried), then whatever
    # they do before the change is done
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
    scenario, method, objects, pg_num, window = (trial.scenario, trial.method, trial.objects,
                                                 trial.pg_num, trial.window)
    cls = device_class(c)
    run_dir = Path(tempfile.mkdtemp(prefix="clients-", dir=c.dir))
    running = Clients(c, objects, load, run_dir)
    time.sleep(window)
    first = int(c.json("osd", "dump")["epoch"])
    moved0 = recovery_bytes(c)
    cpu0 = cpu_seconds(c)
    t_change = time.monotonic()
    change(c, scenario, method, pg_num, trial.last_osd)
    time.sleep(5)
    wait_until(lambda: done(c), trial.timeout, "the change to end", step=2)
    t_clean = time.monotonic()
    cpu1 = cpu_seconds(c)
    wall_minus_mono = time.time() - time.monotonic()
    time.sleep(window)
    ops, results = running.finish()
    moved = recovery_bytes(c) - moved0
    last = int(c.json("osd", "dump")["epoch"])
    pool_id = c.pool_id(POOL)
    iv, epochs, changes = intervals(c, pool_id, first, last)
    span = ChangeSpan(t_change, t_clean, wall_minus_mono)
    allops = np.concatenate(ops)
    order = np.argsort(allops[:, 0])
    s = summarize([(float(r[0]), float(r[1]), bool(r[2])) for r in allops[order]], t_change, t_clean)
    # the longest stall one client saw (the other may have had ops on other OSDs meanwhile)
    stalls = [summarize([(float(r[0]), float(r[1]), bool(r[2])) for r in o], t_change, t_clean)
              for o in ops if len(o)]
    worst = max(stalls, key=lambda x: x["stall_s"])
    during = int(((allops[:, 0] >= t_change) & (allops[:, 0] < t_clean)).sum())
    return {"scenario": scenario, "method": method, "pg_num": pg_num, "objects": objects,
            "device": cls, **s, "ops_during": during,
            "stall_s": worst["stall_s"],
            "stall_at_s": worst["stall_at_s"],
            "mismatches": sum(r["mismatch_count"] for r in results),
            "mismatch_examples": [m for r in results for m in r["mismatches"]][:5],
            "unknown": sum(r["unknown"] for r in results), "bytes_moved": moved,
            "epochs": last - first, **iv,
            "peerings_per_pg": round(iv["peerings"] / max(iv["pgs"], 1), 2),
            "cpu_s": {k: round(cpu1[k] - cpu0.get(k, 0.0), 1) for k in sorted(cpu1)},
            "bursts": bursts(allops, epochs, span),
            "slow_by_pg": slow_by_pg(allops, changes, span, pool_id, (pg_num, iv["pgs"]))}
