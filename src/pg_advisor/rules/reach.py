"""Which OSDs a CRUSH rule can reach, and with what weight: the rule's take ... emit
segments read from its steps (model/cluster.py's RuleStep, parsed once by the loader),
the OSDs under each take that the choose steps can get to, and the effective weights a
pool's share is drawn from.
"""
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..model.snapshot import Rule, Snapshot


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
        if s.op == "take":
            take, types, leaf = s.arg1, [], True
        elif s.chooses and take is not None:
            types.append(s.arg2)
            leaf = s.leaf or s.arg2 == 0
        elif s.op == "emit" and take is not None:
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
