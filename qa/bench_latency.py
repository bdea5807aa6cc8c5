"""Benchmark: client latency while a pool splits, a host of OSDs comes in or an OSD is
drained, through Ceph's own path or pg_advisor's, on bluestore. Prints one table per
scenario.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench_latency --scenario split|expand|drain[,...]
        [--store bluestore|memstore] [--repeat N] [--methods M,...] [--data-gib 2]
        [--osds N] [--pg-num N] [--depth 8] [--clients 2] [--window 30] [--timeout 3600]
        [--advisor-set KEY=VALUE ...] [--dir DIR] [--json FILE]

Every run starts its own loopback cluster (qa/cluster/vstart.sh --recovery-defaults: Ceph's own
recovery, backfill and deletion settings for the device class the OSDs report, which
the table's head names; bluestore OSDs on sparse files of --block-gib, osd_memory_target
1.5 GiB so that the OSDs, the clients and the mgr fit this machine), one pool (size 3,
a host each), filled with --data-gib of 64 KiB objects. Two clients (qa/latency_client.py,
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
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from .bench.split import summarize
from .cluster import Cluster, wait_until
from .latency_client import OBJECT, fill, name as object_name
from .maps.object_hash import object_ps

POOL = "latbench"
OPT = "mgr/pg_advisor/"
METHODS = {"split": ("ceph", "advisor", "advisor-unpinned"),
           "expand": ("ceph", "advisor", "advisor-weight", "advisor-auto"),
           "drain": ("ceph", "advisor", "advisor-weight")}
OSDS = {"split": 5, "expand": 4, "drain": 5}          # one host each
PG_NUM = {"split": 32, "expand": 128, "drain": 128}
MEMORY_TARGET = 1536 << 20
MODIFIED = re.compile(r"^modified (\S+)$", re.M)
UP_THRU = re.compile(r"^osd\.(\d+) .*\bup_thru (\d+)", re.M)
SLOW_MS = 250.0                       # an op this slow counts in the bursts' breakdown
MAPPING = re.compile(r"^(\d+\.[0-9a-f]+) raw .* up \(\[([^]]*)\], p(-?\d+)\) "
                     r"acting \(\[([^]]*)\], p(-?\d+)\)$", re.M)

Mapping = Tuple[Tuple[int, ...], int, Tuple[int, ...], int]     # up, up primary, acting, primary
Epoch = Tuple[float, int, int, int]   # when (wall clock), PGs whose up set changed, only their
#                                       acting set, OSDs whose up_thru changed
Change = Tuple[float, str, str]       # when (wall clock), a PG, change_kind() of its new interval
PEER_S = 3.0                          # a PG peers this long at most after its new interval
# ops a second per client in the live tests' short variants (test_latency_live,
# test_expand_live): enough to see every peering, not so many that the clients take the
# OSDs' CPU from the backfill (flat out, 2 clients kept 2 cores busy and a 16-PG drain
# took 126 s to clean; the bench itself runs them flat out)
LIVE_RATE = 150.0


class Clients:
    """The measuring clients, a process each."""

    def __init__(self, c: Cluster, objects: int, n: int, depth: int, run_dir: Path, seed: int,
                 rate: float = 0.0) -> None:
        self.outs = [run_dir / f"client{k}.npy" for k in range(n)]
        self.done: Optional[Tuple[List[np.ndarray], List[Dict[str, Any]]]] = None
        self.procs = [subprocess.Popen(
            ["/usr/bin/python3", "-m", "qa.latency_client", "--conf", c.env["CEPH_CONF"], "--pool", POOL,
             "--objects", str(objects), "--client", str(k), "--clients", str(n), "--depth", str(depth),
             "--seed", str(seed), "--rate", str(rate), "--out", str(self.outs[k])],
            cwd=Path(__file__).resolve().parent.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
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


def mappings(c: Cluster, epoch: int, pool_id: int) -> Tuple[Dict[str, Mapping], float, Dict[int, int]]:
    """The pool's PGs' mappings at one epoch, when the mon made that epoch (wall clock),
    and each OSD's up_thru there."""
    f = c.dir / f"map.{epoch}"
    c.ceph("osd", "getmap", str(epoch), "-o", str(f))
    p = subprocess.run(["osdmaptool", str(f), "--print", "--test-map-pgs-dump-all", "--pool", str(pool_id)],
                       capture_output=True, text=True, timeout=120)
    f.unlink()
    stamp = MODIFIED.search(p.stdout)
    when = datetime.datetime.fromisoformat(stamp.group(1)).timestamp() if stamp else float("nan")

    def osds(s: str) -> Tuple[int, ...]:
        return tuple(int(o) for o in s.split(",") if o)
    return ({m.group(1): (osds(m.group(2)), int(m.group(3)), osds(m.group(4)), int(m.group(5)))
             for m in MAPPING.finditer(p.stdout)}, when,
            {int(m.group(1)): int(m.group(2)) for m in UP_THRU.finditer(p.stdout)})


