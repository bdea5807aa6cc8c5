"""The move search: where one replica of a pool's PG goes next. A push finds the best
(row, destination) for a replica on an overfull OSD, a pull the best (row, source) for
a replica onto an underfull one; both check legality (rules/legality.py) only for the
few most promising OSDs, and break the counts' ties by the primaries (Primaries)."""
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from ..rules.legality import replaceable
from ..analysis.read_balance import primary_counts, primary_share
from ..model.snapshot import Snapshot
from .budget import Budget
from .look import CANDIDATES_KEPT, ROWS_MAX, Look, cheapest, windows
from .pool_state import EPS, moves_primary, PoolState


MOVE_COST = 2048    # legality checks a look for a move counts at least (see MoveSearch.push)
# OSDs one search examines at most: a push's cheapest destinations (CANDIDATES_FIRST of
# them first, this many only when none of those is legal), a pull's most overfull
# sources, a chain's middle OSDs. It bounds what one move costs whatever the map's size:
# a look checks at most ROWS_MAX x 128 (32,768) (PG, OSD) pairs, some 1.3 ms at 40 ns a
# pair. When none of them will do, a push looks at its OSD's next window, and where no
# window has a move the strategies' fallbacks take over (strategies.CountEvener).
CANDIDATES_MAX = 128
CANDIDATES_FIRST = 16   # a push's first try: the cheapest destinations are usually legal


class Primaries:
    """The last of the search's tie-breaks: per OSD, over the replicated pools, the
    primaries it holds and its fair share of them (analysis/read_balance), kept as moves
    change them. A primary that must move goes to the OSD most short of its share, and a
    pull takes one from the OSD most over it. `read_ties`: the tie-break on; off, only to
    measure what it gives (qa/bench/balance.py --mode read-ties: the count figures are the same)."""

    def __init__(self, snap: Snapshot, states: Sequence[PoolState], read_ties: bool = True) -> None:
        self.snap = snap
        self.read_ties = read_ties
        self.count(states)

    def count(self, states: Sequence[PoolState]) -> None:
        n = self.snap.osds.count
        self.held = np.zeros(n, np.int64)
        self.share = np.zeros(n)
        for st in states:
            if st.pool.type == "replicated":
                self.held += primary_counts(self.snap, st.primary)
                self.share += primary_share(self.snap, st.pool)

    @staticmethod
    def now(st: PoolState, row: int) -> int:
        """The PG's primary as the moves so far leave it: an item keeps a replica's place in
        the set, so the role is wherever the first primary's place now points (with primary
        affinity below 1 Ceph may pick another: close enough for a tie-break). st.primary
        stays the first: a move is costly if it changes the PG's primary from what it was
        when the run began, not from what an earlier move made it."""
        if st.primary[row] < 0:
            return -1
        at = np.flatnonzero(st.start[row] == st.primary[row])
        return int(st.up[row, int(at[0])]) if at.size else -1

    def moving(self, st: PoolState, row: int, src: int, dst: int) -> None:
        """The replica of `row` on `src` is about to go to `dst`: the primary role with it."""
        if st.pool.type == "replicated" and self.now(st, row) == src:
            self.held[src] -= 1
            self.held[dst] += 1

    def pref(self, osds: np.ndarray, short: bool) -> np.ndarray:
        """Per OSD of `osds`, in [0, 1): how far it is short of its primaries' share
        (`short`), or over it (else), ranked among `osds`; 0 when the tie-break is off."""
        if not self.read_ties or not osds.size:
            return np.zeros(osds.size)
        dev = self.held[osds] - self.share[osds]
        if short:
            dev = -dev
        lo = dev.min()
        return (dev - lo) / (dev.max() - lo + 1.0)


