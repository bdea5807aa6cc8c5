"""The CRUSH map as dense arrays, ready for vectorized mapping.

Buckets are rows indexed by -1-id (CRUSH's own indexing); their items and 16.16 weights
are padded to the widest bucket. Rules keep their steps with type names resolved.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from ..model.errors import AdvisorError
from ..model.mappable import bucket_problem
from ..model.cluster import Bucket
from ..model.snapshot import STEP_ARGS, TUNABLES, Rule, Snapshot
from .buckets import ALG_IDS, LIST, NEEDS_AUX, Tables, aux_row, tree_depth

# crush.h rule types. Squid's msr ("multi-step retry") rules run crush_msr_do_rule
# (crush/msr.py); a pool takes one of its twin type (CrushWrapper::rule_valid_for_pool_type)
RULE_REPLICATED, RULE_ERASURE, RULE_MSR_FIRSTN, RULE_MSR_INDEP = 1, 3, 4, 5
MSR_RULE_TYPES = (RULE_MSR_FIRSTN, RULE_MSR_INDEP)
MSR_TWIN = {RULE_REPLICATED: RULE_MSR_FIRSTN, RULE_ERASURE: RULE_MSR_INDEP}
MSR_CONFIG_OPS = ("set_msr_descents", "set_msr_collision_tries")
MSR_STEP_OPS = MSR_CONFIG_OPS + ("choosemsr",)

# The dense arrays hold a row per bucket id down to the lowest and a column per item of the
# widest bucket, once for the map and once per weight-set position: refuse a map whose rows
# x columns would not fit (2^25 cells: 256 MiB of int64) before allocating any of it.
MAX_CELLS = 1 << 25


@dataclass(frozen=True)
class Tunables:
    choose_total_tries: int
    chooseleaf_descend_once: int
    chooseleaf_vary_r: int
    chooseleaf_stable: int
    choose_local_tries: int
    choose_local_fallback_tries: int
    straw_calc_version: int
    msr_descents: int
    msr_collision_tries: int


@dataclass(frozen=True)
class ChooseArgs:
    """Per-bucket weight sets (one per position) and alternative ids for hashing."""
    weights: np.ndarray     # (buckets, positions, width)
    positions: np.ndarray   # (buckets,) how many positions each bucket's set has
    ids: np.ndarray         # (buckets, width)


@dataclass(frozen=True)
class CompiledCrush:
    items: np.ndarray       # (buckets, width) child ids
    weights: np.ndarray     # (buckets, width) 16.16 weights, 0 as padding
    size: np.ndarray        # (buckets,) number of children
    type_id: np.ndarray     # (buckets,)
    exists: np.ndarray      # (buckets,)
    supported: np.ndarray   # (buckets,) an algorithm crush/ maps, with rjenkins1
    alg_id: np.ndarray      # (buckets,) Ceph's CRUSH_BUCKET_* (0: none we map)
    # (buckets, width + 1) what list, tree and straw buckets draw with (buckets.aux_row);
    # (buckets, 0) when the map has none
    aux: np.ndarray
    alg: Tuple[str, ...]
    hashes: Tuple[str, ...]
    names: Tuple[str, ...]
    max_devices: int
    rules: Mapping[int, Rule]
    tunables: Tunables
    choose_args: Mapping[int, ChooseArgs]
    # what depends on the map alone, computed once (a step of a split plan maps a few PGs
    # at a time: at 10,000 OSDs these walks of every bucket cost 5 ms a run, and a plan
    # made 1,281 runs): rules found reachable, and mapper's hops and reach per type
    memo: Dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def tables(self) -> Tables:
        return Tables(self.items, self.weights, self.aux)

    @property
    def max_buckets(self) -> int:
        return int(self.size.shape[0])

    def find_rule(self, ruleset: int, rule_type: int, size: int) -> Optional[Rule]:
        """The rule a pool uses, as CrushWrapper::find_rule picks it (an msr rule for a
        pool of its twin type: Squid and later map by the pool's rule id alone, and the
        mon gives a pool only a rule valid for its type)."""
        types = (rule_type, MSR_TWIN.get(rule_type, rule_type))
        uniform = all(r.id == r.ruleset for r in self.rules.values())
        if uniform:
            r = self.rules.get(ruleset)
            return r if r is not None and r.type in types else None
        for rid in sorted(self.rules):
            r = self.rules[rid]
            if r.ruleset == ruleset and r.type in types and r.min_size <= size <= r.max_size:
                return r
        return None

    def check_mappable(self, rule: Rule) -> None:
        """Refuse, with model/mappable.py's sentence, a rule it would set aside: a bucket
        reached that we cannot map exactly."""
        if ("reachable", rule.id) in self.memo:
            return
        stack = [s.arg1 for s in rule.steps if s.op == "take" and s.arg1 < 0]
        seen = set()
        while stack:
            b = -1 - stack.pop()
            if b in seen or not 0 <= b < self.max_buckets or not self.exists[b]:
                continue
            seen.add(b)
            if not self.supported[b]:
                raise AdvisorError.invalid(bucket_problem(rule.name, self.names[b], self.alg[b],
                                                          self.hashes[b], int(self.size[b])) or "")
            kids = self.items[b, :self.size[b]]
            stack.extend(kids[kids < 0].tolist())
        self.memo[("reachable", rule.id)] = True


def _compile_choose_args(snap: Snapshot, items: np.ndarray, weights: np.ndarray,
                         size: np.ndarray) -> Dict[int, ChooseArgs]:
    out: Dict[int, ChooseArgs] = {}
    nb, width = items.shape
    for key, per_bucket in snap.choose_args.items():
        npos = max([len(ws) for ws, _ in per_bucket.values()] + [1])
        w = np.repeat(weights[:, None, :], npos, axis=1)
        positions = np.ones(nb, dtype=np.int64)
        ids = items.copy()
        for bid, (ws, alt_ids) in per_bucket.items():   # the loader checked ids and lengths
            b = -1 - bid
            n = int(size[b])
            for p, pos_w in enumerate(ws):
                w[b, p, :n] = pos_w
            if ws:
                positions[b] = len(ws)
            if alt_ids is not None:
                ids[b, :n] = alt_ids
        out[key] = ChooseArgs(weights=w, positions=positions, ids=ids)
    return out


def _positions(snap: Snapshot) -> int:
    """Rows x columns the weight sets take: one copy per position (at least 1) and the ids."""
    return sum(max([len(ws) for ws, _ in per_bucket.values()] + [1]) + 1
               for per_bucket in snap.choose_args.values())


def _aux_of(b: Bucket, alg: int, straw_calc_version: int) -> List[int]:
    """What the bucket draws with beside its items (buckets.aux_row): as the binary map
    stored it where it was read (straws, node weights; a list's sums after a 0), else
    computed from the dump's weights."""
    if b.stored:
        return [0, *b.stored] if alg == LIST else list(b.stored)
    return aux_row(alg, b.fixed_weights.tolist(), straw_calc_version)


def compile_crush(snap: Snapshot) -> CompiledCrush:
    buckets = snap.buckets
    nb = max([-1 - bid for bid in buckets] + [-1]) + 1
    width = max([b.items.shape[0] for b in buckets.values()] + [1])
    with_aux = any(ALG_IDS.get(b.alg) in NEEDS_AUX for b in buckets.values())
    arrays = 2 + _positions(snap) + with_aux
    cells = nb * width * arrays
    if cells > MAX_CELLS:
        raise AdvisorError.invalid(
            f"crush map too large to map: {nb} bucket ids x {width} items in the widest bucket "
            f"x {arrays} arrays is {cells} cells, over {MAX_CELLS}")
    tunables = Tunables(**{k: int(snap.tunables.get(k, default))
                           for k, (default, _, _) in TUNABLES.items()})
    alg_id = np.zeros(nb, dtype=np.int64)
    trees = [b.items.shape[0] for b in buckets.values() if b.alg == "tree"]
    aux = np.zeros((nb, max([width + 1] + [1 << tree_depth(s) for s in trees]) if with_aux else 0),
                   dtype=np.int64)
    items = np.zeros((nb, width), dtype=np.int64)
    weights = np.zeros((nb, width), dtype=np.int64)
    size = np.zeros(nb, dtype=np.int64)
    type_id = np.zeros(nb, dtype=np.int64)
    exists = np.zeros(nb, dtype=bool)
    supported = np.zeros(nb, dtype=bool)
    alg = [""] * nb
    hashes = [""] * nb
    names = [""] * nb
    max_dev = snap.osds.count
    for bid, b in buckets.items():
        i = -1 - bid
        n = b.items.shape[0]
        items[i, :n] = b.items
        weights[i, :n] = b.fixed_weights
        size[i] = n
        type_id[i] = b.type_id
        exists[i] = True
        supported[i] = bucket_problem("", b.name, b.alg, b.hash, n, b.stored) is None
        alg_id[i] = ALG_IDS.get(b.alg, 0) if supported[i] else 0
        if alg_id[i] in NEEDS_AUX:
            row = _aux_of(b, int(alg_id[i]), tunables.straw_calc_version)
            aux[i, :len(row)] = row
        alg[i], hashes[i], names[i] = b.alg, b.hash, b.name
        if n:
            max_dev = max(max_dev, int(b.items.max()) + 1)
    return CompiledCrush(
        items=items, weights=weights, size=size, type_id=type_id, exists=exists,
        supported=supported, alg_id=alg_id, aux=aux, alg=tuple(alg), hashes=tuple(hashes),
        names=tuple(names), max_devices=max_dev,
        # (a rule with a step the model does not know maps no pool: model/mappable.py)
        rules={rid: r for rid, r in snap.rules.items() if all(s.op in STEP_ARGS for s in r.steps)},
        tunables=tunables,
        choose_args=_compile_choose_args(snap, items, weights, size))
