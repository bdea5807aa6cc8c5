"""Where a push looks for its move: a window of an OSD's PGs at a time, and what was found
in it, kept for the next push from the same OSD while nothing it saw has changed."""
from typing import Iterator, List, Optional, Tuple

import numpy as np

from .pool_state import moves_primary, PoolState


ROWS_MAX = 256
CANDIDATES_KEPT = 64    # candidate destination OSDs a look keeps in cost order (see cheapest)


def windows(st: PoolState, osd: int) -> Iterator[np.ndarray]:
    """The healthy rows on `osd`: all of them when they are few, else ROWS_MAX at a time
    (an OSD may hold thousands of a pool's PGs; a move then costs what a window costs,
    not what the OSD holds). The windows come from an array of the OSD's rows taken once
    and walked with a cursor, each row checked still there: a set walked from its start
    again and again skips every slot its removed rows left, which grows with each move.
    At the array's end it is taken again, with the rows that came since."""
    if st.held_n[osd] <= ROWS_MAX:
        yield st.rows(osd)
        return
    arr, pos = st.cursor.get(osd, (np.zeros(0, np.int64), 0))
    for fresh in (pos >= arr.size, True):
        if fresh:       # (again once if the rest of the old array held none still there)
            arr, pos = st.rows(osd), 0
        found = False
        while pos < arr.size:
            st.cursor[osd] = (arr, pos)     # the next move starts here: this window may hold more
            w = arr[pos:pos + ROWS_MAX]
            live = w[st.holds(w, osd)]
            if live.size:
                found = True
                yield live
            pos += ROWS_MAX
        st.cursor[osd] = (arr, pos)
        if found or fresh:
            return


class Look:
    """One window of an OSD's rows and what checking them against destinations found,
    kept for the next look at the same OSD. A move changes its own row's up set alone,
    so while the only moves made are of this window's rows off this OSD (the push loop
    over one OSD), the other rows' answers stand and a move costs a few vector operations
    instead of a window's checks; any other move ends the look."""

    def __init__(self, st: PoolState, src: int, rows: np.ndarray, col: np.ndarray) -> None:
        self.st, self.src, self.rows = st, src, rows
        self.srcs = np.full(rows.size, src)
        self.forbidden = st.forbidden(rows, self.srcs)
        self.live = np.ones(rows.size, dtype=bool)
        # (rows, destinations checked): legal; and per OSD its column there (-1: none yet)
        self.ok = np.zeros((rows.size, 0), dtype=bool)
        # (`col` is the balancer's, all -1 between looks: one over max_osd per look would
        # cost more than the look where ids reach 2^20)
        self.col = col
        self.added: List[np.ndarray] = []
        # ties: undoing an item first, then not moving the primary (see search.MoveSearch.push)
        self.undo = ~(st.raw[rows] == src).any(axis=1)
        self.primary = moves_primary(st, rows, self.srcs)
        self.moves = st.moves
        self.pending = -1           # the row index the last answer gave
        # the CANDIDATES_KEPT cheapest destinations under the caller's `cost` (that very
        # array), and the cost of the cheapest outside them (see cheapest)
        self.cost: Optional[np.ndarray] = None
        self.candidates = np.zeros(0, np.int64)
        self.floor = np.inf

    def still(self, st: PoolState, src: int) -> bool:
        """Is this look valid for the next push from `src` on `st`? It is if nothing
        moved since, or the one move made was its last answer's row off `src`."""
        if st is not self.st or src != self.src:
            return False
        if st.moves == self.moves:
            return True
        if (st.moves == self.moves + 1 and self.pending >= 0
                and st.last == (int(self.rows[self.pending]), src)):
            self.live[self.pending] = False
            self.moves, self.pending = st.moves, -1
            return True
        return False

    def release(self) -> None:
        """Give the balancer's `col` back as it was (all -1)."""
        for dsts in self.added:
            self.col[dsts] = -1

    def add(self, dsts: np.ndarray, ok: np.ndarray) -> None:
        self.col[dsts] = np.arange(self.ok.shape[1], self.ok.shape[1] + dsts.size)
        self.added.append(dsts)
        self.ok = np.concatenate([self.ok, ok], axis=1)


def _among_kept(look: Look, take: np.ndarray, cost: np.ndarray, k: int) -> Optional[Tuple[np.ndarray, bool]]:
    """cheapest()'s answer from the look's kept candidates, or None if they may not hold it."""
    live = look.candidates[take[look.candidates]]
    if live.size <= k and look.floor == np.inf:
        return live, True
    if live.size >= k:
        part = live[np.argpartition(cost[live], k - 1)[:k]]
        if cost[part].max() <= look.floor:
            return part, False
    return None


def cheapest(look: Look, take: np.ndarray, cost: np.ndarray, k: int) -> Tuple[np.ndarray, bool]:
    """The k cheapest OSDs of `take` the rule allows, and whether they are all of them.
    The first k come from the look's few cheapest (its candidates) while that is sure to
    hold them: only the OSDs the look's moves went to change cost or leave `take` (the
    caller's `cost` is the same array, changed in place), so while the k-th cheapest of
    the few costs no more than the cheapest outside them did, a pass over every OSD
    (10,000 of them) is not needed again."""
    if k <= CANDIDATES_KEPT and look.cost is cost:
        got = _among_kept(look, take, cost, k)
        if got is not None:
            return got
    cols = np.flatnonzero(take & look.st.allowed)
    if k <= CANDIDATES_KEPT:
        if cols.size <= CANDIDATES_KEPT:
            look.candidates, look.floor = cols, np.inf
        else:
            idx = np.argpartition(cost[cols], CANDIDATES_KEPT)
            look.candidates = cols[idx[:CANDIDATES_KEPT]]
            look.floor = float(cost[cols[idx[CANDIDATES_KEPT]]])
        look.cost = cost
        got = _among_kept(look, take, cost, k)
        assert got is not None      # the kept are the cheapest of all now
        return got
    if cols.size <= k:
        return cols, True
    return cols[np.argpartition(cost[cols], k - 1)[:k]], False
