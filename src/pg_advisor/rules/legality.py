"""Which OSD may take a PG's replica in place of another, under the PG's CRUSH rule.

A rule of one take and choose steps says, for each type it chooses, how many replicas
of one PG a bucket of that type may hold (the product of the later steps' counts: 3 per
rack for `choose indep 4 rack; chooseleaf indep 3 host`) and how many such buckets one
PG may use within a bucket of the step before (4 racks). A replacement keeps every such
limit, not the buckets CRUSH happened to pick: a shard may leave its rack for another
host of a rack the PG already uses, so long as no rack then holds more than the rule's
3 (losing a rack never costs more shards than the rule meant to risk). Ceph's own check
(CrushWrapper::verify_upmap) is weaker but differs in one way we must follow so the mon
keeps the items: for a `choose` step after the first, it counts that type's buckets over
the whole PG, not within each bucket of the step before.

The replacement also stays under the rule's root and class, is up, in and of non-zero
weight (`allowed`), and is not already in the PG. An OSD with no ancestor of a type the
rule chooses is never one: CRUSH cannot reach it.

An msr rule (Squid's `choosemsr 3 type host; choosemsr 2 type osd`, the EC profiles'
crush-osds-per-failure-domain) promises only its caps: a host lies in one stride of 2
positions, so it holds at most 2 shards; but after an OSD is out a stride may take an OSD
of another host, so a PG may use more than 3 hosts. Its steps have a cap and no span nor
total. Ceph's verify_upmap skips choosemsr steps altogether: the mon keeps an item that
puts a third shard on a host, so keeping the caps is the balancer's own job.
"""
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..model.errors import AdvisorError
from ..model.snapshot import Pool, Snapshot, bucket_parents, walk_up


# OSDs without an ancestor of some type get NO_ANCESTOR - osd there: unique per OSD (so
# two such OSDs never look like one bucket) and below any bucket id (CRUSH ids are int32)
NO_ANCESTOR = -(1 << 40)
# stands for a hole or the replica being replaced: equal to no bucket
NOBODY = np.iinfo(np.int64).max
# the span of an msr step: any number of buckets (only its cap holds)
ANY = 1 << 62


def ancestors(snap: Snapshot) -> Dict[int, np.ndarray]:
    """type id -> vector over OSDs of their ancestor bucket of that type (real tree).

    OSDs without such an ancestor get a unique sentinel at or below NO_ANCESTOR
    (has_ancestor() tells them apart): no rule choosing that type can reach them.
    Built once per snapshot (status, balancer, steps and drains all ask), read-only.
    """
    got: Optional[Dict[int, np.ndarray]] = snap.memo.get("ancestors")
    if got is None:
        got = snap.memo.setdefault("ancestors", _ancestors(snap))
    return got


def _ancestors(snap: Snapshot) -> Dict[int, np.ndarray]:
    parent = bucket_parents(snap.buckets)
    n = snap.osds.count
    out: Dict[int, np.ndarray] = {0: np.arange(n, dtype=np.int64)}
    for t in set(snap.crush_types.values()) - {0}:
        out[t] = NO_ANCESTOR - np.arange(n, dtype=np.int64)
    # only the OSDs CRUSH holds (ids may reach 2^20 while a few exist), set a bucket's
    # OSDs at a time (one per OSD cost 0.18 s at 10,000 OSDs), each bucket's chain walked
    # once (a chain of thousands of nested buckets is legal)
    kids: Dict[int, List[int]] = {}
    for item, bucket in parent.items():
        if 0 <= item < n:
            kids.setdefault(bucket, []).append(item)
    above: Dict[int, List[int]] = {}
    for bucket, osds in kids.items():
        idx = np.array(osds, dtype=np.int64)
        for node in [bucket] + _above(parent, bucket, above):
            t = snap.buckets[node].type_id
            if t not in out:
                out[t] = NO_ANCESTOR - np.arange(n, dtype=np.int64)
            out[t][idx] = node
    for v in out.values():
        v.flags.writeable = False       # shared through the memo
    return out


