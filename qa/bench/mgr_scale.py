"""Benchmark: a real ceph-mgr over a big map, with pg_advisor disabled and then enabled.

    PYTHONPATH=src:. /usr/bin/python3 -m qa.bench.mgr_scale [--osds 1000,4000,10000]
        [--phase-seconds 600] [--settle-seconds 60] [--raw DIR]
    bash qa/cluster/tentacle.sh exec env PYTHONPATH=src:. python3 -m qa.bench.mgr_scale ...   (on Tentacle)

Per size a real ceph-mon holds the map (no OSD daemon) and a pool of 32 PGs per OSD; a real
ceph-mgr runs Ceph's default modules and this checkout's pg_advisor through phases (bench):
disabled, idle, panel, commands, plan. Every 2 s `ceph balancer status` is timed, the mgr's
CPU (whole and OUR_THREADS), RSS and failovers sampled. doc/status.rst has the goals and runs.
"""
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import rados

from ..cluster import OPT, free_port, wait_until
from ..cluster.ceph_release import print_ceph_version
from ..cluster.rados_client import Rados
from ..maps.crushgen import HOST, REPLICATED_HOST, Layout, crush_text, run, simple_map
from ..maps.monbuilt import PoolSpec, _create_pool, _Mon, make_osds
from ..thrash.watch import rss_mib
from .common import parser, table
from .latency.run import proc_cpu

REPO = Path(__file__).resolve().parents[2]
# mgr module load expiration: Tentacle 20.2.4's mgr, activating longer than that (20 s by
# default; here asking for the metadata of 10,000 never started OSDs), asks for its modules'
# services before they exist: ceph_assert(active_modules) in send_beacon
MGR_CONF = """
[mgr]
mgr data = {d}/mgr.$id
mgr module path = {d}/mgr-modules
log file = {d}/$name.log
mgr module load expiration = 600000
"""
MGR_POOL = ".mgr"   # the mgr's pool (devicehealth's and other modules' sqlite databases)
TICK = 2.0          # seconds between samples of the other module's command
# the threads named pg_advisor (serve loop, panel) and the mgr's finisher thread for our
# commands ("m-fin-" and the name, cut to 15 characters)
OUR_THREADS = ("pg_advisor", "m-fin-pg_adviso")


