"""One immutable numpy view of the cluster.

Built from the same four documents whether they come from the mgr (`get('osd_map')`,
`get('osd_map_crush')`, `get('pg_dump')`, `get('df')`) or from JSON dumps
(`ceph osd dump`, `ceph osd crush dump`, `ceph pg dump`, `ceph df`, all `-f json`):
the mgr hands out exactly those shapes, so one loader serves both and the live and
offline answers agree by construction. Nothing below this layer reads the mgr.
"""
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .errors import AdvisorError
from .options import INT_TEXT
from .constants import CRUSH_ITEM_NONE, NO_OSD, WEIGHT_ONE
from .pg_brief import SUMS

POOL_TYPES = {1: "replicated", 3: "erasure"}

# Cluster settings the layers above use, with Pacific's defaults for what a dump lacks.
CONFIG_DEFAULTS: Mapping[str, int] = {
    "mon_max_pg_per_osd": 250,
    "mon_max_pool_pg_num": 65536,
    "mon_target_pg_per_osd": 100,
    "osd_memory_target": 4 << 30,
    "osd_min_pg_log_entries": 250,
    "osd_max_pg_log_entries": 10000,
    "osd_target_pg_log_entries_per_osd": 300000,
    "osd_pg_log_dups_tracked": 3000,
}

Json = Mapping[str, Any]


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Bucket:
    id: int
    name: str
    type_name: str
    type_id: int
    alg: str
    hash: str
    items: np.ndarray     # child ids (OSDs >= 0, buckets < 0)
    weights: np.ndarray   # child weights in CRUSH units (1.0 == 0x10000)

    @property
    def fixed_weights(self) -> np.ndarray:
        """The weights as CRUSH stores them: 16.16 fixed point integers."""
        return np.rint(self.weights * WEIGHT_ONE).astype(np.int64)

    @property
    def is_shadow(self) -> bool:
        # device-class shadow trees are named "<bucket>~<class>"
        return "~" in self.name


@dataclass(frozen=True)
class Rule:
    id: int
    name: str
    type: int
    steps: Tuple[Mapping[str, Any], ...]
    ruleset: int = -1
    min_size: int = 1
    max_size: int = 10

    def take_items(self) -> List[int]:
        return [int(s["item"]) for s in self.steps if s.get("op") == "take"]


@dataclass(frozen=True)
class Pool:
    id: int
    name: str
    type: str
    size: int
    min_size: int
    crush_rule: int
    pg_num: int
    pgp_num: int
    pg_num_target: int
    pgp_num_target: int
    autoscale_mode: str
    erasure_code_profile: str
    options: Mapping[str, Any]
    stored: Optional[int]
    objects: Optional[int]
    hashpspool: bool = True
    data_chunks: int = 1      # EC k: a shard holds 1/k of a PG's bytes; replicas hold all


@dataclass(frozen=True)
class Osds:
    """Per-OSD vectors indexed by OSD id: 0 up to the highest id the maps name (below
    max_osd), and on to the highest device CRUSH names when that is past max_osd (such a
    device never exists)."""
    exists: np.ndarray
    up: np.ndarray
    in_: np.ndarray
    reweight: np.ndarray        # 0..1 (0 when out)
    primary_affinity: np.ndarray  # 0..1 (1 is the default)
    crush_weight: np.ndarray    # in CRUSH units, from the non-shadow tree
    device_class: Tuple[Optional[str], ...]
    host: Tuple[Optional[str], ...]
    bytes_used: np.ndarray      # -1 where no stats were given
    bytes_total: np.ndarray
    pgs_held: np.ndarray        # PGs the OSD says it holds (osd_stats num_pgs), -1 unknown:
    #                             with a deleted pool's PGs still being removed, and strays

    @property
    def count(self) -> int:
        return int(self.exists.shape[0])


@dataclass(frozen=True)
class Pgs:
    """One row per PG present in the PG stats."""
    pool: np.ndarray        # pool id
    ps: np.ndarray          # placement seed (the part after the dot)
    up: np.ndarray          # (n, width) OSD ids, NO_OSD for holes/padding
    up_primary: np.ndarray
    bytes: np.ndarray
    objects: np.ndarray
    state: Tuple[str, ...]
    acting: np.ndarray      # (n, width) like up: the OSDs that hold the PG now
    log_size: np.ndarray    # span of the PG log's versions (head - tail)
    log_tail: np.ndarray    # (n, 2) the log's tail version (log_start) as epoch, version
    split_bits: np.ndarray  # parent_split_bits: > 0 for a PG born in a split
    # whether the stats gave the logs (log_size, log_start, parent_split_bits): the brief
    # stats a big cluster is read through (model/pg_brief.py) do not, and the three are 0
    logs: bool = True

    @property
    def count(self) -> int:
        return int(self.pool.shape[0])

    def rows_of(self, pgids: Sequence[str]) -> np.ndarray:
        """The rows (indices) of those PGs ("POOL.SEED", seed in hex) the stats have."""
        want = np.array([(int(p) << 32) | int(s, 16) for p, s in (x.split(".") for x in pgids)],
                        dtype=np.int64)
        return np.flatnonzero(np.isin((self.pool.astype(np.int64) << 32) | self.ps.astype(np.int64), want))


