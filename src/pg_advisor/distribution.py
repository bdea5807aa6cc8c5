"""How PGs sit on OSDs now: counts per pool and OSD, weight-proportional shares, spreads.

Whole-cluster arithmetic in numpy: one bincount over every (PG, OSD) pair, no loop per PG.
"""
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from .snapshot import NO_OSD, Pgs, Pool, Rule, Snapshot


def osds_under(snap: Snapshot, root: int) -> np.ndarray:
    """CRUSH weight of every OSD below bucket `root` (0 elsewhere), as a vector over OSD ids.

    A device-class rule takes a shadow bucket ("default~ssd"), whose tree holds only that
    class's OSDs, so walking from the take item honours the class without special cases.
    """
    w = np.zeros(snap.osds.count, dtype=np.float64)
    if root >= 0:
        if root < w.shape[0]:
            w[root] = snap.osds.crush_weight[root]
        return w
    stack = [root]
    seen = set()
    while stack:
        b = snap.buckets.get(stack.pop())
        if b is None or b.id in seen:
            continue
        seen.add(b.id)
        devs = b.items >= 0
        w[b.items[devs]] = b.weights[devs]
        stack.extend(b.items[~devs].tolist())
    return w


def rule_weights(snap: Snapshot, rule: Rule, reweight: Optional[np.ndarray] = None) -> np.ndarray:
    """Effective weight of each OSD for a rule: CRUSH weight under its take items x reweight.

    Out OSDs have reweight 0, so they get no share; the weight of an OSD reached by
    several take steps counts once. `reweight` replaces the map's, for what-ifs.
    """
    w = np.zeros(snap.osds.count, dtype=np.float64)
    for item in rule.take_items():
        w = np.maximum(w, osds_under(snap, item))
    rw = snap.osds.reweight if reweight is None else reweight
    return w * rw * snap.osds.exists


def pg_counts(snap: Snapshot, pgs: Pgs) -> Tuple[List[int], np.ndarray]:
    """(pool ids, matrix[pool index, osd id]) of PG replicas/shards in the up sets."""
    pool_ids = [p.id for p in snap.pools]
    n_osd = snap.osds.count
    index = {pid: i for i, pid in enumerate(pool_ids)}
    # rows for the distinct pool ids, then broadcast to every PG (pools gone from the map: -1)
    uniq, inv = np.unique(pgs.pool, return_inverse=True)
    uniq_row = np.array([index.get(int(p), -1) for p in uniq], dtype=np.int64)
    pg_row = uniq_row[inv]
    rows = np.repeat(pg_row, pgs.up.shape[1])
    osds = pgs.up.reshape(-1)
    ok = (osds != NO_OSD) & (rows >= 0) & (osds < n_osd)
    flat = np.bincount(rows[ok] * n_osd + osds[ok], minlength=len(pool_ids) * n_osd)
    return pool_ids, flat.reshape(len(pool_ids), n_osd)


def pool_share(pool: Pool, weights: np.ndarray, pg_num: Optional[int] = None) -> np.ndarray:
    """Each OSD's weight-proportional share of the pool's pg_num x size replicas."""
    total = float(weights.sum())
    if total <= 0:
        return np.zeros_like(weights)
    return (pool.pg_num if pg_num is None else pg_num) * pool.size * weights / total


def up_counts(up: np.ndarray, n_osd: int) -> np.ndarray:
    """PGs per OSD from an up-set matrix (entries < 0 or past n_osd are holes/padding)."""
    flat = up.reshape(-1)
    ok = (flat >= 0) & (flat < n_osd)
    return np.bincount(flat[ok], minlength=n_osd)


@dataclass(frozen=True)
class Spread:
    osds: int
    min: int
    max: int
    mean: float
    stdev: float
    max_deviation: float    # max |count - share| over the OSDs considered
    max_over: float         # largest count - share
    max_under: float        # largest share - count

    def as_dict(self) -> Dict[str, float]:
        return {"osds": self.osds, "min": self.min, "max": self.max,
                "mean": round(self.mean, 6), "stdev": round(self.stdev, 6),
                "max_deviation": round(self.max_deviation, 6),
                "max_over": round(self.max_over, 6), "max_under": round(self.max_under, 6)}


def spread(counts: np.ndarray, share: np.ndarray) -> Spread:
    """Statistics over the OSDs that should hold PGs (share > 0) or do hold some."""
    mask = (share > 0) | (counts > 0)
    if not mask.any():
        return Spread(0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0)
    c = counts[mask].astype(np.float64)
    dev = c - share[mask]
    return Spread(osds=int(mask.sum()), min=int(c.min()), max=int(c.max()),
                  mean=float(c.mean()), stdev=float(c.std()),
                  max_deviation=float(np.abs(dev).max()),
                  max_over=float(max(dev.max(), 0.0)), max_under=float(max(-dev.min(), 0.0)))
