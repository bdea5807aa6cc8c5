"""What adding a host of new OSDs would move, before it is added: `simulate --add-host`.

The map is grown as Ceph grows it when OSDs start with a crush location: a straw2 host
bucket under the root, its OSDs up, in, reweight 1, the host's weight added to the root
(and to the root's ancestors, and to the device-class shadow trees when the OSDs have a
class). CRUSH maps every pool on both maps; the PGs whose sets change are what Ceph would
backfill at once, and what pin-remapped would pin and drain in rounds within the budget.
"""
import dataclasses
from dataclasses import dataclass
import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..crush.placement import Placer
from ..rules.share import pool_share
from ..rules.reach import rule_weights
from ..model.distribution import spread, up_counts
from ..model.distribution import object_copies
from ..model.checks import MAX_OSD_CRUSH_WEIGHT
from ..model.errors import AdvisorError
from ..model.misplaced import shard_objects
from ..model.snapshot import Bucket, Osds, Snapshot, add_weight_above, bucket_parents
from .whatif import Change, _movement, mon_cleaned

MAX_NEW_OSDS = 1024
MAX_RATE_MIB_S = 1e7      # backfill throughput a time estimate may assume
MIB = 1 << 20


@dataclass(frozen=True)
class NewHost:
    """A host to add: `count` new OSDs of CRUSH weight `weight` each, under `root`, of
    `device_class` (None: the most common one)."""
    name: str
    count: int
    weight: float
    device_class: Optional[str] = None
    root: str = "default"


def _add_child(buckets: Dict[int, Bucket], parent: int, child: int, weight: float) -> None:
    """`child` (of `weight`) into `parent`, and the weight up through its ancestors (a
    shadow bucket's are shadow buckets: both trees are walked)."""
    b = buckets[parent]
    buckets[parent] = dataclasses.replace(b, items=np.append(b.items, child),
                                          weights=np.append(b.weights, weight))
    add_weight_above(buckets, bucket_parents(buckets, shadow=True), parent, weight)


def with_host(snap: Snapshot, name: str, count: int, weight: float, device_class: Optional[str] = None,
              root: str = "default") -> Tuple[Snapshot, List[int], Optional[str]]:
    """The snapshot with a host `name` of `count` new OSDs of CRUSH weight `weight` under
    `root`; the new OSD ids; their device class (default: the most common one)."""
    if not 1 <= count <= MAX_NEW_OSDS:
        raise AdvisorError.invalid(f"--osds must be within 1..{MAX_NEW_OSDS}, not {count}")
    if not (math.isfinite(weight) and 0 < weight <= MAX_OSD_CRUSH_WEIGHT):
        raise AdvisorError.invalid(f"--weight (each new OSD's CRUSH weight) must be within "
                                   f"(0, {MAX_OSD_CRUSH_WEIGHT:g}], not {weight}")
    by_name = {b.name: b for b in snap.buckets.values()}
    if name in by_name or "~" in name or not name.strip():
        raise AdvisorError.invalid(f"a bucket named '{name[:80]}' exists already (or the name is not one)")
    if root not in by_name or by_name[root].is_shadow:
        raise AdvisorError.not_found(f"no CRUSH bucket '{root[:80]}' to add the host under")
    if "host" not in snap.crush_types:
        raise AdvisorError.invalid("the CRUSH map has no type 'host'")
    if snap.choose_args:
        raise AdvisorError.invalid("the CRUSH map has weight sets (choose_args): adding a host "
                                   "to them is not simulated")
    o = snap.osds
    if device_class is None:     # as most OSDs under the root have it
        classes = [c for c in o.device_class if c]
        device_class = max(set(classes), key=classes.count) if classes else None
    # as `ceph osd new` numbers them: the lowest ids no OSD has (a new cluster's first is 0)
    free = np.flatnonzero(~o.exists)[:count].tolist()
    ids = free + list(range(o.count, o.count + count - len(free)))
    size = max(o.count, ids[-1] + 1)
    buckets = dict(snap.buckets)
    next_id = min(buckets, default=0) - 1
    host_t = snap.crush_types["host"]
    trees = [(root, name)]
    if device_class and f"{root}~{device_class}" in by_name:
        trees.append((f"{root}~{device_class}", f"{name}~{device_class}"))
    for parent_name, host_name in trees:
        buckets[next_id] = Bucket(id=next_id, name=host_name, type_name="host", type_id=host_t,
                                  alg="straw2", hash="rjenkins1", items=np.array(ids, dtype=np.int64),
                                  weights=np.full(count, float(weight)))
        _add_child(buckets, by_name[parent_name].id, next_id, weight * count)
        next_id -= 1

    def grow(v: np.ndarray, pad: Any, new: Any) -> np.ndarray:
        out = np.concatenate([v, np.full(size - v.size, pad, dtype=v.dtype)])
        out[ids] = new
        return out

    def grow_names(v: Tuple[Any, ...], new: Any) -> Tuple[Any, ...]:
        out = list(v) + [None] * (size - len(v))
        for i in ids:
            out[i] = new
        return tuple(out)
    osds = Osds(exists=grow(o.exists, False, True), up=grow(o.up, False, True), in_=grow(o.in_, False, True),
                reweight=grow(o.reweight, 0.0, 1.0), primary_affinity=grow(o.primary_affinity, 1.0, 1.0),
                crush_weight=grow(o.crush_weight, 0.0, weight),
                device_class=grow_names(o.device_class, device_class), host=grow_names(o.host, name),
                bytes_used=grow(o.bytes_used, -1, -1), bytes_total=grow(o.bytes_total, -1, -1),
                pgs_held=grow(o.pgs_held, 0, 0))
    return dataclasses.replace(snap, osds=osds, buckets=buckets), ids, device_class


