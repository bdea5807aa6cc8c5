"""Which OSD may take a PG's replica in place of another, under the PG's CRUSH rule.

A replacement keeps the ancestors the rule's earlier choose steps fixed, lands in a
failure-domain bucket no other replica of the PG uses, stays under the rule's root and
class, is up, in and of non-zero weight, and is not already in the PG. An OSD with no
ancestor of a type the rule chooses is never one: CRUSH cannot reach it.
"""
from dataclasses import dataclass
from typing import Dict, Tuple

import numpy as np

from .errors import AdvisorError
from .snapshot import Pool, Snapshot


# OSDs without an ancestor of some type get NO_ANCESTOR - osd there: unique per OSD (so
# two such OSDs never look like one bucket) and below any bucket id (CRUSH ids are int32)
NO_ANCESTOR = -(1 << 40)


def ancestors(snap: Snapshot) -> Dict[int, np.ndarray]:
    """type id -> vector over OSDs of their ancestor bucket of that type (real tree).

    OSDs without such an ancestor get a unique sentinel at or below NO_ANCESTOR
    (has_ancestor() tells them apart): no rule choosing that type can reach them.
    """
    parent: Dict[int, int] = {}
    for b in snap.buckets.values():
        if not b.is_shadow:
            for child in b.items.tolist():
                parent.setdefault(child, b.id)
    n = snap.osds.count
    out: Dict[int, np.ndarray] = {0: np.arange(n, dtype=np.int64)}
    for t in set(snap.crush_types.values()) - {0}:
        out[t] = NO_ANCESTOR - np.arange(n, dtype=np.int64)
    for osd in range(n):
        node = parent.get(osd)
        while node is not None:
            out.setdefault(snap.buckets[node].type_id,
                           NO_ANCESTOR - np.arange(n, dtype=np.int64))[osd] = node
            node = parent.get(node)
    return out


def has_ancestor(a: np.ndarray) -> np.ndarray:
    """Which entries of an ancestors() vector are real buckets (or, for type 0, OSDs)."""
    return a > NO_ANCESTOR


@dataclass(frozen=True)
class RuleShape:
    """What a replacement must keep: ancestors at `fixed` types, distinctness at `domain`."""
    fixed: Tuple[int, ...]
    domain: int


def rule_shape(snap: Snapshot, pool: Pool) -> RuleShape:
    rule = snap.rules.get(pool.crush_rule)
    if rule is None:
        raise AdvisorError.invalid(f"pool {pool.name}: crush rule {pool.crush_rule} is missing")
    takes = [s for s in rule.steps if s.get("op") == "take"]
    chooses = [s for s in rule.steps if str(s.get("op", "")).startswith("choose")]
    if len(takes) != 1 or not chooses:
        raise AdvisorError.invalid(f"pool {pool.name}: rule '{rule.name}' has {len(takes)} take "
                                   f"steps; only single-take rules are balanced")
    types = [snap.crush_types[str(s["type"])] for s in chooses]
    return RuleShape(fixed=tuple(types[:-1]), domain=types[-1])


def replaceable(anc: Dict[int, np.ndarray], shape: RuleShape, allowed: np.ndarray,
                up: np.ndarray, held: np.ndarray, srcs: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(R, C) mask: may OSD cols[j] take the place of srcs[i] in the PG whose up set is up[i]?

    `held` (R, K') are the OSDs a destination must not already be (the up set; for EC
    also CRUSH's own set, or Ceph skips the item); `allowed` is over all OSDs.
    """
    n = allowed.shape[0]
    dom = anc[shape.domain]
    # an OSD with no bucket of a type the rule chooses is out of the rule's reach (CRUSH
    # rejects a device where such a bucket was due), whatever `allowed` says
    reach = has_ancestor(dom[cols])
    for t in shape.fixed:
        reach &= has_ancestor(anc[t][cols])
    ok = np.broadcast_to(allowed[cols] & reach, (srcs.size, cols.size)).copy()
    ok &= ~(cols[None, :, None] == held[:, None, :]).any(axis=2)
    for t in shape.fixed:                    # keep the upper levels the rule chose
        a = anc[t]
        ok &= a[cols][None, :] == a[srcs][:, None]
    # failure-domain buckets of the PG's other replicas (a large sentinel for holes)
    others = np.where((up != srcs[:, None]) & (up >= 0) & (up < n), dom[np.clip(up, 0, n - 1)],
                      np.iinfo(np.int64).max)
    ok &= ~(dom[cols][None, :, None] == others[:, None, :]).any(axis=2)
    return ok
