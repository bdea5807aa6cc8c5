"""Benchmark (offline, no cluster): how many map changes and how long a pool's split and a
host's drain take under pg_advisor's default pacing, beside Ceph's own path, on one map.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.pacing [--racks 50] [--hosts 20]
        [--osds-per-host 10] [--pg-num 32768] [--to 65536] [--pg-gib 100]
        [--backfill-mib-s 100] [--osd-max-backfills 1] [--limits 0,2] [--only split,drain]

A crushgen map of equal weights, one replicated pool of size 3. What each map change moves
is exact (pg_advisor's CRUSH); how long the data takes is a model (backfill_model.py), on a
2 s tick (the mgr's, and the plan's poll). Paths: Ceph's split (pg_num set at once, the
mgr's adjust_pgs) and drain (the host's OSDs out); pg_advisor's `apply` with split_pinning
off (once per --limits value of max_backfills_per_osd; 0 is the default, from
--osd-max-backfills) and on, and `drain host0` (per --limits value). The paths and runs:
doc/execute.rst, "Pacing at scale".
"""
import argparse
import math
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, List, Optional, Sequence

import numpy as np

from pg_advisor.balance.drain import drain_plan
from pg_advisor.crush.placement import Placer
from pg_advisor.execute.planning import throttles
from pg_advisor.execute.steps import StepKind, StepPlanner
from pg_advisor.model import options, snapshot
from pg_advisor.model.backfill_limit import backfill_limit, limit_source
from pg_advisor.model.misplaced import ROUND_FILL, step_fits
from pg_advisor.model.snapshot import Pool, Snapshot

from ..maps.crushgen import REPLICATED_HOST, Layout, OsdMapSpec, generate
from .backfill_model import Backfills, PgBackfill, ends, pg_backfills
from .common import parser, table

TICK = 2.0                 # seconds: the mgr's tick, and the plan's poll
DAY = 86400.0
OBJECTS_PER_PG = 1000      # objects only weigh bytes here: every PG holds as many
BUDGET = 0.05              # target_max_misplaced_ratio's default


@dataclass
class Outcome:
    path: str
    changes: int = 0            # map changes: steps, rounds, or the mgr's adjustments
    last_change: float = 0.0    # seconds
    moved_at: float = 0.0       # seconds: all data where the map puts it
    peak_misplaced: float = 0.0
    peak_backfills: int = 0
    items: int = 0              # upmap items the path leaves in the map
    moved: float = 0.0          # bytes copied (to each new OSD)
    note: str = ""


def limit_name(snap: Snapshot, option: int) -> str:
    return f"limit {backfill_limit(snap, option)}" + (" (default)" if option == 0 else "")


def hours(s: float) -> str:
    return "never" if math.isinf(s) else f"{s / 3600:.1f}"


def build(a: argparse.Namespace) -> Snapshot:
    """The map, its pool at --pg-num PGs (placed), each PG holding OBJECTS_PER_PG objects."""
    layout = Layout(a.racks, a.hosts, a.osds_per_host)
    with tempfile.TemporaryDirectory(prefix="pga-bench-") as tmp:
        gm = generate(Path(tmp), layout, [REPLICATED_HOST], OsdMapSpec(pg_bits=0))
        osd_dump, crush = gm.dumps(a.pg_num)
    for p in osd_dump["pools"]:
        p["pg_placement_num"] = p["pg_placement_num_target"] = a.pg_num
    cfg = snapshot.Settings(config={"osd_max_backfills": a.osd_max_backfills})
    snap = snapshot.load(osd_dump, crush, settings=cfg)
    pool = replace(snap.pools[0], objects=a.pg_num * OBJECTS_PER_PG)
    return replace(snap, pools=(pool,))


class Split:
    """The up sets a split from the pool's pg_num to `to` (at most a doubling) moves its
    children between, each mapped once: before, at the old pgp_num (a child on its
    parent's seed), and after, at `to` (on its own). pgp_num a -> b within the split
    reseeds exactly the children in [a, b)."""

    def __init__(self, placer: Placer, pool: Pool, to: int, nbytes: float) -> None:
        if not pool.pg_num < to <= 2 * pool.pg_num or pool.pgp_num != pool.pg_num:
            raise SystemExit(f"--to {to}: a split of a placed pool to at most twice its pg_num")
        self.before = placer.map_pool(pool, pg_num=to, pgp_num=pool.pgp_num).up
        self.after = placer.map_pool(pool, pg_num=to, pgp_num=to).up
        self.nbytes = nbytes

    def backfills(self, a: int, b: int) -> List[PgBackfill]:
        """pgp_num a -> b (a >= the old pg_num)."""
        return pg_backfills(self.before[a:b], self.after[a:b], self.nbytes)


