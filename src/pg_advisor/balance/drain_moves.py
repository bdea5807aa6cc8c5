"""A drain's moves: each replica on the drained OSDs to the best legal destination for its
PG, and no other replica moved unless the rule forces it.

The best destination is the OSD furthest below its share (the share without the drained
OSDs) that the PG's rule allows, among those with room. An OSD has room while, one replica
more, it is no further above its share than it was when the run began or than 1 PG,
whichever is larger, in the pool and in the total over the run's pools: so the drain
leaves no OSD further from its share than before, or than a PG. The replicas are placed a
pass at a time (one per PG: a PG's second replica there depends on where the first went),
over all pools' PGs in one order, the fewest legal destinations first, each pass checking legality once for
all of them against the cheapest destinations with room (all of them for the PGs that
found none there).

Where the rule keeps a replica in its bucket of the rule's first choose type and every
OSD there is full (4 replicas in 2 racks of 2 hosts: a replica never changes rack alone),
the PG's group in that bucket moves as one into another bucket (a regroup), or another
PG's group leaves a full OSD the replica may take; where the rule allows a replica
elsewhere but none of those OSDs has room, another PG's replica moves off one of them
onto an OSD with room (a chain). Those extra moves are what the rule forces (the
report's `forced`). A replica no such move can place within the room goes to the legal
destination least above its share, said in a note.
"""
from typing import Callable, Dict, List, Protocol, Tuple

import numpy as np

from ..rules.legality import replaceable
from .budget import Budget
from .pool_state import EPS, ChainMove, Level, PoolState
from .search import MoveSearch

Stuck = Tuple[PoolState, int, int]      # (pool, row, source) no destination with room took
Checked = Tuple[PoolState, np.ndarray, np.ndarray, np.ndarray, np.ndarray]   # rows, srcs, cand, ok

FIRST_TRY = 256       # destinations a pass checks first, at least (or 2 a replica, if more)
TOTAL_WEIGHT = 0.5    # the total's deviation next to the pool's, in a destination's cost
REGROUP_INTO = 8      # buckets a regroup weighs for one PG, at most
CHAIN_TRIES = 8       # middle OSDs a chain weighs for one PG, at most
REGROUP_ROWS = 32     # PGs on a middle OSD whose regroup making room is weighed, at most


class Run(Protocol):
    """What a drain moves replicas in: the balancer's run (balancer.Balancer)."""
    anc: Dict[int, np.ndarray]
    drain: np.ndarray
    states: List[PoolState]
    total: Level
    budget: Budget
    notes: List[str]
    search: MoveSearch

    def apply_move(self, st: PoolState, row: int, src: int, dst: int) -> bool: ...

    def apply_all(self, st: PoolState, row: int, moves: List[Tuple[int, int]]) -> bool: ...

    def apply_chain(self, first: ChainMove, second: ChainMove) -> bool: ...


class GroupPlanner(Protocol):
    """The count strategies' regroup plan (strategies.CountEvener._group_plan)."""

    def __call__(self, st: PoolState, rows: np.ndarray, x_id: int, into: np.ndarray,
                 strict: bool) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...


def caps(level: Level) -> Tuple[np.ndarray, np.ndarray]:
    """(most, least) each OSD may hold after the drain: no further from its share than now,
    or than 1 PG."""
    c, s = level.counts, level.share
    return (np.maximum(c, np.floor(s + 1 + EPS)).astype(np.int64),
            np.minimum(c, np.ceil(s - 1 - EPS)).astype(np.int64))


