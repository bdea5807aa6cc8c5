"""Benchmark: pg_advisor's read (primary) balancer beside `osdmaptool --read`, on the same maps, one run.

    bash qa/cluster/tentacle.sh exec env PYTHONPATH=src:. python3 -m qa.bench.read_primaries \\
        [--only 60,1000,multi,10000] [--variants even,uneven] [--tool-timeout 600]

Tentacle's chroot: Pacific's osdmaptool has no --read. Maps: qa/bench/balance.py's, as CRUSH
leaves them ("even") and "uneven": per replicated pool, one OSD in 20 of the pool's gets, by
pg_upmap_primaries written into the encoded OSDMap (write_primaries: the mon cannot set them
for OSDs that do not exist), every PG whose CRUSH set holds it past the first slot.

Per replicated pool (osdmaptool --read takes one, never an EC one): its score_stable and the
most primaries one OSD holds, before; after osdmaptool's commands (wall time, peak RSS); after
pg_advisor's plan_primaries unbounded ("floor": its lower bound on the max; wall time; peak
Python heap, tracemalloc, in a second run) and held to as many changes as osdmaptool made.
pg_advisor's model of Reef's score scores them all; osdmaptool's printed scores must agree
within 0.01 and its entries be ones the mon keeps: the notes under the table say where not.
pg_advisor plans on a copy set to reef (osdmaptool --read never checks the compat client).
"""
import dataclasses
import functools
import re
import struct
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from pg_advisor.analysis.read_balance import primary_counts, read_balance_score
from pg_advisor.balance.primaries import ReadPlan, plan_primaries
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot

from ..maps.crushgen import GeneratedMap
from ..maps.monbuilt import build_case
from .common import COMMAND_RE, Run, each_map, osdmaptool, parser, table, timed

# osdmaptool --read's output: the score is printed before and after (only when it changes
# something), then the count; the file holds the mon commands (COMMAND_RE)
SCORE_RE = re.compile(r"read_balance_score of '[^']*': ([0-9.eE+-]+|inf|nan)")
CHANGES_RE = re.compile(r"num changes: (\d+)")
UNBOUNDED = 1 << 30
HOT_EVERY = 20       # uneven maps: one OSD in this many of a pool's gets the extra primaries
Entries = Dict[str, Optional[int]]   # pgid -> entry OSD, None: entry removed


# ---- pg_upmap_primaries written into a binary OSDMap ----

