"""What a balancer's proposed items do to a snapshot: for the unit tests and qa/ benchmarks."""
import dataclasses
from typing import Any, Mapping

import numpy as np

from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot


def applied(snap: snapshot.Snapshot, items: Mapping[str, Any]) -> snapshot.Snapshot:
    """The snapshot with the items set (an empty list removes the PG's items)."""
    new = dict(snap.pg_upmap_items)
    for k, v in items.items():
        if v:
            new[k] = tuple((int(p[0]), int(p[1])) for p in v)
        else:
            new.pop(k, None)
    return dataclasses.replace(snap, pg_upmap_items=new)


def changed_primaries(snap: snapshot.Snapshot, items: Mapping[str, Any]) -> int:
    """PGs whose up primary the items change: when such a PG's backfill ends the old
    primary drops the client ops in flight there (a client then waits objecter_timeout)."""
    before, after = Placer(snap), Placer(applied(snap, items))
    n = 0
    for pool in snap.pools:
        a, b = before.map_pool(pool).up_primary, after.map_pool(pool).up_primary
        n += int(((a != b) & (a >= 0)).sum())
    return n


def replica_moves(pool_type: str, before: np.ndarray, after: np.ndarray) -> int:
    """Replicas that change OSD between two mappings of a pool's PGs: slot by slot for EC
    (a shard's slot is its place), as a set difference for replicated pools."""
    if pool_type != "replicated":
        return int(((after != before) & (before >= 0)).sum())
    return int(sum(len(set(a.tolist()) - set(x.tolist())) for a, x in zip(after, before)))