@dataclass(frozen=True)
class Snapshot:
    epoch: int
    flags: Tuple[str, ...]
    osds: Osds
    buckets: Mapping[int, Bucket]
    rules: Mapping[int, Rule]
    tunables: Mapping[str, Any]
    pools: Tuple[Pool, ...]
    pgs: Optional[Pgs]
    pg_upmap: Mapping[str, Tuple[int, ...]]
    pg_upmap_items: Mapping[str, Tuple[Tuple[int, int], ...]]
    crush_types: Mapping[str, int] = field(default_factory=dict)
    # choose_args key (pool id, or -1 for the default) -> bucket id -> (weight_set, ids)
    choose_args: Mapping[int, Mapping[int, Tuple[Tuple[Tuple[int, ...], ...],
                                                 Optional[Tuple[int, ...]]]]] = \
        field(default_factory=dict)
    config: Mapping[str, int] = field(default_factory=lambda: dict(CONFIG_DEFAULTS))
    # `ceph osd pool autoscale-status -f json`, by pool name, when known
    autoscale: Optional[Mapping[str, Mapping[str, Any]]] = None
    misplaced_objects: int = 0    # object copies misplaced now (PG stats)
    # what is computed from this snapshot alone and may be shared by whoever reads it (the
    # mgr reuses a snapshot while the cluster is unchanged: its CRUSH results, its status);
    # not an argument, so dataclasses.replace gives a changed copy a memo of its own
    memo: Dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def mon_max_pg_per_osd(self) -> int:
        """One place for it: the config the snapshot was loaded with."""
        return int(self.config["mon_max_pg_per_osd"])

    def pool_by_name(self, name: str) -> Pool:
        for p in self.pools:
            if p.name == name:
                return p
        raise AdvisorError.not_found(f"pool '{name}' does not exist")

    def rule(self, rule_id: int) -> Rule:
        try:
            return self.rules[rule_id]
        except KeyError:
            raise AdvisorError.invalid(f"crush rule {rule_id} is not in the CRUSH map") from None


# -- bounds ------------------------------------------------------------------------------------
# What a dump may claim, checked before anything is sized by it: the loader also runs inside
# the mgr, so a corrupt number must be refused at once, never allocated or looped over. Each
# bound is far above what a real cluster reaches.
MAX_OSD = 1 << 20           # OSD ids 0..MAX_OSD-1 (large clusters have ~10^4 OSDs)
MAX_BUCKETS = 1 << 16       # bucket ids -1..-MAX_BUCKETS (CRUSH numbers them from -1 down)
MAX_PG_NUM = 1 << 20        # pg_num of one pool (mon_max_pool_pg_num is 65536 by default)
MAX_PG_REPLICAS = 1 << 22   # pg_num x size summed over the pools: what one CRUSH run holds
MAX_POOL_SIZE = 255         # replicas or shards of a PG (pg_pool_t keeps size in a byte)
MAX_TRIES = 1000            # CRUSH retries (choose_total_tries is 50 by default)
MAX_ID = (1 << 31) - 1      # pool, rule and bucket type ids are 32-bit in Ceph
MAX_INT64 = (1 << 63) - 1   # bytes, objects, log entries
MAX_KB = 1 << 53            # OSD sizes in KiB: x 1024 stays within int64
MAX_WEIGHT = 0xFFFFFFFF     # CRUSH weights are unsigned 16.16

# The range of each setting in CONFIG_DEFAULTS (others: 0..CONFIG_MAX); pg counts and
# memory are computed from them.
CONFIG_MAX = 1 << 40
# setting -> (least, most, ceiling): a ceiling above its bound caps nothing the model can
# reach, so it is read as the bound (a mon that allows pools of 2^24 PGs is still answered);
# any other value outside its bounds is refused. Unlisted settings: 0..CONFIG_MAX.
CONFIG_BOUNDS: Mapping[str, Tuple[int, int, bool]] = {
    # a threshold only, never a size: operators set it to 10^8 to silence Ceph's check, and
    # a bound at 2^20 left pg_advisor refusing every command on such a cluster
    "mon_max_pg_per_osd": (1, 1 << 53, False),
    "mon_max_pool_pg_num": (1, MAX_PG_NUM, True),
    "mon_target_pg_per_osd": (1, 1 << 20, False),
    "osd_memory_target": (1, 1 << 50, False),
}

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
}

# Pool options sizing reads, and their ranges (Ceph: pg_autoscale_bias within 0..1000).
POOL_OPTIONS: Mapping[str, Tuple[float, float]] = {
    "pg_num_min": (0, MAX_PG_NUM), "pg_num_max": (0, MAX_PG_NUM),
    "target_size_bytes": (0, MAX_INT64), "target_size_ratio": (0, 1e6),
    "pg_autoscale_bias": (0, 1000),
}


# -- loading -----------------------------------------------------------------------------------

Number = Union[int, float]


def _show(v: Any) -> str:
    """A value for a message, cut short (a dump may hold a 4000-digit number)."""
    s = str(v) if isinstance(v, (int, float, str)) else type(v).__name__
    return s if len(s) <= 24 else s[:20] + "..."


# how Ceph writes a number as a string ("16", "0.5"): ASCII digits, no spaces or "_" (which
# Python's int() and float() would take, as they take other scripts' digits)
_FLOAT_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?\Z")


def _number(v: Any, what: str) -> Number:
    """A finite number; Ceph prints some numbers as strings ("16"), so those count too."""
    if isinstance(v, str):
        if INT_TEXT.match(v):
            v = int(v)
        elif _FLOAT_TEXT.match(v):
            v = float(v)
        else:
            raise AdvisorError.invalid(f"{what} is not a number")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise AdvisorError.invalid(f"{what} is not a number")
    if isinstance(v, float) and not math.isfinite(v):
        # json reads NaN, Infinity and 1e999; nothing in a cluster map is infinite
        raise AdvisorError.invalid(f"{what} is {v}, not a finite number")
    return v


def _within(v: Number, lo: Number, hi: Number, what: str) -> None:
    if not lo <= v <= hi:
        raise AdvisorError.invalid(f"{what} is {_show(v)}; it must be within {lo}..{hi}")


def _as_int(v: Any, what: str, lo: int = -MAX_INT64 - 1, hi: int = MAX_INT64) -> int:
    x = _number(v, what)
    if isinstance(x, float) and not x.is_integer():
        raise AdvisorError.invalid(f"{what} is {_show(x)}, not a whole number")
    n = int(x)
    _within(n, lo, hi, what)
    return n


def _as_float(v: Any, what: str, lo: float, hi: float) -> float:
    x = _number(v, what)
    _within(x, lo, hi, what)    # before float(): a huge int would overflow it
    return float(x)


