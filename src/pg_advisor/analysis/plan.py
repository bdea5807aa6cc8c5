"""The pg_num changes to make, in order, with what each costs.

Shrinks come first (they free PG budget), then growth by how far a pool is from its
recommendation. After each change: predicted movement (from the what-if layer), the
fullest OSD's PG count and its steady-state PG memory, all changes so far applied.
"""
from typing import Any, Dict, List, Optional

import numpy as np

from ..crush.placement import Placer
from ..model.errors import AdvisorError
from ..model.options import Options
from ..model.snapshot import Snapshot
from ..sizing.sizer import Sizer
from .whatif import Change, simulate


def plan_report(snap: Snapshot, opts: Options, balanced: bool = False,
                placer: Optional[Placer] = None) -> Dict[str, Any]:
    placer = placer or Placer(snap)
    sizer = Sizer(snap, opts, placer, balanced)
    result = sizer.recommend()
    changes = [s for s in result.pools if s.change != 0 and s.pool.autoscale_mode != "on"]
    skipped = [s.pool.name for s in result.pools if s.change != 0 and s.pool.autoscale_mode == "on"]
    changes.sort(key=lambda s: (s.change, -abs(np.log2(s.recommended / max(s.pool.pg_num_target, 1)))))
    pg = {p.id: p.pg_num_target for p in snap.pools}
    now = sizer.totals(pg)
    steps: List[Dict[str, Any]] = []
    notes = list(result.notes)
    for s in changes:
        try:
            sim = simulate(snap, Change(pool=s.pool.name, pg_num=s.recommended), placer)
        except AdvisorError as e:
            # the mon would refuse this step (e.g. the cluster is past mon_max_pg_per_osd
            # already): say so and plan the others
            notes.append(f"pool {s.pool.name}: no step to {s.recommended} PGs: {e.message}")
            continue
        pg[s.pool.id] = s.recommended
        totals = sizer.totals(pg)
        mem = sizer.model.steady_state(totals)
        steps.append({
            "pool": s.pool.name, "pool_id": s.pool.id,
            "pg_num": [s.pool.pg_num_target, s.recommended],
            "reason": s.sentence(),
            "pgs_remapped": sim["total"]["pgs_remapped"],
            "shards_moved": sim["total"]["shards_moved"],
            "bytes_moved": sim["total"]["bytes_moved"],
            "pgs_per_osd_max_after": int(totals.max(initial=0)),
            "pg_memory_max_after": int(mem.max(initial=0)),
        })
    notes.extend(f"pool {n}: pg_autoscaler manages it (pg_autoscale_mode on); no change planned"
                 for n in skipped)
    return {
        "epoch": snap.epoch,
        "balanced": balanced,
        "pgs_per_osd_limit": result.limit_pgs,
        "pg_memory_budget": int(result.memory_budget),
        "pgs_per_osd_max_now": int(now.max(initial=0)),
        "pg_memory_max_now": int(sizer.model.steady_state(now).max(initial=0)),
        "steps": steps,
        "notes": notes,
    }