def _above(parent: Dict[int, int], bucket: int, memo: Dict[int, List[int]]) -> List[int]:
    """The buckets above `bucket`, nearest first, remembered for the next OSD under it."""
    got = memo.get(bucket)
    if got is None:
        got = memo[bucket] = walk_up(parent, bucket)
    return got


def has_ancestor(a: np.ndarray) -> np.ndarray:
    """Which entries of an ancestors() vector are real buckets (or, for type 0, OSDs)."""
    return a > NO_ANCESTOR


@dataclass(frozen=True)
class Choose:
    """One choose step: `count` buckets of `type` in each bucket the step before chose."""
    type: int
    count: int
    leaf: bool         # chooseleaf: then one OSD under each
    msr: bool = False  # choosemsr: at least `count` buckets, each holding at most its cap


def choose_steps(snap: Snapshot, pool: Pool) -> Optional[List[Choose]]:
    """The rule's choose steps, counts resolved against the pool's size as crush_do_rule
    does (0: size, -1: size - 1); None where the rule is missing or not one take followed
    by choose steps with counts that pick something."""
    rule = snap.rules.get(pool.crush_rule)
    if rule is None:
        return None
    steps = [s for s in rule.steps if s.op not in ("emit", "noop") and not s.op.startswith("set_")]
    if len(steps) < 2 or steps[0].op != "take":
        return None
    out: List[Choose] = []
    for s in steps[1:]:
        if not s.chooses:
            return None
        n = s.arg1 if s.arg1 > 0 else pool.size + s.arg1
        if n <= 0:
            return None
        out.append(Choose(type=s.arg2, count=n, leaf=s.leaf, msr=s.op == "choosemsr"))
    return out


@dataclass(frozen=True)
class Limit:
    """What one choose step allows a PG at its bucket type."""
    type: int
    cap: int                 # replicas of the PG one bucket of this type may hold
    span: int                # buckets of this type the PG may use within one bucket of `above`
    above: Optional[int]     # the type the step before chose (None: the first step)
    total: Optional[int]     # buckets of this type in all (Ceph's count for a later choose step)
    checked: bool = True     # the mon's verify_upmap checks it (not an msr step's: it skips them)


@dataclass(frozen=True)
class RuleShape:
    limits: Tuple[Limit, ...]

    @property
    def types(self) -> Tuple[int, ...]:
        return tuple(lim.type for lim in self.limits)


def shape_of(steps: List[Choose]) -> RuleShape:
    limits = []
    for k, st in enumerate(steps):
        cap = int(np.prod([s.count for s in steps[k + 1:]], dtype=np.int64))
        total = st.count if k > 0 and not st.leaf and st.type != 0 and not st.msr else None
        limits.append(Limit(type=st.type, cap=cap, span=ANY if st.msr else st.count,
                            above=steps[k - 1].type if k else None, total=total, checked=not st.msr))
    return RuleShape(limits=tuple(limits))


def rule_shape(snap: Snapshot, pool: Pool) -> RuleShape:
    rule = snap.rules.get(pool.crush_rule)
    if rule is None:
        raise AdvisorError.invalid(f"pool {pool.name}: crush rule {pool.crush_rule} is missing")
    steps = choose_steps(snap, pool)
    if steps is None:
        raise AdvisorError.invalid(f"pool {pool.name}: rule '{rule.name}' is not one take "
                                   f"followed by choose steps that pick something; only such "
                                   f"rules are balanced")
    return shape_of(steps)


