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

from .distribution import pool_share
from .snapshot import Pool, Snapshot

EPS = 1e-9
Levels = List[Tuple[int, int]]     # (bucket type id, replicas of one PG a bucket may hold)


def rule_levels(snap: Snapshot, pool: Pool) -> Optional[Tuple[Levels, int]]:
    """(the caps of the pool's rule, outermost first; replicas of one PG it places at
    most), or None where the rule is not one take followed by choose steps with counts
    (the share is then weight-proportional)."""
    rule = snap.rules.get(pool.crush_rule)
    if rule is None:
        return None
    steps = [s for s in rule.steps if str(s.get("op", "")) not in ("emit", "noop")
             and not str(s.get("op", "")).startswith("set_")]
    if len(steps) < 2 or steps[0].get("op") != "take":
        return None
    counts: List[Tuple[int, int]] = []
    for s in steps[1:]:
        t = snap.crush_types.get(str(s.get("type")))
        num = s.get("num")
        if not str(s.get("op", "")).startswith("choose") or t is None or not isinstance(num, int):
            return None
        n = num if num > 0 else pool.size + num    # as crush_do_rule resolves it
        if n <= 0:
            return None
        counts.append((t, n))
    below = [int(np.prod([n for _, n in counts[i + 1:]], dtype=np.int64)) for i in range(len(counts))]
    fan_out = counts[0][1] * below[0]
    return [(t, b) for (t, _), b in zip(counts, below)], min(pool.size, fan_out)


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
                 group: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Spread `totals` (per group of OSDs, `group` the index per OSD) down `levels`, then
    over the OSDs of each last-level bucket in proportion to weight."""
    n = w.shape[0]
    for t, per_pg in levels:
        unit = anc[t] if t in anc else np.arange(n)
        _, u = np.unique(unit, return_inverse=True)
        units = int(u.max()) + 1 if n else 0
        unit_w = np.bincount(u, weights=w, minlength=units)
        unit_group = np.zeros(units, np.int64)
        unit_group[u] = group
        totals = fill(unit_group, totals, unit_w, np.full(units, float(per_pg) * pg_num))
        group = u
    gw = np.bincount(group, weights=w, minlength=totals.shape[0])
    return np.divide(totals[group] * w, gw[group], out=np.zeros(n), where=gw[group] > 0)


def rule_share(snap: Snapshot, pool: Pool, w: np.ndarray, anc: Dict[int, np.ndarray],
               pg_num: Optional[int] = None, placed: Optional[float] = None) -> np.ndarray:
    """The pool's share per OSD under every cap of its rule (pool_share where the rule
    has none we can read), of `placed` replicas (default: all the rule places; the
    balancer passes those the pool has, as a PG CRUSH found too few OSDs for is short of
    replicas no move can add)."""
    caps = rule_levels(snap, pool)
    pg = pool.pg_num if pg_num is None else pg_num
    if caps is None:
        share = pool_share(pool, w, pg)
        return share if placed is None else share * (placed / max(pg * pool.size, 1))
    levels, per_pg = caps
    total = float(pg * per_pg) if placed is None else float(placed)
    return capped_share(anc, levels, pg, w, np.zeros(w.shape[0], np.int64), np.array([total]))
