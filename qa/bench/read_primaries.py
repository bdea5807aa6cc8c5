"""Benchmark: pg_advisor's read (primary) balancer beside `osdmaptool --read`, on the same maps, one run.

    bash qa/cluster/tentacle.sh exec env PYTHONPATH=src:. python3 -m qa.bench.read_primaries \\
        [--only 60,1000,multi,10000] [--variants even,uneven] [--tool-timeout 600]

Tentacle's chroot: Pacific's osdmaptool (the host's) has no --read. Maps: qa/bench/balance.py's,
made by a throw-away mon (qa/maps/monbuilt.py): 60 OSDs with a 2048-PG pool; 1,000 OSDs of mixed
weights with a replicated pool per rule (host; rack; 3 racks then a host) and an EC pool;
"multi": 72 OSDs in rooms of unequal weight, pools of two-step rules, an OSD out, two of
CRUSH weight 0; 10,000 OSDs with an 81,920-PG pool (some 3 of the run's 4 minutes, most of
them the mon building it). Each map as CRUSH leaves it ("even": fresh CRUSH maps spread primaries
fairly evenly already) and "uneven": per replicated pool, one OSD in 20 of those the pool
uses (spread over them) is given, by pg_upmap_primaries, every PG whose CRUSH set holds it
past the first slot, some `size` times its share of primaries.

The mon cannot set those entries on these maps: their OSDs do not exist (the mon answers
"osd.N does not exist") and it takes an entry only for an OSD of the PG's acting set, that
is an up OSD, while up OSDs that never booted crash it (qa/maps/monbuilt.py). So they are
written into the encoded OSDMap here: its client part ends with pg_upmap_primaries (struct
v10, Reef on), empty in a fresh map; the entries replace that empty map, the two enclosing
lengths and the map's crc32c are fixed, and the entries are read back through osdmaptool.

Per replicated pool (osdmaptool --read takes one pool a run, never an EC one): the pool's
read_balance score (score_stable) and the most primaries one OSD holds, before; then for
`osdmaptool MAP --read OUT --read-pool POOL`: its commands, the score and max once they
are applied, its wall time and peak RSS (wait4); for pg_advisor's plan_primaries without a
bound on changes: its commands (changes and removals), score, max, its lower bound on the
max ("floor"), wall time and peak Python heap (tracemalloc, in a second run: tracing slows
it); and pg_advisor held to as many changes as osdmaptool made: commands, score. Every
result is applied to the same snapshot and scored by pg_advisor's model of Reef's score
(analysis/read_balance.py); osdmaptool's own printed scores must agree within 0.01, and its
entries must be ones the mon keeps (OSD in CRUSH's own set of the PG, not its first): the
notes under the table say where not. Neither side looks at require_min_compat_client here:
osdmaptool --read never checks it, and pg_advisor, which refuses changes below reef, plans on
a copy of the snapshot set to reef.
"""
import argparse
import dataclasses
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from pg_advisor.analysis.read_balance import primary_counts, read_balance_score
from pg_advisor.balance.primaries import ReadPlan, plan_primaries
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot

from ..maps.crushgen import GeneratedMap
from .balance import make_map

# osdmaptool --read's output: the score is printed before and after (only when it changes
# something), then the count; the file holds the mon commands
SCORE_RE = re.compile(r"read_balance_score of '[^']*': ([0-9.eE+-]+|inf|nan)")
CHANGES_RE = re.compile(r"num changes: (\d+)")
ASSERT_RE = re.compile(r"FAILED ceph_assert\(.*\)")
CMD_RE = re.compile(r"ceph osd (rm-)?pg-upmap-primary (\S+)(?: (\d+))?")
UNBOUNDED = 1 << 30
HOT_EVERY = 20       # uneven maps: one OSD in this many of a pool's gets the extra primaries
Entries = Dict[str, Optional[int]]   # pgid -> entry OSD, None: entry removed


# ---- pg_upmap_primaries written into a binary OSDMap ----

def _crc_table() -> List[int]:
    out = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        out.append(c)
    return out


