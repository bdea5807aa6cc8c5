"""What `progress`, the panel and `ceph -s` show of the plans: built afresh from the
executor's plans, so that nothing in it is the executor's and it can be rendered or served
after the plans' lock is let go."""
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from ..analysis.backfill import BackfillRate
from .plan_state import ACTIVE, PlanState, Status
from .steps import PlanStep, StepKind


def progress_line(state: PlanState) -> Tuple[str, float, str, Status]:
    """(plan id, fraction done, one line, status), for the plan's progress event."""
    steps = state.steps
    last = steps[-1]
    pools = sorted({s.pool for s in steps})
    what = ("balancing " + ", ".join(pools) if all(s.kind is StepKind.BALANCE for s in steps)
            else f"{', '.join(pools)} to pg_num {last.pg_num}")
    if state.drain:
        what = f"draining {len(state.drain)} OSDs"
    line = f"pg_advisor: {what} (step {min(state.next + 1, len(steps))}/{len(steps)})"
    if state.status in (Status.PAUSED, Status.STOPPED):
        line += f", {state.status}"
    return state.id, state.next / len(steps), line, state.status


def plan_report(state: Optional[PlanState], plans: Sequence[PlanState],
                rates: Mapping[str, BackfillRate]) -> Dict[str, Any]:
    """`state`'s plan and its steps, and a line for each of `plans`."""
    if state is None:
        return {"plan": None, "plans": []}
    now_at = state.phase.value if state.status == Status.RUNNING else "pending"
    kept = {p.id for p in state.pools.values()}
    upto = state.next

    def where(i: int, s: PlanStep) -> str:
        if s.pool_id not in kept:
            return "pool deleted"        # its steps after that were skipped (executor._drop)
        return "done" if i < upto else now_at if i == upto else "pending"
    steps = [dict(s.to_json(), description=s.describe(), state=where(i, s))
             for i, s in enumerate(state.steps)]
    return {"plan": state.public(), "steps": steps, "backfill": _backfill(state, rates),
            "plans": [_line(p, rates) for p in plans]}


def _backfill(state: PlanState, rates: Mapping[str, BackfillRate]) -> Optional[Dict[str, Any]]:
    rate = rates.get(state.id)
    return rate.view() if rate is not None and state.status in ACTIVE else None


def _line(state: PlanState, rates: Mapping[str, BackfillRate]) -> Dict[str, Any]:
    """One plan of `progress`'s list."""
    return {"id": state.id, "source": state.source.value, "status": state.status.value,
            "created": state.created, "step": min(state.next + 1, len(state.steps)),
            "steps": len(state.steps), "pools": sorted(state.pools), "drain": list(state.drain),
            "waiting": state.waiting, "blockers": list(state.blockers),
            "stopped_why": state.stopped_why, "backfill": _backfill(state, rates)}
