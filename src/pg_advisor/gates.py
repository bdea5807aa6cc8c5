"""When the cluster may be changed at all: the conditions every action checks first."""
from typing import Iterable, List

from .snapshot import Snapshot

MOVE_FLAGS = ("norebalance", "nobackfill", "pause")
UNWELL = ("degraded", "unknown", "peering", "down", "incomplete", "stale")


def cluster_blockers(snap: Snapshot, flags: Iterable[str] = MOVE_FLAGS) -> List[str]:
    """Flags that forbid moving data, and PGs that are not active and whole, as sentences."""
    out: List[str] = []
    set_ = sorted(set(snap.flags) & set(flags))
    if set_:
        out.append(f"the cluster has {', '.join(set_)} set")
    if snap.pgs is None:
        out.append("no PG stats yet")
    else:
        bad = [s for s in snap.pgs.state if not s.startswith("active") or any(w in s for w in UNWELL)]
        if bad:
            out.append(f"{len(bad)} PGs are not active and whole (e.g. {bad[0]})")
    return out