def _get(doc: Json, key: str, what: str, default: Any = None) -> Any:
    """doc[key]; `default`, when given, stands in for a missing or null field."""
    if not isinstance(doc, Mapping):
        raise AdvisorError.invalid(f"{what}: not an object")
    if default is not None and doc.get(key) is None:
        return default
    if key not in doc:
        raise AdvisorError.invalid(f"{what}: missing field '{key}'")
    return doc[key]


def _int(doc: Json, key: str, what: str, lo: int = -MAX_INT64 - 1, hi: int = MAX_INT64,
         default: Optional[int] = None) -> int:
    return _as_int(_get(doc, key, what, default), f"{what}: field '{key}'", lo, hi)


def _float(doc: Json, key: str, what: str, lo: float, hi: float,
           default: Optional[float] = None) -> float:
    return _as_float(_get(doc, key, what, default), f"{what}: field '{key}'", lo, hi)


def _str(doc: Json, key: str, what: str, default: Optional[str] = None) -> str:
    v = _get(doc, key, what, default)
    if not isinstance(v, str):
        raise AdvisorError.invalid(f"{what}: field '{key}' is not a string")
    return v


def _list(doc: Json, key: str, what: str, default: Optional[list] = None) -> Sequence[Any]:
    v = _get(doc, key, what, default)
    if not isinstance(v, list):
        raise AdvisorError.invalid(f"{what}: field '{key}' is not a list")
    return v


def _map(doc: Json, key: str, what: str) -> Json:
    """An optional object field ({} when missing or null)."""
    v = _get(doc, key, what, {})
    if not isinstance(v, Mapping):
        raise AdvisorError.invalid(f"{what}: field '{key}' is not an object")
    return v


def _osd_ids(row: Any, what: str) -> List[int]:
    """An up/acting/upmap set: at most MAX_POOL_SIZE OSD ids, -1 or CRUSH_ITEM_NONE for holes."""
    if not isinstance(row, list):
        raise AdvisorError.invalid(f"{what} is not a list")
    if len(row) > MAX_POOL_SIZE:
        raise AdvisorError.invalid(f"{what} has {len(row)} OSDs; a PG has at most {MAX_POOL_SIZE}")
    if all(type(o) is int for o in row) and (not row or NO_OSD <= min(row) and max(row) <= CRUSH_ITEM_NONE):
        return row      # the usual case, checked at C speed
    return [_as_int(o, what, NO_OSD, CRUSH_ITEM_NONE) for o in row]


def _load_buckets(crush: Json) -> Dict[int, Bucket]:
    out: Dict[int, Bucket] = {}
    names: Dict[str, int] = {}
    for b in _list(crush, "buckets", "crush dump"):
        what = f"crush dump: bucket {_str(b, 'name', 'crush dump: bucket')}"
        bid = _int(b, "id", what, -MAX_BUCKETS, -1)
        if bid in out:
            raise AdvisorError.invalid(f"{what}: id {bid} is also bucket {out[bid].name}")
        name = _str(b, "name", what)
        if name in names:
            raise AdvisorError.invalid(f"{what}: the name is also bucket {names[name]}'s")
        names[name] = bid
        items = [(_int(i, "id", what + ": item", -MAX_BUCKETS, MAX_OSD - 1),
                  _int(i, "weight", what + ": item", 0, MAX_WEIGHT))
                 for i in _list(b, "items", what)]
        out[bid] = Bucket(
            id=bid, name=_str(b, "name", what), type_name=_str(b, "type_name", what),
            type_id=_int(b, "type_id", what, 0, MAX_ID),
            alg=_str(b, "alg", what, "straw2"), hash=_str(b, "hash", what, "rjenkins1"),
            items=_frozen(np.array([i for i, _ in items], dtype=np.int64)),
            weights=_frozen(np.array([w for _, w in items], dtype=np.float64) / WEIGHT_ONE))
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


def _load_types(crush: Json) -> Dict[str, int]:
    return {_str(t, "name", "crush dump: type"): _int(t, "type_id", "crush dump: type", 0, MAX_ID)
            for t in _list(crush, "types", "crush dump", [])}


def _load_step(s: Json, rule: str, types: Mapping[str, int]) -> Dict[str, Any]:
    """One rule step, its arguments checked and made ints (type: a known type name)."""
    what = f"crush rule '{rule}': step"
    op = _str(s, "op", what)
    if op not in STEP_ARGS:
        raise AdvisorError.invalid(f"crush rule '{rule}': step '{op}' is not supported")
    what = f"crush rule '{rule}': step {op}"
    a1, a2 = STEP_ARGS[op]
    step = dict(s)
    if a1 == "item":
        step[a1] = _int(s, a1, what, -MAX_BUCKETS, MAX_OSD - 1)
    elif a1 is not None:
        # a choose step's count sizes the mapping's rows; a set_ step's is a retry count
        most = MAX_POOL_SIZE if a2 else MAX_TRIES
        step[a1] = _int(s, a1, what, -most, most)
    if a2 is not None:
        tname = _str(s, a2, what)
        if tname not in types:
            raise AdvisorError.invalid(f"crush rule '{rule}': unknown bucket type '{tname}'")
    return step


def _load_rules(crush: Json, types: Mapping[str, int]) -> Dict[int, Rule]:
    out: Dict[int, Rule] = {}
    for r in _list(crush, "rules", "crush dump"):
        name = _str(r, "rule_name", "crush dump: rule")
        what = f"crush dump: rule {name}"
        rid = _int(r, "rule_id", what, 0, MAX_ID)
        if rid in out:
            raise AdvisorError.invalid(f"{what}: rule_id {rid} is also rule {out[rid].name}")
        out[rid] = Rule(
            id=rid, name=name, type=_int(r, "type", what, 0, MAX_ID),
            steps=tuple(_load_step(s, name, types) for s in _list(r, "steps", what)),
            ruleset=_int(r, "ruleset", what, 0, MAX_ID, rid),
            min_size=_int(r, "min_size", what, 0, MAX_ID, 1),
            max_size=_int(r, "max_size", what, 0, MAX_ID, 10))
    return out


