"""What one balance run may still spend, and the one place that says why it stopped.

A run is bounded four ways: the replica moves (item lists) it may make, the object copies
it may misplace, the PGs it may move into or out of each OSD (backfill room), and the
work it may do (legality checks, see balancer.WORK_MAX). The first bound reached stops
the run; the work bound stops it even after another did, since its answer is partial.
"""
import enum
from dataclasses import dataclass
from typing import Callable, FrozenSet, Optional, Sequence

import numpy as np

from ..model.misplaced import MisplacedBudget, affordable
from ..model.options import FillLimit, Options


@dataclass(frozen=True)
class Guards:
    """What no move may pass, whatever it gains: the fill limit of the OSDs it sends PGs to
    (analysis/space.py), `upmap_max` PGs with pg_upmap_items in the map, past which no new
    item list is made (None: no bound), and the evenness past which none is needed: an OSD
    whose count is within floor(share) - (deviation - 1) and ceil(share) + (deviation - 1)
    (pool_state.Level) is not moved for."""
    fill: FillLimit = FillLimit.NEARFULL
    upmap_max: Optional[int] = None
    deviation: int = 1

    @staticmethod
    def of(opts: Options) -> "Guards":
        return Guards(opts.fill_limit, opts.max_upmap_items or None, opts.upmap_max_deviation)


@dataclass(frozen=True)
class Limits:
    """What a run may spend: at most `max_items` replica moves, the object copies the
    `misplaced` budget allows (model/misplaced.py; None: no bound), and the PGs each OSD
    may still take in or give off (`osd_room`; None: any), within the `guards`; the PGs
    in `fixed` (pgids) are not moved (another plan's round set their items just now)."""
    max_items: int = 1 << 20
    misplaced: Optional[MisplacedBudget] = None
    osd_room: Optional[np.ndarray] = None
    guards: Guards = Guards()
    fixed: FrozenSet[str] = frozenset()


class Stop(enum.Enum):
    MOVES = "moves"            # the item lists asked for are made
    MISPLACED = "misplaced"    # the misplaced budget is spent
    ROOM = "room"              # an OSD's backfill room is used up
    WORK = "work"              # the run's work bound: its items are a partial answer
    SPACE = "space"            # a destination filled up mid-run (balancer.py's fill limit)
    ENTRIES = "entries"        # the map holds the PGs with items the bound allows


