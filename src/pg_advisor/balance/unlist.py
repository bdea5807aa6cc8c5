"""Item lists that no longer help: a PG with pg_upmap_items whose return to CRUSH's own set
leaves every OSD it touches within the run's goal (pool_state.Level), in its pool and in
total. A round removes these first (a map that stays small: each list is in every OSDMap the
mons build); most often they are left by a wider goal (upmap_max_deviation raised), or by
CRUSH having moved the PG since. Each removal is a move like any other: the budget pays it.

In bytes mode with PG stats a list may be there for fullness (evener.py), which the count
goal does not see: removed, the next round's evener would set it again. There a removal
must also keep fullness (FullnessGuard): each OSD the return gives bytes to ends at least
`margin` (the evener's min_gain) below the fullest of its root and class now, each it takes
them from at least that far above the emptiest. The evener only takes from the fullest and
gives to the emptiest, by min_gain a move at least, so it has no reason to undo it."""
from typing import Dict, List, Optional, Protocol, Tuple

import numpy as np

from .budget import Budget
from .pool_state import Level, moves_between, PoolState


class Run(Protocol):
    """What the removals are made through: the balancer's run (balancer.Balancer)."""
    states: List[PoolState]
    total: Level
    budget: Budget

    def apply_all(self, st: PoolState, row: int, moves: List[Tuple[int, int]]) -> bool: ...


def _keeps_goal(st: PoolState, total: Level, moves: List[Tuple[int, int]]) -> bool:
    """Do `moves` (src, dst) leave each OSD they touch within the goal, in the pool and in
    total, and go only where the pool may go?"""
    if not moves or not all(0 <= d < st.allowed.size and st.allowed[d] for _, d in moves):
        return False
    ends = np.array([o for m in moves for o in m], dtype=np.int64)
    delta = np.tile(np.array([-1, 1], dtype=np.int64), len(moves))      # off the source, onto the dest
    osds, at = np.unique(ends, return_inverse=True)
    change = np.bincount(at, weights=delta, minlength=osds.size)
    for L in (st.level, total):
        after = L.counts[osds] + change
        if ((after < L.lo[osds]) & (change < 0)).any() or ((after > L.hi[osds]) & (change > 0)).any():
            return False
    return True


def _held_dev(sets: np.ndarray, dev: np.ndarray) -> np.ndarray:
    """Per set: the summed deviation of the OSDs in it."""
    return np.where((sets >= 0) & (sets < dev.size), dev[np.clip(sets, 0, dev.size - 1)], 0.0).sum(axis=1)


# the work a listed PG's check counts (the bound of balancer.WORK_MAX): its Python, some
# 30 us, not one legality check
ROW_COST = 1024


class FullnessGuard:
    """How full each OSD is against the mean of its root and class (evener.relative), and the
    extremes of each group when the run starts: what a removal in bytes mode must keep."""

    def __init__(self, used: np.ndarray, cap: np.ndarray, mean: np.ndarray, group: np.ndarray,
                 live: np.ndarray, margin: float) -> None:
        self.used, self.cap, self.group, self.margin = used.copy(), cap, group, margin
        self.mean = np.where(mean > 0, mean, np.nan)
        rel = np.where(live, self.used / cap / self.mean, np.nan)
        k = int(group.max(initial=0)) + 1
        self.hi, self.lo = np.full(k, -np.inf), np.full(k, np.inf)
        ok = live & ~np.isnan(rel)
        np.fmax.at(self.hi, group[ok], rel[ok])
        np.fmin.at(self.lo, group[ok], rel[ok])

    def keeps(self, size: float, moves: List[Tuple[int, int]]) -> bool:
        """Do `moves` (src, dst) of a PG of `size` bytes a replica leave each end inside
        its group's extremes by the margin?"""
        if size <= 0:
            return True
        used: Dict[int, float] = {}          # the ends' bytes after the moves (not a copy of all)
        for src, dst in moves:
            used[src] = used.get(src, float(self.used[src])) - size
            used[dst] = used.get(dst, float(self.used[dst])) + size
        for src, dst in moves:
            up = used[dst] / self.cap[dst] / self.mean[dst]
            down = used[src] / self.cap[src] / self.mean[src]
            if not (up <= self.hi[self.group[dst]] - self.margin
                    and down >= self.lo[self.group[src]] + self.margin):
                return False      # (NaN: an OSD of no group with data: not moved onto)
        return True

    def moved(self, size: float, moves: List[Tuple[int, int]]) -> None:
        for src, dst in moves:
            self.used[src] -= size
            self.used[dst] += size


def remove_needless(run: Run, fullness: Optional[FullnessGuard] = None) -> int:
    """Return each listed PG whose lists no longer help to CRUSH's own set, the most
    evening first, until the budget stops (with `fullness`, bytes mode: only where fullness
    keeps too): the removals made."""
    made = 0
    for st in run.states:
        rows = np.flatnonzero((st.up != st.raw).any(axis=1) & st.healthy)
        if not rows.size or not run.budget.spend(int(rows.size) * ROW_COST):
            continue
        # most evening first: the replicas leave OSDs the furthest over their share
        dev = st.level.dev()
        gain = _held_dev(st.up[rows], dev) - _held_dev(st.raw[rows], dev)
        for r in rows[np.argsort(-gain, kind="stable")].tolist():
            if run.budget.stopped:
                return made
            moves = moves_between(st.up[r].tolist(), st.raw[r].tolist(), st.pool.type == "replicated")
            size = float(st.bytes[r])
            if not _keeps_goal(st, run.total, moves) or (
                    fullness is not None and not fullness.keeps(size, moves)):
                continue
            if run.apply_all(st, r, moves):
                made += 1
                if fullness is not None:
                    fullness.moved(size, moves)
    return made