def run(out: Outcome, back: Backfills, act: Callable[[float], bool], limit: float) -> Outcome:
    """Tick until `act` has nothing more to change and every backfill is done (or `limit`
    seconds pass: `moved_at` stays infinite)."""
    t, out.moved_at = 0.0, math.inf
    while t <= limit:
        if not act(t) and back.idle():
            out.moved_at = t
            break
        back.advance(TICK)
        t += TICK
    out.peak_misplaced, out.peak_backfills = back.peak_misplaced, back.peak_running
    out.moved = back.moved
    return out


class Model:
    """The map and the model's settings, shared by every path."""

    def __init__(self, snap: Snapshot, a: argparse.Namespace) -> None:
        self.snap, self.pool = snap, snap.pools[0]
        self.placer = Placer.of(snap)
        self.pg_bytes = a.pg_gib * float(1 << 30)
        self.copies_bytes = self.pg_bytes * self.pool.pg_num * self.pool.size
        self.a = a
        self.opts = options.make()
        self.limit = a.days * DAY
        self.split = Split(self.placer, self.pool, a.to, self.pg_bytes / 2)     # a child: half its parent

    def backfills(self) -> Backfills:
        return Backfills(self.snap.osds.count, self.a.osd_max_backfills,
                         self.a.backfill_mib_s * float(1 << 20), self.copies_bytes)

    def ceph_split(self) -> Outcome:
        """The mgr's adjust_pgs, each tick: pgp_num toward pg_num within the misplaced
        room, then pg_num up to mgr_max_pg_num_change ahead of pgp_num (and at most
        mgr_max_pg_creating, 1024, at once)."""
        pool, target, back = self.pool, self.a.to, self.backfills()
        most = self.snap.config["mgr_max_pg_num_change"]
        out = Outcome(f"Ceph: pg_num {target} at once")
        pg, pgp = pool.pg_num, pool.pgp_num

        def act(t: float) -> bool:
            nonlocal pg, pgp
            ratio = back.misplaced()
            if pgp < pg and ratio <= BUDGET:
                nxt = min(pg, pgp + max(int(pg * min(BUDGET - ratio, BUDGET / 2)), 1))
                back.add(self.split.backfills(pgp, nxt))
                pgp, out.changes, out.last_change = nxt, out.changes + 1, t
            if pg < target and pg - pgp < most:
                pg += min(most - (pg - pgp), target - pg, 1024)
                out.changes, out.last_change = out.changes + 1, t
            return pg < target or pgp < pg
        return run(out, back, act, self.limit)

    def advisor_split(self, pin: bool, limit: int) -> Outcome:
        """`apply --pool P --pg-num N`: the planner's steps, each sent once the step
        interval has passed and, if it moves data, the misplaced budget and
        max_backfills_per_osd on each OSD it loads let it (step_gate.may_issue)."""
        pool, back = self.pool, self.backfills()
        o = replace(self.opts, split_pinning=pin, max_backfills_per_osd=limit)
        most = backfill_limit(self.snap, limit)       # 0: the default, from osd_max_backfills
        steps = StepPlanner(self.snap, throttles(self.snap, o, BUDGET), self.placer).steps(pool, self.a.to)
        last = steps[-1]
        todo = [s for s in steps if s.kind is not StepKind.BALANCE]
        out = Outcome(f"pg_advisor: apply, pinning {'on' if pin else 'off'}, {limit_name(self.snap, limit)}")
        if last.kind is StepKind.BALANCE:
            out.note = f"then a balance step: up to {last.shards_moving} shard moves (not run)"
        pgp, i, sent_at = pool.pgp_num, 0, -math.inf

        def act(t: float) -> bool:
            nonlocal pgp, i, sent_at
            if i == len(todo):
                return False
            s = todo[i]
            if t - sent_at < o.step_interval:
                return True
            if s.kind is StepKind.PGP_NUM and not s.pin:
                if not step_fits(back.misplaced(), s.misplaced, o.misplaced_budget or BUDGET):
                    return True
                pgs = self.split.backfills(pgp, s.pgp_num)
                adds = ends(pgs, back.osds)
                if ((adds > 0) & (back.load() + adds > most)).any():
                    return True
                back.add(pgs)
            if s.kind is StepKind.PGP_NUM:
                pgp = s.pgp_num
                out.items += s.pgs_moving if s.pin else 0
            i, sent_at = i + 1, t
            out.changes, out.last_change = out.changes + 1, t
            return i < len(todo)
        return run(out, back, act, self.limit)

    def ceph_drain(self, osds: List[int]) -> Outcome:
        """`ceph osd out` of every OSD of the host at once."""
        back = self.backfills()
        before = self.placer.map_pool(self.pool).up
        after = self.placer.with_osds({o: 0.0 for o in osds}).map_pool(self.pool).up
        back.add(pg_backfills(before, after, self.pg_bytes))
        out = Outcome("Ceph: the host's OSDs out", changes=1)
        return run(out, back, lambda t: False, self.limit)

    def advisor_drain(self, host: str, limit: int) -> Outcome:
        """`drain HOST`: rounds every step interval, each of at most 16 PGs of the plan's
        moves (in its order) that fit max_backfills_per_osd at both ends and the round's
        share of the budget (the first move free when nothing is misplaced)."""
        back, o = self.backfills(), replace(self.opts, max_backfills_per_osd=limit)
        most = backfill_limit(self.snap, limit)
        up = self.placer.map_pool(self.pool).up
        pending: List[PgBackfill] = []
        for pgid, pairs in drain_plan(self.snap, host).proposal.items.items():
            old = up[int(pgid.split(".")[1], 16)]
            new = old.copy()
            for src, dst in pairs:
                new[new == src] = dst
            pending += pg_backfills(old[None, :], new[None, :], self.pg_bytes)
        out = Outcome(f"pg_advisor: drain {host}, {limit_name(self.snap, limit)}")
        sent_at = -math.inf
        share = self.pg_bytes / self.copies_bytes      # one shard's share of all copies

        def act(t: float) -> bool:
            nonlocal pending, sent_at
            if not pending:
                return False
            if t - sent_at < o.step_interval:
                return True
            load, spent = back.load(), back.misplaced()
            room = ROUND_FILL * BUDGET - spent
            take: List[PgBackfill] = []
            left: List[PgBackfill] = []
            for b in pending:
                ends = list(b.targets + b.leaving)
                cost = share * len(b.targets)
                fits = (load[ends] < most).all() and (
                    cost <= room or (spent == 0 and not take))
                if len(take) < 16 and fits:
                    take.append(b)
                    load[ends] += 1
                    room -= cost
                else:
                    left.append(b)
            if take:
                back.add(take)
                pending, sent_at = left, t
                out.changes, out.last_change = out.changes + 1, t
            return bool(pending)
        return run(out, back, act, self.limit)


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = parser(__doc__, racks=50, hosts=20, osds_per_host=10, pg_num=32768, to=65536, pg_gib=100.0,
               backfill_mib_s=100.0, osd_max_backfills=1, days=30.0, limits="0,2",
               only="split,drain").parse_args(argv)
    limits = [int(x) for x in a.limits.split(",")]
    snap = build(a)
    m = Model(snap, a)
    only = a.only.split(",")
    rows: List[Outcome] = []
    if "split" in only:
        rows += [m.ceph_split(), *(m.advisor_split(False, n) for n in limits),
                 m.advisor_split(True, m.opts.max_backfills_per_osd)]
    if "drain" in only:
        host = "host0"
        osds = [int(x) for x in np.flatnonzero(np.array([h == host for h in snap.osds.host]))]
        rows += [m.ceph_drain(osds), *(m.advisor_drain(host, n) for n in limits)]
    print(f"map: {snap.osds.count} OSDs ({a.racks} racks x {a.hosts} hosts x {a.osds_per_host}), "
          f"one pool of size {m.pool.size}, {a.pg_num} PGs of {a.pg_gib:g} GiB; split to {a.to}; "
          f"drain host0")
    print(f"model: Ceph's backfill reservations (osd_max_backfills {a.osd_max_backfills} local and "
          f"remote), each backfill {a.backfill_mib_s:g} MiB/s (assumed, not measured here); "
          f"a {TICK:g} s tick; target_max_misplaced_ratio {BUDGET}; pg_advisor's defaults "
          f"(step_interval {m.opts.step_interval} s; limit: max_backfills_per_osd, default "
          f"{limit_source(snap, 0)}; chunk mgr_max_pg_num_change "
          f"{snap.config['mgr_max_pg_num_change']})")
    table([("path", "<48"), ("changes", ">8"), ("last change h", ">14"), ("data moved h", ">13"),
           ("peak misplaced %", ">17"), ("peak backfills", ">15"), ("items left", ">11"), ("", "<1")],
          [[r.path, r.changes, hours(r.last_change), hours(r.moved_at), f"{100 * r.peak_misplaced:.2f}",
            r.peak_backfills, r.items, r.note] for r in rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
