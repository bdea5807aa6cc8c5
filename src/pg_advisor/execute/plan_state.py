"""A running plan's state: one typed record the executor changes and the plan store keeps.

Every field is there from the start (no key appears mid-run), and to_json/from_json are
the only way in and out of JSON; plan_store.py checks each field of what it reads back.
"""
import copy
import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

Json = Dict[str, Any]


class Status(enum.StrEnum):
    """Where a plan stands. Running and paused plans are active (one at a time); a stopped
    plan waits for `abort`; done and aborted ones are history."""
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"        # a step or the window cannot go on: the operator decides
    DONE = "done"
    ABORTED = "aborted"


class Phase(enum.StrEnum):
    """Of the step in progress: the state is saved before a step is sent and after, so a
    new mgr knows whether it may have been sent."""
    IDLE = "idle"
    ISSUING = "issuing"
    ISSUED = "issued"


class Source(enum.StrEnum):
    """The command (or the background) that started a plan."""
    APPLY = "apply"
    AUTO = "auto"
    PIN_REMAPPED = "pin-remapped"
    DRAIN = "drain"


ACTIVE = (Status.RUNNING, Status.PAUSED)


@dataclass
class PlanState:
    id: str
    source: Source
    created: float
    steps: List[Json]           # PlanStep.to_json() of each step, fixed at the start
    # pool name -> {"id", "start", "goal", "expect": [pg_num target, pgp_num target] last set}
    pools: Dict[str, Json]
    next: int = 0               # index of the step in progress or to take
    phase: Phase = Phase.IDLE   # of that step
    status: Status = Status.RUNNING
    issued_at: Optional[float] = None
    last_step_at: Optional[float] = None
    attempts: int = 0           # failed tries of the current step
    retry_at: Optional[float] = None
    last_error: Optional[str] = None
    stopped_why: Optional[str] = None
    rounds: int = 0             # balance rounds of the current step
    round: Optional[Json] = None  # the round in flight: {"epoch", "items", "want"}
    blockers: List[str] = field(default_factory=list)     # recomputed each tick, not stored
    conflicts: List[str] = field(default_factory=list)    # blockers of kind "conflict"
    waiting: Optional[str] = None                          # why the next step waits
    pins: Dict[str, List[List[int]]] = field(default_factory=dict)   # pgid -> pin items set
    pins_left: int = 0          # PGs still holding pin items
    # pgid -> the full pg-upmap pinned on it (EC shards CRUSH swapped): rounds remove these
    full_pins: Dict[str, List[int]] = field(default_factory=dict)
    drain: List[int] = field(default_factory=list)        # OSDs the rounds empty
    # PGs whose up set in the map was not the one their items were written for, and the
    # newest of them with what differed
    mismatched: int = 0
    mismatch_detail: List[str] = field(default_factory=list)

    def to_json(self) -> Json:
        """Plain JSON types: the enums as their values."""
        return {k: v.value if isinstance(v, enum.Enum) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_json(cls, doc: Json) -> "PlanState":
        """From what to_json wrote (plan_store.py has checked each field); a field this
        version does not have is an error, one it lacks takes its default."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(doc) - names)
        if unknown:
            raise ValueError(f"plan state has unknown fields {unknown}")
        typed = {k: kind(doc[k]) for k, kind in (("source", Source), ("status", Status), ("phase", Phase))
                 if k in doc}
        return cls(**{**doc, **typed})

    def public(self) -> Json:
        """What a report shows, copied: all but the steps (reported one by one) and the pins
        (can be thousands: pins_left counts them), which are not copied only to be dropped."""
        return {f.name: copy.deepcopy(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.name not in ("steps", "pins")} | {k: v.value for k, v in (
                    ("source", self.source), ("status", self.status), ("phase", self.phase))}