CRC_TABLE = _crc_table()


def crc32c(crc: int, data: bytes) -> int:
    """Ceph's ceph_crc32c (Castagnoli, no inversion before or after: the caller seeds it)."""
    t = CRC_TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def write_primaries(src: Path, dst: Path, entries: Mapping[str, int]) -> None:
    """Copy the binary OSDMap `src` (no pg_upmap_primaries yet) to `dst` with `entries`.
    The layout (OSDMap::encode): a wrapper (v, compat, u32 length), the client part (the
    same header) whose last field is pg_upmap_primaries (u32 count, then per entry pg_t:
    u8 1, u64 pool, u32 seed, i32 -1; and the OSD, i32), the OSD-only part, then the crc32c
    of everything before it, seeded with -1."""
    b = src.read_bytes()
    v, _, length = struct.unpack_from("<BBI", b, 0)
    cv, _, clen = struct.unpack_from("<BBI", b, 6)
    if v < 8 or cv < 10 or length != len(b) - 6:
        raise ValueError(f"{src}: wrapper v{v}, client part v{cv}: not an OSDMap of Reef or later")
    if crc32c(0xFFFFFFFF, b[:-4]) != struct.unpack("<I", b[-4:])[0]:
        raise ValueError(f"{src}: the crc at the end is not the map's: some other layout")
    end = 12 + clen
    if b[end - 4:end] != b"\0\0\0\0":
        raise ValueError(f"{src}: has pg_upmap_primaries already")
    keyed = sorted((int(head), int(tail, 16), osd)
                   for (head, tail), osd in ((k.split("."), o) for k, o in entries.items()))
    body = struct.pack("<I", len(keyed)) + b"".join(
        struct.pack("<BQIiI", 1, pool, seed, -1, osd) for pool, seed, osd in keyed)
    out = bytearray(b[:end - 4] + body + b[end:])
    grow = len(body) - 4
    struct.pack_into("<I", out, 2, length + grow)
    struct.pack_into("<I", out, 8, clen + grow)
    struct.pack_into("<I", out, len(out) - 4, crc32c(0xFFFFFFFF, bytes(out[:-4])))
    dst.write_bytes(bytes(out))


def uneven_entries(snap: snapshot.Snapshot, every: int = HOT_EVERY) -> Tuple[Dict[str, int], int]:
    """(entries, OSDs given them): per replicated pool, every `every`-th of the OSDs its CRUSH
    sets use takes each PG that has it past the first slot (a valid entry by the mon's rule)."""
    placer = Placer(snap)
    out: Dict[str, int] = {}
    hot_total = 0
    for pool in snap.pools:
        if pool.type != "replicated":
            continue
        ps, raw = placer.crush_sets(pool)
        used = np.unique(raw[(raw >= 0) & (raw < snap.osds.count)])
        hot = set(used[::every].tolist())
        hot_total += len(hot)
        for i in range(raw.shape[0]):
            row = [int(o) for o in raw[i] if 0 <= o < snap.osds.count]
            pick = next((o for o in row[1:] if o in hot), None)
            if pick is not None:
                out[f"{pool.id}.{int(ps[i]):x}"] = pick
    return out, hot_total


def uneven_map(gm: GeneratedMap, snap: snapshot.Snapshot) -> Tuple[GeneratedMap, Dict[str, int], int]:
    entries, hot = uneven_entries(snap)
    path = gm.path.with_name("uneven.bin")
    write_primaries(gm.path, path, entries)
    out = dataclasses.replace(gm, path=path)
    got = snapshot.load(*out.dumps()).pg_upmap_primaries
    if got != entries:
        raise RuntimeError(f"{path}: osdmaptool reads {len(got)} entries back, not the {len(entries)} "
                           f"written")
    return out, entries, hot


# ---- osdmaptool --read ----

@dataclasses.dataclass
class ToolRun:
    entries: Entries           # what its commands set (None: removed)
    commands: int
    said_changes: int          # its "num changes"
    said_before: Optional[float]
    said_after: Optional[float]
    seconds: float
    peak_mib: float
    status: str


