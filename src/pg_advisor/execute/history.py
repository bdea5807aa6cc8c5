"""The plan history (`ceph pg-advisor history`): what happened to each plan, one event a
line, stored with the plan as JSON (plan_store.py checks each field of what it reads back)
and read back here as typed records."""
import enum
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional


class Event(enum.StrEnum):
    """What an event says happened (its value is what the stored history holds)."""
    START = "start"
    PAUSE = "pause"
    RESUME = "resume"
    ABORT = "abort"
    DROP = "drop"               # a pool of the plan was deleted
    STOP = "stop"
    RECOVERED = "recovered"     # a step sent before a failover was found in the cluster
    ISSUE = "issue"
    FINISH = "finish"
    DONE = "done"               # a step is done
    RETRY = "retry"
    ROUND = "round"
    UNPIN = "unpin"             # full pg-upmaps removed
    UNCHECKED = "unchecked"
    CHECKED = "checked"         # what an operator's balance or read-balance set, as the map shows it
    MISMATCH = "mismatch"
    UNPINNED = "unpinned"       # pins the mon refused
    UNPRIMED = "unprimed"       # pg-temps the mon refused
    PIN = "pin"
    DRAIN = "drain"
    READ_BALANCE = "read-balance"
    MODE = "mode"               # the operator set the mode (the detail)
    COMMAND = "command"         # what a command answered "queued" did (mgr/intents.py)
    RESET = "reset"             # the stored history was unreadable


@dataclass(frozen=True)
class HistoryEvent:
    time: float
    plan: Optional[str]     # the plan's id (None: no plan)
    event: str              # an Event's value (a history stored by another version may hold others)
    detail: str

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "HistoryEvent":
        return HistoryEvent(**d)