def _load_tunables(crush: Json) -> Dict[str, Any]:
    t = dict(_map(crush, "tunables", "crush dump"))
    for k, (default, lo, hi) in TUNABLES.items():
        t[k] = _int(t, k, "crush dump: tunables", lo, hi, default)
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


def _osd_placement(buckets: Mapping[int, Bucket], n_osd: int
                   ) -> Tuple[np.ndarray, List[Optional[str]]]:
    """Crush weight and host of each OSD, read from the real (non-shadow) tree; each
    bucket's nearest host is looked for once, not once per OSD."""
    weight = np.zeros(n_osd, dtype=np.float64)
    parent = bucket_parents(buckets)
    for b in buckets.values():      # the weight where the OSD's parent (its first holder) has it
        if not b.is_shadow:
            for child, w in zip(b.items.tolist(), b.weights.tolist()):
                if 0 <= child < n_osd and parent[child] == b.id:
                    weight[child] = w
    osds = sorted(o for o in parent if 0 <= o < n_osd)
    # the nearest ancestor of type host, else the direct parent
    nearest: Dict[int, Optional[str]] = {}
    host: List[Optional[str]] = [None] * n_osd
    for o in osds:
        bid = parent[o]
        if bid not in nearest:
            nearest[bid] = next((buckets[n].name for n in [bid] + walk_up(parent, bid)
                                 if buckets[n].type_name == "host"), None)
        host[o] = nearest[bid] or buckets[bid].name
    return weight, host


def _load_osds(osd_dump: Json, crush: Json, buckets: Mapping[int, Bucket],
               pg_map: Optional[Json], named: int = -1) -> Osds:
    """`named`: the highest OSD id an upmap or a PG's up or acting set names."""
    max_osd = _int(osd_dump, "max_osd", "osd dump", 0, MAX_OSD)
    ids = [_int(o, "osd", "osd dump: osd") for o in _list(osd_dump, "osds", "osd dump")]
    # The vectors end at the highest id anything names, not at max_osd: an id below max_osd
    # that nothing names does not exist and nothing reaches it, so it changes no answer,
    # while max_osd may reach 2^20 with a few OSDs (every vector and walk then cost 2^20).
    # A device CRUSH names past max_osd does not exist, as in Ceph (CRUSH skips it, OSDMap
    # drops it): the vectors cover it too, never existing, so every walk can index it.
    # A new cluster has pools before OSDs (max_osd 0): the vectors still hold one slot,
    # an osd.0 that does not exist, so that no walk indexes an empty vector.
    n = max([1, min(max_osd, max(ids + [named]) + 1)]
            + [int(b.items.max()) + 1 for b in buckets.values() if b.items.size])
    exists = np.zeros(n, dtype=bool)
    up = np.zeros(n, dtype=bool)
    in_ = np.zeros(n, dtype=bool)
    reweight = np.zeros(n, dtype=np.float64)
    affinity = np.ones(n, dtype=np.float64)
    for o in _list(osd_dump, "osds", "osd dump"):
        i = _int(o, "osd", "osd dump: osd")
        if not 0 <= i < max_osd:
            raise AdvisorError.invalid(f"osd dump: osd.{_show(i)} is outside max_osd {max_osd}")
        what = f"osd dump: osd.{i}"
        if exists[i]:
            raise AdvisorError.invalid(f"{what} is listed twice")
        exists[i] = True
        up[i] = bool(_int(o, "up", what))
        in_[i] = bool(_int(o, "in", what))
        reweight[i] = _float(o, "weight", what, 0.0, 1.0)
        affinity[i] = _float(o, "primary_affinity", what, 0.0, 1.0, 1.0)
    crush_weight, host = _osd_placement(buckets, n)
    dclass: List[Optional[str]] = [None] * n
    for d in _list(crush, "devices", "crush dump"):
        i = _int(d, "id", "crush dump: device")
        c = _get(d, "class", "crush dump: device", "")
        if not isinstance(c, str):
            raise AdvisorError.invalid(f"crush dump: device {i}: field 'class' is not a string")
        if 0 <= i < n:
            dclass[i] = c or None
    used = np.full(n, -1, dtype=np.int64)
    total = np.full(n, -1, dtype=np.int64)
    held = np.full(n, -1, dtype=np.int64)
    if pg_map is not None:
        for s in _list(pg_map, "osd_stats", "pg dump", []):
            i = _int(s, "osd", "pg dump: osd_stats")
            what = f"pg dump: osd_stats osd.{_show(i)}"
            kb_used, kb = _int(s, "kb_used", what, 0, MAX_KB), _int(s, "kb", what, 0, MAX_KB)
            num_pgs = _int(s, "num_pgs", what, -1, MAX_INT64, -1)
            if 0 <= i < n:
                used[i], total[i], held[i] = kb_used * 1024, kb * 1024, num_pgs
    return Osds(exists=_frozen(exists), up=_frozen(up), in_=_frozen(in_),
                reweight=_frozen(reweight), primary_affinity=_frozen(affinity),
                crush_weight=_frozen(crush_weight),
                device_class=tuple(dclass), host=tuple(host),
                bytes_used=_frozen(used), bytes_total=_frozen(total), pgs_held=_frozen(held))


def _pool_usage(df: Optional[Json], pg_map: Optional[Json]
                ) -> Dict[int, Tuple[int, int]]:
    """Stored bytes and objects per pool: `ceph df` when given, else the PG stats."""
    usage: Dict[int, Tuple[int, int]] = {}
    if df is not None:
        for p in _list(df, "pools", "df"):
            st = _get(p, "stats", "df: pool")
            usage[_int(p, "id", "df: pool")] = (
                _int(st, "stored", "df: pool stats", 0), _int(st, "objects", "df: pool stats", 0))
    elif pg_map is not None:
        for p in _list(pg_map, "pool_stats", "pg dump", []):
            st = _get(p, "stat_sum", "pg dump: pool_stats")
            usage[_int(p, "poolid", "pg dump: pool_stats")] = (
                _int(st, "num_bytes", "pg dump: pool_stats", 0),
                _int(st, "num_objects", "pg dump: pool_stats", 0))
    return usage


