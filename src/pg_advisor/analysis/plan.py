"""The pg_num changes to make, in order, with what each costs.

Shrinks come first (they free PG budget), then growth by how far a pool is from its
recommendation. After each change: predicted movement (from the what-if layer), the
fullest OSD's PG count and its steady-state PG memory, all changes so far applied.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, TypedDict

import numpy as np

from ..crush.placement import Placer
from ..model.errors import AdvisorError
from ..model.options import Options
from ..model.snapshot import Pool, Snapshot
from ..sizing.sizer import Sizer, SizingResult
from .whatif import Change, simulate


@dataclass
class PlannedChange:
    """One pool's pg_num change in the plan, with what it costs (all changes before it made)."""
    pool: Pool
    pg_num: int                  # the target; the pool's pg_num_target is where it starts
    reason: str
    movement: Dict[str, Any]     # simulate()'s totals: pgs_remapped, shards_moved, bytes_moved
    pgs_per_osd_max_after: int
    pg_memory_max_after: int
    automatic: bool = False      # mode auto may make it: growth, or a merge under pressure


@dataclass
class PgNumPlan:
    balanced: bool
    sizing: SizingResult
    pgs_per_osd_max_now: int
    pg_memory_max_now: int
    changes: List[PlannedChange] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def pg_num_plan(snap: Snapshot, opts: Options, balanced: bool = False,
                placer: Optional[Placer] = None) -> PgNumPlan:
    placer = placer or Placer.of(snap)
    sizer = Sizer(snap, opts, placer, balanced)
    result = sizer.recommend()
    changes = [s for s in result.pools if s.change != 0 and not snap.autoscaler_acts(s.pool)]
    skipped = [s.pool.name for s in result.pools if s.change != 0 and snap.autoscaler_acts(s.pool)]
    changes.sort(key=lambda s: (s.change, -abs(np.log2(s.recommended / max(s.pool.pg_num_target, 1)))))
    pg = {p.id: p.pg_num_target for p in snap.pools}
    now = sizer.totals(pg)
    plan = PgNumPlan(balanced, result, int(now.max(initial=0)),
                     int(sizer.model.steady_state(now).max(initial=0)), notes=list(result.notes))
    for s in changes:
        try:
            sim = simulate(snap, Change(pool=s.pool.name, pg_num=s.recommended), placer)
        except AdvisorError as e:
            # the mon would refuse this step (e.g. the cluster is past mon_max_pg_per_osd
            # already): say so and plan the others
            plan.notes.append(f"pool {s.pool.name}: no step to {s.recommended} PGs: {e.message}")
            continue
        pg[s.pool.id] = s.recommended
        totals = sizer.totals(pg)
        plan.changes.append(PlannedChange(
            s.pool, s.recommended, s.sentence(), sim["total"], int(totals.max(initial=0)),
            int(sizer.model.steady_state(totals).max(initial=0)), automatic=s.automatic))
    plan.notes.extend(f"pool {n}: pg_autoscaler manages it (pg_autoscale_mode on); no change planned"
                      for n in skipped)
    plan.notes.extend(f"pool {s.pool.name}: no usage figures yet: not sized, not planned"
                      for s in result.pools if not s.known)
    plan.notes.extend(f"pool {c.pool.name}: {c.pool.pg_num_target} -> {c.pg_num} is suggested, not "
                      "made by mode auto (a merge without PG or memory pressure)"
                      for c in plan.changes if not c.automatic)
    return plan


class PlanStepReport(TypedDict):
    pool: str
    pool_id: int
    pg_num: List[int]             # [from, to]
    reason: str
    pgs_remapped: Any             # simulate()'s totals
    shards_moved: Any
    bytes_moved: Any
    pgs_per_osd_max_after: int
    pg_memory_max_after: int
    automatic: bool


class PlanReport(TypedDict):
    """What `ceph pg-advisor plan -f json` gives, and the text view reads."""
    epoch: int
    balanced: bool
    pgs_per_osd_limit: int
    pg_memory_budget: int
    pgs_per_osd_max_now: int
    pg_memory_max_now: int
    steps: List[PlanStepReport]
    notes: List[str]


def plan_report(snap: Snapshot, opts: Options, balanced: bool = False,
                placer: Optional[Placer] = None) -> PlanReport:
    plan = pg_num_plan(snap, opts, balanced, placer)
    return {
        "epoch": snap.epoch,
        "balanced": balanced,
        "pgs_per_osd_limit": plan.sizing.limit_pgs,
        "pg_memory_budget": int(plan.sizing.memory_budget),
        "pgs_per_osd_max_now": plan.pgs_per_osd_max_now,
        "pg_memory_max_now": plan.pg_memory_max_now,
        "steps": [{
            "pool": c.pool.name, "pool_id": c.pool.id,
            "pg_num": [c.pool.pg_num_target, c.pg_num],
            "reason": c.reason,
            "pgs_remapped": c.movement["pgs_remapped"],
            "shards_moved": c.movement["shards_moved"],
            "bytes_moved": c.movement["bytes_moved"],
            "pgs_per_osd_max_after": c.pgs_per_osd_max_after,
            "pg_memory_max_after": c.pg_memory_max_after,
            "automatic": c.automatic,
        } for c in plan.changes],
        "notes": plan.notes,
    }
