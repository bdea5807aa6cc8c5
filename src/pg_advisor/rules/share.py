"""Each OSD's share of a pool's replicas: weight-proportional as far as the rule allows.

A choose step picking buckets of some type, followed by steps that fan out to m leaves
under each bucket, puts at most m replicas of one PG into any bucket of that type (the
last step: one per failure domain). Over pg_num PGs a bucket so holds at most
m x pg_num replicas, whatever its weight: with 3 hosts and size 3 every host holds
exactly pg_num, however unequal their weights, and no balancer can do otherwise. The
share fills the chosen levels top-down, each bucket in proportion to its weight but none
above its cap, what a capped bucket cannot take going to the others of its parent.
"""
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..model.snapshot import Pool, Snapshot
from .legality import choose_steps, shape_of

EPS = 1e-9


def pool_share(pool: Pool, weights: np.ndarray, pg_num: Optional[int] = None) -> np.ndarray:
    """Each OSD's weight-proportional share of the pool's pg_num x size replicas."""
    total = float(weights.sum())
    if total <= 0:
        return np.zeros_like(weights)
    return (pool.pg_num if pg_num is None else pg_num) * pool.size * weights / total


Levels = List[Tuple[int, int]]     # (bucket type id, replicas of one PG a bucket may hold)


def rule_levels(snap: Snapshot, pool: Pool) -> Optional[Tuple[Levels, int]]:
    """(the caps of the pool's rule, outermost first; replicas of one PG it places at
    most), or None where the rule is not one take followed by choose steps with counts
    (the share is then weight-proportional)."""
    steps = choose_steps(snap, pool)
    if steps is None:
        return None
    shape = shape_of(steps)
    fan_out = steps[0].count * shape.limits[0].cap
    return [(lim.type, lim.cap) for lim in shape.limits], min(pool.size, fan_out)


def fill(group: np.ndarray, totals: np.ndarray, w: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Per unit: its group's total in proportion to `w`, none above `cap`; what a capped
    unit cannot take goes to the others of its group (water-filling). A group whose
    units cannot hold its total leaves the rest unplaced, as CRUSH leaves a hole."""
    x = np.zeros(w.shape[0])
    fixed = w <= 0
    g = totals.shape[0]
    for _ in range(w.shape[0] + 1):          # each pass caps at least one more unit
        rem = totals - np.bincount(group, weights=np.where(fixed, x, 0.0), minlength=g)
        ws = np.bincount(group, weights=np.where(fixed, 0.0, w), minlength=g)
        prop = np.divide(rem[group] * w, ws[group], out=np.zeros_like(x), where=ws[group] > 0)
        prop = np.where(fixed, x, prop)
        over = ~fixed & (prop > cap + EPS)
        if not over.any():
            return prop
        x[over] = cap[over]
        fixed |= over
    return x


def capped_share(anc: Dict[int, np.ndarray], levels: Levels, pg_num: int, w: np.ndarray,
                 total: float) -> np.ndarray:
    """Spread `total` replicas down `levels`, then over the OSDs of each last-level
    bucket in proportion to weight. A bucket holds no more than its cap, nor more than
    the buckets (or OSDs: one replica of each PG) below it can: a rack whose one host
    may hold one replica per PG holds no more, whatever the rack's cap."""
    n = w.shape[0]
    held = np.flatnonzero(w > 0)
    if held.size < n:
        # only the OSDs of weight hold a share (the rest, and their buckets, add zeros to
        # every sum): spread over those alone, so that ids holding no OSD cost nothing
        out = np.zeros(n)
        out[held] = capped_share({t: a[held] for t, a in anc.items()}, levels, pg_num, w[held], total)
        return out
    # per level: each OSD's bucket, as 0..units-1
    units = [np.unique(anc[t] if t in anc else np.arange(n), return_inverse=True)[1]
             for t, _ in levels] + [np.arange(n)]
    hold = np.where(w > 0, float(pg_num), 0.0)            # per OSD
    caps: List[np.ndarray] = [hold]
    for (_, per_pg), u, below in reversed(list(zip(levels, units, units[1:]))):
        m = int(u.max()) + 1 if n else 0
        child_parent = np.zeros(int(below.max()) + 1 if n else 0, np.int64)
        child_parent[below] = u
        room = np.bincount(child_parent, weights=caps[0], minlength=m)
        caps.insert(0, np.minimum(room, float(per_pg) * pg_num))
    group = np.zeros(n, np.int64)
    totals = np.array([float(total)])
    for u, cap in zip(units, caps):
        m = cap.shape[0]
        unit_w = np.bincount(u, weights=w, minlength=m)
        unit_group = np.zeros(m, np.int64)
        unit_group[u] = group
        totals = fill(unit_group, totals, unit_w, cap)
        group = u
    return totals


def weight_share(pool: Pool, w: np.ndarray, placed: float, pg_num: Optional[int] = None) -> np.ndarray:
    """`placed` replicas of the pool in proportion to weight alone, caps aside."""
    pg = pool.pg_num if pg_num is None else pg_num
    return pool_share(pool, w, pg) * (placed / max(pg * pool.size, 1))


def rule_share(snap: Snapshot, pool: Pool, w: np.ndarray, anc: Dict[int, np.ndarray],
               pg_num: Optional[int] = None, placed: Optional[float] = None) -> np.ndarray:
    """The pool's share per OSD under every cap of its rule (pool_share where the rule
    has none we can read), of `placed` replicas (default: all the rule places; the
    balancer passes those the pool has, as a PG CRUSH found too few OSDs for is short of
    replicas no move can add)."""
    caps = rule_levels(snap, pool)
    pg = pool.pg_num if pg_num is None else pg_num
    if caps is None:
        return pool_share(pool, w, pg) if placed is None else weight_share(pool, w, placed, pg)
    levels, per_pg = caps
    return capped_share(anc, levels, pg, w, float(pg * per_pg) if placed is None else placed)