def _pool_options(p: Json, what: str) -> Dict[str, Any]:
    """The pool's options: the ones sizing reads checked, other plain values kept."""
    raw = _map(p, "options", what)
    out = {k: v for k, v in raw.items() if isinstance(v, (str, int, float, bool))}
    for k, (lo, hi) in POOL_OPTIONS.items():
        if k in out:
            out[k] = _float(out, k, f"{what}: options", lo, hi)
    return out


def _data_chunks(ptype: int, p: Json, profiles: Json, size: int, what: str) -> int:
    """EC k (a shard holds 1/k of a PG's bytes); 1 for other pools."""
    if ptype != 3:
        return 1
    name = _str(p, "erasure_code_profile", what)
    profile = profiles.get(name)
    if not isinstance(profile, Mapping):
        raise AdvisorError.invalid(f"{what}: erasure code profile '{name}' is not in the dump's "
                                   f"erasure_code_profiles")
    return _int(profile, "k", f"osd dump: erasure code profile {name}", 1, size)


def _load_pools(osd_dump: Json, usage: Mapping[int, Tuple[int, int]]) -> Tuple[Pool, ...]:
    pools: Dict[int, Pool] = {}
    profiles = _map(osd_dump, "erasure_code_profiles", "osd dump")
    for p in _list(osd_dump, "pools", "osd dump"):
        pid = _int(p, "pool", "osd dump: pool", 0, MAX_ID)
        what = f"osd dump: pool {pid}"
        if pid in pools:
            raise AdvisorError.invalid(f"{what}: the id is also pool {pools[pid].name}")
        size = _int(p, "size", what, 1, MAX_POOL_SIZE)
        pg_num = _int(p, "pg_num", what, 1, MAX_PG_NUM)
        pgp_num = _int(p, "pg_placement_num", what, 1, pg_num)
        pg_num_target = _int(p, "pg_num_target", what, 1, MAX_PG_NUM, pg_num)
        ptype = _int(p, "type", what, 0, MAX_ID)
        if ptype not in POOL_TYPES:
            raise AdvisorError.invalid(f"{what}: type {ptype} is neither replicated (1) nor erasure (3)")
        name = _str(p, "pool_name", what)
        twin = next((q.id for q in pools.values() if q.name == name), None)
        if twin is not None:
            raise AdvisorError.invalid(f"{what}: its name is also pool {twin}'s")
        stored, objects = usage.get(pid, (None, None))
        pools[pid] = Pool(
            id=pid, name=name,
            type=POOL_TYPES[ptype],
            size=size, min_size=_int(p, "min_size", what, 1, size),
            crush_rule=_int(p, "crush_rule", what, -MAX_ID - 1, MAX_ID),
            pg_num=pg_num, pgp_num=pgp_num, pg_num_target=pg_num_target,
            pgp_num_target=_int(p, "pg_placement_num_target", what, 1, MAX_PG_NUM, pgp_num),
            autoscale_mode=_str(p, "pg_autoscale_mode", what, ""),
            erasure_code_profile=_str(p, "erasure_code_profile", what, ""),
            options=_pool_options(p, what),
            stored=stored, objects=objects,
            hashpspool=bool(_int(p, "flags", what, 0, (1 << 64) - 1, 1) & 1),
            data_chunks=_data_chunks(ptype, p, profiles, size, what))
    # every PG of every pool is mapped at once: bound the whole before any mapping
    replicas = sum(max(q.pg_num, q.pg_num_target) * q.size for q in pools.values())
    if replicas > MAX_PG_REPLICAS:
        raise AdvisorError.invalid(f"osd dump: the pools hold {replicas} PG replicas (pg_num x "
                                   f"size); pg_advisor maps at most {MAX_PG_REPLICAS}")
    return tuple(pools[k] for k in sorted(pools))


def _load_choose_args(crush: Json, buckets: Mapping[int, Bucket]
                      ) -> Dict[int, Dict[int, Tuple[Tuple[Tuple[int, ...], ...],
                                                     Optional[Tuple[int, ...]]]]]:
    """choose_args weight sets, back in 16.16 fixed point (the dump prints them as floats)."""
    out: Dict[int, Dict[int, Tuple[Tuple[Tuple[int, ...], ...], Optional[Tuple[int, ...]]]]] = {}
    for key, entries in _map(crush, "choose_args", "crush dump").items():
        # -1: the default weight set; else a pool id
        k = _as_int(key, "crush dump: choose_args key", -1, MAX_ID)
        what = f"crush dump: choose_args {k}"
        if not isinstance(entries, list):
            raise AdvisorError.invalid(f"{what} is not a list")
        per_bucket = {}
        for e in entries:
            bid = _int(e, "bucket_id", what, -MAX_BUCKETS, -1)
            if bid not in buckets:
                raise AdvisorError.invalid(f"{what} names unknown bucket {bid}")
            n = buckets[bid].items.shape[0]
            bwhat = f"{what} bucket {bid}"
            # one weight set per replica position at most: the compiled map holds them all
            ws = _list(e, "weight_set", bwhat, [])
            if len(ws) > MAX_POOL_SIZE:
                raise AdvisorError.invalid(f"{bwhat}: {len(ws)} weight sets; at most "
                                           f"{MAX_POOL_SIZE} (one per position)")
            sets = []
            for pos in ws:
                if not isinstance(pos, list) or len(pos) != n:
                    raise AdvisorError.invalid(f"{bwhat}: a weight set that is not {n} weights "
                                               f"for {n} items")
                sets.append(tuple(int(round(_as_float(w, f"{bwhat}: weight", 0, MAX_WEIGHT / WEIGHT_ONE)
                                            * WEIGHT_ONE)) for w in pos))
            ids = None
            if e.get("ids") is not None:
                raw = _list(e, "ids", bwhat)
                if len(raw) != n:
                    raise AdvisorError.invalid(f"{bwhat}: {len(raw)} ids for {n} items")
                ids = tuple(_as_int(i, f"{bwhat}: id", -MAX_ID - 1, MAX_ID) for i in raw)
            per_bucket[bid] = (tuple(sets), ids)
        out[k] = per_bucket
    return out


