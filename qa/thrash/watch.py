"""What the thrash checks (doc/testing.rst says how each is counted): the invariants sampled
while it runs (the mgr's pid and gid, health checks, plan waits, memory, misplaced objects
against the budget plus what the thrasher remapped), the client's data, and at the end no
command to a removed pool."""
import json
import random
import re
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

from ..cluster.rados_client import InFlight, Rados, payload

NONE = 2147483647          # CRUSH_ITEM_NONE: an EC position with no OSD
# pg_advisor's own mon commands (pg_num_actual/pgp_num_actual from the mgr are Ceph's)
OURS = {"osd pg-upmap-items", "osd rm-pg-upmap-items", "osd pg-upmap", "osd rm-pg-upmap",
        "osd pg-temp", "osd primary-temp"}
OUR_VARS = {"pg_num", "pgp_num"}
# a plan's waits on backfill (executor.py), which a clean cluster no longer has
THROTTLE_WAIT = re.compile(r"holds the next balance round back|would pass the budget|PGs backfilling")
WAIT_CLEAN_MAX = 120.0     # s a plan may wait so with every PG active+clean


def read_pid(pidfile: Path) -> int:
    """The pid a daemon's pid file holds (-1: none)."""
    try:
        return int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return -1


def rss_mib(pid: int) -> float:
    """A process's resident memory (0: no such process)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0) / 1024


def moved_positions(before: List[int], after: List[int], erasure: bool) -> int:
    """Copies of a PG's objects that must move to go from up set `before` to `after`: for EC
    each shard position whose OSD changed, for replication each OSD new to the set."""
    if erasure:
        return sum(1 for i, o in enumerate(after)
                   if o != NONE and (i >= len(before) or before[i] != o))
    return len({o for o in after if o != NONE} - set(before))


def parent_pg(pgid: str, known: Dict[str, Any]) -> Optional[str]:
    """The PG `pgid` was split from, among `known` (a split child's seed is its parent's
    with higher bits set: clear the top bit until one is known)."""
    pool, ps = pgid.split(".")
    seed = int(ps, 16)
    while seed:
        seed &= ~(1 << (seed.bit_length() - 1))
        cand = f"{pool}.{seed:x}"
        if cand in known:
            return cand
    return None


@dataclass
class Share:
    positions: int        # copies per object the thrasher's actions moved
    epoch: int            # the map of the latest of those actions


@dataclass
class Figures:
    samples: int = 0
    budget: float = 0.0
    peak_ours: float = 0.0            # pg_advisor's misplaced copies / (budget x copies), max
    peak_ours_at: str = ""
    peak_total: int = 0               # misplaced copies, max
    peak_total_allowance: int = 0     # the allowance at that sample
    over: List[str] = field(default_factory=list)
    mgr_pids: List[int] = field(default_factory=list)
    mgr_gids: List[int] = field(default_factory=list)
    mgr_rss_peak_mib: float = 0.0
    osds_rss_peak_mib: float = 0.0    # all ceph-osd processes together
    mem_available_min_mib: float = float("inf")   # the machine's MemAvailable
    checks_seen: Dict[str, int] = field(default_factory=dict)   # check -> samples it was up
    plan_errors: List[str] = field(default_factory=list)
    wait_clean_longest_s: float = 0.0  # a plan waiting on backfill while all PGs were clean
    wait_clean_at: str = ""
    errors: List[str] = field(default_factory=list)


class CleanWait:
    """How long a running plan waited for backfill (THROTTLE_WAIT) with every PG active+clean:
    the plan reading a stale cluster."""

    def __init__(self) -> None:
        self.since: Optional[float] = None
        self.text = ""

    def update(self, now: float, plan: Optional[Dict[str, Any]], clean: bool) -> float:
        """The length of the current such wait (0: none)."""
        waiting = (plan or {}).get("waiting") or ""
        if not (clean and (plan or {}).get("status") == "running" and THROTTLE_WAIT.search(waiting)):
            self.since = None
            return 0.0
        if self.since is None:
            self.since, self.text = now, waiting
        return now - self.since


class Watcher(threading.Thread):
    """Samples the invariants every `interval` seconds in a thread of its own."""

    def __init__(self, mon: Rados, run_dir: Path, budget: float, interval: float = 2.0) -> None:
        super().__init__(daemon=True)
        self.mon = mon
        self.pidfile = run_dir / "mgr.x.pid"
        self.fig = Figures(budget=budget)
        self.interval = interval
        self.shares: Dict[str, Share] = {}
        self.began: Dict[str, int] = {}        # PG -> objects when its misplacement began
        self.totals: List[Tuple[float, int]] = []
        self.erasure: Set[int] = set()
        self.clean_wait = CleanWait()
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def mapped(self) -> Tuple[int, Dict[str, List[int]]]:
        """The map's epoch and every PG's up set in it, as osdmaptool maps it (upmaps applied)."""
        from pg_advisor_testkit.osdmaptool_output import dump_all   # src on the path: __main__
        e = int(self.mon.json("mon", "osd dump")["epoch"])
        code, raw, err = self.mon.raw("mon", "osd getmap", epoch=e)
        if code != 0:
            raise RuntimeError(f"osd getmap {e}: {err}")
        with tempfile.NamedTemporaryFile() as f:
            f.write(raw)
            f.flush()
            return e, {pg: list(m.up) for pg, m in dump_all(f.name).items()}

    def after(self, start: Tuple[int, Dict[str, List[int]]]) -> int:
        """Charge the PGs the map changes since `start` (mapped()) moved to the thrasher; how many."""
        e1, ups = self.mapped()
        if e1 == start[0]:
            return 0
        moved = 0
        with self.lock:
            for pgid, up in ups.items():
                old = start[1].get(pgid)
                if old is None:
                    continue                 # a new pool's PG, or a split child: no data moved
                n = moved_positions(old, up, int(pgid.split(".")[0]) in self.erasure)
                if n:
                    s = self.shares.get(pgid)
                    self.shares[pgid] = Share(min(len(up), n + (s.positions if s else 0)), e1)
                    moved += 1
        return moved

    def finish(self) -> Figures:
        self.stop.set()
        self.join(120)
        return self.fig

    def run(self) -> None:
        while not self.stop.wait(self.interval):
            try:
                self.sample()
            except Exception as e:     # a failed sample is reported, and sampling goes on
                self.fig.errors.append(f"{time.strftime('%H:%M:%S')} {e!r}")
                del self.fig.errors[:-50]

    def sample(self) -> None:
        fig = self.fig
        fig.samples += 1
        self._processes()
        health = self.mon.json("mon", "health", detail="detail").get("checks", {})
        for name, c in health.items():
            fig.checks_seen[name] = fig.checks_seen.get(name, 0) + 1
            if name == "PG_ADVISOR_PLAN_ERROR":
                msg = f"{time.strftime('%H:%M:%S')} {c.get('summary', {}).get('message', '')}"
                fig.plan_errors.append(msg)
        pools = self.mon.json("mon", "osd pool ls", detail="detail")
        self.erasure = {int(p["pool_id"]) for p in pools if p.get("erasure_code_profile")
                        and p.get("type") in (3, "erasure")}
        dump = self.mon.json("mgr", "pg dump", dumpcontents=["pgs"])
        stats = dump["pg_stats"] if "pg_stats" in dump else dump["pg_map"]["pg_stats"]
        self._misplaced(stats)
        if fig.samples % 5 == 0:      # every 10 s: the plan's state from the module itself
            self._plan_wait(stats)

    def _plan_wait(self, stats: List[Dict[str, Any]]) -> None:
        fig = self.fig
        plan = self.mon.json("mgr", "pg-advisor progress").get("plan")
        clean = all(s.get("state") == "active+clean" for s in stats)
        waited = self.clean_wait.update(time.monotonic(), plan, clean)
        if waited > fig.wait_clean_longest_s:
            fig.wait_clean_longest_s = waited
            fig.wait_clean_at = f"{time.strftime('%H:%M:%S')}: {self.clean_wait.text}"

    def _processes(self) -> None:
        """The mgr's pid, gid and RSS; the machine's free memory and the OSDs' RSS."""
        fig = self.fig
        pid = read_pid(self.pidfile)
        if not fig.mgr_pids or fig.mgr_pids[-1] != pid:
            fig.mgr_pids.append(pid)
        fig.mgr_rss_peak_mib = max(fig.mgr_rss_peak_mib, rss_mib(pid))
        gid = int(self.mon.json("mon", "mgr dump")["active_gid"])
        if gid and (not fig.mgr_gids or fig.mgr_gids[-1] != gid):
            fig.mgr_gids.append(gid)
        avail = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemAvailable:")) / 1024
        fig.mem_available_min_mib = min(fig.mem_available_min_mib, avail)
        rss = sum(rss_mib(read_pid(f)) for f in self.pidfile.parent.glob("osd.*.pid"))
        fig.osds_rss_peak_mib = max(fig.osds_rss_peak_mib, rss)

    def _misplaced(self, stats: List[Dict[str, Any]]) -> None:
        fig = self.fig
        now = time.monotonic()
        total = sum(int(s["stat_sum"]["num_object_copies"]) for s in stats)
        self.totals = [(t, c) for t, c in self.totals if now - t < 120] + [(now, total)]
        # the budget on the most copies of the last two minutes: a pool removed since
        # pg_advisor's last step shrinks the total its gate saw
        budget_copies = fig.budget * max(c for _, c in self.totals)
        ours, theirs, misplaced = 0.0, 0, 0
        with self.lock:
            # a split child of a charged PG is charged alike (before any share ends below)
            known = dict(self.shares)
            for s in stats:
                if s["pgid"] not in known and int(s["stat_sum"]["num_objects_misplaced"]):
                    parent = parent_pg(s["pgid"], known)
                    if parent is not None:
                        self.shares[s["pgid"]] = Share(known[parent].positions, known[parent].epoch)
            for s in stats:
                pgid = s["pgid"]
                mis = int(s["stat_sum"]["num_objects_misplaced"])
                objs = int(s["stat_sum"]["num_objects"])
                share = self.shares.get(pgid)
                if mis == 0:
                    self.began.pop(pgid, None)
                    if share is not None and int(s.get("reported_epoch", 0)) >= share.epoch:
                        del self.shares[pgid]
                    continue
                misplaced += mis
                began = self.began.setdefault(pgid, objs)
                mine = min(mis, share.positions * objs) if share else 0
                theirs += mine
                ours += (mis - mine) * (min(1.0, began / objs) if objs else 1.0)
        allowance = budget_copies + theirs
        if misplaced > fig.peak_total:
            fig.peak_total, fig.peak_total_allowance = misplaced, int(allowance)
        ratio = ours / budget_copies if budget_copies else (0.0 if ours == 0 else float("inf"))
        if ratio > fig.peak_ours:
            fig.peak_ours = ratio
            fig.peak_ours_at = (f"{time.strftime('%H:%M:%S')}: pg_advisor's {ours:.0f} of {misplaced} "
                                f"misplaced copies, budget {budget_copies:.0f}, thrasher's {theirs}")
        if ratio > 1.0:
            fig.over.append(fig.peak_ours_at if ratio == fig.peak_ours else
                            f"{time.strftime('%H:%M:%S')}: pg_advisor's {ours:.0f} misplaced copies "
                            f"over the budget {budget_copies:.0f} (thrasher's {theirs})")


