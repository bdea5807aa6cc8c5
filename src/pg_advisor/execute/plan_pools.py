"""Is a plan still about the pools it was made for? A pool deleted, renamed, recreated, or
retargeted by someone else is not the plan's to act on (executor.py drops a deleted one
and stops on the others)."""
from typing import List, Optional, Tuple

from ..model.snapshot import Snapshot
from .plan_state import PlanState, PoolTarget
from .steps import StepKind


def changed(state: PlanState, snap: Snapshot, name: str, p: PoolTarget) -> Optional[str]:
    """What happened to a plan's pool that the plan must not act on, or None."""
    by_id = {q.id: q for q in snap.pools}
    pool = by_id.get(p.id)
    if pool is None:
        other = next((q for q in snap.pools if q.name == name), None)
        return (f"pool {name} (id {p.id}) was deleted" +
                (f"; a new pool {name} has id {other.id}" if other else ""))
    if pool.name != name:
        return f"pool {name} (id {p.id}) was renamed to {pool.name}"
    if not stepped(state, p):
        return None            # its targets are not the plan's (another plan may change them)
    have = (pool.pg_num_target, pool.pgp_num_target)
    if have not in expected(state, p):
        exp = p.expect
        return (f"pool {name}: pg_num/pgp_num targets were changed outside the plan to "
                f"{have[0]}/{have[1]} (the plan left them at {exp[0]}/{exp[1]})")
    return None


def stepped(state: PlanState, p: PoolTarget) -> bool:
    """Does the plan change the pool's pg_num or pgp_num (not only move its PGs)?"""
    return any(s.pool_id == p.id and s.kind is not StepKind.BALANCE for s in state.steps)


def expected(state: PlanState, p: PoolTarget) -> List[Tuple[int, int]]:
    """Targets the pool may show: the plan's last, and while the plan's current step
    is being set on it, that step's and the states between its commands."""
    out = [(p.expect[0], p.expect[1])]
    if state.next < len(state.steps):
        step = state.step()
        if step.pool_id == p.id and step.kind is not StepKind.BALANCE:
            out += [(step.pg_num, step.pgp_num), (step.pg_num, step.pg_num),
                    (step.pg_num, p.expect[1])]
    return out
