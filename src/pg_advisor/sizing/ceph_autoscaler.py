"""What Ceph's pg_autoscaler would pick for each pool (`ceph osd pool autoscale-status`),
computed from the snapshot rather than asked of that module.

Asking it meant calling its private `_command_autoscale_status` through `remote` on every
read; at 10,000 OSDs on Tentacle that call took 22 s, because it dumps the whole CRUSH map
once per pool to list the OSDs under the pool's root. Here the roots' OSDs are a vector
walk each (rules/reach.py), so the cost is one pass over the buckets per root.

The rules follow pg_autoscaler's module.py (Pacific 16.2 and Tentacle 20.2), in order:

- a pool's root is its rule's first `take`; pools whose roots share OSDs share one
  subtree (and those roots are "overlapping": their pools are not scaled);
- a subtree's budget is (its OSDs, weight 0 and out ones included) x mon_target_pg_per_osd,
  its capacity the raw size (`kb` of the OSD stats) of those OSDs;
- a pool's share of the capacity is its raw use (Pacific: stored x the raw rate; Tentacle:
  df's bytes_used), or its target_size_bytes x the raw rate when larger, or its
  effective target ratio (target_size_ratio over the sum of the root's ratios, times what
  target_size_bytes leaves) when larger;
- three passes hand out the budget: non-bulk pools take their share of what is left; then
  bulk pools whose share beats an even split of the pools not yet served; then the rest
  split what is left evenly. Each ideal is divided by the pool's size, times its bias,
  rounded to the nearest power of two (ties up), at least pg_num_min (32), at most
  pg_num_max;
- it would adjust a pool whose pick is past the threshold (3.0) from its pg_num_target
  (Pacific: and whose mode is `on`); Tentacle grows to 512 or 1024 at any growth and to
  2048 past 2x.

The answer has the fields of `autoscale-status -f json` that pg_advisor reads and shows.
"""
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

import numpy as np

from ..model.snapshot import Pool, Snapshot
from ..rules.reach import osds_under

PG_NUM_MIN = 32          # pg_autoscaler's floor unless the pool sets pg_num_min
THRESHOLD = 3.0          # its default `threshold` (a module option from Quincy on)


@dataclass(frozen=True)
class Flavour:
    """Where pg_autoscaler's rules differ between the releases pg_advisor runs on."""
    raw_use_from_df: bool         # Tentacle: df's bytes_used; Pacific: stored x raw rate
    dynamic_threshold: bool       # Tentacle: growth to 512/1024 (any) and 2048 (2x)
    threshold: float = THRESHOLD
    # Pacific's would_adjust also asks mode `on` and a share within [0, 1]; Tentacle's
    # checks those only to log why it does not act, so its would_adjust is the threshold's
    adjust_needs_mode: bool = True

    @staticmethod
    def of_release(major: int, threshold: float = THRESHOLD) -> "Flavour":
        """Pacific (16) and older, or Tentacle's rules (checked on 20; 17-19 assumed so)."""
        later = major > 16
        return Flavour(raw_use_from_df=later, dynamic_threshold=later,
                       threshold=threshold if later else THRESHOLD, adjust_needs_mode=not later)


@dataclass
class _Subtree:
    osds: Set[int] = field(default_factory=set)
    pools: int = 0
    used: int = 0                 # pools served by an earlier pass
    total_ratio: float = 0.0
    total_bytes: float = 0.0
    budget: float = 0.0           # PGs left to hand out
    capacity: int = 0


def nearest_power_of_two(n: float) -> int:
    """The power of two nearest n, ties going up; 0 for n below 1 (pg_autoscaler's)."""
    v = int(n)
    if v <= 0:
        return 0
    up = 1 << (v - 1).bit_length()
    down = up >> 1
    return down if up - n > n - down else up


def raw_rate(pool: Pool) -> float:
    """Raw bytes per stored byte: the size, or (k+m)/k for EC (OSDMap::pool_raw_used_rate)."""
    return pool.size / pool.data_chunks if pool.type == "erasure" else float(pool.size)


def _root(snap: Snapshot, pool: Pool) -> Optional[int]:
    rule = snap.rules.get(pool.crush_rule)
    takes = rule.take_items() if rule is not None else []
    return takes[0] if takes else None


def _osds(snap: Snapshot, root: int) -> Set[int]:
    if root >= 0 or root not in snap.buckets:
        return set()              # Ceph's walk starts at a bucket
    return set(np.flatnonzero(osds_under(snap, root, members=True)).tolist())