def _parse_pgid(pgid: Any, what: str) -> Tuple[int, int]:
    try:
        pool, ps = pgid.split(".")
        p, s = int(pool), int(ps, 16)
    except (ValueError, AttributeError):
        raise AdvisorError.invalid(f"{what}: '{_show(pgid)}' is not a PG id") from None
    if not (0 <= p <= MAX_ID and 0 <= s < MAX_PG_NUM):
        raise AdvisorError.invalid(f"{what}: PG id '{_show(pgid)}' is out of range")
    return p, s


Columns = Dict[str, Any]   # the PG stats as arrays (and the states as a list), in dump order


def _load_pgs(pg_map: Json) -> Pgs:
    stats = _list(pg_map, "pg_stats", "pg dump")
    # a dump as Ceph writes it takes the fast path; anything else the careful one, which
    # names the first bad field (and accepts what it accepts: numbers as strings, say)
    c = _pg_columns_plain(stats)
    if c is None:
        c = _pg_columns_checked(stats)
    for m in (c["up"], c["acting"]):
        m[m == CRUSH_ITEM_NONE] = NO_OSD
    sums = pg_map.get(SUMS)      # the brief stats' bytes and objects (model/pg_brief.py)
    if sums is not None:
        c["bytes"], c["objects"] = (_brief_column(v, len(stats)) for v in sums)
    order = np.lexsort((c["ps"], c["pool"]))
    logs = all(type(s) is dict and "log_size" in s for s in stats)
    return Pgs(logs=logs, pool=_frozen(c["pool"][order]), ps=_frozen(c["ps"][order]),
               up=_frozen(c["up"][order]),
               up_primary=_frozen(c["up_primary"][order]), bytes=_frozen(c["bytes"][order]),
               objects=_frozen(c["objects"][order]), state=_states(c["state"], order),
               acting=_frozen(c["acting"][order]), log_size=_frozen(c["log_size"][order]),
               log_tail=_frozen(c["log_tail"][order]), split_bits=_frozen(c["split_bits"][order]))


def _states(states: List[str], order: np.ndarray) -> Tuple[str, ...]:
    """The states in `order`, each distinct state one string object: the parsed ones would
    keep the memory of every row they were parsed among (320,000 rows: some 200 MiB the
    mgr could not give back while the snapshot lives)."""
    names: Dict[str, str] = {}
    for name in set(states):
        names[name] = "".join(list(name))      # a new object, not the parsed one
    return tuple(map(names.__getitem__, map(states.__getitem__, order.tolist())))


def _all_of(values: Sequence[Any], kind: type) -> bool:
    """Every value is exactly of type `kind` (not a subclass: a bool is no int here); the
    type check runs in C, a field over 320,000 PGs in a few ms."""
    return set(map(type, values)) <= {kind}


def _brief_column(v: Any, n: int) -> np.ndarray:
    if not (isinstance(v, np.ndarray) and v.shape == (n,) and v.dtype == np.int64 and (v >= 0).all()):
        raise AdvisorError.invalid("pg dump: the brief stats' byte or object counts do not fit its rows")
    return v


def _ints(values: List[Any], lo: int, hi: int) -> Optional[np.ndarray]:
    """Plain ints within [lo, hi] as an array, or None (bools, strings, floats, out of range)."""
    if not _all_of(values, int):
        return None
    a = np.array(values, dtype=np.int64) if values else np.zeros(0, dtype=np.int64)
    return a if not a.size or (lo <= a.min() and a.max() <= hi) else None


def _eversions(values: List[Any]) -> Optional[np.ndarray]:
    """Ceph versions ("EPOCH'VERSION") as an (n, 2) array, or None if any is not one."""
    if not _all_of(values, str) or not set(map(str.count, values, itertools.repeat("'"))) <= {1}:
        return None
    flat = _ints(list(map(int, "'".join(values).split("'"))) if values else [], 0, MAX_INT64)
    return None if flat is None else flat.reshape(-1, 2)


def _eversion(v: str, what: str) -> Tuple[int, int]:
    epoch, _, version = v.partition("'")
    try:
        e, n = int(epoch), int(version)
    except ValueError:
        raise AdvisorError.invalid(f"{what}: '{_show(v)}' is not a version (EPOCH'VERSION)") from None
    if not (0 <= e <= MAX_INT64 and 0 <= n <= MAX_INT64):
        raise AdvisorError.invalid(f"{what}: '{_show(v)}' is out of range")
    return e, n


def _osd_matrix(rows: List[Any], width: int) -> Optional[np.ndarray]:
    """Ragged up/acting lists as an (n, width) matrix padded with NO_OSD, or None."""
    if not _all_of(rows, list):
        return None
    lens = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    flat = _ints([o for r in rows for o in r], NO_OSD, CRUSH_ITEM_NONE)
    if flat is None:
        return None
    m = np.full((len(rows), width), NO_OSD, dtype=np.int64)
    m[np.arange(width) < lens[:, None]] = flat      # row by row, as flat was made
    return m


def _field(rows: Sequence[Dict[str, Any]], key: str, default: Any) -> List[Any]:
    """Each row's `key`, `default` where it is absent or null (all of them, in the brief
    stats' rows, for the fields those lack: one C-level pass, not one call per row)."""
    got = [r.get(key) for r in rows]
    if None not in got:
        return got
    if got.count(None) == len(got):
        return [default] * len(got)
    return [default if v is None else v for v in got]


