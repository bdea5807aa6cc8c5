"""When the cluster may be changed at all: the conditions every action checks first.

The PG states asked of are scoped: a step, or an operator's round, waits for the PGs of
the pools it acts on (not active, or not whole), never for a degraded PG of another pool.
On a big cluster a failed disk is the normal state, and the drain an operator wants is
often of that disk's neighbours: Ceph's balancer waits for the whole cluster (no degraded,
unknown or inactive PG anywhere), pgremapper and TheJJ's balancer do not look at all.
Other pools' backfills are paced apart (max_backfills_per_osd counts the PGs backfilling
into and out of each OSD, whatever their pool).
"""
from typing import Collection, Iterable, List, Optional

import numpy as np

from ..model.pg_states import INACTIVE, UNWELL, not_well
from ..model.snapshot import Pool, Snapshot

MOVE_FLAGS = ("norebalance", "nobackfill", "pause")


def cluster_blockers(snap: Snapshot, flags: Iterable[str] = MOVE_FLAGS,
                     pg_states: bool = True, pools: Optional[Collection[int]] = None,
                     degraded: bool = True) -> List[str]:
    """Flags that forbid moving data, and (`pg_states`) PGs that are not active and whole
    (with `degraded` off: not active) in `pools` (ids; None: every pool), as sentences."""
    out: List[str] = []
    set_ = sorted(set(snap.flags) & set(flags))
    if set_:
        out.append(f"the cluster has {', '.join(set_)} set")
    if not pg_states:
        return out
    if snap.pgs is None:
        out.append("no PG stats yet")
        return out
    pgs = snap.pgs
    unwell = not_well(snap, UNWELL if degraded else INACTIVE)
    if pools is not None:
        unwell = unwell & np.isin(pgs.pool, np.fromiter(pools, np.int64, len(pools)))
    bad = np.flatnonzero(unwell)
    if bad.size:
        i = int(bad[0])
        names = {p.id: p.name for p in snap.pools}
        pid = int(pgs.pool[i])
        where = "" if pools is None else f" of pool {names.get(pid, pid)}" if len(pools) == 1 else \
            " of the pools it acts on"
        out.append(f"{bad.size} PGs{where} are not active{' and whole' if degraded else ''} (e.g. "
                   f"{pid}.{int(pgs.ps[i]):x} {pgs.state[i]})")
    return out


def sets_upmaps(balancer_active: bool) -> bool:
    """The one rule towards Ceph's own balancer: while it is active pg_advisor sets no upmap
    items (each would undo the other's). Auto mode then starts no pinning and no balance
    plan, a plan's balance step is left to it, and a command or step that would set items
    is refused (balancer_conflict says why)."""
    return not balancer_active


def balancer_conflict(balancer_active: bool, doing: str, why: str = "") -> Optional[str]:
    """Why the rule (sets_upmaps) refuses `doing`, and `why` what it would do; None when
    the balancer is off."""
    if sets_upmaps(balancer_active):
        return None
    return (f"the built-in balancer is active{why}: pg_advisor does not fight it, {doing} "
            f"(`ceph balancer off` hands balancing over)")


def unreported_pgs(snap: Snapshot, pool: Pool) -> int:
    """How many of the pool's PGs the PG stats do not show yet (children of a split whose
    OSDs have not reported them): a pg_temp for them cannot be taken from the stats."""
    if snap.pgs is None:
        return pool.pg_num
    pgs = snap.pgs
    seen = np.unique(pgs.ps[(pgs.pool == pool.id) & (pgs.ps < pool.pg_num)])
    return max(0, pool.pg_num - int(seen.size))
