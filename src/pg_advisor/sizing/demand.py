"""What each pool asks of its OSDs' PG budget, read as pg_autoscaler reads a pool.

A pool is one of three kinds:
- unknown: no usage figures (no PG stats or df yet, or offline without them). Unknown is
  not empty: it gets no recommendation and keeps the PGs it has, which count on its OSDs.
- bulk: the operator's word that the pool will be big (`ceph osd pool set P bulk true`).
  pg_autoscaler gives bulk pools what the other pools leave; here a bulk pool is counted
  as the free space of its OSDs it will fill (shared with the other bulk pools there), or
  its data or target when larger, and is never shrunk for lack of data.
- data: counted at the largest of its stored bytes, target_size_bytes and
  target_size_ratio x its OSDs' capacity, each times the raw rate (size for replicas,
  (k+m)/k for erasure coding). As in pg_autoscaler, a ratio wins over target_size_bytes
  when both are set; ratios are normalised when they add up past 1 on a root.
Overcommit (targets promising more than the OSDs hold) is found here as pg_autoscaler
finds it (POOL_TARGET_SIZE_BYTES/RATIO_OVERCOMMITTED), per CRUSH root.
"""
import enum
from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

import numpy as np

from ..model.snapshot import Pool


class Kind(enum.StrEnum):
    UNKNOWN = "unknown"
    BULK = "bulk"
    DATA = "data"


@dataclass(frozen=True)
class Demand:
    pool: Pool
    kind: Kind
    raw: float          # raw bytes the pool is counted at (bulk: before the free space)
    basis: str          # what `raw` is: stored, target_size_bytes, target_size_ratio, none
    notes: Tuple[str, ...] = ()


def opt_num(pool: Pool, key: str) -> float:
    """A numeric pool option, 0 when unset or not a number."""
    try:
        v = float(pool.options.get(key, 0) or 0)
    except (TypeError, ValueError):
        return 0.0
    return v if np.isfinite(v) and v > 0 else 0.0


def raw_rate(pool: Pool) -> float:
    """Raw bytes per stored byte: size for replicas, (k+m)/k for erasure coding."""
    return pool.size / pool.data_chunks


def demands(pools: Sequence[Pool], root_of: Mapping[int, Tuple[int, ...]],
            capacity_of: Mapping[int, float]) -> Dict[int, Demand]:
    """Each pool's demand; `root_of` is its rule's take items, `capacity_of` the raw bytes
    its OSDs hold (0 when unknown)."""
    ratio_sum: Dict[Tuple[int, ...], float] = {}
    for p in pools:
        ratio_sum[root_of[p.id]] = ratio_sum.get(root_of[p.id], 0.0) + opt_num(p, "target_size_ratio")
    out: Dict[int, Demand] = {}
    for p in pools:
        ratio = opt_num(p, "target_size_ratio") / max(ratio_sum[root_of[p.id]], 1.0)
        tbytes = opt_num(p, "target_size_bytes")
        notes: List[str] = []
        if ratio and tbytes:
            notes.append(f"target_size_ratio wins over target_size_bytes ({tbytes:.0f}), as "
                         "pg_autoscaler takes them; set one")
            tbytes = 0.0
        stored = None if p.stored is None else float(p.stored) * raw_rate(p)
        options = [(tbytes * raw_rate(p), "target_size_bytes"),
                   (ratio * capacity_of.get(p.id, 0.0), "target_size_ratio")]
        if stored is not None:
            options.insert(0, (stored, "stored"))
        raw, basis = max(options, key=lambda t: t[0])
        if p.bulk:
            kind = Kind.BULK
        elif stored is None:
            kind, raw, basis = Kind.UNKNOWN, 0.0, "none"
        else:
            kind = Kind.DATA
        out[p.id] = Demand(p, kind, raw, basis if raw > 0 else "stored", tuple(notes))
    return out


@dataclass(frozen=True)
class Overcommit:
    root: str
    pools: Tuple[str, ...]      # the pools with a target there
    factor: float               # what they promise / what the root holds
    what: str                   # "target_size_bytes" or "target_size_ratio"

    def sentence(self) -> str:
        return (f"pools {', '.join(self.pools)} on {self.root} overcommit available storage by "
                f"{self.factor:.3f}x due to {self.what}")


def overcommits(pools: Sequence[Pool], root_of: Mapping[int, Tuple[int, ...]],
                capacity_of: Mapping[int, float], root_name: Mapping[Tuple[int, ...], str]
                ) -> List[Overcommit]:
    """Roots whose targets promise more than they hold, as pg_autoscaler checks them: the
    data or target_size_bytes of every pool past the capacity; the ratios, or the data
    and ratios together, past 1."""
    out: List[Overcommit] = []
    for root in sorted(set(root_of.values())):
        members = [p for p in pools if root_of[p.id] == root]
        cap = max((capacity_of.get(p.id, 0.0) for p in members), default=0.0)
        if cap <= 0:
            continue
        by_bytes = [p for p in members
                    if opt_num(p, "target_size_bytes") and not opt_num(p, "target_size_ratio")]
        total = sum(max(float(p.stored or 0) * raw_rate(p), opt_num(p, "target_size_bytes") * raw_rate(p))
                    for p in members)
        if by_bytes and total > cap:
            out.append(Overcommit(root_name[root], tuple(p.name for p in by_bytes), total / cap,
                                  "target_size_bytes"))
        by_ratio = [p for p in members if opt_num(p, "target_size_ratio")]
        ratio_total = sum(max(float(p.stored or 0) * raw_rate(p) / cap, opt_num(p, "target_size_ratio"))
                          for p in members)
        if by_ratio and (ratio_total > 1.0 or sum(opt_num(p, "target_size_ratio") for p in by_ratio) > 1.0):
            out.append(Overcommit(root_name[root], tuple(p.name for p in by_ratio),
                                  max(ratio_total, sum(opt_num(p, "target_size_ratio") for p in by_ratio)),
                                  "target_size_ratio"))
    return out