def layout(osds: int) -> Layout:
    # 4, 8 and 16 TB drives, scaled: crushtool sums bucket weights in 16.16 fixed point
    return Layout(max(osds // 200, 1), 20, 10, weight=lambda o: (0.4, 0.8, 1.6)[o % 3])


@dataclass
class Samples:
    other_ms: List[float] = field(default_factory=list)       # `ceph balancer status`
    other_at: List[float] = field(default_factory=list)       # ... its start (time.time())
    ours_ms: List[float] = field(default_factory=list)        # `ceph pg-advisor status` / panel
    cpu: List[Tuple[float, float, Dict[str, float]]] = field(default_factory=list)
    #      (monotonic, the mgr's cpu seconds, its threads' cpu seconds by name)
    rss: List[float] = field(default_factory=list)        # MiB
    gids: List[int] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)


class Rig:
    """One mon seeded with the map, one mgr, a client; stop() ends them all."""

    def __init__(self, osds: int, pgs: int, tmp: Path) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        lay = layout(osds)
        seed = tmp / "osdmap0.bin"
        crush_bin = simple_map(HOST, seed, crush_text(lay, [REPLICATED_HOST]), lay.num_osds)
        # the mon's directory: short, for the admin socket's path
        self.d = Path(tempfile.mkdtemp(prefix="pga-mgrscale-"))
        self.mon = _Mon(self.d, seed)
        self.mon.connect(timeout=120)
        self.client = Rados(str(self.mon.conf), connect_timeout=120)
        self.mgr: Optional[Any] = None
        self.last_error = ""
        make_osds(self.mon, lay.num_osds)
        crush = json.loads(run("crushtool", "-i", str(crush_bin), "--dump"))
        _create_pool(self.mon, PoolSpec("rbd", pgs), crush["rules"][0]["rule_name"])
        # the mgr's own pool, as every cluster has it: without it Tentacle's devicehealth,
        # finding too few OSDs up to create it, builds the whole OSD map in Python every 2 s
        # (61 % of a core at 10,000 OSDs), a load no cluster with running OSDs carries
        self.mon.command("osd pool create", pool=MGR_POOL, pg_num=1, pgp_num=1,
                         pool_type="replicated", rule=crush["rules"][0]["rule_name"],
                         yes_i_really_mean_it=True)
        self.mon.command("osd pool application enable", pool=MGR_POOL, app="mgr",
                         yes_i_really_mean_it=True)
        self.panel_port = free_port()
        self._start_mgr()

    def _start_mgr(self) -> None:
        mods = self.d / "mgr-modules"
        mods.mkdir()
        for m in Path("/usr/share/ceph/mgr").iterdir():
            (mods / m.name).symlink_to(m)
        # a copy, not a link: the mgr reads the module again whenever it respawns, and the
        # checkout may change during an hour of phases
        shutil.copytree(REPO / "src" / "pg_advisor", mods / "pg_advisor",
                        ignore=shutil.ignore_patterns("tests", "__pycache__"))
        (self.d / "mgr.x").mkdir()
        with open(self.mon.conf, "a") as f:
            f.write(MGR_CONF.format(d=self.d))
        with open(self.d / "mgr.stderr", "wb") as err:
            self.mgr = subprocess.Popen(["ceph-mgr", "-c", str(self.mon.conf), "-i", "x", "-f"],
                                        env=self.mon.env, stdin=subprocess.DEVNULL, stdout=err,
                                        stderr=subprocess.STDOUT)
        wait_until(lambda: self.client.command("mon", "mgr stat", format="json")["available"], 300,
                   f"ceph-mgr to be available (in {self.d})")
        # (the mon knows a module's options once the mgr has reported its modules)
        self.client.command("mon", "config set", who="mgr", name=OPT + "server_port",
                            value=str(self.panel_port), force=True)

    def mgr_command(self, prefix: str, timeout: float = 120, **args: Any) -> Tuple[int, float]:
        """(return code, seconds) of one mgr command; the last error's text in last_error."""
        t0 = time.monotonic()
        ret, _, outs = self.client.raw("mgr", prefix, timeout, **args)
        if ret:
            self.last_error = f"{prefix}: {ret} {outs}"
        return ret, time.monotonic() - t0

    def status_ms(self) -> Optional[float]:
        """`pg-advisor status`'s latency, None if it failed (why: last_error)."""
        try:
            code, dt = self.mgr_command("pg-advisor status", format="json")
        except rados.Error as e:
            self.last_error = f"{type(e).__name__}: {e}"
            return None
        return dt * 1000 if code == 0 else None

    def active_gid(self) -> int:
        return int(self.client.command("mon", "mgr dump", format="json")["active_gid"])

    def stop(self) -> None:
        if self.mgr is not None:
            self.mgr.kill()
            self.mgr.wait()
        self.client.shutdown()
        self.mon.stop()
        shutil.rmtree(self.d, ignore_errors=True)


def _threads_cpu(pid: int) -> Dict[str, float]:
    """CPU seconds of the mgr's threads by name: the mgr names each module's threads after
    it (serve loops, servers); the command handlers run in its own threads ("fn_anonymous")."""
    by: Dict[str, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            by[name] = by.get(name, 0.0) + proc_cpu(f"/proc/{pid}/task/{tid}/stat")
        except OSError:      # a thread that ended meanwhile
            continue
    return by


def phase(rig: Rig, name: str, seconds: float) -> Dict[str, Any]:
    s = Samples()
    stop = threading.Event()
    assert rig.mgr is not None
    pid = rig.mgr.pid

    def sample() -> None:
        while not stop.is_set():
            try:
                at = time.time()
                s.other_ms.append(rig.mgr_command("balancer status", timeout=120)[1] * 1000)
                s.other_at.append(at)
                by = _threads_cpu(pid)
                s.cpu.append((time.monotonic(), proc_cpu(f"/proc/{pid}/stat"), by))
                s.rss.append(rss_mib(pid))
                s.gids.append(rig.active_gid())
            except (rados.Error, OSError, ValueError) as e:
                s.errors.append(f"{type(e).__name__}: {e}")
            stop.wait(TICK)

    def ours() -> None:
        every = {"panel": 10.0, "commands": 30.0}.get(name)
        while every is not None and not stop.is_set():
            try:
                if name == "panel":
                    t0 = time.monotonic()
                    url = f"http://127.0.0.1:{rig.panel_port}/api/status"
                    urllib.request.urlopen(url, timeout=120).read()
                    s.ours_ms.append((time.monotonic() - t0) * 1000)
                else:
                    ms = rig.status_ms()
                    if ms is None:
                        s.errors.append(rig.last_error)
                    else:
                        s.ours_ms.append(ms)
                    rig.mgr_command("pg-advisor balance", dry_run=True, format="json")
            except Exception as e:   # a refused connection (panel not up yet) is a figure too
                s.errors.append(f"{type(e).__name__}: {e}")
            stop.wait(every)

    threads = [threading.Thread(target=sample), threading.Thread(target=ours)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(300)
    if name != "disabled" and not s.ours_ms and (ms := rig.status_ms()) is not None:
        s.ours_ms.append(ms)      # the status latency of every phase
    cpu = ours_cpu = float("nan")
    by_thread: Dict[str, float] = {}
    if len(s.cpu) > 1:
        span = s.cpu[-1][0] - s.cpu[0][0]
        cpu = (s.cpu[-1][1] - s.cpu[0][1]) / span * 100
        first, last = s.cpu[0][2], s.cpu[-1][2]
        by_thread = {k: round(max(v - first.get(k, 0.0), 0.0) / span * 100, 2)
                     for k, v in last.items()}
        ours_cpu = sum(v for k, v in by_thread.items() if k in OUR_THREADS)
    lat = sorted(s.other_ms) or [float("nan")]
    return {"phase": name, "failovers": len(set(s.gids)) - 1 if s.gids else -1, "cpu_pct": cpu,
            "ours_pct": ours_cpu,
            "rss_mib": max(s.rss, default=0), "other_p50": statistics.median(lat),
            "other_p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))], "other_max": lat[-1],
            "ours_max": max(s.ours_ms, default=float("nan")), "errors": len(s.errors),
            "first_error": s.errors[0] if s.errors else "",
            "raw": {"threads_cpu_pct": by_thread, "other_at": s.other_at, "other_ms": s.other_ms,
                    "ours_ms": s.ours_ms}}


def settle(rig: Rig, seconds: float, ours: bool) -> None:
    """Let the mgr finish (re)starting before a phase (a module enabled or disabled respawns
    it; its modules' first passes over a big map are not steady state); with `ours`, first
    until `pg-advisor status` answers."""
    deadline = time.monotonic() + 600
    while ours and time.monotonic() < deadline and rig.status_ms() is None:
        time.sleep(5)
    time.sleep(seconds)


def panel_after_enabling(rig: Rig, t0: float, found: Dict[str, float]) -> None:
    """Seconds from `mgr module enable` (at t0) to the panel's page ("page") and to its
    first /api/status ("status"; 503 until the first read is done), polled every 0.5 s
    for at most 10 minutes."""
    base = f"http://127.0.0.1:{rig.panel_port}"
    for what, path in (("page", "/"), ("status", "/api/status")):
        while what not in found and time.monotonic() - t0 < 600:
            try:
                urllib.request.urlopen(base + path, timeout=60).read()
                found[what] = time.monotonic() - t0
            except (OSError, ValueError):     # not serving yet, or 503: not computed yet
                time.sleep(0.5)


def bench(osds: int, seconds: float, settle_s: float, raw: Optional[Path]) -> List[Dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="pga-mgrscale-map-") as tmp:
        t0 = time.monotonic()
        rig = Rig(osds, 32 * osds, Path(tmp))
        print(f"# {osds} OSDs, {32 * osds} PGs: mon, OSDs, pool and mgr up in "
              f"{time.monotonic() - t0:.0f} s", flush=True)
        try:
            print_ceph_version(rig.mon.env, str(rig.mon.conf))
            rig.client.command("mon", "mgr module disable", module="pg_advisor")
            settle(rig, settle_s, ours=False)
            rows.append(phase(rig, "disabled", seconds))
            first: Dict[str, float] = {}
            watch = threading.Thread(target=panel_after_enabling, args=(rig, time.monotonic(), first))
            rig.client.command("mon", "mgr module enable", module="pg_advisor")
            watch.start()
            time.sleep(5)
            settle(rig, settle_s, ours=True)
            watch.join()
            print(f"# panel after enabling: page in {first.get('page', float('nan')):.1f} s, "
                  f"/api/status in {first.get('status', float('nan')):.1f} s", flush=True)
            for name in ("idle", "panel", "commands"):
                rows.append(phase(rig, name, seconds))
            # the command that acts: answered within command_wait, by its report or "queued"
            code, took = rig.mgr_command("pg-advisor apply", pool="rbd", pg_num=32 * osds + 64 * 32,
                                         format="json")
            rows.append(dict(phase(rig, "plan", seconds),
                             note=f"apply: {rig.last_error if code else 0} in {took:.1f} s"))
        finally:
            if raw is not None:     # what each phase's figures came from, to explain a spike
                raw.mkdir(parents=True, exist_ok=True)
                shutil.copy(rig.d / "mgr.x.log", raw / f"mgr-{osds}.log")
                (raw / f"samples-{osds}.json").write_text(json.dumps(
                    {r["phase"]: r["raw"] for r in rows}))
            rig.stop()
    for r in rows:
        r["osds"] = osds
        del r["raw"]
    return rows


def head_commit() -> str:
    """The checkout's `git describe`, else (no git: the Tentacle chroot) its commit from .git
    itself, short; "" when it cannot be read."""
    try:
        return subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    git = REPO / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        ref = head[5:] if head.startswith("ref: ") else ""
        if ref:
            head = ((git / ref).read_text().strip() if (git / ref).exists() else
                    next(ln.split()[0] for ln in (git / "packed-refs").read_text().splitlines()
                         if ln.endswith(" " + ref)))
        return head[:7]
    except (OSError, StopIteration):
        return ""


COLS = [("OSDs", ">6"), ("phase", "<9"), ("failover", ">8"), ("CPU %", ">6.1f"), ("ours %", ">6.1f"),
        ("RSS MiB", ">8.0f"), ("other p50", ">9.0f"), ("p99", ">7.0f"), ("max", ">7.0f"),
        ("status ms", ">9.0f"), ("errors", ">6"), ("", "")]


def main() -> int:
    args = parser(__doc__, osds="1000,4000,10000", phase_seconds=600.0,
                  settle_seconds=(60.0, "wait after the mgr (re)starts before the disabled and idle phases"),
                  raw=(None, "keep each size's mgr log and timed samples here")).parse_args()
    rows: List[Dict[str, Any]] = []
    print_ceph_version()      # the installed Ceph's; each size's mon's below
    print(f"# pg_advisor at {head_commit() or 'unknown'}, {args.phase_seconds:.0f} s phases", flush=True)
    for n in (int(x) for x in args.osds.split(",")):
        rows += bench(n, args.phase_seconds, args.settle_seconds, args.raw and Path(args.raw))
        table(COLS, ([r["osds"], r["phase"], r["failovers"], r["cpu_pct"], r["ours_pct"], r["rss_mib"],
                      r["other_p50"], r["other_p99"], r["other_max"], r["ours_max"], r["errors"],
                      f" {r.get('note', '')} {r['first_error'][:80]}"] for r in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
