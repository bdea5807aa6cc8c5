"""The plan as an event in `ceph -s`, through the mgr's progress module: updated while the
plan runs, closed once when it ends (done: completed; aborted or stopped: failed), as
pg_autoscaler's PgAdjustmentProgress updates the event of a pool's pg_num change."""
from typing import Optional, Set, Tuple

from mgr_module import MgrModule

from .execute.plan_state import ACTIVE, Status

# (event id, message, fraction done, the plan's status): Driver.progress()
Event = Tuple[str, str, float, Status]


class PlanProgress:
    def __init__(self) -> None:
        self._closed: Set[str] = set()     # the events of plans that ended: not sent again

    def update(self, module: MgrModule, event: Optional[Event]) -> None:
        """Send `event` (the current or last plan's) to the progress module. The event is
        optional to the plan: a failure is logged, never raised."""
        if event is None or event[0] in self._closed:
            return
        ev_id, msg, frac, status = event
        try:
            if status in ACTIVE:
                module.remote("progress", "update", ev_id, ev_msg=msg, ev_progress=frac,
                              add_to_ceph_s=True)
            else:
                self._closed.add(ev_id)
                if status == Status.DONE:
                    module.remote("progress", "complete", ev_id)
                else:
                    module.remote("progress", "fail", ev_id, f"plan {status}")
        except Exception as e:
            module.log.warning("pg_advisor: progress event: %s", e)
