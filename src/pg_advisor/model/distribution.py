"""How PGs sit on OSDs now: counts per pool and OSD, weight-proportional shares, spreads.

Whole-cluster arithmetic in numpy: one bincount over every (PG, OSD) pair, no loop per PG.
"""
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .snapshot import Pgs, Pool, Rule, Snapshot


CHOOSE_OPS = ("choose_firstn", "choose_indep", "chooseleaf_firstn", "chooseleaf_indep", "choosemsr")


def rule_segments(snap: Snapshot, rule: Rule) -> List[Tuple[int, Tuple[Optional[int], ...]]]:
    """(take item, type ids of its choose steps in order) for each take ... emit of a rule.

    A choose step's type is the bucket type it picks (for chooseleaf, the one it then
    descends from to a device); None for a type name the map does not define, and after
    a last plain choose of buckets, which emits the buckets and so no OSD. As in
    crush_do_rule, choose steps after an emit act on nothing, and a take never emitted
    places nothing.
    """
    out: List[Tuple[int, Tuple[Optional[int], ...]]] = []
    take: Optional[int] = None
    types: List[Optional[int]] = []
    leaf = True     # does the last choose step end on devices?
    for s in rule.steps:
        op = str(s.get("op"))
        if op == "take":
            take, types, leaf = int(s["item"]), [], True
        elif op in CHOOSE_OPS and take is not None:
            types.append(snap.crush_types.get(str(s.get("type"))))
            leaf = op.startswith("chooseleaf") or types[-1] == 0
        elif op == "emit" and take is not None:
            # a plain choose of buckets, emitted, places no OSD: a type nothing has
            out.append((take, tuple(types) if leaf else tuple(types) + (None,)))
            take = None
    return out


MEMO_OSDS = 1 << 16     # vectors over at most this many OSD ids are kept on the snapshot


def osds_under(snap: Snapshot, root: int,
               types: Optional[Sequence[Optional[int]]] = None, members: bool = False) -> np.ndarray:
    """CRUSH weight of every OSD below `root` (0 elsewhere), as a vector over OSD ids; with
    `types`, only of the OSDs that choose steps picking those types in turn can reach. With
    `members`, 1 for every such OSD whatever its weight (weight-0 ones included, as Ceph's
    get_rule_weight_osd_map lists them).

    CRUSH (mapper.c, crush_choose_firstn/indep) descends through buckets of other types
    until it meets one of the type a step wants; a device met first is rejected ("bad item
    type": firstn skips the replica, indep leaves a hole), never retried elsewhere. So a
    device is reached only along a path root -> bucket of types[0] -> ... -> bucket of
    types[-1] -> device, each strictly below the one before; a last type 0 (osd) is the
    device itself, and from a device no further step picks anything.

    A device-class rule takes a shadow bucket ("default~ssd"), whose tree holds only that
    class's OSDs (and mirrors the hosts as "host0~ssd"), so walking from the take item
    honours the class without special cases.
    """
    want = None if types is None else tuple(types)
    # rule weights, unreachable OSDs and read balance each walk the same segments: once a
    # snapshot (read-only, shared), unless the vectors are large (a sparse max_osd of 2^20
    # would hold 8 MiB a segment)
    if snap.osds.count > MEMO_OSDS:
        return _osds_under(snap, root, want, members)
    key = ("osds_under", root, want, members)
    known: Optional[np.ndarray] = snap.memo.get(key)
    if known is None:
        w = _osds_under(snap, root, want, members)
        w.setflags(write=False)
        known = snap.memo.setdefault(key, w)
    return known


def _osds_under(snap: Snapshot, root: int, want: Optional[Tuple[Optional[int], ...]],
                members: bool) -> np.ndarray:
    w = np.zeros(snap.osds.count, dtype=np.float64)
    if root >= 0:
        # a device taken directly is emitted as is; a choose step from it picks nothing
        if root < w.shape[0] and not want:
            w[root] = 1.0 if members else snap.osds.crush_weight[root]
        return w
    if want is not None and not want:
        return w            # "take bucket; emit" emits a bucket id, which is no OSD
    last = len(want) if want is not None else 0
    # one walk; a node's stage is how many of the steps' types its path has met (the
    # first bucket of the wanted type below the last match is what CRUSH stops at)
    stack = [(root, 0)]
    seen = set()
    while stack:
        bid, k = stack.pop()
        b = snap.buckets.get(bid)
        if b is None or (bid, k) in seen:
            continue
        seen.add((bid, k))
        devs = b.items >= 0
        if want is None or k == last or (k == last - 1 and want[-1] == 0):
            w[b.items[devs]] = 1.0 if members else b.weights[devs]
        for child in b.items[~devs].tolist():
            cb = snap.buckets.get(child)
            if cb is not None:
                step = want is not None and k < last and cb.type_id == want[k]
                stack.append((child, k + int(step)))
    return w


def rule_weights(snap: Snapshot, rule: Rule, reweight: Optional[np.ndarray] = None) -> np.ndarray:
    """Effective weight of each OSD for a rule: CRUSH weight where the rule's steps can
    reach it (osds_under) x reweight.

    An OSD under the take item but not under a bucket of each type the steps choose (e.g.
    no host, for "chooseleaf firstn 0 type host") gets nothing: CRUSH never maps there.
    Out OSDs have reweight 0, so they get no share; the weight of an OSD reached by
    several take steps counts once. `reweight` replaces the map's, for what-ifs.
    """
    if reweight is not None:
        return _reach_weights(snap, rule) * reweight * snap.osds.exists
    # sizing, status and plans each ask, per pool: once per rule of the snapshot (the
    # rule object itself: a what-if may pass a changed rule of the same id)
    key = ("rule_weights", rule.id)
    known: Optional[Tuple[Rule, np.ndarray]] = snap.memo.get(key)
    if known is None or known[0] is not rule:
        w = _reach_weights(snap, rule) * snap.osds.reweight * snap.osds.exists
        w.setflags(write=False)     # shared by every later caller
        known = snap.memo[key] = (rule, w)
    return known[1]


def _reach_weights(snap: Snapshot, rule: Rule) -> np.ndarray:
    w = np.zeros(snap.osds.count, dtype=np.float64)
    for item, types in rule_segments(snap, rule):
        w = np.maximum(w, osds_under(snap, item, types))
    return w


def unreachable(snap: Snapshot, rule: Rule) -> np.ndarray:
    """OSDs of non-zero CRUSH weight under one of the rule's take items that its choose
    steps can never reach (a misplaced OSD: CRUSH skips the replica instead)."""
    under = np.zeros(snap.osds.count, dtype=bool)
    reach = np.zeros(snap.osds.count, dtype=bool)
    for item, types in rule_segments(snap, rule):
        under |= osds_under(snap, item) > 0
        reach |= osds_under(snap, item, types) > 0
    return under & ~reach & snap.osds.exists


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


def pool_share(pool: Pool, weights: np.ndarray, pg_num: Optional[int] = None) -> np.ndarray:
    """Each OSD's weight-proportional share of the pool's pg_num x size replicas."""
    total = float(weights.sum())
    if total <= 0:
        return np.zeros_like(weights)
    return (pool.pg_num if pg_num is None else pg_num) * pool.size * weights / total


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