def autoscale_status(snap: Snapshot, flavour: Flavour) -> List[Dict[str, Any]]:
    """pg_autoscaler's status rows, in its order (by pool id, then the later passes)."""
    pools = sorted(list(snap.pools) + [p for p, _ in snap.unmapped], key=lambda p: p.id)
    rooted: List[Tuple[Pool, int]] = []
    for p in pools:
        take = _root(snap, p)
        if take is not None:
            rooted.append((p, take))
    subtree: Dict[int, _Subtree] = {}
    overlapped: Set[int] = set()
    under: Dict[int, Set[int]] = {}       # many pools share a root: its OSDs listed once
    for pool, root in rooted:
        if root not in under:
            under[root] = _osds(snap, root)
        osds = under[root]
        s = None
        for other, prev in subtree.items():
            if osds & prev.osds:
                s = prev
                if other != root:
                    overlapped |= {other, root}
                break
        s = s or _Subtree()
        subtree[root] = s
        s.osds |= osds
        s.pools += 1
        ratio = float(pool.options.get("target_size_ratio", 0.0))
        if ratio:
            s.total_ratio += ratio
        else:
            s.total_bytes += float(pool.options.get("target_size_bytes", 0)) * raw_rate(pool)
    size = snap.osds.bytes_total
    for s in {id(s): s for s in subtree.values()}.values():
        s.budget = len(s.osds) * snap.config["mon_target_pg_per_osd"]
        ids = np.fromiter(s.osds, np.int64, len(s.osds))
        s.capacity = int(size[ids[ids < size.shape[0]]].sum())
    rows: List[Dict[str, Any]] = []
    # pools of overlapping roots, and of roots without capacity, are left out of every pass
    root_of = {p.id: r for p, r in rooted if r not in overlapped and subtree[r].capacity > 0}
    passes = [p for p, _ in rooted if p.id in root_of]
    for stage in ("first", "second", "third"):
        later: List[Pool] = []
        for pool in passes:
            root = root_of[pool.id]
            row = _row(flavour, pool, subtree[root], stage, later)
            if row is not None:
                rows.append(dict(row, crush_root_id=root))
        passes = later
    if "noautoscale" in snap.flags and flavour.dynamic_threshold:
        for row in rows:
            row["pg_autoscale_mode"] = "off"      # Tentacle shows the flag this way
    return rows


def _row(flavour: Flavour, pool: Pool, s: _Subtree, stage: str,
         later: List[Pool]) -> Optional[Dict[str, Any]]:
    """One pool in one pass: its row, or None (skipped, or left to the next pass: `later`)."""
    stored = pool.stored
    used_df = pool.bytes_used
    if stored is None or (flavour.raw_use_from_df and used_df is None):
        return None               # not in df yet (a pool just made or deleted)
    rate = raw_rate(pool)
    opts = pool.options
    ratio_set = float(opts.get("target_size_ratio", 0.0))
    target_bytes = 0 if ratio_set else int(opts.get("target_size_bytes", 0))
    if flavour.raw_use_from_df:
        actual = float(used_df or 0)
        raw_used = max(actual, target_bytes * rate)
        logical = actual / rate
    else:
        actual = stored * rate
        raw_used = max(stored, target_bytes) * rate
        logical = float(stored)
    eff = ratio_set / s.total_ratio if s.total_ratio else ratio_set
    if s.total_bytes and s.capacity:
        eff *= 1.0 - min(1.0, s.total_bytes / s.capacity)
    share = max(raw_used / s.capacity, eff)
    bias = float(opts.get("pg_autoscale_bias", 1.0))
    if stage == "first":
        if pool.bulk:
            later.append(pool)
            return None
        final_ratio = share
        given = final_ratio * s.budget
        s.budget -= int(given)
        s.used += 1
        ideal = given / pool.size * bias
    elif stage == "second":
        if s.pools - s.used <= 0:
            return None
        even = 1 / (s.pools - s.used)
        if share <= even:
            later.append(pool)
            return None
        s.used += 1
        final_ratio = max(share, even)
        given = final_ratio * s.budget
        s.budget -= int(given)
        ideal = given / pool.size * bias
    else:
        if s.pools - s.used <= 0:
            return None
        final_ratio = 1 / (s.pools - s.used)
        ideal = final_ratio * s.budget / pool.size * bias
    final = max(int(opts.get("pg_num_min", PG_NUM_MIN)), nearest_power_of_two(ideal))
    cap = int(opts.get("pg_num_max", 0) or 0)
    if cap and cap < final:
        final = cap
    now = pool.pg_num_target
    if final > now:
        grow = flavour.threshold
        if flavour.dynamic_threshold and final in (512, 1024):
            grow = 1.0
        elif flavour.dynamic_threshold and final == 2048:
            grow = 2.0
        adjust = final > now * grow
    else:
        adjust = final < now / flavour.threshold
    if flavour.adjust_needs_mode:
        adjust = adjust and 0.0 <= final_ratio <= 1.0 and pool.autoscale_mode == "on"
    return {
        "pool_id": pool.id, "pool_name": pool.name,
        "pg_autoscale_mode": pool.autoscale_mode, "pg_num_target": now,
        "logical_used": logical, "target_bytes": target_bytes, "raw_used_rate": rate,
        "subtree_capacity": s.capacity, "actual_raw_used": actual, "raw_used": raw_used,
        "actual_capacity_ratio": actual / s.capacity, "capacity_ratio": share,
        "target_ratio": ratio_set, "effective_target_ratio": eff,
        "pg_num_ideal": int(ideal), "pg_num_final": final, "would_adjust": adjust,
        "bias": bias, "bulk": pool.bulk,
    }


def with_autoscale(snap: Snapshot, flavour: Flavour) -> Snapshot:
    """The snapshot with pg_autoscaler's picks (`Snapshot.autoscale`), as the status reads them."""
    rows = autoscale_status(snap, flavour)
    return dataclasses.replace(snap, autoscale={r["pool_name"]: r for r in rows})