def run_measured(args: Sequence[str], timeout: float) -> Tuple[str, int, float, float, bool]:
    """(output, exit code, wall seconds, peak RSS in MiB, killed) of one command, its own
    rusage from wait4 (RUSAGE_CHILDREN keeps the largest child so far: here the mon)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(list(args), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            p.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        dt = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return out.read().decode(errors="replace"), p.returncode, dt, ru.ru_maxrss / 1024, killed.is_set()


def osdmaptool_read(gm: GeneratedMap, pool: str, out: Path, timeout: float) -> ToolRun:
    out.unlink(missing_ok=True)
    # a crash report of its own, not in the chroot's /var/lib/ceph/crash
    crash = out.with_name("crash")
    crash.mkdir(exist_ok=True)
    text, rc, dt, peak, killed = run_measured(
        ["osdmaptool", str(gm.path), *gm.state_args(), "--read", str(out), "--read-pool", pool,
         "--crash_dir", str(crash)], timeout)
    if killed:
        status = f"killed at the {timeout:.0f} s limit"
    elif rc:
        failed = ASSERT_RE.search(text)
        status = f"exit {rc} after {dt:.1f} s" + (f": {failed.group(0)}" if failed else f": {text[-200:]}")
    else:
        status = "done"
    entries: Entries = {}
    commands = 0
    if out.exists() and status == "done":
        for line in out.read_text().splitlines():
            m = CMD_RE.search(line)
            if m:
                commands += 1
                entries[m.group(2)] = None if m.group(1) else int(m.group(3))
    scores = [float(x) for x in SCORE_RE.findall(text)]
    n = CHANGES_RE.search(text)
    return ToolRun(entries, commands, int(n.group(1)) if n else 0, scores[0] if scores else None,
                   scores[-1] if len(scores) > 1 else None, dt, peak, status)


# ---- scoring, on pg_advisor's model ----

def applied(snap: snapshot.Snapshot, entries: Entries) -> snapshot.Snapshot:
    new = {**snap.pg_upmap_primaries, **{k: v for k, v in entries.items() if v is not None}}
    for k, v in entries.items():
        if v is None:
            new.pop(k, None)
    return dataclasses.replace(snap, pg_upmap_primaries=new)


def plan_entries(plan: ReadPlan) -> Entries:
    out: Entries = dict(plan.changes)
    out.update({pgid: None for pgid in plan.cleanup})
    return out


def measure(snap: snapshot.Snapshot, pool_name: str) -> Tuple[Optional[float], int]:
    """(read_balance score_stable, most primaries on one OSD) of the pool on this map."""
    pool = snap.pool_by_name(pool_name)
    m = Placer(snap).map_pool(pool)
    r = read_balance_score(snap, pool, up=(m.up, m.up_primary))
    counts = primary_counts(snap, m.up_primary)
    return (None if r is None else r.get("score_stable")), int(counts.max()) if counts.size else 0


def invalid_entries(snap: snapshot.Snapshot, pool_name: str, entries: Entries) -> Tuple[List[str], List[str]]:
    """Entries the mon cancels: (OSD not in CRUSH's own set of the PG, OSD the set's first).
    The second kind the mon takes while another entry holds the PG, then drops, so the PG
    gets its CRUSH primary back: what removing the old entry does in one command too."""
    pool = snap.pool_by_name(pool_name)
    ps, raw = Placer(snap).crush_sets(pool)
    row_of = {int(s): i for i, s in enumerate(ps.tolist())}
    outside, first = [], []
    for pgid, osd in entries.items():
        if osd is None:
            continue
        head, tail = pgid.split(".")
        i = row_of.get(int(tail, 16)) if int(head) == pool.id else None
        crush = [] if i is None else [int(o) for o in raw[i] if o >= 0]
        if crush and osd == crush[0]:
            first.append(f"{pgid}->{osd}")
        elif osd not in crush:
            outside.append(f"{pgid}->{osd}")
    return outside, first


def reef(snap: snapshot.Snapshot) -> snapshot.Snapshot:
    """A copy allowed pg-upmap-primary, with a memo of its own (so no mapping is reused)."""
    return dataclasses.replace(snap, require_min_compat_client="reef")


def timed_plan(snap: snapshot.Snapshot, pool: str, max_changes: int) -> Tuple[ReadPlan, float]:
    s = reef(snap)
    t0 = time.perf_counter()
    plan = plan_primaries(s, pools=[pool], max_changes=max_changes)
    return plan, time.perf_counter() - t0


def traced_peak(snap: snapshot.Snapshot, pool: str) -> float:
    """Peak Python heap (numpy's arrays included) of one unbounded plan, in MiB."""
    s = reef(snap)
    tracemalloc.start()
    try:
        plan_primaries(s, pools=[pool], max_changes=UNBOUNDED)
        return tracemalloc.get_traced_memory()[1] / (1 << 20)
    finally:
        tracemalloc.stop()


@dataclasses.dataclass
class Row:
    label: str
    pool: str
    pg_num: int
    score0: Optional[float]
    max0: int
    tool: ToolRun
    tool_score: Optional[float]    # None: osdmaptool failed
    tool_max: Optional[int]
    ours: ReadPlan
    ours_s: float
    ours_mib: float
    ours_score: Optional[float]
    ours_max: int
    floor: int
    same: Optional[ReadPlan]       # held to the tool's count (None: the tool changed nothing)
    same_score: Optional[float]
    notes: List[str]


def pool_row(label: str, snap: snapshot.Snapshot, gm: GeneratedMap, pool: str, timeout: float) -> Row:
    notes: List[str] = []
    score0, max0 = measure(snap, pool)
    tool = osdmaptool_read(gm, pool, gm.path.with_name(f"read-{pool}.txt"), timeout)
    if tool.status != "done":
        notes.append(f"osdmaptool: {tool.status}")
    if tool.status == "done" and tool.commands != tool.said_changes:
        notes.append(f"osdmaptool wrote {tool.commands} commands for its {tool.said_changes} changes")
    ok = tool.status == "done"
    tool_score, tool_max = measure(applied(snap, tool.entries), pool) if ok else (None, None)
    for what, said, ours in (("before", tool.said_before, score0), ("after", tool.said_after, tool_score)):
        if said is not None and (ours is None or abs(said - ours) > 0.01 + 1e-6):
            notes.append(f"osdmaptool prints score {what} {said}, pg_advisor's model gives {ours}")
    outside, first = invalid_entries(snap, pool, tool.entries)
    if outside:
        notes.append(f"osdmaptool: {len(outside)} entries for OSDs outside the PG's CRUSH set, "
                     f"e.g. {outside[:3]}")
    if first:
        notes.append(f"osdmaptool: {len(first)} entries name the PG's CRUSH primary (the mon drops "
                     f"them, which gives that primary back), e.g. {first[:3]}")
    plan, secs = timed_plan(snap, pool, UNBOUNDED)
    mib = traced_peak(snap, pool)
    report = plan.pools[0]
    ours_score, ours_max = measure(applied(snap, plan_entries(plan)), pool)
    if (ours_score, ours_max) != (report["score_after"], report["max_after"]):
        notes.append(f"pg_advisor's plan predicts score {report['score_after']}, max {report['max_after']}; "
                     f"applied: {ours_score}, {ours_max}")
    outside, first = invalid_entries(snap, pool, plan_entries(plan))
    if outside or first:
        notes.append(f"pg_advisor: {len(outside) + len(first)} entries the mon would cancel, "
                     f"e.g. {(outside + first)[:3]}")
    notes += [f"pg_advisor: {n}" for n in plan.notes]
    same: Optional[ReadPlan] = None
    same_score: Optional[float] = None
    if ok and tool.commands:
        same, _ = timed_plan(snap, pool, tool.commands)
        same_score = measure(applied(snap, plan_entries(same)), pool)[0]
    return Row(label, pool, snap.pool_by_name(pool).pg_num, score0, max0, tool, tool_score, tool_max,
               plan, secs, mib, ours_score, ours_max, int(report["floor"]), same, same_score, notes)


def map_rows(name: str, variants: Sequence[str], tmp: Path, timeout: float) -> Tuple[List[Row], List[str]]:
    t0 = time.perf_counter()
    gm = make_map(name, tmp)
    snap = snapshot.load(*gm.dumps())
    made = [f"{name}: {gm.num_osds} OSDs, pools "
            + ", ".join(f"{p.name} ({p.type}, {p.pg_num} PGs)" for p in snap.pools)
            + f"; built in {time.perf_counter() - t0:.1f} s"]
    maps: List[Tuple[str, GeneratedMap, snapshot.Snapshot]] = []
    if "even" in variants:
        maps.append((name, gm, snap))
    if "uneven" in variants:
        t0 = time.perf_counter()
        ugm, entries, hot = uneven_map(gm, snap)
        maps.append((f"{name} uneven", ugm, snapshot.load(*ugm.dumps())))
        made.append(f"{name} uneven: {len(entries)} pg_upmap_primaries to {hot} OSDs, written in "
                    f"{time.perf_counter() - t0:.1f} s")
    rows = [pool_row(label, s, m, p.name, timeout)
            for label, m, s in maps for p in s.pools if p.type == "replicated"]
    return rows, made


def fmt(x: Optional[float], width: int, digits: int = 2) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:>{width}.{digits}f}"