class Drainer:
    def __init__(self, run: Run, group_plan: GroupPlanner) -> None:
        self.run = run
        self.group_plan = group_plan
        self.total_hi, self.total_lo = caps(run.total)
        self.caps = {id(st): caps(st.level) for st in run.states}
        self.over = 0             # replicas placed past a destination's room
        self.chained = 0          # chains' second moves

    @property
    def stopped(self) -> bool:
        return self.run.budget.stopped

    def drain(self) -> None:
        """Every pool's replicas off the drained OSDs, all pools' PGs together in one order
        (the fewest legal destinations first: a pool whose rule keeps its replicas in their
        room or rack must not find the total's room there taken by one that could go
        anywhere)."""
        while not self.stopped:
            left = [(st, *self._left(st)) for st in self.run.states]
            left = [x for x in left if x[1].size]
            if not left:
                break
            made, stuck = self._pass(left)
            for st, r, x in stuck:
                if self.stopped:
                    break
                if self._place_stuck(st, r, x):
                    made += 1
            if made == 0:
                break
        if self.over:
            self.run.notes.append(
                f"{self.over} replicas of the drained OSDs had no legal destination within a PG "
                f"of its share: each went to the legal one least above it (`balance` evens them)")

    def _place_stuck(self, st: PoolState, r: int, x: int) -> bool:
        """The replica of row `r` on `x` that no destination with room took: by a chain, a
        regroup, another PG's regroup making room, or anywhere legal, the first that
        works. True once it is off `x`: a room-making regroup for an earlier stuck PG may
        have taken it along (its group shared the full OSD's bucket), and each way is
        tried only while it is still there."""
        hi, lo = self.caps[id(st)]
        ways: List[Callable[[], bool]] = [
            lambda: self._chain(st, r, x, hi), lambda: self._regroup(st, r, x, hi, lo),
            lambda: self._make_room(st, r, x, hi, lo), lambda: self._anywhere(st, r, x)]
        for way in ways:
            if not (st.up[r] == x).any():
                return True
            if self.stopped:
                return False
            if way():
                return True
        return False

    def _left(self, st: PoolState) -> Tuple[np.ndarray, np.ndarray]:
        """(rows, sources): per healthy PG with a replica on a drained OSD, its first one."""
        on = np.isin(st.up, self.run.drain) & st.healthy[:, None]
        rows = np.flatnonzero(on.any(axis=1))
        return rows, st.up[rows, np.argmax(on[rows], axis=1)]

    def _room(self, st: PoolState, hi: np.ndarray) -> np.ndarray:
        return st.allowed & (st.level.counts < hi) & (self.run.total.counts < self.total_hi)

    def _cost(self, st: PoolState) -> np.ndarray:
        cost: np.ndarray = st.level.dev() + TOTAL_WEIGHT * self.run.total.dev()
        return cost

    def _pass(self, left: List[Tuple[PoolState, np.ndarray, np.ndarray]]) -> Tuple[int, List[Stuck]]:
        """One replica of each PG placed within the room, first among the cheapest
        destinations, then among all for the PGs that found none there: (moves made, the
        (pool, row, source) none could take)."""
        made = 0
        for first in (True, False):
            if self.stopped:
                return made, []
            checked = [self._check(st, rows, srcs, first) for st, rows, srcs in left]
            n, again = self._assign(checked)
            made += n
            left = [(st, rows[i], srcs[i]) for (st, rows, srcs, _, _), i in zip(checked, again) if i.size]
            if not left:
                break
        return made, [(st, int(r), int(x)) for st, rows, srcs in left for r, x in zip(rows, srcs)]

    def _check(self, st: PoolState, rows: np.ndarray, srcs: np.ndarray,
               first: bool) -> Checked:
        """The pool's candidates with room (`first`: the cheapest of them) and which each
        row may take."""
        cand = np.flatnonzero(self._room(st, self.caps[id(st)][0]))
        k = max(FIRST_TRY, 2 * rows.size)
        if first and cand.size > k:
            cand = cand[np.argpartition(self._cost(st)[cand], k - 1)[:k]]
        if not cand.size or not self.run.budget.spend(rows.size * cand.size):
            return st, rows, srcs, cand, np.zeros((rows.size, cand.size), dtype=bool)
        ok = replaceable(st.reach(self.run.anc), st.up[rows], st.forbidden(rows, srcs), srcs, cand)
        return st, rows, srcs, cand, ok

    def _assign(self, checked: List[Checked]) -> Tuple[int, List[np.ndarray]]:
        """Each row, over all pools the fewest choices first, to its cheapest legal
        candidate with room left: (moves made, per pool the indices of the rows none had
        room for)."""
        T = self.run.total
        order = np.concatenate([np.stack([np.full(c[1].size, p), np.arange(c[1].size), c[4].sum(axis=1)])
                                for p, c in enumerate(checked)], axis=1)
        order = order[:, np.argsort(order[2], kind="stable")]
        cost = [self._cost(c[0])[c[3]] for c in checked]
        # moves made onto each OSD: each adds the total's part to every pool's cost there,
        # added as a row is scored (per move over every pool's costs: 1,000 pools x 5,401
        # replicas took 13.5 s)
        onto = np.zeros(T.counts.size)
        made = 0
        again: List[List[int]] = [[] for _ in checked]
        for p, i in zip(order[0].tolist(), order[1].tolist()):
            st, rows, srcs, cand, ok = checked[p]
            if self.stopped:
                break
            hi = self.caps[id(st)][0]
            room = (hi[cand] > st.level.counts[cand]) & (self.total_hi[cand] > T.counts[cand])
            score = np.where(ok[i] & room, cost[p] + TOTAL_WEIGHT * onto[cand], np.inf)
            j = int(np.argmin(score)) if score.size else 0
            if not score.size or score[j] == np.inf:
                again[p].append(i)
                continue
            d = int(cand[j])
            if not self.run.apply_move(st, int(rows[i]), int(srcs[i]), d):
                break
            made += 1
            cost[p][j] += 1
            onto[d] += 1
        return made, [np.array(a, dtype=np.int64) for a in again]

    def _chain(self, st: PoolState, row: int, x: int, hi: np.ndarray) -> bool:
        """The replica onto a legal OSD y without room, and another PG's replica off y onto
        an OSD with room (y's count ends as it began): True if made."""
        room, cost = self._room(st, hi), self._cost(st)
        for y in self._legal(st, row, x)[:CHAIN_TRIES].tolist():
            mv = self.run.search.push(st, y, room, cost)
            if mv is None:
                if self.stopped:
                    return False
                continue
            # both paid before either is made: a first move alone would leave y over its
            # room and the replica's row without x for the steps tried after
            if self.run.budget.moves_left < 2 or \
                    not self.run.apply_chain((st, row, x, y), (st, mv[0], y, mv[1])):
                return False
            self.chained += 1
            return True
        return False

    def _regroup(self, st: PoolState, row: int, x: int, hi: np.ndarray, lo: np.ndarray,
                 y: int = -1) -> bool:
        """The PG's replicas in x's bucket of the rule's first choose type, together into
        another such bucket, onto OSDs with room, the others it moves off (but `y`, which a
        drained replica takes next) none left below its floor: True if made."""
        lims = st.shape.limits
        if len(lims) != 2 or lims[0].type == 0:
            return False
        top = self.run.anc[lims[0].type]
        T, L = self.run.total, st.level
        room = self._room(st, hi)
        used = set(top[o] for o in st.up[row].tolist() if 0 <= o < top.size)
        ids, unit = np.unique(top, return_inverse=True)
        free = np.bincount(unit, weights=np.where(room, hi - L.counts, 0), minlength=ids.size)
        order = [int(b) for b in np.argsort(-free, kind="stable") if free[b] > 0 and ids[b] not in used]
        rows = np.array([row])
        for b, strict in [(b, s) for b in order[:REGROUP_INTO] for s in (True, False)]:
            # strict: only onto OSDs below their share, off OSDs above it
            score, inx, cand, pick = self.group_plan(st, rows, int(top[x]), unit == b, strict)
            if score[0] == np.inf:
                continue
            src, dst = st.up[row][inx[0]], cand[pick[0]]
            others = src[~np.isin(src, self.run.drain) & (src != y)]
            if not room[dst].all():
                continue
            if ((L.counts[others] - 1 < lo[others]) | (T.counts[others] - 1 < self.total_lo[others])).any():
                continue
            if not self.run.apply_all(st, row, list(zip(src.tolist(), dst.tolist()))):
                return False
            return True
        return False

    def _make_room(self, st: PoolState, row: int, x: int, hi: np.ndarray, lo: np.ndarray) -> bool:
        """Another PG's group regrouped off a legal OSD y without room (the rule keeps each
        of y's replicas in its bucket, and every OSD there is full), then the replica onto
        y: True if made."""
        lims = st.shape.limits
        if len(lims) != 2 or lims[0].type == 0:
            return False
        for y in self._legal(st, row, x)[:CHAIN_TRIES].tolist():
            for r2 in st.rows(y)[:REGROUP_ROWS].tolist():
                if self.stopped:
                    return False
                if r2 != row and self._regroup(st, r2, y, hi, lo, y):
                    return self.run.apply_move(st, row, x, y)
        return False

    def _legal(self, st: PoolState, row: int, x: int) -> np.ndarray:
        """The OSDs the replica of `row` on `x` may move to, room or not, cheapest first."""
        cand = np.flatnonzero(st.allowed)
        if not cand.size or not self.run.budget.spend(cand.size):
            return cand[:0]
        rows, srcs = np.array([row]), np.array([x])
        ok = replaceable(st.reach(self.run.anc), st.up[rows], st.forbidden(rows, srcs), srcs, cand)[0]
        ys = cand[ok]
        return ys[np.argsort(self._cost(st)[ys], kind="stable")]

    def _anywhere(self, st: PoolState, row: int, x: int) -> bool:
        """The replica to the legal destination least above its share, room or not."""
        ys = self._legal(st, row, x)
        if not ys.size or not self.run.apply_move(st, row, x, int(ys[0])):
            return False
        self.over += 1
        return True


def drained_left(run: Run) -> Dict[str, int]:
    """Pool name -> replicas its PGs still have on the drained OSDs (none: not listed)."""
    out: Dict[str, int] = {}
    for st in run.states:
        n = int(st.level.counts[run.drain].sum()) if run.drain.size else 0
        if n:
            out[st.pool.name] = n
    return out
