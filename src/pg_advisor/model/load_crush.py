"""The CRUSH map's loader (`ceph osd crush dump -f json`, or the mgr's osd_map_crush):
buckets, types, rules and their steps, tunables and weight sets, each field checked."""
import dataclasses
from typing import Any, Dict, List, Mapping, MutableMapping, Optional, Tuple

import numpy as np

from .checks import (MAX_BUCKETS, MAX_ID, MAX_OSD, MAX_POOL_SIZE, MAX_TRIES, MAX_WEIGHT, as_float, as_int,
                     int_field, list_field, map_field, str_field)
from .cluster import Bucket, frozen, Json, Rule, RuleStep
from .constants import WEIGHT_ONE
from .errors import AdvisorError


# Rule steps: op -> (field of the first argument, field of the second). The loader checks
# them and the compiled map reads them by this one table.
STEP_ARGS: Mapping[str, Tuple[Optional[str], Optional[str]]] = {
    "take": ("item", None),
    "choose_firstn": ("num", "type"), "choose_indep": ("num", "type"),
    "chooseleaf_firstn": ("num", "type"), "chooseleaf_indep": ("num", "type"),
    "emit": (None, None), "noop": (None, None),
    "set_choose_tries": ("num", None), "set_chooseleaf_tries": ("num", None),
    "set_choose_local_tries": ("num", None), "set_choose_local_fallback_tries": ("num", None),
    "set_chooseleaf_vary_r": ("num", None), "set_chooseleaf_stable": ("num", None),
    # msr rules (Squid and later; rule types msr_firstn 4 and msr_indep 5)
    "choosemsr": ("num", "type"),
    "set_msr_descents": ("num", None), "set_msr_collision_tries": ("num", None),
}

# crush.h's step op codes: CrushWrapper::dump_rule names the common ones and prints any other
# (set_choose_local_tries, set_chooseleaf_vary_r, ...) as {"opcode": N, "arg1": A, "arg2": B}
OPCODES: Mapping[int, str] = {
    0: "noop", 1: "take", 2: "choose_firstn", 3: "choose_indep", 4: "emit",
    6: "chooseleaf_firstn", 7: "chooseleaf_indep", 8: "set_choose_tries", 9: "set_chooseleaf_tries",
    10: "set_choose_local_tries", 11: "set_choose_local_fallback_tries",
    12: "set_chooseleaf_vary_r", 13: "set_chooseleaf_stable",
    14: "set_msr_descents", 15: "set_msr_collision_tries", 16: "choosemsr",
}

# CRUSH tunables the mapper uses: (value when the dump lacks it (firefly and later), lo, hi).
# Others (profile, has_v5_rules, ...) are kept as they come.
TUNABLES: Mapping[str, Tuple[int, int, int]] = {
    "choose_total_tries": (50, 0, MAX_TRIES),
    "chooseleaf_descend_once": (1, 0, 1),
    "chooseleaf_vary_r": (1, 0, 255),
    "chooseleaf_stable": (1, 0, 1),
    "choose_local_tries": (0, 0, MAX_TRIES),
    "choose_local_fallback_tries": (0, 0, MAX_TRIES),
    # the crush_calc_straw that made straw (v1) buckets' straws (1 when a dump lacks it: Hammer on)
    "straw_calc_version": (1, 0, 255),
    # msr rules' retries (Squid's dump has them; CrushWrapper::set_default_msr_tunables)
    "msr_descents": (100, 0, MAX_TRIES),
    "msr_collision_tries": (100, 0, MAX_TRIES),
}


def load_buckets(crush: Json) -> Dict[int, Bucket]:
    out: Dict[int, Bucket] = {}
    names: Dict[str, int] = {}
    for b in list_field(crush, "buckets", "crush dump"):
        what = f"crush dump: bucket {str_field(b, 'name', 'crush dump: bucket')}"
        bid = int_field(b, "id", what, -MAX_BUCKETS, -1)
        if bid in out:
            raise AdvisorError.invalid(f"{what}: id {bid} is also bucket {out[bid].name}")
        name = str_field(b, "name", what)
        if name in names:
            raise AdvisorError.invalid(f"{what}: the name is also bucket {names[name]}'s")
        names[name] = bid
        items = [(int_field(i, "id", what + ": item", -MAX_BUCKETS, MAX_OSD - 1),
                  int_field(i, "weight", what + ": item", 0, MAX_WEIGHT))
                 for i in list_field(b, "items", what)]
        out[bid] = Bucket(
            id=bid, name=str_field(b, "name", what), type_name=str_field(b, "type_name", what),
            type_id=int_field(b, "type_id", what, 0, MAX_ID),
            alg=str_field(b, "alg", what, "straw2"), hash=str_field(b, "hash", what, "rjenkins1"),
            items=frozen(np.array([i for i, _ in items], dtype=np.int64)),
            weights=frozen(np.array([w for _, w in items], dtype=np.float64) / WEIGHT_ONE))
    _check_tree(out)
    return out


