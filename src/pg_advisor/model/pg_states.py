"""What a PG's state (pg_state_string: "active+clean", "active+undersized+degraded", ...)
says about moving it: one verdict per distinct state, looked up per row in C, kept on the
snapshot (gates, balance rounds and settling each ask)."""
from typing import Tuple

import numpy as np

from .snapshot import Snapshot

# words of a state for a PG that is not whole, or not serving
UNWELL = ("degraded", "unknown", "peering", "down", "incomplete", "stale")
# ... and for one that serves no I/O
INACTIVE = ("unknown", "peering", "down", "incomplete", "stale")


def not_well(snap: Snapshot, words: Tuple[str, ...] = UNWELL) -> np.ndarray:
    """Per row of the PG stats: not active, or its state has one of `words` (read-only)."""
    pgs = snap.pgs
    if pgs is None:
        return np.zeros(0, dtype=bool)
    key = ("not_well", words)
    known = snap.memo.get(key)
    if known is None:
        verdict = {s: not s.startswith("active") or any(w in s for w in words) for s in set(pgs.state)}
        known = np.fromiter(map(verdict.__getitem__, pgs.state), bool, pgs.count)
        known.setflags(write=False)
        known = snap.memo.setdefault(key, known)
    out: np.ndarray = known
    return out
