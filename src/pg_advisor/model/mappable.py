"""Which pools pg_advisor can place exactly, and why not the others.

CRUSH is modelled step by step (crush/): a pool whose rule takes a step, reaches a bucket
or needs a tunable the model does not follow cannot be mapped, and a guess would mislead
every figure built on it. Such a pool is set aside with the reason ("not mapped: ..."),
shown in status and in a health check; every other pool is answered as usual.
"""
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .cluster import Bucket, Pool, Rule

# what crush/ maps: every bucket algorithm Ceph maps, with its only hash (rjenkins1, hash 0;
# crush/compiled.py reads these)
MAPPED_ALGS = ("uniform", "list", "tree", "straw", "straw2")
MAPPED_HASH = "rjenkins1"
# a tree bucket keeps its node count (1 << depth) in 8 bits: past 64 items it wraps to 0
# and Ceph cannot build the bucket (crushtool -c dies) or draw from it
TREE_MAX_ITEMS = 64


def tree_depth(size: int) -> int:
    """calc_depth: a tree bucket of `size` items has 1 << depth nodes, leaves at the odd ones."""
    return max(size - 1, 0).bit_length() + 1


def tree_leads_past(nodes: Sequence[int], size: int) -> bool:
    """Whether a draw from a tree bucket of `size` items with these stored node weights
    (bucket_tree_choose) can end past its last item, where Ceph reads beyond its items.
    From the root down, a draw t < weight(n) goes left where t < weight(left), so the left
    child is reached where it weighs anything and the right one where n outweighs its left
    (a subtree of weight 0 is never drawn while a sibling has weight); a node count other
    than the tree's counts as such a draw."""
    depth = tree_depth(size)
    if len(nodes) != 1 << depth:
        return True
    stack = [1 << (depth - 1)] if size else []
    while stack:
        n = stack.pop()
        if n & 1:
            if n >> 1 >= size:
                return True
            continue
        half = (n & -n) >> 1
        if nodes[n - half] > 0:
            stack.append(n - half)
        if nodes[n] > nodes[n - half]:
            stack.append(n + half)
    return False


def bucket_problem(rule_name: str, bucket_name: str, alg: str, hash_name: str,
                   size: int = 0, stored: Sequence[int] = ()) -> Optional[str]:
    """Why a bucket (of `size` items; `stored`: what the binary map holds for it) a rule
    reaches cannot be mapped exactly, or None."""
    if alg == "tree" and size > TREE_MAX_ITEMS:
        return (f"crush rule '{rule_name}' reaches bucket '{bucket_name}' of algorithm 'tree' with "
                f"{size} items; Ceph's tree buckets hold at most {TREE_MAX_ITEMS} (it cannot place "
                f"anything under a bigger one)")
    if alg == "tree" and "~" in bucket_name and size and not stored:
        return (f"crush rule '{rule_name}' reaches bucket '{bucket_name}', a device-class shadow of a "
                f"tree bucket: Ceph builds its node weights an item at a time into memory it does "
                f"not clear (crush_add_tree_bucket_item), so only the binary CRUSH map holds them, "
                f"not its JSON dump")
    if alg == "tree" and stored and tree_leads_past(stored, size):
        return (f"crush rule '{rule_name}' reaches bucket '{bucket_name}' of algorithm 'tree', whose "
                f"node weights as Ceph stored them lead some draws past its last item, where Ceph "
                f"reads beyond the bucket")
    if alg in MAPPED_ALGS and hash_name == MAPPED_HASH:
        return None
    return (f"crush rule '{rule_name}' reaches bucket '{bucket_name}' of algorithm '{alg}' "
            f"(hash {hash_name}); pg_advisor maps {', '.join(MAPPED_ALGS)} buckets with the "
            f"{MAPPED_HASH} hash only")


def rule_problem(rule: Optional[Rule], mapped_ops: Sequence[str],
                 buckets: Mapping[int, Bucket], tunables: Mapping[str, Any]) -> Optional[str]:
    """Why a pool under `rule` cannot be mapped exactly, or None. A rule that is not in
    the map is no reason: Ceph maps such a pool's PGs nowhere, and so does ours. (crush/
    refuses to map the same things, in the same words, to a caller that did not ask.)"""
    if rule is None:
        return None
    for s in rule.steps:
        if s.op not in mapped_ops:
            return f"crush rule '{rule.name}' has a step '{s.op}', which pg_advisor does not map"
    return _bucket_problem(rule, buckets)


def _bucket_problem(rule: Rule, buckets: Mapping[int, Bucket]) -> Optional[str]:
    stack = [i for i in rule.take_items() if i < 0]
    seen = set()
    while stack:
        b = buckets.get(stack.pop())
        if b is None or b.id in seen:
            continue
        seen.add(b.id)
        why = bucket_problem(rule.name, b.name, b.alg, b.hash, b.items.shape[0], b.stored)
        if why is not None:
            return why
        stack.extend(int(c) for c in b.items.tolist() if c < 0)
    return None


def split_pools(pools: Sequence[Pool], rules: Mapping[int, Rule], mapped_ops: Sequence[str],
                buckets: Mapping[int, Bucket], tunables: Mapping[str, Any]
                ) -> Tuple[Tuple[Pool, ...], Tuple[Tuple[Pool, str], ...]]:
    """(the pools the model maps, (pool, reason) for the others), once per rule."""
    problem: Dict[int, Optional[str]] = {}
    mapped: List[Pool] = []
    unmapped: List[Tuple[Pool, str]] = []
    for p in pools:
        if p.crush_rule not in problem:
            problem[p.crush_rule] = rule_problem(rules.get(p.crush_rule), mapped_ops, buckets, tunables)
        why = problem[p.crush_rule]
        if why is None:
            mapped.append(p)
        else:
            unmapped.append((p, why))
    return tuple(mapped), tuple(unmapped)
