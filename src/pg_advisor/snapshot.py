"""Layer 1: one immutable numpy view of the cluster.

Built from the same four documents whether they come from the mgr (`get('osd_map')`,
`get('osd_map_crush')`, `get('pg_dump')`, `get('df')`) or from JSON dumps
(`ceph osd dump`, `ceph osd crush dump`, `ceph pg dump`, `ceph df`, all `-f json`):
the mgr hands out exactly those shapes, so one loader serves both and the live and
offline answers agree by construction. Nothing below this layer reads the mgr.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .errors import AdvisorError

CRUSH_ITEM_NONE = 0x7FFFFFFF  # a hole in an EC up set
NO_OSD = -1                   # our padding / hole marker in int matrices
WEIGHT_ONE = 0x10000          # CRUSH weights are 16.16 fixed point
POOL_TYPES = {1: "replicated", 3: "erasure"}

# Cluster settings the layers above use, with Pacific's defaults for what a dump lacks.
CONFIG_DEFAULTS: Mapping[str, int] = {
    "mon_max_pg_per_osd": 250,
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
    """Per-OSD vectors indexed by OSD id (0 .. max_osd-1)."""
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

    @property
    def count(self) -> int:
        return int(self.exists.shape[0])

    def ids(self) -> np.ndarray:
        return np.flatnonzero(self.exists)


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
    log_size: np.ndarray    # PG log entries
    writes: np.ndarray      # write ops so far (an upper bound on entries ever logged)

    @property
    def count(self) -> int:
        return int(self.pool.shape[0])


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
    mon_max_pg_per_osd: int
    crush_types: Mapping[str, int] = field(default_factory=dict)
    # choose_args key (pool id, or -1 for the default) -> bucket id -> (weight_set, ids)
    choose_args: Mapping[int, Mapping[int, Tuple[Tuple[Tuple[int, ...], ...],
                                                 Optional[Tuple[int, ...]]]]] = \
        field(default_factory=dict)
    config: Mapping[str, int] = field(default_factory=lambda: dict(CONFIG_DEFAULTS))
    # `ceph osd pool autoscale-status -f json`, by pool name, when known
    autoscale: Optional[Mapping[str, Mapping[str, Any]]] = None
    misplaced_objects: int = 0    # object copies misplaced now (PG stats)
    sources: Tuple[str, ...] = field(default=())

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


# -- loading -----------------------------------------------------------------------------------

def _get(doc: Json, key: str, what: str) -> Any:
    if not isinstance(doc, Mapping) or key not in doc:
        raise AdvisorError.invalid(f"{what}: missing field '{key}'")
    return doc[key]


def _int(doc: Json, key: str, what: str) -> int:
    v = _get(doc, key, what)
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise AdvisorError.invalid(f"{what}: field '{key}' is not a number")
    try:
        return int(v)
    except ValueError:
        raise AdvisorError.invalid(f"{what}: field '{key}' is not a number") from None


def _list(doc: Json, key: str, what: str) -> Sequence[Any]:
    v = _get(doc, key, what)
    if not isinstance(v, list):
        raise AdvisorError.invalid(f"{what}: field '{key}' is not a list")
    return v


def _load_buckets(crush: Json) -> Dict[int, Bucket]:
    out: Dict[int, Bucket] = {}
    for b in _list(crush, "buckets", "crush dump"):
        what = f"crush dump: bucket {b.get('name', '?') if isinstance(b, Mapping) else '?'}"
        items = _list(b, "items", what)
        out[_int(b, "id", what)] = Bucket(
            id=_int(b, "id", what),
            name=str(_get(b, "name", what)),
            type_name=str(_get(b, "type_name", what)),
            type_id=_int(b, "type_id", what),
            alg=str(b.get("alg", "straw2")),
            hash=str(b.get("hash", "rjenkins1")),
            items=_frozen(np.array([_int(i, "id", what) for i in items], dtype=np.int64)),
            weights=_frozen(np.array([_int(i, "weight", what) for i in items],
                                     dtype=np.float64) / WEIGHT_ONE),
        )
    return out


def _load_rules(crush: Json) -> Dict[int, Rule]:
    out: Dict[int, Rule] = {}
    for r in _list(crush, "rules", "crush dump"):
        what = f"crush dump: rule {r.get('rule_name', '?') if isinstance(r, Mapping) else '?'}"
        out[_int(r, "rule_id", what)] = Rule(
            id=_int(r, "rule_id", what), name=str(_get(r, "rule_name", what)),
            type=_int(r, "type", what), steps=tuple(_list(r, "steps", what)),
            ruleset=int(r.get("ruleset", r["rule_id"])),
            min_size=int(r.get("min_size", 1)), max_size=int(r.get("max_size", 10)))
    return out


def _osd_placement(buckets: Mapping[int, Bucket], max_osd: int
                   ) -> Tuple[np.ndarray, List[Optional[str]]]:
    """Crush weight and host of each OSD, read from the real (non-shadow) tree."""
    weight = np.zeros(max_osd, dtype=np.float64)
    host: List[Optional[str]] = [None] * max_osd
    parent: Dict[int, int] = {}
    seen = np.zeros(max_osd, dtype=bool)
    for b in buckets.values():
        if b.is_shadow:
            continue
        for child, w in zip(b.items.tolist(), b.weights.tolist()):
            parent.setdefault(child, b.id)
            if 0 <= child < max_osd and not seen[child]:
                seen[child] = True
                weight[child] = w
    for osd in np.flatnonzero(seen).tolist():
        # the nearest ancestor of type host, else the direct parent
        node: Optional[int] = parent.get(osd)
        name = buckets[node].name if node is not None else None
        while node is not None:
            if buckets[node].type_name == "host":
                name = buckets[node].name
                break
            node = parent.get(node)
        host[osd] = name
    return weight, host


def _load_osds(osd_dump: Json, crush: Json, buckets: Mapping[int, Bucket],
               pg_map: Optional[Json]) -> Osds:
    max_osd = _int(osd_dump, "max_osd", "osd dump")
    exists = np.zeros(max_osd, dtype=bool)
    up = np.zeros(max_osd, dtype=bool)
    in_ = np.zeros(max_osd, dtype=bool)
    reweight = np.zeros(max_osd, dtype=np.float64)
    affinity = np.ones(max_osd, dtype=np.float64)
    for o in _list(osd_dump, "osds", "osd dump"):
        i = _int(o, "osd", "osd dump: osd")
        if not 0 <= i < max_osd:
            raise AdvisorError.invalid(f"osd dump: osd.{i} is outside max_osd {max_osd}")
        exists[i] = True
        up[i] = bool(_int(o, "up", f"osd dump: osd.{i}"))
        in_[i] = bool(_int(o, "in", f"osd dump: osd.{i}"))
        reweight[i] = float(_get(o, "weight", f"osd dump: osd.{i}"))
        affinity[i] = float(o.get("primary_affinity", 1.0))
    crush_weight, host = _osd_placement(buckets, max_osd)
    dclass: List[Optional[str]] = [None] * max_osd
    for d in _list(crush, "devices", "crush dump"):
        i = _int(d, "id", "crush dump: device")
        if 0 <= i < max_osd:
            dclass[i] = d.get("class")
    used = np.full(max_osd, -1, dtype=np.int64)
    total = np.full(max_osd, -1, dtype=np.int64)
    if pg_map is not None:
        for s in _list(pg_map, "osd_stats", "pg dump"):
            i = _int(s, "osd", "pg dump: osd_stats")
            if 0 <= i < max_osd:
                used[i] = _int(s, "kb_used", f"pg dump: osd_stats osd.{i}") * 1024
                total[i] = _int(s, "kb", f"pg dump: osd_stats osd.{i}") * 1024
    return Osds(exists=_frozen(exists), up=_frozen(up), in_=_frozen(in_),
                reweight=_frozen(reweight), primary_affinity=_frozen(affinity),
                crush_weight=_frozen(crush_weight),
                device_class=tuple(dclass), host=tuple(host),
                bytes_used=_frozen(used), bytes_total=_frozen(total))


def _pool_usage(df: Optional[Json], pg_map: Optional[Json]
                ) -> Dict[int, Tuple[int, int]]:
    """Stored bytes and objects per pool: `ceph df` when given, else the PG stats."""
    usage: Dict[int, Tuple[int, int]] = {}
    if df is not None:
        for p in _list(df, "pools", "df"):
            st = _get(p, "stats", "df: pool")
            usage[_int(p, "id", "df: pool")] = (
                _int(st, "stored", "df: pool stats"), _int(st, "objects", "df: pool stats"))
    elif pg_map is not None:
        for p in _list(pg_map, "pool_stats", "pg dump"):
            st = _get(p, "stat_sum", "pg dump: pool_stats")
            usage[_int(p, "poolid", "pg dump: pool_stats")] = (
                _int(st, "num_bytes", "pg dump: pool_stats"),
                _int(st, "num_objects", "pg dump: pool_stats"))
    return usage


def _load_pools(osd_dump: Json, usage: Mapping[int, Tuple[int, int]]) -> Tuple[Pool, ...]:
    pools = []
    profiles = osd_dump.get("erasure_code_profiles") or {}
    for p in _list(osd_dump, "pools", "osd dump"):
        pid = _int(p, "pool", "osd dump: pool")
        what = f"osd dump: pool {pid}"
        stored, objects = usage.get(pid, (None, None))
        pools.append(Pool(
            id=pid, name=str(_get(p, "pool_name", what)),
            type=POOL_TYPES.get(_int(p, "type", what), f"type-{p['type']}"),
            size=_int(p, "size", what), min_size=_int(p, "min_size", what),
            crush_rule=_int(p, "crush_rule", what),
            pg_num=_int(p, "pg_num", what), pgp_num=_int(p, "pg_placement_num", what),
            pg_num_target=int(p.get("pg_num_target", p["pg_num"])),
            pgp_num_target=int(p.get("pg_placement_num_target", p["pg_placement_num"])),
            autoscale_mode=str(p.get("pg_autoscale_mode", "")),
            erasure_code_profile=str(p.get("erasure_code_profile", "")),
            options=dict(p.get("options") or {}),
            stored=stored, objects=objects,
            hashpspool=bool(int(p.get("flags", 1)) & 1),
            data_chunks=(int(profiles.get(p.get("erasure_code_profile", ""), {}).get("k", 1))
                         if int(p["type"]) == 3 else 1)))
    return tuple(sorted(pools, key=lambda q: q.id))


def _load_choose_args(crush: Json) -> Dict[int, Dict[int, Tuple[Tuple[Tuple[int, ...], ...],
                                                                Optional[Tuple[int, ...]]]]]:
    """choose_args weight sets, back in 16.16 fixed point (the dump prints them as floats)."""
    out: Dict[int, Dict[int, Tuple[Tuple[Tuple[int, ...], ...], Optional[Tuple[int, ...]]]]] = {}
    raw = crush.get("choose_args") or {}
    if not isinstance(raw, Mapping):
        raise AdvisorError.invalid("crush dump: field 'choose_args' is not an object")
    for key, entries in raw.items():
        per_bucket = {}
        for e in entries:
            ws = tuple(tuple(int(round(float(w) * WEIGHT_ONE)) for w in pos)
                       for pos in e.get("weight_set", []))
            ids = tuple(int(i) for i in e["ids"]) if "ids" in e else None
            per_bucket[int(e["bucket_id"])] = (ws, ids)
        out[int(key)] = per_bucket
    return out


def _parse_pgid(pgid: str, what: str) -> Tuple[int, int]:
    try:
        pool, ps = pgid.split(".")
        return int(pool), int(ps, 16)
    except (ValueError, AttributeError):
        raise AdvisorError.invalid(f"{what}: '{pgid}' is not a PG id") from None


def _load_pgs(pg_map: Json) -> Pgs:
    stats = _list(pg_map, "pg_stats", "pg dump")
    n = len(stats)
    width = max([max(len(_list(s, "up", "pg dump: pg")), len(s.get("acting") or []))
                 for s in stats], default=0)
    pool = np.zeros(n, dtype=np.int64)
    ps = np.zeros(n, dtype=np.int64)
    up = np.full((n, width), NO_OSD, dtype=np.int64)
    prim = np.full(n, NO_OSD, dtype=np.int64)
    nbytes = np.zeros(n, dtype=np.int64)
    objects = np.zeros(n, dtype=np.int64)
    acting = np.full((n, width), NO_OSD, dtype=np.int64)
    log_size = np.zeros(n, dtype=np.int64)
    writes = np.zeros(n, dtype=np.int64)
    state: List[str] = []
    for i, s in enumerate(stats):
        pgid = str(_get(s, "pgid", "pg dump: pg"))
        pool[i], ps[i] = _parse_pgid(pgid, "pg dump")
        row = s["up"]
        up[i, :len(row)] = row
        prim[i] = int(s.get("up_primary", NO_OSD))
        summ = s.get("stat_sum", {})
        nbytes[i] = int(summ.get("num_bytes", 0))
        objects[i] = int(summ.get("num_objects", 0))
        writes[i] = int(summ.get("num_write", 0))
        log_size[i] = int(s.get("log_size") or 0)
        act = s.get("acting") or []
        acting[i, :len(act)] = act
        state.append(str(s.get("state", "unknown")))
    up[up == CRUSH_ITEM_NONE] = NO_OSD
    acting[acting == CRUSH_ITEM_NONE] = NO_OSD
    order = np.lexsort((ps, pool))
    return Pgs(pool=_frozen(pool[order]), ps=_frozen(ps[order]), up=_frozen(up[order]),
               up_primary=_frozen(prim[order]), bytes=_frozen(nbytes[order]),
               objects=_frozen(objects[order]), state=tuple(state[i] for i in order),
               acting=_frozen(acting[order]), log_size=_frozen(log_size[order]),
               writes=_frozen(writes[order]))


def _load_upmaps(osd_dump: Json) -> Tuple[Dict[str, Tuple[int, ...]],
                                          Dict[str, Tuple[Tuple[int, int], ...]]]:
    upmap = {str(u["pgid"]): tuple(int(o) for o in u["osds"])
             for u in osd_dump.get("pg_upmap", [])}
    items = {str(u["pgid"]): tuple((int(m["from"]), int(m["to"])) for m in u["mappings"])
             for u in osd_dump.get("pg_upmap_items", [])}
    return upmap, items


def pg_map_of(pg_dump: Json) -> Json:
    """`ceph pg dump -f json` wraps the map in {"pg_map": ...}; the mgr hands it bare."""
    if isinstance(pg_dump, Mapping) and "pg_map" in pg_dump:
        return pg_dump["pg_map"]
    return pg_dump


def load(osd_dump: Json, crush: Json, pg_dump: Optional[Json] = None,
         df: Optional[Json] = None, mon_max_pg_per_osd: int = 250,
         config: Optional[Mapping[str, Any]] = None,
         autoscale: Optional[Sequence[Json]] = None) -> Snapshot:
    """Build a Snapshot from the dumps; raise AdvisorError(EINVAL) on anything malformed."""
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
    if mon_max_pg_per_osd <= 0:
        raise AdvisorError.invalid("mon_max_pg_per_osd must be positive")
    cfg = dict(CONFIG_DEFAULTS, mon_max_pg_per_osd=int(mon_max_pg_per_osd))
    for k, v in (config or {}).items():
        if k in CONFIG_DEFAULTS and v is not None:
            try:
                cfg[k] = int(v)
            except (TypeError, ValueError):
                raise AdvisorError.invalid(f"config {k}: '{v}' is not an integer") from None
    if autoscale is not None and (not isinstance(autoscale, list)
                                  or any(not isinstance(a, Mapping) or "pool_name" not in a
                                         for a in autoscale)):
        raise AdvisorError.invalid("autoscale status: not the output of "
                                   "`ceph osd pool autoscale-status -f json`")
    try:
        buckets = _load_buckets(crush)
        upmap, upmap_items = _load_upmaps(osd_dump)
        flags = str(osd_dump.get("flags", ""))
        return Snapshot(
            epoch=_int(osd_dump, "epoch", "osd dump"),
            flags=tuple(f for f in flags.split(",") if f),
            osds=_load_osds(osd_dump, crush, buckets, pg_map),
            buckets=buckets,
            rules=_load_rules(crush),
            tunables=dict(crush.get("tunables") or {}),
            pools=_load_pools(osd_dump, _pool_usage(df, pg_map)),
            pgs=_load_pgs(pg_map) if pg_map is not None else None,
            pg_upmap=upmap, pg_upmap_items=upmap_items,
            mon_max_pg_per_osd=int(mon_max_pg_per_osd),
            crush_types={str(t["name"]): int(t["type_id"]) for t in crush.get("types", [])},
            choose_args=_load_choose_args(crush),
            config=cfg,
            autoscale=({str(a["pool_name"]): a for a in autoscale}
                       if autoscale is not None else None),
            misplaced_objects=int((pg_map or {}).get("pg_stats_sum", {}).get("stat_sum", {})
                                  .get("num_objects_misplaced", 0)),
            sources=tuple(s for s, d in (("osd_dump", osd_dump), ("crush", crush),
                                         ("pg_dump", pg_dump), ("df", df)) if d is not None))
    except AdvisorError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        # anything the field checks above did not anticipate still gets one clear line
        raise AdvisorError.invalid(f"malformed dump: {type(e).__name__}: {e}") from None
