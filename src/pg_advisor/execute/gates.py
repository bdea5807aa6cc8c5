"""When the cluster may be changed at all: the conditions every action checks first."""
from typing import Iterable, List, Optional

import numpy as np

from ..model.snapshot import Pool, Snapshot

MOVE_FLAGS = ("norebalance", "nobackfill", "pause")
UNWELL = ("degraded", "unknown", "peering", "down", "incomplete", "stale")


def cluster_blockers(snap: Snapshot, flags: Iterable[str] = MOVE_FLAGS,
                     pg_states: bool = True) -> List[str]:
    """Flags that forbid moving data, and (`pg_states`) PGs that are not active and whole,
    as sentences."""
    out: List[str] = []
    set_ = sorted(set(snap.flags) & set(flags))
    if set_:
        out.append(f"the cluster has {', '.join(set_)} set")
    if not pg_states:
        return out
    if snap.pgs is None:
        out.append("no PG stats yet")
    else:
        bad = [s for s in snap.pgs.state if not s.startswith("active") or any(w in s for w in UNWELL)]
        if bad:
            out.append(f"{len(bad)} PGs are not active and whole (e.g. {bad[0]})")
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
