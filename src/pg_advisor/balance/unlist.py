"""Item lists that no longer help: a PG with pg_upmap_items whose return to CRUSH's own set
leaves every OSD it touches within the run's goal (pool_state.Level), in its pool and in
total. A round removes these first (a map that stays small: each list is in every OSDMap the
mons build); most often they are left by a wider goal (upmap_max_deviation raised), or by
CRUSH having moved the PG since. Each removal is a move like any other: the budget pays it.
In bytes mode a list may be there for fullness (evener.py): one is removed only if each OSD
it returns a replica to ends no fuller, for its size, than the OSD it leaves was (else the
next round's evener would set it again, and the one after remove it)."""
from typing import List, Protocol, Tuple

import numpy as np

from ..model.snapshot import Snapshot
from .budget import Budget
from .pool_state import Level, moves_between, PoolState


class Run(Protocol):
    """What the removals are made through: the balancer's run (balancer.Balancer)."""
    snap: Snapshot
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


def _no_fuller(used: np.ndarray, cap: np.ndarray, moves: List[Tuple[int, int]], size: float) -> bool:
    """Does each destination end no fuller than its source was (OSDs of unknown size, or a
    PG of unknown size: yes)?"""
    return size <= 0 or all(cap[d] <= 0 or cap[s] <= 0 or (used[d] + size) / cap[d] <= used[s] / cap[s]
                            for s, d in moves)


def remove_needless(run: Run, fullness: bool) -> int:
    """Return each listed PG whose lists no longer help to CRUSH's own set, the most
    evening first, until the budget stops: the removals made. `fullness`: bytes mode's
    condition too (module doc)."""
    o = run.snap.osds
    used, cap = np.maximum(o.bytes_used, 0).astype(float), o.bytes_total.astype(float)
    made = 0
    for st in run.states:
        rows = np.flatnonzero((st.up != st.raw).any(axis=1) & st.healthy)
        if not rows.size or not run.budget.spend(int(rows.size) * st.up.shape[1]):
            continue
        # most evening first: the replicas leave OSDs the furthest over their share
        dev = st.level.dev()
        gain = _held_dev(st.up[rows], dev) - _held_dev(st.raw[rows], dev)
        for r in rows[np.argsort(-gain, kind="stable")].tolist():
            if run.budget.stopped:
                return made
            moves = moves_between(st.up[r].tolist(), st.raw[r].tolist(), st.pool.type == "replicated")
            size = float(st.bytes[r])
            if not _keeps_goal(st, run.total, moves) or (fullness and not _no_fuller(used, cap, moves, size)):
                continue
            if run.apply_all(st, r, moves):
                made += 1
                for s, d in moves:
                    used[s] -= size
                    used[d] += size
    return made