def first_seen(b: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(R, K): is b[r, k] valid and unlike every earlier valid entry of its row?"""
    k = b.shape[1]
    earlier = np.tril(np.ones((k, k), bool), -1)          # [i, j]: j before i
    dup = ((b[:, :, None] == b[:, None, :]) & earlier[None] & valid[:, None, :]).any(axis=2)
    return valid & ~dup


@dataclass(frozen=True)
class Reach:
    """Where a pool's rule may place a replica: the OSDs' ancestors by bucket type
    (ancestors), the rule's limits, and the OSDs it may use (`allowed`, over all OSDs)."""
    anc: Dict[int, np.ndarray]
    shape: RuleShape
    allowed: np.ndarray


def replaceable(reach_of: Reach, up: np.ndarray, held: np.ndarray, srcs: np.ndarray,
                cols: np.ndarray) -> np.ndarray:
    """(R, C) mask: may OSD cols[j] take the place of srcs[i] in the PG whose up set is up[i]?

    `held` (R, K') are the OSDs a destination must not already be (the up set; for EC
    also CRUSH's own set, or Ceph skips the item).
    """
    anc, shape, allowed = reach_of.anc, reach_of.shape, reach_of.allowed
    n = allowed.shape[0]
    k = up.shape[1]
    # an OSD with no bucket of a type the rule chooses is out of the rule's reach (CRUSH
    # rejects a device where such a bucket was due), whatever `allowed` says
    reach = allowed[cols].copy()
    for t in shape.types:
        reach &= has_ancestor(anc[t][cols])
    # (called once a move on small arrays: the plainest numpy calls are the fastest)
    # (R, C) comparisons column by column of `held`: a few 2-D operations cost less than
    # one 3-D one reduced over its last axis
    ok = np.broadcast_to(reach[None, :], (srcs.size, cols.size)).copy()
    for j in range(held.shape[1]):
        ok &= held[:, j, None] != cols[None, :]
    # the PG's other replicas (holes and the one replaced count for nothing)
    others = (up != srcs[:, None]) & (up >= 0) & (up < n)
    at = np.minimum(np.maximum(up, 0), n - 1)
    for lim in shape.limits:
        if lim.type == 0 and lim.cap >= 1:
            continue                          # distinct OSDs: `held` sees to that
        a = anc[lim.type]
        mine = np.where(others, a[at], NOBODY)
        dest = a[cols]
        inside = np.zeros((srcs.size, cols.size), dtype=np.int64)          # (R, C)
        for j in range(k):
            inside += mine[:, j, None] == dest[None, :]
        ok &= inside < lim.cap
        spans = lim.span < k
        totals = lim.total is not None and lim.total < k
        if not (spans or totals):
            continue                          # a new bucket can never be one too many
        new = inside == 0
        first = first_seen(mine, others)
        if spans:
            if lim.above is None:
                used = first.sum(axis=1)[:, None]
            else:
                p = anc[lim.above]
                used = (first[:, None, :] & (p[at][:, None, :] == p[cols][None, :, None])).sum(axis=2)
            ok &= ~new | (used < lim.span)
        if totals:
            ok &= ~new | (first.sum(axis=1)[:, None] < lim.total)
    return ok


def breaks(shape: RuleShape, anc: Dict[int, np.ndarray], up: np.ndarray,
           as_the_mon: bool = False) -> np.ndarray:
    """Per row of `up`: does the set itself break a limit of the rule (as CRUSH's own set
    of a rule with a later choose step may break Ceph's count, so no item on it is kept)?
    `as_the_mon`: only the limits the mon's verify_upmap checks."""
    n = anc[0].shape[0]
    valid = (up >= 0) & (up < n)
    at = np.clip(up, 0, n - 1)
    bad = np.zeros(up.shape[0], bool)
    for lim in shape.limits:
        if as_the_mon and not lim.checked:
            continue
        b = np.where(valid, anc[lim.type][at], NOBODY)
        first = first_seen(b, valid)
        per = (b[:, :, None] == b[:, None, :]).sum(axis=2)
        bad |= (valid & (per > lim.cap)).any(axis=1)
        if lim.total is not None:
            bad |= first.sum(axis=1) > lim.total
        if lim.above is None:
            bad |= first.sum(axis=1) > lim.span
        else:
            p = np.where(valid, anc[lim.above][at], NOBODY)
            within = (first[:, None, :] & (p[:, :, None] == p[:, None, :])).sum(axis=2)
            bad |= (valid & (within > lim.span)).any(axis=1)
    return bad