# Pacific and Tentacle write `cmd=[...]: dispatch` or `cmd={...} : dispatch`, `cmd='[...]': finished`
AUDIT = re.compile(r"entity='([^']*)' cmd='?(\[.*\]|\{.*\})'? ?: (dispatch|finished)")


def commands_to_missing_pools(audit_log: Path, removed: Dict[str, int]) -> Tuple[int, List[str]]:
    """How many of pg_advisor's commands the audit log shows, and those sent after the removal
    of the pool they name (`removed`: name -> id, each removed once, ids never reused)."""
    gone_names: Set[str] = set()
    gone_ids: Set[int] = set()
    ours, bad = 0, []
    for line in audit_log.read_text(errors="replace").splitlines():
        m = AUDIT.search(line)
        try:
            cmd = json.loads(m.group(2)) if m else None
        except ValueError:
            continue
        cmd = cmd[0] if isinstance(cmd, list) and cmd else cmd
        if m is None or not isinstance(cmd, dict):
            continue
        entity, phase, prefix = m.group(1), m.group(3), cmd.get("prefix", "")
        if prefix == "osd pool rm" and phase == "finished" and cmd.get("pool") in removed:
            gone_names.add(cmd["pool"])
            gone_ids.add(removed[cmd["pool"]])
        elif not entity.startswith("mgr.") or phase != "dispatch":
            continue
        elif prefix == "osd pool set" and cmd.get("var") in OUR_VARS:
            ours += 1
            bad += [line] if cmd.get("pool") in gone_names else []
        elif prefix in OURS:
            ours += 1
            pool = str(cmd.get("pgid", "")).split(".")[0]
            bad += [line] if pool.isdigit() and int(pool) in gone_ids else []
    return ours, bad


