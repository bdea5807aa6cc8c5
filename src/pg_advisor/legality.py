"""Which OSD may take a PG's replica in place of another, under the PG's CRUSH rule.

A replacement keeps the ancestors the rule's earlier choose steps fixed, lands in a
failure-domain bucket no other replica of the PG uses, stays under the rule's root and
class, is up, in and of non-zero weight, and is not already in the PG.
"""
from dataclasses import dataclass
from typing import Dict, Tuple

import numpy as np

from .errors import AdvisorError
from .snapshot import Pool, Snapshot


def ancestors(snap: Snapshot) -> Dict[int, np.ndarray]:
    """type id -> vector over OSDs of their ancestor bucket of that type (real tree).

    OSDs without such an ancestor get a unique negative sentinel below any bucket id.
    """
    parent: Dict[int, int] = {}
    for b in snap.buckets.values():
        if not b.is_shadow:
            for child in b.items.tolist():
                parent.setdefault(child, b.id)
    n = snap.osds.count
    floor_id = min(list(snap.buckets) + [0]) - 1
    out: Dict[int, np.ndarray] = {0: np.arange(n, dtype=np.int64)}
    for t in set(snap.crush_types.values()) - {0}:
        out[t] = floor_id - np.arange(n, dtype=np.int64)
    for osd in range(n):
        node = parent.get(osd)
        while node is not None:
            out.setdefault(snap.buckets[node].type_id, floor_id - np.arange(n))[osd] = node
            node = parent.get(node)
    return out


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
    ok = np.broadcast_to(allowed[cols], (srcs.size, cols.size)).copy()
    ok &= ~(cols[None, :, None] == held[:, None, :]).any(axis=2)
    for t in shape.fixed:                    # keep the upper levels the rule chose
        a = anc[t]
        ok &= a[cols][None, :] == a[srcs][:, None]
    dom = anc[shape.domain]
    # failure-domain buckets of the PG's other replicas (a large sentinel for holes)
    others = np.where((up != srcs[:, None]) & (up >= 0) & (up < n), dom[np.clip(up, 0, n - 1)],
                      np.iinfo(np.int64).max)
    ok &= ~(dom[cols][None, :, None] == others[:, None, :]).any(axis=2)
    return ok