def split_parents(n_old: int, n_new: int) -> Set[int]:
    """The PGs (their seeds) that split when pg_num grows from n_old to n_new: a child's
    parent is its seed with the top bit cleared until it is below n_old."""
    out: Set[int] = set()
    for child in range(n_old, n_new):
        seed = child
        while seed >= n_old and seed:
            seed &= ~(1 << (seed.bit_length() - 1))
        out.add(seed)
    return out


def intervals(c: Cluster, pool_id: int, first: int,
              last: int) -> Tuple[Dict[str, int], List[Epoch], List[Change]]:
    """Over the map epochs first+1..last: new intervals (peerings) of the pool's PGs,
    acting primary changes, and the PGs at the end; each epoch's time, its PGs whose up
    set changed (a remap, a split) or only their acting set (pg_temp), and its OSDs whose
    up_thru moved (a primary's peering waits for that epoch); and each PG's new intervals."""
    peerings = primaries = 0
    epochs: List[Epoch] = []
    changes: List[Change] = []
    prev, _, thru0 = mappings(c, first, pool_id)
    for e in range(first + 1, last + 1):
        cur, when, thru = mappings(c, e, pool_id)
        split = split_parents(len(prev), len(cur)) if len(cur) > len(prev) > 0 else set()
        up = acting = 0
        for pg, m in cur.items():
            old = prev.get(pg)
            if old is None or old != m or int(pg.split(".")[1], 16) in split:
                peerings += 1            # born (a split child), remapped, or split
                if old is None or old[:2] != m[:2] or int(pg.split(".")[1], 16) in split:
                    up += 1
                else:
                    acting += 1
                changes.append((when, pg, change_kind(old, m, int(pg.split(".")[1], 16) in split)))
            if old is not None and old[3] != m[3]:
                primaries += 1
        epochs.append((when, up, acting, sum(1 for o, v in thru.items() if thru0.get(o) != v)))
        prev, thru0 = cur, thru
    return {"peerings": peerings, "primary_changes": primaries, "pgs": len(prev)}, epochs, changes


PG_KINDS = ("move", "remap", "temp", "drop", "order")


def change_kind(old: Optional[Mapping], new: Mapping, split: bool) -> str:
    """What a PG's new interval is: "move" (its up set's OSDs changed, its acting set's
    did not: a pg_temp in the same epoch, primed, holds it on its data; or it split or was
    born), "remap" (both changed: unprimed, the PG went to OSDs without its data), "temp"
    (only its acting set's OSDs, to other than its up set: a pg_temp set), "drop" (only
    its acting set's OSDs, to its up set: the pg_temp dropped, as at the end of a
    backfill) or "order" (the same OSDs, in another order or with another primary)."""
    if old is None or split:
        return "move"
    if set(old[0]) != set(new[0]):
        return "move" if set(old[2]) == set(new[2]) else "remap"
    if set(old[2]) == set(new[2]):
        return "order"
    return "drop" if set(new[2]) == set(new[0]) else "temp"


def slow_by_pg(ops: np.ndarray, changes: Sequence[Change], wall_minus_mono: float, t_change: float,
               t_clean: float, pool_id: int, pg_nums: Tuple[int, int]) -> Dict[str, int]:
    """The slow ops of the change laid at their own PG's peering: per kind of the PG's
    newest new interval made while the op waited or up to PEER_S before it started (a PG
    peers for that long), how many; "none": its PG did not peer then (the op waited on
    something else: the disk, another PG's op ahead of it). An object's PG is taken at
    both pg_nums (a split's parent and child). Also per kind: the PG intervals of the
    change, and how many of them held a slow op."""
    start, end = ops[:, 0], ops[:, 1]
    slow = np.flatnonzero((start >= t_change) & (start < t_clean) & ((end - start) * 1000.0 > SLOW_MS))
    by_pg: Dict[str, List[Tuple[float, str]]] = {}
    out = {"none": 0}
    for k in PG_KINDS:
        out.update({k: 0, f"{k}_intervals": 0, f"{k}_with_slow": 0})
    for when, pg, kind in changes:
        by_pg.setdefault(pg, []).append((when - wall_minus_mono, kind))
        if t_change <= when - wall_minus_mono < t_clean:
            out[f"{kind}_intervals"] += 1
    held: Set[Tuple[str, float, str]] = set()
    for row in slow.tolist():
        s, e = float(start[row]), float(end[row])
        name = object_name(int(ops[row, 4]))
        pgs = {f"{pool_id}.{object_ps(name, n):x}" for n in pg_nums}
        near = [(t, kind, pg) for pg in pgs for t, kind in by_pg.get(pg, ()) if s - PEER_S <= t <= e]
        if not near:
            out["none"] += 1
            continue
        t, kind, pg = max(near)
        out[kind] += 1
        held.add((pg, t, kind))
    for _, _, kind in held:
        out[f"{kind}_with_slow"] += 1
    return out