def placer_after(grown: Snapshot) -> Placer:
    """Where the grown map puts every PG once the mon has cleaned the upmaps on it: CRUSH
    moves replicas onto the new host, and where that shifts a later replica (a collision
    on the new host) onto a host an item already uses, the mon drops that PG's items."""
    return mon_cleaned(grown, Placer(grown), grown.osds.reweight, None, Change())


def growth_report(snap: Snapshot, host: NewHost, budget: float = 0.05,
                  rate: Optional[float] = None) -> Dict[str, Any]:
    """What adding the host moves: per pool and in all, the new OSDs' PGs, and how many
    drain rounds within `budget` (and, given a backfill `rate` in bytes/s, how long)."""
    if rate is not None and not (math.isfinite(rate) and 0 < rate <= MAX_RATE_MIB_S * MIB):
        raise AdvisorError.invalid(f"--backfill-mib-s must be within (0, {MAX_RATE_MIB_S:g}], "
                                   f"not {rate / MIB:g}")
    name, weight, root = host.name, host.weight, host.root
    grown, ids, device_class = with_host(snap, name, host.count, weight, host.device_class, root)
    before, after = Placer.of(snap), placer_after(grown)
    n = grown.osds.count
    pools: List[Dict[str, Any]] = []
    total = {"pgs_remapped": 0, "shards_moved": 0, "bytes_moved": 0, "objects_moved": 0.0}
    counts, shares = np.zeros(n), np.zeros(n)
    bytes_known = True
    for pool in snap.pools:
        old, new = before.map_pool(pool), after.map_pool(pool)
        mv = _movement(snap, pool, old, new)
        c = up_counts(new.up, n)
        rule = grown.rules.get(pool.crush_rule)
        s = pool_share(pool, rule_weights(grown, rule)) if rule else np.zeros(n)
        counts += c
        shares += s
        objects = shard_objects(pool, pool.pg_num, mv["shards_moved"])
        total["objects_moved"] += objects
        for k in ("pgs_remapped", "shards_moved"):
            total[k] += mv[k]
        if mv["bytes_moved"] is None:
            bytes_known = False
        else:
            total["bytes_moved"] += mv["bytes_moved"]
        pools.append({"pool": pool.name, "pgs": pool.pg_num, "pgs_remapped": mv["pgs_remapped"],
                      "shards_moved": mv["shards_moved"], "bytes_moved": mv["bytes_moved"],
                      "new_osd_pgs": [int(c[i]) for i in ids], "after": spread(c, s).as_dict()})
    copies = object_copies(snap)
    ratio = total["objects_moved"] / copies if copies > 0 else 0.0
    rounds = max(1, math.ceil(ratio / budget)) if total["shards_moved"] and budget > 0 else 0
    moved_bytes = total["bytes_moved"] if bytes_known else None
    return {
        "epoch": snap.epoch,
        "add_host": {"name": name, "osds": ids, "weight": weight, "device_class": device_class,
                     "root": root},
        "pools": pools,
        "total": {**total, "bytes_moved": moved_bytes, "objects_moved": int(round(total["objects_moved"])),
                  "after": spread(counts, shares).as_dict()},
        "new_osds": [{"id": i, "pgs": int(counts[i]), "share": round(float(shares[i]), 3)} for i in ids],
        # all at once, as Ceph backfills it: this share of object copies misplaced together
        "misplaced_at_once": round(ratio, 6),
        "budget": budget,
        "drain_rounds": rounds,
        "drain_seconds": (round(moved_bytes / rate, 1) if rate and moved_bytes is not None else None),
    }