class MoveSearch:
    def __init__(self, anc: Dict[int, np.ndarray], budget: Budget, primaries: Primaries,
                 osds: int) -> None:
        self.anc, self.budget, self.primaries = anc, budget, primaries
        self._look: Optional[Look] = None      # the last push's window (see Look)
        # (a look's columns, all -1 between looks: see Look.col)
        self._col = np.full(osds, -1, dtype=np.int64)

    def push(self, st: PoolState, src: int, take: np.ndarray,
             cost: np.ndarray) -> Optional[Tuple[int, int]]:
        """The best (row, destination) for a replica on `src`: lowest `cost` among `take`,
        and of equals a row where src is not CRUSH's own choice (that undoes an item), then
        one where src is not the primary (see moves_primary). None once the run has
        stopped: nothing found could be made, and a look costs a window's checks."""
        if self.budget.stopped:
            return None
        look = self._look
        if look is not None and look.still(st, src):
            # the window the last look found its move in, as a fresh look would see it
            mv = self._choose(look, take, cost)
            if mv is not None or self.budget.out_of_work:
                return mv
        if not (take & st.allowed).any():
            return None
        for rows in windows(st, src):
            if not rows.size:
                return None
            if self._look is not None:
                self._look.release()
            look = self._look = Look(st, src, rows, self._col)
            mv = self._choose(look, take, cost)
            if mv is not None or self.budget.out_of_work:
                return mv
        return None

    def _choose(self, look: Look, take: np.ndarray, cost: np.ndarray) -> Optional[Tuple[int, int]]:
        """The cheapest legal (row, destination) in the look's window, among the k
        cheapest destinations in `take` whenever any of those is legal: a few first,
        widened only if none is. Legality is checked only for destinations the window was
        not checked against before."""
        st = look.st
        for k in (CANDIDATES_FIRST, CANDIDATES_MAX):
            cand, every = cheapest(look, take, cost, k)
            at = look.col[cand]
            new = cand[at < 0]
            # a look costs at least MOVE_COST: its Python around the checks is the same
            # for a few rows as for a window
            if not self.budget.spend(max(int(look.live.sum()) * new.size, MOVE_COST)):
                return None
            if new.size:
                look.add(new, replaceable(st.reach(self.anc), st.up[look.rows], look.forbidden,
                                          look.srcs, new))
                at = look.col[cand]
            ok = look.ok[:, at] & look.live[:, None]
            if ok.any():
                # ties, in order: undo an item; keep the primary; if it must move, to the
                # OSD most short of primaries (each term below the one before it)
                short = self.primaries.pref(cand, True)
                c = (np.where(ok, cost[cand][None, :], np.inf) - look.undo[:, None] * EPS
                     + look.primary[:, None] * (EPS / 2 - short[None, :] * (EPS / 4)))
                r, d = np.unravel_index(int(np.argmin(c)), c.shape)
                look.pending = int(r)
                if k > CANDIDATES_KEPT:     # one outside the kept: they may no longer hold the cheapest
                    look.cost = None
                return int(look.rows[r]), int(cand[d])
            if every:
                break
        return None

    def pull(self, st: PoolState, dst: int, give: np.ndarray,
             pref: np.ndarray) -> Optional[Tuple[int, int]]:
        """The best (row, source) to bring a replica onto `dst`: highest `pref` among `give`
        (None once the run has stopped, as push)."""
        if self.budget.stopped or not st.allowed[dst]:
            return None
        srcs = np.flatnonzero(give)
        srcs = srcs[srcs != dst]
        if srcs.size > CANDIDATES_MAX:
            srcs = srcs[np.argpartition(-pref[srcs], CANDIDATES_MAX - 1)[:CANDIDATES_MAX]]
        # a window of each source (all of its PGs when they are few)
        parts = [st.rows(s) if st.held_n[s] <= ROWS_MAX else next(windows(st, s))
                 for s in srcs.tolist()]
        if not parts:
            return None
        rows = np.concatenate(parts)
        owners = np.repeat(srcs, [p.size for p in parts])
        if not rows.size or not self.budget.spend(rows.size):
            return None
        ok = replaceable(st.reach(self.anc), st.up[rows], st.forbidden(rows, owners), owners,
                         np.array([dst]))[:, 0]
        if not ok.any():
            return None
        undo = ~(st.raw[rows] == owners[:, None]).any(axis=1)
        # ties as _choose's: a primary that must move comes off the OSD most over its share
        over = self.primaries.pref(owners, False)
        score = (np.where(ok, pref[owners], -np.inf) + undo * EPS
                 - moves_primary(st, rows, owners) * (EPS / 2 - over * (EPS / 4)))
        i = int(np.argmax(score))
        return int(rows[i]), int(owners[i])
