"""An independent checker of up sets against a pool's CRUSH rule, from the raw JSON dumps.

Plain Python over `ceph osd dump` / `ceph osd crush dump`: shares no code with the balancer.
"""
from typing import Any, Dict, List, Set


def check_up_set(osd_dump: Dict[str, Any], crush: Dict[str, Any], pool: Dict[str, Any],
                 up: List[int]) -> List[str]:
    """Every way `up` breaks the pool's rule or the OSDs' state (empty when it is fine)."""
    problems = []
    none = 0x7FFFFFFF
    osds = [o for o in up if o != none and o >= 0]
    if len(set(osds)) != len(osds):
        problems.append(f"repeats an OSD: {up}")
    state = {o["osd"]: o for o in osd_dump["osds"]}
    for o in osds:
        s = state.get(o)
        if s is None or not s["up"] or not s["in"] or s["weight"] <= 0:
            problems.append(f"osd.{o} is down, out or of zero weight")
    buckets = {b["id"]: b for b in crush["buckets"]}
    parent: Dict[int, int] = {}
    weight: Dict[int, int] = {}
    for b in crush["buckets"]:
        if "~" in b["name"]:
            continue
        for it in b["items"]:
            parent.setdefault(it["id"], b["id"])
            if it["id"] >= 0:
                weight[it["id"]] = it["weight"]
    for o in osds:
        if weight.get(o, 0) <= 0:
            problems.append(f"osd.{o} has CRUSH weight 0")

    def under(item: int) -> Set[int]:
        found: Set[int] = set()
        stack = [item]
        while stack:
            b = buckets.get(stack.pop())
            if b is None:
                continue
            for it in b["items"]:
                (found.add if it["id"] >= 0 else stack.append)(it["id"])
        return found

    def ancestor(o: int, type_name: str) -> int:
        node = parent.get(o)
        while node is not None and buckets[node]["type_name"] != type_name:
            node = parent.get(node)
        return node if node is not None else -10**9 - o

    rule = next(r for r in crush["rules"] if r["rule_id"] == pool["crush_rule"])
    take = next(s for s in rule["steps"] if s["op"] == "take")
    allowed = under(take["item"])
    for o in osds:
        if o not in allowed:
            problems.append(f"osd.{o} is outside {take['item_name']}")
    chooses = [s for s in rule["steps"] if s["op"].startswith("choose")]
    size = pool["size"]
    nums = [s["num"] if s["num"] > 0 else s["num"] + size for s in chooses]
    for k, step in enumerate(chooses):
        per_bucket = 1
        for n in nums[k + 1:]:
            per_bucket *= n
        if step["type"] == "osd":
            continue
        count: Dict[int, int] = {}
        for o in osds:
            a = ancestor(o, step["type"])
            if a < -10**9 + 1:     # CRUSH never reaches an OSD outside every such bucket
                problems.append(f"osd.{o} has no {step['type']} above it: the rule cannot reach it")
            count[a] = count.get(a, 0) + 1
        if max(count.values(), default=0) > per_bucket:
            problems.append(f"{max(count.values())} replicas share a {step['type']} "
                            f"(rule allows {per_bucket}): {up}")
        # how many such buckets: at most the step's count within each bucket the step
        # before chose (in all, for the first step)
        above = chooses[k - 1]["type"] if k else None
        used: Dict[int, Set[int]] = {}
        for b in count:
            used.setdefault(ancestor(b, above) if above else 0, set()).add(b)
        for kids in used.values():
            if len(kids) > nums[k]:
                where = f"one {above}" if above else "the PG"
                problems.append(f"{len(kids)} {step['type']}s in {where} (rule allows "
                                f"{nums[k]}): {up}")
        # and Ceph's own count for a later choose step, over the whole PG (verify_upmap)
        if k and not step["op"].startswith("chooseleaf") and len(count) > nums[k]:
            problems.append(f"{len(count)} {step['type']}s in the PG: Ceph allows {nums[k]}: {up}")
    return problems