def print_rows(rows: List[Row]) -> None:
    print(f"{'':<14} {'':<12} {'':>5} | {'before':<9} | {'osdmaptool --read':<31} | "
          f"{'pg_advisor':<37} | {'<= tool cmds':<10}")
    print(f"{'map':<14} {'pool':<12} {'PGs':>5} | {'score':>5} {'max':>3} | {'cmds':>5} {'score':>5} "
          f"{'max':>3} {'s':>6} {'MiB':>6} | {'cmds':>5} {'score':>5} {'max':>3} {'floor':>5} {'s':>6} "
          f"{'MiB':>6} | {'cmds':>4} {'score':>5}")
    for r in rows:
        same = (f"{len(r.same.commands()):>4} {fmt(r.same_score, 5)}" if r.same is not None
                else f"{'-':>4} {'-':>5}")
        tool = (f"{r.tool.commands:>5} {fmt(r.tool_score, 5)} {r.tool_max:>3}" if r.tool_max is not None
                else f"{'fail':>5} {'-':>5} {'-':>3}")
        print(f"{r.label:<14} {r.pool:<12} {r.pg_num:>5} | {fmt(r.score0, 5)} {r.max0:>3} | "
              f"{tool} {r.tool.seconds:>6.2f} "
              f"{r.tool.peak_mib:>6.1f} | {len(r.ours.commands()):>5} {fmt(r.ours_score, 5)} "
              f"{r.ours_max:>3} {r.floor:>5} {r.ours_s:>6.2f} {r.ours_mib:>6.1f} | {same}")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--only", default="60,1000,multi,10000",
                    help="maps, of 60,1000,multi,10000 (10000 alone takes some 3 minutes)")
    ap.add_argument("--variants", default="even,uneven", help="even (as CRUSH leaves it), uneven, or both")
    ap.add_argument("--tool-timeout", type=float, default=600.0, help="seconds one osdmaptool run may take")
    args = ap.parse_args(argv)
    variants = args.variants.split(",")
    rows: List[Row] = []
    made: List[str] = []
    t0 = time.perf_counter()
    for name in args.only.split(","):
        with tempfile.TemporaryDirectory(prefix="pga-read-") as tmp:
            got, said = map_rows(name, variants, Path(tmp), args.tool_timeout)
            rows += got
            made += said
    print_rows(rows)
    print()
    for line in made:
        print(line)
    for r in rows:
        for n in r.notes:
            print(f"{r.label} {r.pool}: {n}")
    print(f"in all {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