def bursts(ops: np.ndarray, epochs: Sequence[Epoch], wall_minus_mono: float, t_change: float,
           t_clean: float) -> Dict[str, Any]:
    """Where the slow ops of the change come from. An epoch is "up" if some PG's up set
    changed in it (a remap or split: peering on the new OSDs), "acting" if only acting sets
    did (pg_temp set or cleared by backfill), else "up_thru" if an OSD's up_thru moved (what
    a primary's peering waits for: WaitUpThru), else "other". Per
    kind: the epochs, and the median and largest over them of the slowest op in flight when
    the epoch was made (and the same at each whole second of the change: the baseline); and
    how many of the ops over SLOW_MS started during the change had an epoch of each kind
    made while they waited (an op may count under several)."""
    start, end = ops[:, 0], ops[:, 1]
    lat = (end - start) * 1000.0
    during = (start >= t_change) & (start < t_clean)
    slow = during & (lat > SLOW_MS)
    out: Dict[str, Any] = {"slow_ops": int(slow.sum())}
    order = np.argsort(start)
    s_sorted, e_by_start = start[order], end[order]

    def worst(t: float) -> float:
        """The slowest op in flight at t: started before it (the last 30 s of starts
        suffice: no op waits longer in these runs), ended after."""
        lo, hi = np.searchsorted(s_sorted, [t - 30.0, t])
        inflight = e_by_start[lo:hi] > t
        return float(((e_by_start[lo:hi] - s_sorted[lo:hi]) * 1000.0)[inflight].max(initial=0.0))
    kinds = {"up": [], "acting": [], "up_thru": [], "other": []}     # type: Dict[str, List[float]]
    hit = {k: np.zeros(len(ops), dtype=bool) for k in kinds}
    for when, up, acting, thru in epochs:
        t = when - wall_minus_mono
        if not (t_change <= t < t_clean) or t != t:
            continue
        kind = "up" if up else "acting" if acting else "up_thru" if thru else "other"
        kinds[kind].append(worst(t))
        hit[kind] |= (start <= t) & (end > t)
    # the same at every whole second of the change, epoch or not: what "worst" is anyway
    kinds["any_second"] = [worst(t) for t in np.arange(t_change + 0.5, t_clean, 1.0)]
    for k, v in kinds.items():
        out[f"{k}_epochs"] = len(v)
        out[f"{k}_worst_ms"] = [round(float(np.median(v)), 1), round(max(v), 1)] if v else None
        if k in hit:
            out[f"slow_at_{k}"] = int((slow & hit[k]).sum())
    out["slow_at_none"] = int((slow & ~(hit["up"] | hit["acting"] | hit["up_thru"] | hit["other"])).sum())
    return out


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
    plan = json.loads(c.ceph("pg-advisor", "progress", "-f", "json"))["plan"]
    return plan is None or plan["status"] not in ("running", "paused")


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
            c.ceph("config", "set", "osd", "osd_crush_initial_weight", "0")
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
        wait_until(lambda: json.loads(c.ceph("pg-advisor", "progress", "-f", "json"))["plan"]["status"]
                   not in ("running", "paused"), 7200, "the drain", step=2)
        if method == "advisor-weight":
            c.ceph("pg-advisor", "crush-reweight", "--osd", str(last_osd), "--weight", "0")
            wait_until(lambda: (json.loads(c.ceph("pg-advisor", "progress", "-f", "json"))["plan"] or {})
                       .get("status") not in ("running", "paused"), 7200, "the pins' drain", step=2)
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
    try:
        if a.store == "bluestore":
            c.ceph("config", "set", "osd", "osd_memory_target", str(MEMORY_TARGET))
        r = measure(c, scenario, method, int(a.data_gib * (1 << 30)) // OBJECT, a.pg_num or PG_NUM[scenario],
                    osds - 1, a.clients, a.depth, a.window, a.timeout, seed, a.advisor_set or ())
    finally:
        c.vstart("stop")
        # bluestore fills its sparse block files (some 4 GiB each a run): only the figures,
        # the clients' ops and the logs are kept
        for block in c.dir.glob("osd.*/block"):
            block.unlink()
    return dict(r, osds=osds)


