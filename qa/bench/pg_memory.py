"""Benchmark: the PG memory of BlueStore OSDs (osd_pglog and osd mempools, RSS) at about
100, 200 and 400 PGs per OSD, in steady state and at the recovery peak, beside
pg_advisor's memory model (src/pg_advisor/sizing/memory.py); fits its constants.

    bash qa/cluster/tentacle.sh exec env PYTHONPATH=src:. python3 -m qa.bench.pg_memory \\
        [--pgs 100,200,400] [--scale 5] [--down-writes 0.5] [--objects-per-pg N]
        [--block-gib 4] [--dir DIR] [--keep]

Its own cluster (3 BlueStore OSDs on 3 hosts), the PG log options Ceph's defaults over
--scale. Per level a pool of size 3, its PGs' logs grown alike, through the states steady,
degraded and recovery (osd.2 down, then back), max-log; per OSD its mempools, RSS and PGs'
logs beside the model; fitted by least squares (fit). doc/sizing.rst has the calibration.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pg_advisor.model import options
from pg_advisor.sizing.memory import MemoryModel

from ..cluster import Cluster, wait_until
from ..cluster.ceph_release import print_ceph_version
from ..cluster.rados_client import InFlight, Rados
from ..maps.object_hash import object_ps
from ..thrash.watch import read_pid, rss_mib
from .common import parser, table

# the module's constants (bytes_per_log_entry, bytes_per_log_dup, bytes_per_pg): its defaults
_DEFAULTS = options.make({})
TODAY = (_DEFAULTS.bytes_per_log_entry, _DEFAULTS.bytes_per_log_dup, _DEFAULTS.bytes_per_pg)
DEPTH = 128                  # writes in flight (about 7,000 empty writes/s on 2 cores)
DOWN_OSD = 2
MIB = 1 << 20


@dataclass(frozen=True)
class LogSettings:
    """The PG log options the OSDs run with: Ceph's defaults over `scale`."""
    target_per_osd: int
    min_log: int
    max_log: int
    dups_tracked: int
    trim_min: int

    @classmethod
    def scaled(cls, scale: int) -> "LogSettings":
        return cls(300000 // scale, 250 // scale, 10000 // scale, 3000 // scale, 100 // scale)

    def options(self) -> Dict[str, int]:
        return {"osd_target_pg_log_entries_per_osd": self.target_per_osd,
                "osd_min_pg_log_entries": self.min_log, "osd_max_pg_log_entries": self.max_log,
                "osd_pg_log_dups_tracked": self.dups_tracked, "osd_pg_log_trim_min": self.trim_min}

    def target(self, pgs: int) -> int:
        # OSD::get_target_pg_log_entries: an even share of the OSD's budget, clamped
        return max(min(self.target_per_osd // pgs, self.max_log), self.min_log)


@dataclass(frozen=True)
class Sample:
    """One OSD's PG memory at one moment."""
    level: int            # PGs per OSD aimed at
    state: str
    osd: int
    pgs: int              # PGs the OSD holds (every PG of the stats: size 3 on 3 OSDs)
    entries: float        # log entries over those PGs (log_size)
    dups: float           # dups over those PGs (log_dups_size)
    pglog_items: int
    pglog_bytes: int
    osd_items: int
    osd_bytes: int
    total_bytes: int      # every mempool
    rss: int
    seen: str = ""        # the PG states seen while sampling (recovery)

    @property
    def pg_memory(self) -> int:
        return self.pglog_bytes + self.osd_bytes


def pg_dump(conn: Rados) -> Dict[str, Any]:
    return dict(conn.command("mgr", "pg dump", format="json")["pg_map"])


def flush_stats(conn: Rados, osds: Sequence[int]) -> None:
    """Each OSD sends its PG stats now, not at its next report."""
    for o in osds:
        conn.raw(o, "flush_pg_stats", timeout=30)


class Writer:
    """Empty write_fulls, `DEPTH` in flight, in rounds of one to each PG (to its names in
    turn, a log window naming each once): each PG's log grows alike."""

    def __init__(self, conn: Rados, pool: str, names: List[List[str]]) -> None:
        self.io = conn.ioctx(pool)
        self.writes = InFlight(self.io, DEPTH)
        self.names = names
        self.next = 0
        self.stop = threading.Event()
        self.thread: Optional[threading.Thread] = None

    def rounds(self, n: int) -> int:
        """n rounds (fewer if stopped); returns the rounds done."""
        for done in range(n):
            if self.stop.is_set():
                return done
            r = self.next
            self.next += 1
            for per_pg in self.names:
                self.writes.write_full(per_pg[r % len(per_pg)], b"")
        self.writes.flush()
        return n

    def start(self) -> None:
        """Rounds in the background until finish()."""
        self.stop.clear()
        self.thread = threading.Thread(target=self.rounds, args=(10 ** 9,), daemon=True)
        self.thread.start()

    def finish(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(120)
        self.writes.flush()
        self.stop.clear()


def names_per_pg(pg_num: int, k: int) -> List[List[str]]:
    """k object names for each PG of a pool of pg_num PGs (librados's own hash)."""
    out: List[List[str]] = [[] for _ in range(pg_num)]
    left, i = pg_num * k, 0
    while left:
        name = f"m{i}"
        ps = object_ps(name, pg_num)
        if len(out[ps]) < k:
            out[ps].append(name)
            left -= 1
        i += 1
    return out


def osd_pid(c: Cluster, osd: int) -> int:
    return read_pid(c.dir / "run" / f"osd.{osd}.pid")


def settled_stats(conn: Rados, osds: Sequence[int]) -> Dict[str, Any]:
    """The PG stats once two reads a flush apart agree on every log (they lag the OSDs)."""
    last: Optional[List[Tuple[str, int, int]]] = None
    for _ in range(30):
        flush_stats(conn, osds)
        time.sleep(1.5)
        dump = pg_dump(conn)
        logs = sorted((s["pgid"], s["log_size"], s.get("log_dups_size", 0)) for s in dump["pg_stats"])
        if logs == last:
            return dump
        last = logs
    return dump


def measure(c: Cluster, conn: Rados, dump: Dict[str, Any], osd: int) -> Sample:
    """One OSD's sample (level and state left to the caller): its mempools now, its PGs'
    logs from `dump`: every PG (size 3 on 3 OSDs), as the stats lag an OSD coming back."""
    mine = list(dump["pg_stats"])
    pools = conn.command(osd, "dump_mempools", timeout=30)["mempool"]
    by = pools["by_pool"]
    return Sample(0, "", osd, len(mine), float(sum(s["log_size"] for s in mine)),
                  float(sum(s.get("log_dups_size", 0) for s in mine)),
                  int(by["osd_pglog"]["items"]), int(by["osd_pglog"]["bytes"]),
                  int(by["osd"]["items"]), int(by["osd"]["bytes"]), int(pools["total"]["bytes"]),
                  int(rss_mib(osd_pid(c, osd)) * MIB))


def sample_all(c: Cluster, conn: Rados, level: int, state: str) -> List[Sample]:
    osds = c.osd_ids(in_up=True)
    dump = settled_stats(conn, osds)
    return [replace(measure(c, conn, dump, o), level=level, state=state) for o in osds]


def stop_osd(c: Cluster, osd: int) -> None:
    """SIGTERM to the OSD's own pid (from its pid file), then marked down at once."""
    pid = osd_pid(c, osd)
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), 60, f"osd.{osd} to exit", step=0.2)
    c.run("osd", "down", str(osd))
    wait_until(lambda: osd not in c.osd_ids(in_up=True), 60, f"osd.{osd} down")


def start_osd(c: Cluster, osd: int) -> None:
    # as vstart.sh starts it: the daemon forks and writes its pid file
    subprocess.run(["ceph-osd", "-i", str(osd)], env=c.env, check=True, timeout=120,
                   capture_output=True)


def wait_osds_hold(c: Cluster, conn: Rados, pgs: int) -> None:
    """Until every OSD holds exactly `pgs` PGs: a removed pool's PGs keep their logs until
    they are deleted, and the stats no longer list them (doc/sizing.rst)."""
    def done() -> bool:
        flush_stats(conn, c.osd_ids(in_up=True))
        return all(o["num_pgs"] == pgs for o in pg_dump(conn)["osd_stats"])
    wait_until(done, 600, f"every OSD to hold {pgs} PGs", step=2)


def recovery_peak(c: Cluster, conn: Rados, writer: Writer, level: int,
                  down_rounds: int) -> List[Sample]:
    """osd.2 down (noout) while `down_rounds` rounds are written, then back with writes going
    on: the degraded OSDs' samples, then each OSD's largest PG memory until active+clean."""
    c.ceph("osd", "set", "noout")
    try:
        stop_osd(c, DOWN_OSD)
        writer.rounds(down_rounds)
        out = sample_all(c, conn, level, "degraded")
        start_osd(c, DOWN_OSD)
        # writes resume once it is up: while it boots they would outrun 400 PGs' short logs
        wait_until(lambda: DOWN_OSD in c.osd_ids(in_up=True), 120, f"osd.{DOWN_OSD} up")
        writer.start()
        peak: Dict[int, Sample] = {}
        seen: set = set()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 300:
            dump = pg_dump(conn)
            states = {s["state"] for s in dump["pg_stats"]}
            seen |= states
            for o in c.osd_ids(in_up=True):
                try:
                    s = measure(c, conn, dump, o)
                except Exception:      # an OSD still starting may not answer yet
                    continue
                if s.pgs and (o not in peak or s.pg_memory > peak[o].pg_memory):
                    peak[o] = s
            up = len(c.osd_ids(in_up=True)) == 3
            if up and states == {"active+clean"} and time.monotonic() - t0 > 10:
                break
            time.sleep(0.5)
        writer.finish()
    finally:
        c.run("osd", "unset", "noout")
    others = sorted(x for x in seen if x != "active+clean")
    tag = ",".join(sorted({p for x in others for p in x.split("+")} - {"active"})) or "none"
    return out + [replace(s, level=level, state="recovery", seen=tag) for _, s in sorted(peak.items())]


def run_level(c: Cluster, conn: Rados, level: int, s: LogSettings, a: argparse.Namespace) -> List[Sample]:
    """One pool giving every OSD `level` PGs, through steady, recovery and max-log (the
    logs' floor, osd_min_pg_log_entries, raised to their ceiling); main's --down-writes and
    --objects-per-pg (0: max_log + 2 trim_min, so that no log names an object twice)."""
    pool, pg_num = f"pgmem{level}", level - 1
    c.create_pool(pool, pg_num)
    c.wait_clean(600)
    writer = Writer(conn, pool, names_per_pg(pg_num, a.objects_per_pg or s.max_log + 2 * s.trim_min))
    with c.config("osd", "osd_min_pg_log_entries", str(s.min_log)):
        t0 = time.monotonic()
        # enough that each log is trimmed to its target and its dups reach their cap
        # (dups_tracked of them: PGLog::IndexedLog::trim)
        steady = s.target(level) + s.dups_tracked + 2 * s.trim_min
        writer.rounds(steady)
        print(f"# {level} PGs/OSD: {steady * pg_num} writes in "
              f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
        c.wait_clean(600)
        out = sample_all(c, conn, level, "steady")
        out += recovery_peak(c, conn, writer, level, max(1, int(a.down_writes * s.target(level))))
        c.wait_clean(600)
    with c.config("osd", "osd_min_pg_log_entries", str(s.max_log)):
        writer.rounds(s.max_log + 2 * s.trim_min)
        c.wait_clean(600)
        out += sample_all(c, conn, level, "max-log")
    if writer.writes.failed:
        print(f"# {level} PGs/OSD: {len(writer.writes.failed)} writes failed", file=sys.stderr)
    writer.io.close()
    for x in out:     # as it goes: a run cut short still leaves its figures
        print(f"# {json.dumps(x.__dict__)}", file=sys.stderr, flush=True)
    c.remove_pool(pool, wait=False)
    t0 = time.monotonic()
    wait_osds_hold(c, conn, 1)
    print(f"# {level} PGs/OSD: pool deleted in {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    return out


def fit(samples: List[Sample]) -> Tuple[float, float, float, float]:
    """Least squares: osd_pglog = e*entries + d*dups + p*PGs, osd = q*PGs."""
    a = np.array([[x.entries, x.dups, x.pgs] for x in samples], dtype=np.float64)
    (e, d, p), *_ = np.linalg.lstsq(a, np.array([x.pglog_bytes for x in samples], dtype=np.float64),
                                    rcond=None)
    pgs = np.array([x.pgs for x in samples], dtype=np.float64)
    q = float(pgs @ np.array([x.osd_bytes for x in samples], dtype=np.float64) / (pgs @ pgs))
    return float(e), float(d), float(p), q


def tentacle_plan(m: MemoryModel, pgs: int) -> float:
    """Steady PG memory for `pgs` PGs with Tentacle's dups: dups_tracked of them while the
    log is shorter than that, none once it is as long."""
    entries = float(m.log_entries_per_pg(np.array([pgs]))[0])
    dups = float(m.dups_tracked) if entries < float(m.dups_tracked) else 0.0
    return pgs * (entries * m.bytes_per_log_entry + dups * m.bytes_per_log_dup + m.bytes_per_pg)


def err(pred: float, meas: float) -> str:
    return f"{100.0 * (pred - meas) / meas:+.1f}" if meas else "-"


def report(samples: List[Sample], s: LogSettings, base: List[Sample]) -> None:
    cfg = {k: v for k, v in s.options().items() if k != "osd_pg_log_trim_min"}
    today = MemoryModel.from_config(cfg, *TODAY)
    e, d, p, q = fit(samples)
    fitted = MemoryModel.from_config(cfg, round(e), round(d), round(p + q))
    print(f"PG log options: {', '.join(f'{k}={v}' for k, v in s.options().items())} "
          f"(Ceph's defaults / {300000 // s.target_per_osd}); pools of size 3 on 3 OSDs on 3 hosts, "
          f"BlueStore; entries and dups per PG: means over the OSD's PGs from the PG stats")
    print("PG memory = osd_pglog + osd mempool bytes; model: today's constants "
          f"{TODAY[0]}/{TODAY[1]}/{TODAY[2]} on the measured entries and dups (err %), "
          "plan: its steady-state formula for that many PGs; fit: the constants fitted below")
    cols = [("PGs/OSD", ">7"), ("state", "<9"), ("osd", ">3"), ("PGs", ">4"), ("entries/PG", ">10.0f"),
            ("dups/PG", ">7.0f"), ("pglog items", ">11"), ("B/item", ">6.0f"), ("B/(e+d)", ">7.0f"),
            ("osd B/PG", ">8.0f"), ("mempools MiB", ">12.1f"), ("RSS MiB", ">7.0f"), ("PG mem MiB", ">10.1f"),
            ("model MiB", ">9.1f"), ("err %", ">6"), ("plan MiB", ">8.1f"), ("err %", ">6"),
            ("fit err %", ">9"), ("plan fit err %", ">14"), (" seen", "")]
    rows = []
    for x in base + samples:
        n, got = max(x.pgs, 1), x.pg_memory
        pred, fpred = (float(m.current(np.array(x.entries), np.array(x.dups), np.array(x.pgs)))
                       for m in (today, fitted))
        steady = x.state == "steady"
        plan = float(today.steady_state(np.array([x.pgs]))[0]) if steady else None
        rows.append([x.level, x.state, x.osd, x.pgs, x.entries / n, x.dups / n, x.pglog_items,
                     x.pglog_bytes / max(x.pglog_items, 1), x.pglog_bytes / max(x.entries + x.dups, 1),
                     x.osd_bytes / n, x.total_bytes / MIB, x.rss / MIB, got / MIB, pred / MIB, err(pred, got),
                     None if plan is None else plan / MIB, None if plan is None else err(plan, got),
                     err(fpred, got), err(tentacle_plan(fitted, x.pgs), got) if steady else None,
                     " " + x.seen])
    table(cols, rows)
    print(f"fitted over {len(samples)} samples (least squares): bytes_per_log_entry {e:.0f}, "
          f"bytes_per_log_dup {d:.0f}, per PG {p:.0f} (osd_pglog) + {q:.0f} (osd mempool) = "
          f"bytes_per_pg {p + q:.0f}; today's: {TODAY[0]} / {TODAY[1]} / {TODAY[2]}")
    rest = [x for x in samples if x.state == "steady"]
    if base and rest:
        # what a PG costs beyond the mempools: RSS over the idle OSD, per PG, at steady state
        b = {x.osd: x.rss for x in base}
        per = [(x.rss - b.get(x.osd, 0)) / max(x.pgs - 1, 1) for x in rest if x.rss]
        print(f"RSS above the idle OSD (1 PG) per added PG at steady state: "
              f"{min(per) / 1024:.0f}-{max(per) / 1024:.0f} KiB")


def main(argv: Optional[List[str]] = None) -> int:
    args = parser(__doc__, pgs=("100,200,400", "PGs per OSD, one pool each"),
                  scale=(5, "PG log options = Ceph's defaults / this"),
                  down_writes=(0.5, "writes per PG while osd.2 is down, times the log target "
                                    "(past 1: backfill)"),
                  objects_per_pg=(0, "objects each PG's writes cycle over (0: max_log + 2 trim_min, none "
                                     "twice in a log)"),
                  block_gib=(4, "each OSD's sparse block file"), dir=None,
                  keep=(False, "leave the cluster running")).parse_args(argv)
    s = LogSettings.scaled(args.scale)
    c = Cluster(Path(args.dir or tempfile.mkdtemp(prefix="pga-pgmem-")))
    c.vstart("start", "--no-pool", "--store", "bluestore", "--osds", "3", "--hosts", "3",
             "--block-gib", str(args.block_gib))
    samples: List[Sample] = []
    # the log options but their floor, which run_level sets per phase; 400 PGs per OSD and
    # more need the limit raised (default 250) where it is read: the mon's and the OSDs'
    osd = {k: v for k, v in s.options().items() if k != "osd_min_pg_log_entries"}
    osd["mon_max_pg_per_osd"] = 1000
    try:
        print_ceph_version(c.env)
        # scrubs take the two cores and reset nothing the bench reads: off
        c.ceph("osd", "set", "noscrub")
        c.ceph("osd", "set", "nodeep-scrub")
        with c.config("mon", "mon_max_pg_per_osd", "1000"), c.options("osd", osd), \
                Rados(c.env["CEPH_CONF"]) as conn:
            base = [replace(x, state="idle") for x in sample_all(c, conn, 0, "")]
            for level in [int(x) for x in args.pgs.split(",")]:
                samples += run_level(c, conn, level, s, args)
    finally:
        if not args.keep:
            c.vstart("stop")
    report(samples, s, base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