def _pg_columns_plain(stats: Sequence[Any]) -> Optional[Columns]:
    """The columns of a well-formed dump, a field at a time over all PGs; None at the
    first thing that is not plain (the checked loop then finds and names it)."""
    try:
        if not _all_of(stats, dict):
            return None
        pgids = [s["pgid"] for s in stats]
        if not _all_of(pgids, str) or not set(map(str.count, pgids, itertools.repeat("."))) <= {1}:
            return None
        parts = ".".join(pgids).split(".")      # one split for all: POOL, SEED, POOL, ...
        pool = _ints(list(map(int, parts[0::2])), 0, MAX_ID)
        ps = _ints(list(map(int, parts[1::2], itertools.repeat(16))), 0, MAX_PG_NUM - 1)
        ups = [s["up"] for s in stats]
        actings = _field(stats, "acting", [])
        width = max(map(len, ups + actings), default=0)
        sums = _field(stats, "stat_sum", {})
        states = _field(stats, "state", "unknown")
        if width > MAX_POOL_SIZE or not _all_of(sums, dict) or not _all_of(states, str):
            return None
        c: Columns = {
            "pool": pool, "ps": ps, "up": _osd_matrix(ups, width), "acting": _osd_matrix(actings, width),
            "up_primary": _ints(_field(stats, "up_primary", NO_OSD), NO_OSD, CRUSH_ITEM_NONE),
            "bytes": _ints(_field(sums, "num_bytes", 0), 0, MAX_INT64),
            "objects": _ints(_field(sums, "num_objects", 0), 0, MAX_INT64),
            "log_size": _ints(_field(stats, "log_size", 0), 0, MAX_INT64),
            "log_tail": _eversions(_field(stats, "log_start", "0'0")),
            "split_bits": _ints(_field(stats, "parent_split_bits", 0), 0, 32),
            "state": states,
        }
    except (KeyError, TypeError, AttributeError, ValueError, OverflowError):
        return None
    return None if any(v is None for v in c.values()) else c


def _pg_columns_checked(stats: Sequence[Any]) -> Columns:
    n = len(stats)
    ups, actings = [], []
    for s in stats:    # the rows first: their width sizes the matrices
        what = f"pg dump: pg {_show(_get(s, 'pgid', 'pg dump: pg'))}"
        ups.append(_osd_ids(_get(s, "up", what), f"{what}: up"))
        actings.append(_osd_ids(_get(s, "acting", what, []), f"{what}: acting"))
    width = max([len(r) for r in ups + actings], default=0)
    counts = ("pool", "ps", "bytes", "objects", "log_size", "split_bits")
    c: Columns = {k: np.zeros(n, dtype=np.int64) for k in counts}
    c["log_tail"] = np.zeros((n, 2), dtype=np.int64)
    c["up_primary"] = np.full(n, NO_OSD, dtype=np.int64)
    c["up"] = np.full((n, width), NO_OSD, dtype=np.int64)
    c["acting"] = np.full((n, width), NO_OSD, dtype=np.int64)
    c["state"] = []
    for i, s in enumerate(stats):
        c["pool"][i], c["ps"][i] = _parse_pgid(s["pgid"], "pg dump")
        what = f"pg dump: pg {_show(s['pgid'])}"
        c["up"][i, :len(ups[i])] = ups[i]
        c["acting"][i, :len(actings[i])] = actings[i]
        c["up_primary"][i] = _int(s, "up_primary", what, NO_OSD, CRUSH_ITEM_NONE, NO_OSD)
        summ = _map(s, "stat_sum", what)
        c["bytes"][i] = _int(summ, "num_bytes", what, 0, MAX_INT64, 0)
        c["objects"][i] = _int(summ, "num_objects", what, 0, MAX_INT64, 0)
        c["log_size"][i] = _int(s, "log_size", what, 0, MAX_INT64, 0)
        c["log_tail"][i] = _eversion(_str(s, "log_start", what, "0'0"), f"{what}: field 'log_start'")
        c["split_bits"][i] = _int(s, "parent_split_bits", what, 0, 32, 0)
        c["state"].append(_str(s, "state", what, "unknown"))
    return c


def _highest_named(upmap: Mapping[str, Sequence[int]], items: Mapping[str, Sequence[Tuple[int, int]]],
                   pgs: Optional[Pgs]) -> int:
    """The highest OSD id (holes aside) an upmap or a PG's up or acting set names, or -1."""
    top = [o for row in upmap.values() for o in row if o != CRUSH_ITEM_NONE]
    top += [o for pairs in items.values() for p in pairs for o in p if o != CRUSH_ITEM_NONE]
    if pgs is not None:
        for m in (pgs.up, pgs.acting):
            real = m[m != CRUSH_ITEM_NONE] if m.size else m
            if real.size:
                top.append(int(real.max()))
    return max(top, default=-1)


def _check_pg_osds(pgs: Pgs, n_osd: int) -> None:
    """Every OSD a PG's up or acting set names is one of the map's (the vectors index by it)."""
    for name, m in (("up", pgs.up), ("acting", pgs.acting)):
        bad = np.flatnonzero((m >= n_osd).any(axis=1)) if m.size else np.zeros(0, dtype=np.int64)
        if bad.size:
            i = int(bad[0])
            osd = int(m[i][m[i] >= n_osd][0])
            raise AdvisorError.invalid(f"pg dump: pg {int(pgs.pool[i])}.{int(pgs.ps[i]):x}: {name} "
                                       f"names osd.{osd}, which is not in the OSD map")


def _bound_upmaps(osd_dump: Json, pools: Sequence[Pool]) -> None:
    """The mon keeps at most one pg_upmap and one pg_upmap_items entry per PG (it drops those
    of PGs that are gone): refuse more before reading any of them."""
    total = sum(max(p.pg_num, p.pg_num_target) for p in pools)
    for key in ("pg_upmap", "pg_upmap_items"):
        entries = osd_dump.get(key)
        if isinstance(entries, list) and len(entries) > total:
            raise AdvisorError.invalid(f"osd dump: {len(entries):,} {key} entries for {total:,} PGs; "
                                       f"the mon keeps at most one per PG")