OP_TIMEOUT = 300      # s: an op unanswered so long fails, far above a healthy cluster's stalls


@dataclass
class PoolLoad:
    pool: str
    objects: int
    ok: int = 0
    failed: List[str] = field(default_factory=list)
    longest: float = 0.0                  # the slowest op, seconds
    longest_at: float = 0.0
    # name -> (version, size) it holds; a failed write leaves both versions possible
    versions: Dict[str, Tuple[int, int]] = field(default_factory=dict)
    unsure: Dict[str, Set[Tuple[int, int]]] = field(default_factory=dict)


class Client:
    """The checking client: a thread per pool overwrites a fixed set of objects (the object
    count, which scales the misplaced allowance, stays put) and checks every read, at `rate`
    ops a second at most (memstore keeps PG logs in RAM); `fill`'s objects are read back at
    the end too. `rados` is made with OP_TIMEOUT."""

    def __init__(self, rados: Rados, pools: List[str], objects: int, seed: int, rate: float) -> None:
        self.rados = rados
        self.loads = {p: PoolLoad(p, objects) for p in pools}
        self.fills: Dict[str, Dict[str, Tuple[int, int]]] = {p: {} for p in pools}
        self.fill_failed: List[str] = []
        self.seed, self.rate = seed, rate
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(self.loads[p], i), daemon=True)
                        for i, p in enumerate(pools)]
        self.lock = threading.Lock()

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _op(self, load: PoolLoad, what: str, name: str, fn: Any, *args: Any) -> Any:
        """fn(name, *args), timed and counted; None if it failed."""
        t0 = time.monotonic()
        try:
            out = fn(name, *args)
        except Exception as e:     # any failure is what the run counts
            load.failed.append(f"{what} {load.pool}/{name}: {e!r}")
            return None
        finally:
            took = time.monotonic() - t0
            if took > load.longest:
                load.longest, load.longest_at = took, time.time()
        load.ok += 1
        return True if out is None else out

    def _run(self, load: PoolLoad, index: int) -> None:
        rng = random.Random(self.seed * 1000 + index)
        names = [f"obj-{i}" for i in range(load.objects)]
        todo = list(names)              # first every object once, then overwrites and checked reads
        next_at = time.monotonic()
        with self.rados.ioctx(load.pool) as io:
            while not self.stop.is_set():
                next_at += 1.0 / self.rate
                time.sleep(max(0.0, next_at - time.monotonic()))
                name = todo.pop() if todo else rng.choice(names)
                if todo or name not in load.versions or rng.random() < 0.5:
                    old = load.versions.get(name)
                    new = load.versions[name] = ((old[0] if old else 0) + 1, rng.choice((4096, 16384, 65536)))
                    if self._op(load, "write", name, io.write_full, payload(name, *new)):
                        load.unsure.pop(name, None)
                    else:    # it may or may not have been applied: either version may be read
                        load.unsure.setdefault(name, set()).update({new} | ({old} if old else set()))
                    continue
                got = self._op(load, "read", name, io.read, 1 << 20)
                problem = got is not None and check(name, got, load.versions[name], load.unsure.get(name))
                if problem:
                    load.failed.append(f"read {load.pool}/{name}: {problem}")

    def fill(self, pool: str, count: int, size: int) -> None:
        """Write `count` objects of `size` bytes into `pool` (in the caller's thread)."""
        with self.lock:
            names = [f"fill-{len(self.fills[pool]) + i}" for i in range(count)]
            self.fills[pool].update((name, (1, size)) for name in names)
        with self.rados.ioctx(pool) as io:
            writes = InFlight(io, 4)
            for name in names:
                writes.write_full(name, payload(name, 1, size))
            writes.flush()
        self.fill_failed += [f"fill {pool}: a write failed ({code})" for code in writes.failed]

    def finish(self) -> List[str]:
        """Stop the load, then read back every object the run wrote: the problems found."""
        self.stop.set()
        for t in self.threads:
            t.join(OP_TIMEOUT + 60)
        problems: List[str] = []
        for pool, load in self.loads.items():
            with self.rados.ioctx(pool) as io:
                for name, version in sorted({**load.versions, **self.fills[pool]}.items()):
                    try:
                        problem = check(name, io.read(name, 1 << 22), version, load.unsure.get(name))
                    except Exception as e:
                        problem = repr(e)
                    if problem:
                        problems.append(f"final read {pool}/{name}: {problem}")
        return problems

    def figures(self) -> Dict[str, Any]:
        # longest_op_ended (UTC, as the log's start line): to find the action behind it
        return {p: {"ok": ld.ok, "failed": len(ld.failed), "longest_op_s": round(ld.longest, 2),
                    "longest_op_ended": time.strftime("%H:%M:%S", time.gmtime(ld.longest_at)),
                    "fill_objects": len(self.fills[p])}
                for p, ld in self.loads.items()}

    def failures(self) -> List[str]:
        return [f for ld in self.loads.values() for f in ld.failed] + self.fill_failed


def check(name: str, got: bytes, version: Tuple[int, int],
          unsure: Optional[Set[Tuple[int, int]]]) -> str:
    """'' if `got` is the version written last (or, after a failed write, one it may hold)."""
    for v, size in sorted(unsure or {version}):
        if got == payload(name, v, size):
            return ""
    return f"{len(got)} bytes that are not version {version[0]} ({version[1]} bytes)"
