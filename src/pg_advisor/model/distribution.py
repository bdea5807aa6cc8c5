"""How PGs sit on OSDs now: counts per pool and OSD, spreads against a share (the shares
themselves are the rules' question: rules/).

Whole-cluster arithmetic in numpy: one bincount over every (PG, OSD) pair, no loop per PG.
"""
from dataclasses import dataclass
from typing import List, Optional, Tuple, TypedDict

import numpy as np

from .snapshot import Pgs, Snapshot


def pg_counts(snap: Snapshot, pgs: Pgs, pool_ids: Optional[List[int]] = None) -> Tuple[List[int], np.ndarray]:
    """(pool ids, matrix[pool index, osd id]) of PG replicas/shards in the up sets: of the
    pools the model maps, or of those given."""
    if pool_ids is None:
        pool_ids = [p.id for p in snap.pools]
    n_osd = snap.osds.count
    index = {pid: i for i, pid in enumerate(pool_ids)}
    # rows for the distinct pool ids, then broadcast to every PG (pools gone from the map: -1)
    uniq, inv = np.unique(pgs.pool, return_inverse=True)
    uniq_row = np.array([index.get(int(p), -1) for p in uniq], dtype=np.int64)
    cells, osds = osd_cells(pgs.up, n_osd)
    rows = uniq_row[inv][cells]
    ok = rows >= 0
    flat = np.bincount(rows[ok] * n_osd + osds[ok], minlength=len(pool_ids) * n_osd)
    return pool_ids, flat.reshape(len(pool_ids), n_osd)


def osd_cells(sets: np.ndarray, n_osd: int) -> Tuple[np.ndarray, np.ndarray]:
    """The filled cells of a PG x slot OSD matrix (up, acting): each cell's PG row and OSD.
    Entries < 0 or past n_osd are holes/padding and are left out."""
    flat = sets.reshape(-1)
    ok = (flat >= 0) & (flat < n_osd)
    rows = np.repeat(np.arange(sets.shape[0]), sets.shape[1] if sets.ndim > 1 else 1)
    return rows[ok], flat[ok]


def up_counts(up: np.ndarray, n_osd: int) -> np.ndarray:
    """PGs per OSD from an up-set matrix."""
    return np.bincount(osd_cells(up, n_osd)[1], minlength=n_osd)


class SpreadFields(TypedDict):
    """A Spread in a report; PoolSpread (balance/report_types.py) adds its pool."""
    osds: int
    min: int
    max: int
    mean: float
    stdev: float
    max_deviation: float
    max_over: float
    max_under: float


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

    def as_dict(self) -> SpreadFields:
        return SpreadFields(osds=self.osds, min=self.min, max=self.max,
                            mean=round(self.mean, 6), stdev=round(self.stdev, 6),
                            max_deviation=round(self.max_deviation, 6),
                            max_over=round(self.max_over, 6), max_under=round(self.max_under, 6))


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


def object_copies(snap: Snapshot) -> float:
    """All object copies in the cluster, over which Ceph's misplaced ratio is taken: from
    the PG stats when given, else from the pool stats."""
    if snap.pgs is not None:
        # objects per pool (a pool the map no longer has counts 0), times the pool's size
        size = {p.id: p.size for p in snap.pools}
        pids, row_pool = np.unique(snap.pgs.pool, return_inverse=True)
        per_pool = np.bincount(row_pool, weights=snap.pgs.objects.astype(np.float64), minlength=pids.size)
        return float(sum(size.get(int(pid), 0) * n for pid, n in zip(pids.tolist(), per_pool.tolist())))
    return float(sum((p.objects or 0) * p.size for p in snap.pools))