def measure(c: Cluster, scenario: str, method: str, objects: int, pg_num: int, last_osd: int,
            clients: int, depth: int, window: float, timeout: float, seed: int,
            advisor_set: Sequence[str] = (), rate: float = 0.0) -> Dict[str, Any]:
    """On a running cluster: the pool, filled; the method's settings; the clients; the change
    (the drain's of `last_osd`); its end; the figures. The pool and the settings stay
    (the live test removes them)."""
    c.ceph("osd", "pool", "create", POOL, str(pg_num), str(pg_num))
    c.ceph("osd", "pool", "set", POOL, "pg_autoscale_mode", "off")
    c.ceph("osd", "pool", "application", "enable", POOL, "rados")
    t0 = time.monotonic()
    fill(c.env["CEPH_CONF"], POOL, objects)
    fill_s = time.monotonic() - t0
    c.wait_clean(1800)
    # the method's own settings, then whatever they do before the change is done
    if method == "ceph":
        c.ceph("balancer", "mode", "upmap")
        c.ceph("balancer", "on")
    else:
        c.ceph("config", "set", "mgr", OPT + "split_pinning", str(method != "advisor-unpinned").lower())
        for kv in advisor_set:                  # --advisor-set: the module's options tried
            key, _, value = kv.partition("=")
            c.ceph("config", "set", "mgr", OPT + key, value)
        if method == "advisor-auto":
            # no pg_num change of its own in the middle: the comparison is of the move
            c.ceph("config", "set", "mgr", OPT + "hysteresis", "1.0")
            c.ceph("config", "set", "mgr", OPT + "pin_on_change", "true")
            c.ceph("config", "set", "mgr", OPT + "mode", "auto")
    time.sleep(5)
    wait_until(lambda: done(c), 3600, "the method's own balancing before the change", step=5)
    cls = device_class(c)
    run_dir = Path(tempfile.mkdtemp(prefix="clients-", dir=c.dir))
    running = Clients(c, objects, clients, depth, run_dir, seed, rate)
    time.sleep(window)
    first = int(c.json("osd", "dump")["epoch"])
    moved0 = recovery_bytes(c)
    cpu0 = cpu_seconds(c)
    t_change = time.monotonic()
    change(c, scenario, method, pg_num, last_osd)
    time.sleep(5)
    wait_until(lambda: done(c), timeout, "the change to end", step=2)
    t_clean = time.monotonic()
    cpu1 = cpu_seconds(c)
    wall_minus_mono = time.time() - time.monotonic()
    time.sleep(window)
    ops, results = running.finish()
    moved = recovery_bytes(c) - moved0
    last = int(c.json("osd", "dump")["epoch"])
    pool_id = c.pool_id(POOL)
    iv, epochs, changes = intervals(c, pool_id, first, last)
    allops = np.concatenate(ops)
    order = np.argsort(allops[:, 0])
    s = summarize([(float(r[0]), float(r[1]), bool(r[2])) for r in allops[order]], t_change, t_clean)
    # the longest stall one client saw (the other may have had ops on other OSDs meanwhile)
    stalls = [summarize([(float(r[0]), float(r[1]), bool(r[2])) for r in o], t_change, t_clean)
              for o in ops if len(o)]
    worst = max(stalls, key=lambda x: x["stall_s"])
    during = int(((allops[:, 0] >= t_change) & (allops[:, 0] < t_clean)).sum())
    return {"scenario": scenario, "method": method, "pg_num": pg_num, "objects": objects,
            "fill_s": round(fill_s), "device": cls,
            "advisor_set": list(advisor_set) if method != "ceph" else [], **s, "ops_during": during,
            "stall_s": worst["stall_s"],
            "stall_at_s": worst["stall_at_s"],
            "mismatches": sum(r["mismatch_count"] for r in results),
            "mismatch_examples": [m for r in results for m in r["mismatches"]][:5],
            "unknown": sum(r["unknown"] for r in results), "bytes_moved": moved,
            "epochs": last - first, **iv,
            "peerings_per_pg": round(iv["peerings"] / max(iv["pgs"], 1), 2),
            "cpu_s": {k: round(cpu1[k] - cpu0.get(k, 0.0), 1) for k in sorted(cpu1)},
            "bursts": bursts(allops, epochs, wall_minus_mono, t_change, t_clean),
            "slow_by_pg": slow_by_pg(allops, changes, wall_minus_mono, t_change, t_clean, pool_id,
                                     (pg_num, iv["pgs"]))}


