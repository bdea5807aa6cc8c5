"""The OSDMap's loader (`ceph osd dump -f json`, or the mgr's osd_map): OSDs, pools,
and the upmap entries, each field checked."""
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .checks import (MAX_ID, MAX_INT64, MAX_KB, MAX_OSD, MAX_PG_NUM, MAX_PG_REPLICAS, MAX_POOL_SIZE,
                     float_field, get_field, int_field, list_field, map_field, osd_ids, parse_pgid, show,
                     str_field)
from .cluster import POOL_TYPES, Bucket, frozen, Json, Osds, Pgs, Pool
from .constants import CRUSH_ITEM_NONE, NO_OSD
from .errors import AdvisorError
from .load_crush import bucket_parents, walk_up


# Pool options sizing reads, and their ranges (Ceph: pg_autoscale_bias within 0..1000).
POOL_OPTIONS: Mapping[str, Tuple[float, float]] = {
    "pg_num_min": (0, MAX_PG_NUM), "pg_num_max": (0, MAX_PG_NUM),
    "target_size_bytes": (0, MAX_INT64), "target_size_ratio": (0, 1e6),
    "pg_autoscale_bias": (0, 1000),
}


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


def load_osds(osd_dump: Json, crush: Json, buckets: Mapping[int, Bucket],
              pg_map: Optional[Json], named: int = -1) -> Osds:
    """`named`: the highest OSD id an upmap or a PG's up or acting set names."""
    max_osd = int_field(osd_dump, "max_osd", "osd dump", 0, MAX_OSD)
    ids = [int_field(o, "osd", "osd dump: osd") for o in list_field(osd_dump, "osds", "osd dump")]
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
    for o in list_field(osd_dump, "osds", "osd dump"):
        i = int_field(o, "osd", "osd dump: osd")
        if not 0 <= i < max_osd:
            raise AdvisorError.invalid(f"osd dump: osd.{show(i)} is outside max_osd {max_osd}")
        what = f"osd dump: osd.{i}"
        if exists[i]:
            raise AdvisorError.invalid(f"{what} is listed twice")
        exists[i] = True
        up[i] = bool(int_field(o, "up", what))
        in_[i] = bool(int_field(o, "in", what))
        reweight[i] = float_field(o, "weight", what, 0.0, 1.0)
        affinity[i] = float_field(o, "primary_affinity", what, 0.0, 1.0, 1.0)
    crush_weight, host = _osd_placement(buckets, n)
    dclass: List[Optional[str]] = [None] * n
    for d in list_field(crush, "devices", "crush dump"):
        i = int_field(d, "id", "crush dump: device")
        c = get_field(d, "class", "crush dump: device", "")
        if not isinstance(c, str):
            raise AdvisorError.invalid(f"crush dump: device {i}: field 'class' is not a string")
        if 0 <= i < n:
            dclass[i] = c or None
    used = np.full(n, -1, dtype=np.int64)
    total = np.full(n, -1, dtype=np.int64)
    held = np.full(n, -1, dtype=np.int64)
    if pg_map is not None:
        for s in list_field(pg_map, "osd_stats", "pg dump", []):
            i = int_field(s, "osd", "pg dump: osd_stats")
            what = f"pg dump: osd_stats osd.{show(i)}"
            kb_used, kb = int_field(s, "kb_used", what, 0, MAX_KB), int_field(s, "kb", what, 0, MAX_KB)
            num_pgs = int_field(s, "num_pgs", what, -1, MAX_INT64, -1)
            if 0 <= i < n:
                used[i], total[i], held[i] = kb_used * 1024, kb * 1024, num_pgs
    return Osds(exists=frozen(exists), up=frozen(up), in_=frozen(in_),
                reweight=frozen(reweight), primary_affinity=frozen(affinity),
                crush_weight=frozen(crush_weight),
                device_class=tuple(dclass), host=tuple(host),
                bytes_used=frozen(used), bytes_total=frozen(total), pgs_held=frozen(held))


def _pool_options(p: Json, what: str) -> Dict[str, Any]:
    """The pool's options: the ones sizing reads checked, other plain values kept."""
    raw = map_field(p, "options", what)
    out = {k: v for k, v in raw.items() if isinstance(v, (str, int, float, bool))}
    for k, (lo, hi) in POOL_OPTIONS.items():
        if k in out:
            out[k] = float_field(out, k, f"{what}: options", lo, hi)
    return out


def _data_chunks(ptype: int, p: Json, profiles: Json, size: int, what: str) -> int:
    """EC k (a shard holds 1/k of a PG's bytes); 1 for other pools."""
    if ptype != 3:
        return 1
    name = str_field(p, "erasure_code_profile", what)
    profile = profiles.get(name)
    if not isinstance(profile, Mapping):
        raise AdvisorError.invalid(f"{what}: erasure code profile '{name}' is not in the dump's "
                                   f"erasure_code_profiles")
    return int_field(profile, "k", f"osd dump: erasure code profile {name}", 1, size)