def _check_tree(buckets: Mapping[int, Bucket]) -> None:
    """Every bucket a bucket holds exists and none holds its own ancestor: every walk down
    the tree (CRUSH, balancing, the host of an OSD) must end."""
    kids = {bid: [c for c in b.items.tolist() if c < 0] for bid, b in buckets.items()}
    for bid, cs in kids.items():
        for c in cs:
            if c not in buckets:
                raise AdvisorError.invalid(f"crush dump: bucket {buckets[bid].name} holds bucket "
                                           f"{c}, which is not in the map")
    done: set = set()
    for root in kids:
        if root in done:
            continue
        path = {root}
        stack = [(root, iter(kids[root]))]
        while stack:        # depth first, without recursion: a map may be deep
            node, it = stack[-1]
            child = next(it, None)
            if child is None:
                stack.pop()
                path.discard(node)
                done.add(node)
            elif child in path:
                raise AdvisorError.invalid(
                    f"crush dump: bucket {buckets[node].name} holds {buckets[child].name}, "
                    f"which is itself or above it (a cycle)")
            elif child not in done:
                path.add(child)
                stack.append((child, iter(kids[child])))


def load_types(crush: Json) -> Dict[str, int]:
    return {str_field(t, "name", "crush dump: type"): int_field(t, "type_id", "crush dump: type", 0, MAX_ID)
            for t in list_field(crush, "types", "crush dump", [])}


def _load_step(s: Json, rule: str, types: Mapping[str, int]) -> RuleStep:
    """One rule step, its arguments checked and made ints (type: a known type name, made
    its id). A step of an op the model does not know is kept as its name alone: the pools
    of its rule are set aside as not mapped (model/mappable.py), the map and its other
    pools are read."""
    what = f"crush rule '{rule}': step"
    if "op" not in s and isinstance(s, dict) and "opcode" in s:
        return _load_opcode_step(s, rule, types)
    op = str_field(s, "op", what)
    if op not in STEP_ARGS:
        return RuleStep(op)
    what = f"crush rule '{rule}': step {op}"
    a1, a2 = STEP_ARGS[op]
    arg1 = arg2 = 0
    if a1 == "item":
        arg1 = int_field(s, a1, what, -MAX_BUCKETS, MAX_OSD - 1)
    elif a1 is not None:
        # a choose step's count sizes the mapping's rows; a set_ step's is a retry count
        most = MAX_POOL_SIZE if a2 else MAX_TRIES
        arg1 = int_field(s, a1, what, -most, most)
    if a2 is not None:
        tname = str_field(s, a2, what)
        if tname not in types:
            raise AdvisorError.invalid(f"crush rule '{rule}': unknown bucket type '{tname}'")
        arg2 = types[tname]
    return RuleStep(op, arg1, arg2)


def _load_opcode_step(s: Json, rule: str, types: Mapping[str, int]) -> RuleStep:
    """A step as dump_rule's default branch prints it: its op by number, both arguments as
    the map holds them (a type by its id). An op code crush.h does not name is kept as
    such: its rule's pools are set aside, the map is read."""
    code = int_field(s, "opcode", f"crush rule '{rule}': step", 0, MAX_ID)
    op = OPCODES.get(code)
    if op is None or op not in STEP_ARGS:
        return RuleStep(f"opcode {code}")
    what = f"crush rule '{rule}': step {op} (opcode {code})"
    a1, a2 = STEP_ARGS[op]
    most = MAX_OSD - 1 if a1 == "item" else MAX_POOL_SIZE if a2 else MAX_TRIES
    arg1 = int_field(s, "arg1", what, -MAX_BUCKETS if a1 == "item" else -most, most, 0)
    arg2 = int_field(s, "arg2", what, 0, MAX_ID, 0)
    if a2 is not None and arg2 not in set(types.values()):
        raise AdvisorError.invalid(f"{what}: unknown bucket type id {arg2}")
    return RuleStep(op, arg1, arg2 if a2 is not None else 0)