def table(rows: List[Dict[str, Any]]) -> List[str]:
    fmt = (lambda v: "/".join("-" if x is None else f"{x:g}" for x in v))
    out = [f"{'method':<17} {'before ms':>15} {'during ms':>19} {'after ms':>15} {'stall s':>7} "
           f"{'failed':>6} {'bad':>3} {'clean s':>7} {'moved MiB':>9} {'prim':>5} {'peer/PG':>7}"]
    for r in rows:
        out.append(f"{r['method']:<17} {fmt(r['before']):>15} {fmt(r['during']):>19} {fmt(r['after']):>15} "
                   f"{r['stall_s']:>7} {r['failed']:>6} {r['mismatches']:>3} {r['to_clean_s']:>7} "
                   f"{r['bytes_moved'] / (1 << 20):>9.0f} {r['primary_changes']:>5} "
                   f"{r['peerings_per_pg']:>7}")
    return out


def burst_table(rows: List[Dict[str, Any]]) -> List[str]:
    """Per run and epoch kind: the epochs of the change, the median/largest slowest op in
    flight at each, and the ops over SLOW_MS in flight at one (at each whole second: the
    baseline); the ops over SLOW_MS at no epoch; the daemons' CPU seconds."""
    kinds = ("up", "acting", "up_thru", "other")
    out = [f"{'method':<17} " + " ".join(f"{k + ': n, worst ms, slow':>27}" for k in kinds)
           + f" {'each second: worst ms':>22} {'none':>5} {'cpu s mon/mgr/osd':>18}"]
    for r in rows:
        b, cpu = r["bursts"], r["cpu_s"]
        cells = []
        for k in kinds:
            w = b.get(f"{k}_worst_ms")
            cells.append("-" if f"{k}_epochs" not in b else
                         f"{b[k + '_epochs']}, {'-' if not w else f'{w[0]:g}/{w[1]:g}'}, {b[f'slow_at_{k}']}")
        w = b["any_second_worst_ms"]
        out.append(f"{r['method']:<17} " + " ".join(f"{c:>27}" for c in cells)
                   + f" {'-' if not w else f'{w[0]:g}/{w[1]:g}':>22} {b['slow_at_none']:>5} "
                   f"{cpu.get('mon', 0):>8g}/{cpu.get('mgr', 0):g}/{cpu.get('osd', 0):g}")
    return out


def pg_table(rows: List[Dict[str, Any]]) -> List[str]:
    """Per run and kind of a PG's new interval (slow_by_pg): the slow ops laid at one, and
    how many of the change's intervals of that kind held a slow op, of how many."""
    out = [f"{'method':<17} {'slow ops':>8} " + " ".join(f"{k + ': slow, held/n':>19}" for k in PG_KINDS)
           + f" {'none':>5}"]
    for r in rows:
        p = r.get("slow_by_pg")
        if p is None:
            continue
        # rows of runs before a kind was told apart have no entry for it: "-"
        cells = [f"{p[k]}, {p[k + '_with_slow']}/{p[k + '_intervals']}" if k + "_with_slow" in p
                 else str(p.get(k, "-")) for k in PG_KINDS]
        out.append(f"{r['method']:<17} {sum(p.get(k, 0) for k in PG_KINDS) + p['none']:>8} "
                   + " ".join(f"{c:>19}" for c in cells) + f" {p['none']:>5}")
    return out


def goals(rows: List[Dict[str, Any]], methods: List[str]) -> List[str]:
    """The issue's goals, per pg_advisor method against the ceph runs of the same repeat."""
    out = []
    ceph = [r for r in rows if r["method"] == "ceph"]
    for m in methods:
        if m == "ceph":
            continue
        ours = [r for r in rows if r["method"] == m]
        pairs = list(zip(ours, ceph))
        if not pairs:
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
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
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
