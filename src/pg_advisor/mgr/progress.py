"""Each plan as an event in `ceph -s`, through the mgr's progress module: updated while the
plan runs, closed once when it ends (done: completed; aborted or stopped: failed), as
pg_autoscaler's PgAdjustmentProgress updates the event of a pool's pg_num change."""
import threading
from typing import Sequence, Set, Tuple

from mgr_module import MgrModule

from ..execute.plan_state import ACTIVE, Status

# (event id, message, fraction done, the plan's status): Driver.progress()
Event = Tuple[str, str, float, Status]


class PlanProgress:
    def __init__(self) -> None:
        self._closed: Set[str] = set()     # the events of plans that ended: not sent again
        # the serve loop and an abort's command thread may both close an event: once
        self._lock = threading.Lock()

    def update(self, module: MgrModule, events: Sequence[Event]) -> None:
        """Send each plan's event (Driver.progress) to the progress module. The events are
        optional to the plans: a failure is logged, never raised."""
        for event in events:
            self._one(module, event)

    def _one(self, module: MgrModule, event: Event) -> None:
        ev_id, msg, frac, status = event
        with self._lock:
            if ev_id in self._closed:
                return
            if status not in ACTIVE:
                self._closed.add(ev_id)
        try:
            if status in ACTIVE:
                module.remote("progress", "update", ev_id, ev_msg=msg, ev_progress=frac,
                              add_to_ceph_s=True)
            else:
                if status == Status.DONE:
                    module.remote("progress", "complete", ev_id)
                else:
                    module.remote("progress", "fail", ev_id, f"plan {status}")
        except Exception as e:
            module.log.warning("pg_advisor: progress event: %s", e)
