"""How a pg_num plan is made: its targets (the operator's, or the sizing advice) and its
steps, each target checked against the mon's bounds and mon_max_pg_per_osd first."""
from typing import Dict, List, Optional

from ..analysis.plan import pg_num_plan
from ..model.backfill_limit import backfill_limit
from ..model.errors import AdvisorError
from ..model.limits import check_pg_num
from ..model.misplaced import misplaced_max
from ..model.options import Options
from ..model.snapshot import Snapshot
from ..sizing.sizer import Sizer
from .steps import PlanStep, StepPlanner, Throttles


def throttles(snap: Snapshot, opts: Options, cluster_ratio: float) -> Throttles:
    """The options' throttles. A split's chunk is the cluster's mgr_max_pg_num_change unless
    the operator fixed a smaller one (max_pgs_splitting), never larger: with pgp_num held,
    Ceph's mgr raises pg_num no further than that ahead of pgp_num, so a larger pg_num step
    would never be done."""
    most = snap.config["mgr_max_pg_num_change"]
    return Throttles(misplaced_max=misplaced_max(opts, cluster_ratio),
                     max_splitting=min(opts.max_pgs_splitting or most, most),
                     fit_chunk=not opts.max_pgs_splitting,
                     max_backfills_per_osd=backfill_limit(snap, opts.max_backfills_per_osd),
                     pin=opts.split_pinning)


def targets(snap: Snapshot, opts: Options, balanced: bool, pool: Optional[str],
            pg_num: Optional[int]) -> Dict[str, int]:
    """pool -> pg_num to reach: the operator's (`pg_num` goes with a `pool`: the command
    table checks it), or the sizing advice (shrinks first)."""
    if pool is not None:
        p = snap.pool_by_name(pool)
        if snap.autoscaler_acts(p):
            raise AdvisorError.busy(f"pool {pool}: pg_autoscaler manages it (pg_autoscale_mode "
                                    f"on); set it off to hand the pool to pg_advisor")
    if pool is not None and pg_num is not None:
        return {pool: int(pg_num)}
    changes = pg_num_plan(snap, opts, balanced).changes
    return {c.pool.name: c.pg_num for c in changes if pool is None or c.pool.name == pool}


def plan_steps(snap: Snapshot, opts: Options, cluster_ratio: float,
               want: Dict[str, int]) -> List[PlanStep]:
    """The steps that take each pool of `want` to its pg_num."""
    planner = StepPlanner(snap, throttles(snap, opts, cluster_ratio))
    steps: List[PlanStep] = []
    for name, target in want.items():
        pool = snap.pool_by_name(name)
        check_pg_num(snap, pool, target)      # the mon's bounds first: they cost nothing
        if target == pool.pg_num_target:
            raise AdvisorError.invalid(f"pool {name} already has pg_num {target}")
        _check_limit(snap, opts, name, target)
        steps.extend(planner.steps(pool, target))
    return steps


def _check_limit(snap: Snapshot, opts: Options, name: str, target: int) -> None:
    """Refuse a target that would put more PGs on an OSD than the mon allows."""
    sizer = Sizer(snap, opts)
    pg = {p.id: (target if p.name == name else p.pg_num_target) for p in snap.pools}
    most = int(sizer.totals(pg).max(initial=0))
    if most > snap.mon_max_pg_per_osd:
        raise AdvisorError.invalid(
            f"pg_num {target} for pool {name} would put up to {most} PGs on an OSD, over "
            f"mon_max_pg_per_osd {snap.mon_max_pg_per_osd}")