def load_pools(osd_dump: Json, usage: Mapping[int, Tuple[int, int, Optional[int]]]) -> Tuple[Pool, ...]:
    pools: Dict[int, Pool] = {}
    profiles = map_field(osd_dump, "erasure_code_profiles", "osd dump")
    for p in list_field(osd_dump, "pools", "osd dump"):
        pid = int_field(p, "pool", "osd dump: pool", 0, MAX_ID)
        what = f"osd dump: pool {pid}"
        if pid in pools:
            raise AdvisorError.invalid(f"{what}: the id is also pool {pools[pid].name}")
        size = int_field(p, "size", what, 1, MAX_POOL_SIZE)
        pg_num = int_field(p, "pg_num", what, 1, MAX_PG_NUM)
        pgp_num = int_field(p, "pg_placement_num", what, 1, pg_num)
        pg_num_target = int_field(p, "pg_num_target", what, 1, MAX_PG_NUM, pg_num)
        ptype = int_field(p, "type", what, 0, MAX_ID)
        if ptype not in POOL_TYPES:
            raise AdvisorError.invalid(f"{what}: type {ptype} is neither replicated (1) nor erasure (3)")
        name = str_field(p, "pool_name", what)
        twin = next((q.id for q in pools.values() if q.name == name), None)
        if twin is not None:
            raise AdvisorError.invalid(f"{what}: its name is also pool {twin}'s")
        stored, objects, raw = usage.get(pid, (None, None, None))
        pools[pid] = Pool(
            id=pid, name=name,
            type=POOL_TYPES[ptype],
            size=size, min_size=int_field(p, "min_size", what, 1, size),
            crush_rule=int_field(p, "crush_rule", what, -MAX_ID - 1, MAX_ID),
            pg_num=pg_num, pgp_num=pgp_num, pg_num_target=pg_num_target,
            pgp_num_target=int_field(p, "pg_placement_num_target", what, 1, MAX_PG_NUM, pgp_num),
            autoscale_mode=str_field(p, "pg_autoscale_mode", what, ""),
            erasure_code_profile=str_field(p, "erasure_code_profile", what, ""),
            options=_pool_options(p, what),
            stored=stored, objects=objects,
            hashpspool=bool(int_field(p, "flags", what, 0, (1 << 64) - 1, 1) & 1),
            data_chunks=_data_chunks(ptype, p, profiles, size, what),
            bulk="bulk" in str_field(p, "flags_names", what, "").split(","),
            bytes_used=raw)
    # every PG of every pool is mapped at once: bound the whole before any mapping
    replicas = sum(max(q.pg_num, q.pg_num_target) * q.size for q in pools.values())
    if replicas > MAX_PG_REPLICAS:
        raise AdvisorError.invalid(f"osd dump: the pools hold {replicas} PG replicas (pg_num x "
                                   f"size); pg_advisor maps at most {MAX_PG_REPLICAS}")
    return tuple(pools[k] for k in sorted(pools))


def highest_named(upmap: Mapping[str, Sequence[int]], items: Mapping[str, Sequence[Tuple[int, int]]],
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


def bound_upmaps(osd_dump: Json, pools: Sequence[Pool]) -> None:
    """The mon keeps at most one pg_upmap and one pg_upmap_items entry per PG (it drops those
    of PGs that are gone): refuse more before reading any of them."""
    total = sum(max(p.pg_num, p.pg_num_target) for p in pools)
    for key in ("pg_upmap", "pg_upmap_items", "pg_upmap_primaries"):
        entries = osd_dump.get(key)
        if isinstance(entries, list) and len(entries) > total:
            raise AdvisorError.invalid(f"osd dump: {len(entries):,} {key} entries for {total:,} PGs; "
                                       f"the mon keeps at most one per PG")


def load_upmaps(osd_dump: Json) -> Tuple[Dict[str, Tuple[int, ...]],
                                         Dict[str, Tuple[Tuple[int, int], ...]]]:
    """An OSD map's pg_upmap and pg_upmap_items (the module also reads them after setting
    items, to see what the mon kept)."""
    upmap: Dict[str, Tuple[int, ...]] = {}
    for u in list_field(osd_dump, "pg_upmap", "osd dump", []):
        pgid = str_field(u, "pgid", "osd dump: pg_upmap")
        parse_pgid(pgid, "osd dump: pg_upmap")
        upmap[pgid] = tuple(osd_ids(get_field(u, "osds", f"osd dump: pg_upmap {pgid}"),
                                    f"osd dump: pg_upmap {pgid}: osds"))
    items: Dict[str, Tuple[Tuple[int, int], ...]] = {}
    for u in list_field(osd_dump, "pg_upmap_items", "osd dump", []):
        pgid = str_field(u, "pgid", "osd dump: pg_upmap_items")
        parse_pgid(pgid, "osd dump: pg_upmap_items")
        what = f"osd dump: pg_upmap_items {pgid}"
        items[pgid] = tuple((int_field(m, "from", what, NO_OSD, CRUSH_ITEM_NONE),
                             int_field(m, "to", what, NO_OSD, CRUSH_ITEM_NONE))
                            for m in list_field(u, "mappings", what))
    return upmap, items


def load_upmap_primaries(osd_dump: Json) -> Dict[str, int]:
    """An OSD map's pg_upmap_primaries (Reef on: `ceph osd pg-upmap-primary`), PG -> the
    OSD to be its primary; none in a map from before Reef."""
    out: Dict[str, int] = {}
    for u in list_field(osd_dump, "pg_upmap_primaries", "osd dump", []):
        pgid = str_field(u, "pgid", "osd dump: pg_upmap_primaries")
        parse_pgid(pgid, "osd dump: pg_upmap_primaries")
        out[pgid] = int_field(u, "primary_osd", f"osd dump: pg_upmap_primaries {pgid}",
                              NO_OSD, CRUSH_ITEM_NONE)
    return out
