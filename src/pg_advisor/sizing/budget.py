"""One PG budget per OSD, shared by every pool whose rule reaches that OSD.

Each OSD may hold `target` PG replicas (EC shards counted), whatever root the pools that
use it take. A pool puts its demand on its OSDs in proportion to their rule weight; on
each OSD the budget left after the reserved replicas (pools that keep what they have:
unknown ones, those at their floor) is split among the pools there by that demand. A
pool's replicas are the sum of its cut over its OSDs. Pools on one root, alone on their
OSDs, so get the root's budget by data share; pools on roots that overlap (a class-less
`default` beside `default~hdd`) share the OSDs they both reach instead of each counting
them whole. Ceph's next release shares overlapping roots' OSDs by OSD count; Tentacle's
pg_autoscaler refuses such pools.

Vectors per rule, not per pool: a thousand pools on one rule cost one row.
"""
from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

import numpy as np

EPS = 1e-12


@dataclass(frozen=True)
class Layout:
    """The rules' reach: one row per distinct rule (normalised weights over OSDs) and
    each pool's row."""
    rows: np.ndarray                 # (rules, OSDs): each row sums to 1 (or is all 0)
    row_of: Mapping[int, int]        # pool id -> row
    members: np.ndarray              # (rules, OSDs) bool: the OSDs of weight a row reaches

    @classmethod
    def of(cls, weights: Sequence[np.ndarray], row_of: Mapping[int, int], n_osd: int) -> "Layout":
        w = np.array(weights, dtype=np.float64).reshape(len(weights), n_osd)
        sums = w.sum(axis=1, keepdims=True)
        rows = np.divide(w, sums, out=np.zeros_like(w), where=sums > 0)
        return cls(rows, row_of, w > 0)

    def osds(self, pool_id: int) -> int:
        return int(self.members[self.row_of[pool_id]].sum())

    def reserved(self, replicas: Mapping[int, float]) -> np.ndarray:
        """Per OSD, the replicas pools that keep their PGs put there (by weight)."""
        per_row = np.zeros(self.rows.shape[0])
        for pid, r in replicas.items():
            per_row[self.row_of[pid]] += r
        return (per_row[:, None] * self.rows).sum(axis=0)


def split(layout: Layout, demand: Mapping[int, float], budget: np.ndarray) -> Dict[int, float]:
    """PG replicas per pool: each OSD's `budget` cut by the demand each pool puts there."""
    n_rows = layout.rows.shape[0]
    row_demand = np.zeros(n_rows)
    for pid, d in demand.items():
        row_demand[layout.row_of[pid]] += d
    density = row_demand[:, None] * layout.rows            # (rules, OSDs)
    total = density.sum(axis=0)
    cut = np.divide(density, total, out=np.zeros_like(density), where=total > EPS)
    row_replicas = (cut * budget[None, :]).sum(axis=1)     # numpy's own sum: the same on every BLAS
    out: Dict[int, float] = {}
    for pid, d in demand.items():
        r = layout.row_of[pid]
        out[pid] = float(row_replicas[r] * d / row_demand[r]) if row_demand[r] > 0 else 0.0
    return out


def bulk_room(layout: Layout, bulk: Sequence[int], free: np.ndarray) -> Dict[int, float]:
    """The raw free space each bulk pool is counted at: on each OSD, the free bytes split
    among the bulk pools that reach it, summed over the pool's OSDs."""
    if not bulk:
        return {}
    rows = sorted({layout.row_of[p] for p in bulk})
    count = np.zeros(layout.rows.shape[1])
    for p in bulk:
        count += layout.members[layout.row_of[p]]
    per_osd = np.divide(free, count, out=np.zeros_like(free), where=count > 0)
    room = {r: float(per_osd[layout.members[r]].sum()) for r in rows}
    return {p: room[layout.row_of[p]] for p in bulk}


@dataclass(frozen=True)
class Overlap:
    roots: Tuple[str, ...]      # the roots (rule takes) that share OSDs
    osds: int                   # how many OSDs they share
    pools: Tuple[str, ...]      # the pools on them


def overlaps(layout: Layout, root_of: Mapping[int, Tuple[int, ...]], names: Mapping[Tuple[int, ...], str],
             pool_names: Mapping[int, str]) -> List[Overlap]:
    """Pairs of distinct roots whose rules reach some of the same OSDs."""
    by_root: Dict[Tuple[int, ...], np.ndarray] = {}
    pools_of: Dict[Tuple[int, ...], List[str]] = {}
    for pid, root in root_of.items():
        m = layout.members[layout.row_of[pid]]
        by_root[root] = by_root[root] | m if root in by_root else m.copy()
        pools_of.setdefault(root, []).append(pool_names[pid])
    keys = sorted(by_root)
    if len(keys) < 2:
        return []
    m = np.array([by_root[k] for k in keys], dtype=np.float32)
    shared = np.rint(m @ m.T).astype(np.int64)      # one product, not a loop per pair
    out: List[Overlap] = []
    for i, j in zip(*np.nonzero(np.triu(shared, k=1))):
        a, b = keys[int(i)], keys[int(j)]
        out.append(Overlap((names[a], names[b]), int(shared[i, j]),
                           tuple(sorted(pools_of[a] + pools_of[b]))))
    return out
