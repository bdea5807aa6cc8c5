"""A running plan's state: one typed record the executor changes and the plan store keeps.

Every field is there from the start (no key appears mid-run), and to_json/from_json are
the only way in and out of JSON; plan_store.py checks each field of what it reads back.
"""
import copy
import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .steps import PlanStep

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
    CRUSH_REWEIGHT = "crush-reweight"


ACTIVE = (Status.RUNNING, Status.PAUSED)
OPEN = (*ACTIVE, Status.STOPPED)       # active, or stopped for the operator: not ended

# field metadata the plan store reads (plan_store.py): where a field is kept
APART = {"stored": "apart"}          # in chunks of its own (the steps, the pins)
RECOMPUTED = {"stored": "never"}     # recomputed each tick
LATER = {"stored": "optional"}       # came to layout 2 later: plan_migrations.py fills them in


@dataclass
class PoolTarget:
    """A pool the plan is for, bound to its id: its pg_num when the plan started, the
    plan's goal, and the pg_num and pgp_num targets the plan last set (or found)."""
    id: int
    start: int
    goal: int
    expect: List[int]


@dataclass
class RoundInFlight:
    """A balance round whose items were sent: checked once the map after `epoch` shows
    them (kept, and each PG where its items should put it)."""
    epoch: int                                     # the map the round was proposed on
    items: Dict[str, List[List[int]]]              # pgid -> the item list set
    want: Dict[str, List[int]] = field(default_factory=dict)   # pgid -> the up set they give
    # the OSDs' state the round was planned on (balance_steps.topology_key; "": not kept)
    topology: str = ""


@dataclass
class PlanState:
    id: str
    source: Source
    created: float
    steps: List[PlanStep] = field(metadata=APART)      # fixed at the start
    pools: Dict[str, PoolTarget]                        # by pool name
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
    round: Optional[RoundInFlight] = None
    blockers: List[str] = field(default_factory=list, metadata=RECOMPUTED)
    conflicts: List[str] = field(default_factory=list, metadata=RECOMPUTED)   # of kind "conflict"
    waiting: Optional[str] = field(default=None, metadata=RECOMPUTED)        # why the next step waits
    # pgid -> pin items set
    pins: Dict[str, List[List[int]]] = field(default_factory=dict, metadata=APART)
    pins_left: int = field(default=0, metadata=LATER)        # PGs still holding pin items
    # pgid -> the full pg-upmap pinned on it (EC shards CRUSH swapped): rounds remove these
    full_pins: Dict[str, List[int]] = field(default_factory=dict, metadata=LATER)
    drain: List[int] = field(default_factory=list, metadata=LATER)        # OSDs the rounds empty
    and_balance: bool = field(default=False, metadata=LATER)    # a drain's rounds even the pools too
    # PGs whose up set in the map was not the one their items were written for, and the
    # newest of them with what differed
    mismatched: int = field(default=0, metadata=LATER)
    mismatch_detail: List[str] = field(default_factory=list, metadata=LATER)

    def step(self) -> PlanStep:
        """The step in progress or to take (next < len(steps))."""
        return self.steps[self.next]

    def to_json(self) -> Json:
        """Plain JSON types: the records as objects, the enums as their values."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, doc: Json) -> "PlanState":
        """From what to_json wrote (plan_store.py has checked each field); a field this
        version does not have is an error, one it lacks takes its default."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(doc) - names)
        if unknown:
            raise ValueError(f"plan state has unknown fields {unknown}")
        typed: Dict[str, Any] = {k: kind(doc[k]) for k, kind in (("source", Source), ("status", Status),
                                                                 ("phase", Phase)) if k in doc}
        typed["steps"] = [PlanStep.from_json(s) for s in doc.get("steps", [])]
        typed["pools"] = {k: PoolTarget(**p) for k, p in doc.get("pools", {}).items()}
        if doc.get("round") is not None:
            typed["round"] = RoundInFlight(**doc["round"])
        return cls(**{**doc, **typed})

    def public(self) -> Json:
        """What a report shows, copied: all but the steps (reported one by one) and the pins
        (can be thousands: pins_left counts them), which are not copied only to be dropped."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.name not in ("steps", "pins")}


def _plain(v: Any) -> Any:
    """A field's value as JSON types, copied."""
    if isinstance(v, enum.Enum):
        return v.value
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return dataclasses.asdict(v)
    if isinstance(v, list) and v and dataclasses.is_dataclass(v[0]):
        return [dataclasses.asdict(x) for x in v]
    if isinstance(v, dict) and v and dataclasses.is_dataclass(next(iter(v.values()))):
        return {k: dataclasses.asdict(x) for k, x in v.items()}
    return copy.deepcopy(v)