# crc32c's table (Castagnoli's polynomial, reflected)
CRC_TABLE = [functools.reduce(lambda c, _: (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1, range(8), i)
             for i in range(256)]


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
        raise RuntimeError(f"{path}: osdmaptool reads {len(got)} entries back, not {len(entries)}")
    return out, entries, hot


# ---- osdmaptool --read ----

@dataclasses.dataclass
class ToolRun:
    entries: Entries           # what its commands set (None: removed)
    commands: int
    said_changes: int          # its "num changes"
    said_before: Optional[float]
    said_after: Optional[float]
    run: Run

    @property
    def status(self) -> str:
        return self.run.status


def osdmaptool_read(gm: GeneratedMap, pool: str, out: Path, timeout: float) -> ToolRun:
    out.unlink(missing_ok=True)
    # a crash report of its own, not in the chroot's /var/lib/ceph/crash
    crash = out.with_name("crash")
    crash.mkdir(exist_ok=True)
    run = osdmaptool(gm, "--read", str(out), "--read-pool", pool, "--crash_dir", str(crash), limit=timeout)
    cmds = list(COMMAND_RE.finditer(out.read_text() if out.exists() and run.status == "done" else ""))
    entries: Entries = {m.group(3): None if m.group(1) else int(m.group(4)) for m in cmds}
    scores = [float(x) for x in SCORE_RE.findall(run.out + run.err)]
    n = CHANGES_RE.search(run.out + run.err)
    return ToolRun(entries, len(cmds), int(n.group(1)) if n else 0, scores[0] if scores else None,
                   scores[-1] if len(scores) > 1 else None, run)


# ---- scoring, on pg_advisor's model ----

def applied(snap: snapshot.Snapshot, entries: Entries) -> snapshot.Snapshot:
    new: Entries = {**snap.pg_upmap_primaries, **entries}
    return dataclasses.replace(snap, pg_upmap_primaries={k: v for k, v in new.items() if v is not None})


def plan_entries(plan: ReadPlan) -> Entries:
    return {**dict(plan.changes), **dict.fromkeys(plan.cleanup)}


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
    return timed(lambda: plan_primaries(s, pools=[pool], max_changes=max_changes))


def traced_peak(snap: snapshot.Snapshot, pool: str) -> float:
    """Peak Python heap (numpy's arrays included) of one unbounded plan, in MiB."""
    s = reef(snap)
    tracemalloc.start()
    try:
        plan_primaries(s, pools=[pool], max_changes=UNBOUNDED)
        return tracemalloc.get_traced_memory()[1] / (1 << 20)
    finally:
        tracemalloc.stop()


# score0/max0: before; rd_: osdmaptool --read; pga_: pg_advisor unbounded; held_: pg_advisor
# held to as many commands as osdmaptool's
COLS = [("map", "<14"), ("pool", "<12"), ("PGs", ">5"), ("score0", ">6.2f"), ("max0", ">4"),
        ("rd_cmds", ">7"), ("rd_score", ">8.2f"), ("rd_max", ">6"), ("rd_s", ">6.2f"), ("rd_MiB", ">6.1f"),
        ("pga_cmds", ">8"), ("pga_score", ">9.2f"), ("pga_max", ">7"), ("floor", ">5"), ("pga_s", ">6.2f"),
        ("pga_MiB", ">7.1f"), ("held_cmds", ">9"), ("held_score", ">10.2f")]


def pool_row(label: str, snap: snapshot.Snapshot, gm: GeneratedMap, pool: str, timeout: float,
             notes: List[str]) -> List[Any]:
    """The table's row for one pool; what is amiss goes to `notes`."""
    def note(text: str) -> None:
        notes.append(f"{label} {pool}: {text}")
    score0, max0 = measure(snap, pool)
    tool = osdmaptool_read(gm, pool, gm.path.with_name(f"read-{pool}.txt"), timeout)
    ok = tool.status == "done"
    if not ok:
        note(f"osdmaptool: {tool.status}")
    elif tool.commands != tool.said_changes:
        note(f"osdmaptool wrote {tool.commands} commands for its {tool.said_changes} changes")
    tool_score, tool_max = measure(applied(snap, tool.entries), pool) if ok else (None, None)
    for what, said, ours in (("before", tool.said_before, score0), ("after", tool.said_after, tool_score)):
        if said is not None and (ours is None or abs(said - ours) > 0.01 + 1e-6):
            note(f"osdmaptool prints score {what} {said}, pg_advisor's model gives {ours}")
    outside, first = invalid_entries(snap, pool, tool.entries)
    if outside:
        note(f"osdmaptool: {len(outside)} entries for OSDs outside the PG's CRUSH set, e.g. {outside[:3]}")
    if first:
        note(f"osdmaptool: {len(first)} entries name the PG's CRUSH primary (the mon drops them, which "
             f"gives that primary back), e.g. {first[:3]}")
    plan, secs = timed_plan(snap, pool, UNBOUNDED)
    report = plan.pools[0]
    ours_score, ours_max = measure(applied(snap, plan_entries(plan)), pool)
    if (ours_score, ours_max) != (report["score_after"], report["max_after"]):
        note(f"pg_advisor's plan predicts score {report['score_after']}, max {report['max_after']}; "
             f"applied: {ours_score}, {ours_max}")
    outside, first = invalid_entries(snap, pool, plan_entries(plan))
    if outside or first:
        note(f"pg_advisor: {len(outside) + len(first)} entries the mon would cancel, "
             f"e.g. {(outside + first)[:3]}")
    for n in plan.notes:
        note(f"pg_advisor: {n}")
    held: List[Any] = [None, None]      # none: the tool changed nothing
    if ok and tool.commands:
        same, _ = timed_plan(snap, pool, tool.commands)
        held = [len(same.commands()), measure(applied(snap, plan_entries(same)), pool)[0]]
    return [label, pool, snap.pool_by_name(pool).pg_num, score0, max0, tool.commands if ok else "fail",
            tool_score, tool_max, tool.run.seconds, tool.run.peak_mib, len(plan.commands()), ours_score,
            ours_max, int(report["floor"]), secs, traced_peak(snap, pool), *held]


def map_rows(name: str, tmp: Path, variants: Sequence[str], timeout: float,
             notes: List[str]) -> List[List[Any]]:
    gm, secs = timed(lambda: build_case(tmp, name))
    snap = snapshot.load(*gm.dumps())
    pools = ", ".join(f"{p.name} ({p.type}, {p.pg_num} PGs)" for p in snap.pools)
    print(f"{name}: {gm.num_osds} OSDs, pools {pools}; built in {secs:.1f} s")
    maps: List[Tuple[str, GeneratedMap, snapshot.Snapshot]] = []
    if "even" in variants:
        maps.append((name, gm, snap))
    if "uneven" in variants:
        (ugm, entries, hot), secs = timed(lambda: uneven_map(gm, snap))
        maps.append((f"{name} uneven", ugm, snapshot.load(*ugm.dumps())))
        print(f"{name} uneven: {len(entries)} pg_upmap_primaries to {hot} OSDs, written in {secs:.1f} s")
    return [pool_row(label, s, m, p.name, timeout, notes)
            for label, m, s in maps for p in s.pools if p.type == "replicated"]


def main(argv: Optional[List[str]] = None) -> int:
    args = parser(__doc__, only="60,1000,multi,10000", variants="even,uneven",
                  tool_timeout=600.0).parse_args(argv)
    notes: List[str] = []
    t0 = time.perf_counter()
    rows = each_map(args.only.split(","), "pga-read-", lambda name, tmp: map_rows(
        name, tmp, args.variants.split(","), args.tool_timeout, notes))
    print()
    table(COLS, rows)
    print("\n".join(["", *notes, f"in all {time.perf_counter() - t0:.0f} s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
