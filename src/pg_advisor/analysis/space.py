"""How much more data each OSD may take before the fullness no move may pass: the
cluster's nearfull_ratio of its size (backfillfull_ratio with fill_limit backfillfull),
less what it holds and what is already being copied onto it.

Ceph's own guard is at the destination: an OSD past backfillfull_ratio refuses a backfill
(the PG waits in backfill_toofull), and it counts the backfills it has already taken on.
A balancer that sends PGs there anyway gains nothing and keeps the PGs misplaced; one that
sends them past nearfull_ratio raises OSD_NEARFULL. What an OSD is giving away is not
counted: that space frees only once its backfill ends.
"""
import math
from typing import List

import numpy as np

from ..model.options import FillLimit
from ..model.snapshot import Snapshot
from .backfill import incoming_bytes
from .status_types import FullByBytes, Space

NAMED = 8       # OSDs a note names at most


def fill_ratio(snap: Snapshot, limit: FillLimit) -> float:
    r = snap.fill_ratios
    return r.backfillfull if limit is FillLimit.BACKFILLFULL else r.nearfull


def fill_room(snap: Snapshot, limit: FillLimit = FillLimit.NEARFULL) -> np.ndarray:
    """Per OSD: the bytes it may still take (negative: past the ratio already); infinite
    where its size or use is unknown (no OSD stats: nothing to bound by)."""
    o = snap.osds
    known = (o.bytes_total > 0) & (o.bytes_used >= 0)
    room = fill_ratio(snap, limit) * o.bytes_total - o.bytes_used - incoming_bytes(snap)
    return np.where(known, room, math.inf)


def full_note(snap: Snapshot, osds: List[int], limit: FillLimit) -> str:
    """What a run says of the OSDs it sent nothing to for want of space."""
    o, name = snap.osds, f"{limit.value}_ratio"
    ratio = fill_ratio(snap, limit)
    shown = ", ".join(f"osd.{x} ({o.bytes_used[x] / o.bytes_total[x]:.0%})" for x in osds[:NAMED])
    more = f" and {len(osds) - NAMED} more" if len(osds) > NAMED else ""
    return (f"{len(osds)} OSDs take no PG: they would pass {name} {ratio:.0%} counting what is "
            f"being copied onto them: {shown}{more} (fill_limit {limit.value})")


def space_summary(snap: Snapshot, limit: FillLimit, util: np.ndarray) -> Space:
    """The OSDs in use that take no PG now: past the fill limit counting what is being
    copied onto them, the fullest first by `util` (per OSD, percent used: the status's),
    NAMED of them named. The balancer and drains leave these out, and also those with less
    room left than the run's largest PG (balance/balancer.py)."""
    o = snap.osds
    room = fill_room(snap, limit)       # (finite only where the usage is known)
    at = np.flatnonzero(o.exists & o.up & o.in_ & (room <= 0))
    at = at[np.argsort(-util[at], kind="stable")]
    shown: List[FullByBytes] = [{"osd": int(x), "used_ratio": round(float(util[x]) / 100, 6)}
                                for x in at[:NAMED].tolist()]
    return {"fill_limit": limit.value, "ratio": round(fill_ratio(snap, limit), 6), "osds": shown,
            "osds_total": int(at.size)}