def load_rules(crush: Json, types: Mapping[str, int]) -> Dict[int, Rule]:
    out: Dict[int, Rule] = {}
    for r in list_field(crush, "rules", "crush dump"):
        name = str_field(r, "rule_name", "crush dump: rule")
        what = f"crush dump: rule {name}"
        rid = int_field(r, "rule_id", what, 0, MAX_ID)
        if rid in out:
            raise AdvisorError.invalid(f"{what}: rule_id {rid} is also rule {out[rid].name}")
        out[rid] = Rule(
            id=rid, name=name, type=int_field(r, "type", what, 0, MAX_ID),
            steps=tuple(_load_step(s, name, types) for s in list_field(r, "steps", what)),
            ruleset=int_field(r, "ruleset", what, 0, MAX_ID, rid),
            min_size=int_field(r, "min_size", what, 0, MAX_ID, 1),
            max_size=int_field(r, "max_size", what, 0, MAX_ID, 10))
    return out


def load_tunables(crush: Json) -> Dict[str, Any]:
    t = dict(map_field(crush, "tunables", "crush dump"))
    for k, (default, lo, hi) in TUNABLES.items():
        t[k] = int_field(t, k, "crush dump: tunables", lo, hi, default)
    return t


def bucket_parents(buckets: Mapping[int, Bucket], shadow: bool = False) -> Dict[int, int]:
    """Item (OSD or bucket) -> the bucket that holds it: in the real tree, or with
    `shadow` in the device-class shadow trees too (an OSD is then found in its real
    bucket first). An item in two buckets of one tree keeps the first."""
    parent: Dict[int, int] = {}
    for b in sorted(buckets.values(), key=lambda b: b.is_shadow):
        if shadow or not b.is_shadow:
            for child in b.items.tolist():
                parent.setdefault(child, b.id)
    return parent


def walk_up(parent: Mapping[int, int], item: int) -> List[int]:
    """The buckets above `item`, nearest first (the loader refuses cycles)."""
    out: List[int] = []
    node = parent.get(item)
    while node is not None:
        out.append(node)
        node = parent.get(node)
    return out


def add_weight_above(buckets: MutableMapping[int, Bucket], parent: Mapping[int, int], bucket: int,
                     delta: float) -> None:
    """`bucket`'s weight changed by `delta` in each bucket above it, as the mon carries a
    child's change up the tree (`parent` from bucket_parents)."""
    node = bucket
    for above in walk_up(parent, bucket):
        p = buckets[above]
        w = p.weights.copy()
        w[p.items == node] += delta
        buckets[above] = dataclasses.replace(p, weights=w)
        node = above


def load_choose_args(crush: Json, buckets: Mapping[int, Bucket]
                     ) -> Dict[int, Dict[int, Tuple[Tuple[Tuple[int, ...], ...],
                                                    Optional[Tuple[int, ...]]]]]:
    """choose_args weight sets, back in 16.16 fixed point (the dump prints them as floats)."""
    out: Dict[int, Dict[int, Tuple[Tuple[Tuple[int, ...], ...], Optional[Tuple[int, ...]]]]] = {}
    for key, entries in map_field(crush, "choose_args", "crush dump").items():
        # -1: the default weight set; else a pool id
        k = as_int(key, "crush dump: choose_args key", -1, MAX_ID)
        what = f"crush dump: choose_args {k}"
        if not isinstance(entries, list):
            raise AdvisorError.invalid(f"{what} is not a list")
        per_bucket = {}
        for e in entries:
            bid = int_field(e, "bucket_id", what, -MAX_BUCKETS, -1)
            if bid not in buckets:
                raise AdvisorError.invalid(f"{what} names unknown bucket {bid}")
            n = buckets[bid].items.shape[0]
            bwhat = f"{what} bucket {bid}"
            # one weight set per replica position at most: the compiled map holds them all
            ws = list_field(e, "weight_set", bwhat, [])
            if len(ws) > MAX_POOL_SIZE:
                raise AdvisorError.invalid(f"{bwhat}: {len(ws)} weight sets; at most "
                                           f"{MAX_POOL_SIZE} (one per position)")
            sets = []
            for pos in ws:
                if not isinstance(pos, list) or len(pos) != n:
                    raise AdvisorError.invalid(f"{bwhat}: a weight set that is not {n} weights "
                                               f"for {n} items")
                sets.append(tuple(int(round(as_float(w, f"{bwhat}: weight", 0, MAX_WEIGHT / WEIGHT_ONE)
                                            * WEIGHT_ONE)) for w in pos))
            ids = None
            if e.get("ids") is not None:
                raw = list_field(e, "ids", bwhat)
                if len(raw) != n:
                    raise AdvisorError.invalid(f"{bwhat}: {len(raw)} ids for {n} items")
                ids = tuple(as_int(i, f"{bwhat}: id", -MAX_ID - 1, MAX_ID) for i in raw)
            per_bucket[bid] = (tuple(sets), ids)
        out[k] = per_bucket
    return out