def load_upmaps(osd_dump: Json) -> Tuple[Dict[str, Tuple[int, ...]],
                                         Dict[str, Tuple[Tuple[int, int], ...]]]:
    """An OSD map's pg_upmap and pg_upmap_items (the module also reads them after setting
    items, to see what the mon kept)."""
    upmap: Dict[str, Tuple[int, ...]] = {}
    for u in _list(osd_dump, "pg_upmap", "osd dump", []):
        pgid = _str(u, "pgid", "osd dump: pg_upmap")
        _parse_pgid(pgid, "osd dump: pg_upmap")
        upmap[pgid] = tuple(_osd_ids(_get(u, "osds", f"osd dump: pg_upmap {pgid}"),
                                     f"osd dump: pg_upmap {pgid}: osds"))
    items: Dict[str, Tuple[Tuple[int, int], ...]] = {}
    for u in _list(osd_dump, "pg_upmap_items", "osd dump", []):
        pgid = _str(u, "pgid", "osd dump: pg_upmap_items")
        _parse_pgid(pgid, "osd dump: pg_upmap_items")
        what = f"osd dump: pg_upmap_items {pgid}"
        items[pgid] = tuple((_int(m, "from", what, NO_OSD, CRUSH_ITEM_NONE),
                             _int(m, "to", what, NO_OSD, CRUSH_ITEM_NONE))
                            for m in _list(u, "mappings", what))
    return upmap, items


def _load_config(mon_max_pg_per_osd: Any, config: Optional[Mapping[str, Any]]) -> Dict[str, int]:
    raw = dict(CONFIG_DEFAULTS, mon_max_pg_per_osd=mon_max_pg_per_osd)
    raw.update({k: v for k, v in (config or {}).items() if k in CONFIG_DEFAULTS and v is not None})
    cfg = {}
    for k, v in raw.items():
        lo, hi, ceiling = CONFIG_BOUNDS.get(k, (0, CONFIG_MAX, False))
        cfg[k] = min(_as_int(v, k, lo, max(hi, CONFIG_MAX) if ceiling else hi), hi)
    return cfg


def _load_autoscale(autoscale: Optional[Sequence[Json]]) -> Optional[Dict[str, Json]]:
    if autoscale is None:
        return None
    if not isinstance(autoscale, list) or any(not isinstance(a, Mapping) or "pool_name" not in a
                                              for a in autoscale):
        raise AdvisorError.invalid("autoscale status: not the output of "
                                   "`ceph osd pool autoscale-status -f json`")
    out: Dict[str, Json] = {}
    for a in autoscale:
        name = _str(a, "pool_name", "autoscale status")
        entry = dict(a)
        if a.get("pg_num_final") is not None:
            entry["pg_num_final"] = _int(a, "pg_num_final", f"autoscale status: pool {name}",
                                         0, MAX_PG_NUM)
        out[name] = entry
    return out


def pg_map_of(pg_dump: Json) -> Json:
    """`ceph pg dump -f json` wraps the map in {"pg_map": ...}; the mgr hands it bare."""
    if isinstance(pg_dump, Mapping) and "pg_map" in pg_dump:
        return pg_dump["pg_map"]
    return pg_dump


def load(osd_dump: Json, crush: Json, pg_dump: Optional[Json] = None,
         df: Optional[Json] = None, mon_max_pg_per_osd: int = 250,
         config: Optional[Mapping[str, Any]] = None,
         autoscale: Optional[Sequence[Json]] = None) -> Snapshot:
    """Build a Snapshot from the dumps; raise AdvisorError(EINVAL) on anything malformed.

    Every number is checked (finite, within the bounds above) before it sizes anything.
    """
    for doc, what, keys in ((osd_dump, "osd dump", ("epoch", "pools", "osds", "max_osd")),
                            (crush, "crush dump", ("buckets", "rules", "devices"))):
        if not isinstance(doc, Mapping) or any(k not in doc for k in keys):
            raise AdvisorError.invalid(
                f"{what}: not the output of `ceph {'osd dump' if what == 'osd dump' else 'osd crush dump'}"
                f" -f json` (needs fields {', '.join(keys)})")
    pg_map = pg_map_of(pg_dump) if pg_dump is not None else None
    if pg_map is not None and (not isinstance(pg_map, Mapping) or "pg_stats" not in pg_map):
        raise AdvisorError.invalid("pg dump: not the output of `ceph pg dump -f json` "
                                   "(needs field pg_stats)")
    if df is not None and (not isinstance(df, Mapping) or "pools" not in df):
        raise AdvisorError.invalid("df: not the output of `ceph df -f json` (needs field pools)")
    cfg = _load_config(mon_max_pg_per_osd, config)
    try:
        buckets = _load_buckets(crush)
        types = _load_types(crush)
        pools = _load_pools(osd_dump, _pool_usage(df, pg_map))
        _bound_upmaps(osd_dump, pools)
        upmap, upmap_items = load_upmaps(osd_dump)
        stat_sum = _map(_map(pg_map or {}, "pg_stats_sum", "pg dump"), "stat_sum",
                        "pg dump: pg_stats_sum")
        pgs = _load_pgs(pg_map) if pg_map is not None else None
        osds = _load_osds(osd_dump, crush, buckets, pg_map, _highest_named(upmap, upmap_items, pgs))
        if pgs is not None:
            _check_pg_osds(pgs, osds.count)
        return Snapshot(
            epoch=_int(osd_dump, "epoch", "osd dump", 0, (1 << 32) - 1),
            flags=tuple(f for f in _str(osd_dump, "flags", "osd dump", "").split(",") if f),
            osds=osds,
            buckets=buckets,
            rules=_load_rules(crush, types),
            tunables=_load_tunables(crush),
            pools=pools,
            pgs=pgs,
            pg_upmap=upmap, pg_upmap_items=upmap_items,
            crush_types=types,
            choose_args=_load_choose_args(crush, buckets),
            config=cfg,
            autoscale=_load_autoscale(autoscale),
            misplaced_objects=_int(stat_sum, "num_objects_misplaced", "pg dump: pg_stats_sum",
                                   0, MAX_INT64, 0))
    except AdvisorError:
        raise
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError) as e:
        # anything the field checks above did not anticipate still gets one clear line
        raise AdvisorError.invalid(f"malformed dump: {type(e).__name__}: {e}") from None