class Budget:
    def __init__(self, copies_max: Optional[float], first_free: bool,
                 osd_room: Optional[np.ndarray], work: int, work_max: int,
                 on_work_stop: Optional[Callable[[], None]] = None) -> None:
        # object copies the moves may misplace (None: no limit); each move misplaces the
        # PG's objects once
        self.copies_max = copies_max
        # when nothing is misplaced, the first move is made even if it alone passes the
        # budget (as Ceph's balancer and pgp_num stepping do): otherwise a pool of few big
        # PGs (one PG split in two) would never move at all
        self.first_free = first_free
        # per OSD: PGs the run may still move into or out of it (None: no limit)
        self.osd_room = None if osd_room is None else np.array(osd_room, dtype=np.int64)
        self.misplaced = 0.0
        self.moves_left = 0    # item lists the run may still make (a group moved at once: one)
        self.work = work       # units of work done so far
        self.work_max = work_max   # past it the run stops
        # rows the pool states turned into arrays since the last spend (PoolState.rows): an
        # OSD of half a million PGs costs that much each time its array is built again
        self.rows_built = 0
        self.on_work_stop = on_work_stop   # says, once, what the run did before the bound
        self.stop: Optional[Stop] = None
        self._prepaid = 0      # charges payable() paid for the misplaced budget, still to come

    @property
    def stopped(self) -> bool:
        return self.stop is not None

    @property
    def throttled(self) -> bool:
        """The misplaced budget or an OSD's backfill room, not the lack of a useful move nor
        a bound on the run, ended it: more moves follow once the cluster has caught up."""
        return self.stop in (Stop.MISPLACED, Stop.ROOM)

    @property
    def out_of_work(self) -> bool:
        return self.stop is Stop.WORK

    def spend(self, pairs: int) -> bool:
        """Count `pairs` legality checks, and the rows built since the last call; False (and
        the run stops) past the work bound."""
        self.work += pairs + self.rows_built
        self.rows_built = 0
        if self.work > self.work_max and not self.out_of_work:
            self.halt(Stop.WORK)
            if self.on_work_stop is not None:
                self.on_work_stop()
        return not self.out_of_work

    def start(self, max_moves: int) -> None:
        self.moves_left = max_moves
        self.stop = Stop.MOVES if max_moves <= 0 else None

    def halt(self, why: Stop) -> None:
        """Stop the run (the first reason stands, but for the work bound's)."""
        if self.stop is None or why is Stop.WORK:
            self.stop = why

    def affordable(self, objects: float) -> bool:
        """May moves that misplace `objects` more object copies still be made?"""
        return affordable(self.copies_max, self.first_free, self.misplaced, objects)

    def refund(self, objects: float, ends: Sequence[int]) -> None:
        """Give back what a PG's moves took: the run moved it back to where it found it.
        Kept, the OSDs' backfill room would be spent on a PG that does not move, and once
        all of it is spent a round sets no item and waits for a backfill that never comes
        (a bytes step undoing a count move of the same round does this)."""
        self.misplaced = max(0.0, self.misplaced - objects)
        self.moves_left += 1
        if self.osd_room is not None and len(ends):
            room = self.osd_room.size
            self.osd_room += np.bincount(np.asarray(ends, dtype=np.int64), minlength=room)[:room]

    def payable(self, objects: Sequence[float], ends: Sequence[int]) -> bool:
        """Could PGs' moves, the i-th misplacing `objects[i]` copies, with `ends` the OSD at
        each end of each move, be paid at once (a chain's two PGs, checked before either
        moves)? If so the charges that follow, one a PG, take them without checking the
        misplaced budget again (with nothing misplaced the budget lets a first payment
        pass: here the whole chain's, and its second charge must not be refused after its
        first was made); `paid_in_full()` ends that. If not, the run stops on the reason
        (fewer moves left than PGs: not paid, the run goes on)."""
        if self.stopped or self.moves_left < len(objects):
            return False
        if self._room_taken(float(sum(objects)), ends) is None:
            return False
        self._prepaid = len(objects)
        return True

    def paid_in_full(self) -> None:
        """The charges payable() paid for are made (or abandoned)."""
        self._prepaid = 0

    def _room_taken(self, objects: float, ends: Sequence[int]) -> Optional[np.ndarray]:
        """What `ends` take of the OSDs' backfill room (empty without a room bound), or None
        (and the run stops) if the misplaced budget (unless payable() paid it) or the room
        cannot pay them."""
        if not self._prepaid and not self.affordable(objects):
            self.halt(Stop.MISPLACED)
            return None
        if self.osd_room is None:
            return np.zeros(0, np.int64)
        room = self.osd_room.size
        per_osd = np.bincount(np.asarray(ends, dtype=np.int64), minlength=room)[:room]
        if (per_osd > self.osd_room).any():
            self.halt(Stop.ROOM)
            return None
        return per_osd

    def charge(self, objects: float, ends: Sequence[int]) -> bool:
        """Take one PG's moves (misplacing `objects` copies; `ends`: the OSD at each end of
        each move) from the budget, or stop the run and take nothing if it cannot pay."""
        if self.stopped:
            return False
        per_osd = self._room_taken(objects, ends)
        if per_osd is None:
            return False
        self._prepaid = max(self._prepaid - 1, 0)
        if self.osd_room is not None:
            self.osd_room -= per_osd
        self.misplaced += objects
        self.moves_left -= 1
        if self.moves_left <= 0:
            self.halt(Stop.MOVES)
        return True
