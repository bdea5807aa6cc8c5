"""What an operator's `balance` or `read-balance` set, checked by the background.

The command sends its commands and answers with what the mon accepted. Whether the mon's
next map kept them (it acknowledges an item that breaks the rule, then drops it) and puts
each PG where they meant is read from the first map newer than the one the command planned
on (or the newest after CHECK_WAIT), on a tick of the background, and goes to the history;
as a plan's rounds are checked (balance_steps.round_checked). So no command handler waits
for a map: at 10,000 OSDs a map takes seconds to reach the mgr, and the handler held the
plan's lock meanwhile (cephadm's handlers, too, record and return; its serve loop acts).
"""
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..balance.proposal import unkept
from ..crush.upmap import map_mismatches
from ..model.snapshot import Snapshot
from .history import Event

CHECK_WAIT = 30.0       # seconds for the map to show a command's changes before it is checked
PENDING_MAX = 16        # commands awaiting their check at once (an older one is dropped, said)
CHECK_PGS_MAX = 2000    # PGs of one command checked (a bigger round is checked on these)
SHOWN = 3               # PGs named in an event

UpSets = Callable[[Snapshot, Sequence[str]], Dict[str, List[int]]]
Log = Callable[[float, Event, str], None]


@dataclass
class PendingCheck:
    what: str                 # "balance" or "read-balance": the command
    epoch: int                # the map the command planned on
    at: float                 # when it was sent
    topology: str             # rounds.topology_key of that map
    # balance: pgid -> the items set ([]: removed) and the up set they mean
    items: Dict[str, List[Tuple[int, int]]] = field(default_factory=dict)
    want: Dict[str, List[int]] = field(default_factory=dict)
    # read-balance: pgid -> the primary set (None: the entry removed)
    primaries: Dict[str, Optional[int]] = field(default_factory=dict)


class CommandChecks:
    """The commands whose changes the background still has to check: added by a command
    (PlanService.check_later) and settled by a tick, each under the plan's lock."""

    def __init__(self) -> None:
        self.pending: List[PendingCheck] = []
        self.dropped = 0                   # checks dropped past PENDING_MAX (said once each)

    @property
    def waiting(self) -> int:
        return len(self.pending)

    def settle(self, snap: Snapshot, up_sets: UpSets, topology: str, now: float, log: Log) -> int:
        """Check each pending command that `snap` (its map newer than the command's, or
        CHECK_WAIT passed) can answer, each outcome a history event; how many were checked."""
        due = [c for c in self.pending if snap.epoch > c.epoch or now - c.at >= CHECK_WAIT]
        self.pending = [c for c in self.pending if c not in due]
        dropped, self.dropped = self.dropped, 0
        if dropped:
            log(now, Event.UNCHECKED, f"{dropped} commands' changes not checked: more than "
                                      f"{PENDING_MAX} awaited their map")
        for c in due:
            if c.topology != topology:
                log(now, Event.UNCHECKED, f"{c.what} at epoch {c.epoch}: the OSDs changed since; "
                                          f"its {len(c.items) or len(c.primaries)} PGs not checked")
                continue
            text = (_balance_outcome(c, snap, up_sets) if c.what == "balance"
                    else _primaries_outcome(c, snap, up_sets))
            log(now, Event.CHECKED, f"{c.what} at epoch {c.epoch}, checked at epoch {snap.epoch}: {text}")
        return len(due)


def _named(bad: Mapping[str, str]) -> str:
    return "; ".join(f"{k}: {v}" for k, v in sorted(bad.items())[:SHOWN])


def _balance_outcome(c: PendingCheck, snap: Snapshot, up_sets: UpSets) -> str:
    lost = unkept(c.items, snap.pg_upmap_items)
    want = {k: v for k, v in c.want.items() if k not in lost}
    bad = map_mismatches(snap, want, up_sets(snap, sorted(want))) if want else {}
    out = f"the items of {len(c.items) - len(lost)} of {len(c.items)} PGs kept"
    if lost:
        out += f"; the mon did not keep those of {', '.join(lost[:SHOWN])}"
    if bad:
        out += f"; {len(bad)} PGs not where their items put them: {_named(bad)}"
    return out


def _primaries_outcome(c: PendingCheck, snap: Snapshot, up_sets: UpSets) -> str:
    entries = snap.pg_upmap_primaries
    want = sorted(c.primaries)
    ups = up_sets(snap, [p for p in want if c.primaries[p] is not None])
    bad: Dict[str, str] = {}
    for pgid in want:
        osd = c.primaries[pgid]
        if osd is None:
            if pgid in entries:
                bad[pgid] = "the mon kept the entry"
        elif entries.get(pgid) != osd:
            bad[pgid] = "the mon did not keep the entry"
        else:
            up = ups.get(pgid) or []
            if not up or up[0] != osd:      # a replicated PG's primary leads its up set
                bad[pgid] = f"primary osd.{up[0] if up else None}, not osd.{osd}"
    out = f"{len(want) - len(bad)} of {len(want)} primary entries as set"
    return out + (f"; {_named(bad)}" if bad else "")
