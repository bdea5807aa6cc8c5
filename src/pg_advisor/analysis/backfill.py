"""The backfill itself, as an operator watching a plan asks of it: how many bytes are left to
copy, at what rate they go, when it ends; and which OSDs' backfill reservations are full
(the reason PGs sit in backfill_wait).

Bytes left: each PG of the plan's pools that is not yet whole where it is up copies its
data to every OSD of its up set that is not in its acting set (a replica holds the PG's
bytes, an EC shard 1/k of them). A PG part-way through counts whole: the brief stats a big
cluster is read through give no per-PG progress, so the figure is an upper bound that
falls a PG at a time. The rate is the fall of that figure over the last RATE_WINDOW
seconds, the ETA what is left at that rate.

Reservations: a backfilling PG holds one of osd_max_backfills local reservations on its
primary (taken here as the first of its acting set) and one remote reservation on each OSD
it copies to; a PG in backfill_wait waits for one of them. An OSD is named when it holds
osd_max_backfills of either kind while some PG waits.
"""
import collections
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, Iterable, List, Optional, Tuple

import numpy as np

from ..model.backfill_limit import cluster_backfills, osd_max_backfills
from ..model.constants import NO_OSD
from ..model.snapshot import Pool, Snapshot
from .status_types import Backfill

RATE_WINDOW = 300.0       # seconds of samples the rate is measured over
RATE_MIN_SPAN = 20.0      # a rate from less than this is not shown (too noisy)
SAMPLES_MAX = 600         # samples kept at most (a tick every second for the window, and more)
FULL_SHOWN = 10           # OSDs named at most


def new_slots(up: np.ndarray, acting: np.ndarray) -> np.ndarray:
    """Per row and up slot: an OSD of the up set that is not in the acting set (a copy to
    make; the sets swapped: a copy to drop)."""
    return (up != NO_OSD) & ~(up[:, :, None] == acting[:, None, :]).any(axis=2)


def _to_copy(snap: Snapshot) -> np.ndarray:
    """Per row of the PG stats: its bytes times the copies it still makes; once a snapshot
    (a running plan asks on every tick, and the mgr keeps an unchanged snapshot)."""
    pgs = snap.pgs
    assert pgs is not None
    known = snap.memo.get("bytes_to_copy")
    if known is None:
        made = pgs.bytes * new_slots(pgs.up, pgs.acting).sum(axis=1)
        made.setflags(write=False)
        known = snap.memo.setdefault("bytes_to_copy", made)
    out: np.ndarray = known
    return out


def incoming_bytes(snap: Snapshot) -> np.ndarray:
    """Per OSD: the bytes still to copy onto it (for each PG, a replica or an EC shard on
    each OSD of its up set not in its acting set); once a snapshot, read-only."""
    known = snap.memo.get("bytes_incoming")
    if known is None:
        n = snap.osds.count
        known = np.zeros(n, np.float64)
        pgs = snap.pgs
        if pgs is not None and pgs.count:
            chunks = {p.id: max(1, p.data_chunks) for p in snap.pools}
            ids, of_row = np.unique(pgs.pool, return_inverse=True)
            k = np.array([chunks.get(int(i), 1) for i in ids], np.float64)
            new = new_slots(pgs.up, pgs.acting)
            onto = pgs.up[new]
            size = np.broadcast_to((pgs.bytes / k[of_row])[:, None], new.shape)[new]
            ok = (onto >= 0) & (onto < n)
            np.add.at(known, onto[ok], size[ok])
        known.setflags(write=False)
        known = snap.memo.setdefault("bytes_incoming", known)
    out: np.ndarray = known
    return out


def bytes_left(snap: Snapshot, pools: Iterable[Pool]) -> Optional[int]:
    """Bytes still to copy for the PGs of `pools` (module docstring); None without stats."""
    pgs = snap.pgs
    if pgs is None:
        return None
    per_row = _to_copy(snap)
    return sum(int(per_row[pgs.pool == pool.id].sum()) // max(1, pool.data_chunks) for pool in pools)


def _window() -> Deque[Tuple[float, int]]:
    return collections.deque(maxlen=SAMPLES_MAX)


@dataclass
class BackfillRate:
    """Samples of bytes left over time, for one plan (kept in memory: a failover starts a
    new window, as the rate is of the backfill now)."""
    plan: str = ""
    samples: Deque[Tuple[float, int]] = field(default_factory=_window)

    def add(self, plan: str, now: float, left: Optional[int]) -> None:
        if plan != self.plan:
            self.plan = plan
            self.samples.clear()
        if left is None:
            return
        self.samples.append((now, left))
        while self.samples and now - self.samples[0][0] > RATE_WINDOW:
            self.samples.popleft()

    def view(self) -> Optional[Dict[str, Any]]:
        """{bytes_left, rate (bytes/s, None while unknown), eta_seconds, measured_over} or None."""
        if not self.samples:
            return None
        t1, left = self.samples[-1]
        t0, first = self.samples[0]
        span = t1 - t0
        rate = (first - left) / span if span >= RATE_MIN_SPAN and first > left else None
        return {"bytes_left": left, "rate": rate, "measured_over": round(span, 1),
                "eta_seconds": round(left / rate, 1) if rate else (0.0 if left == 0 else None)}


def full_reservations(snap: Snapshot) -> Backfill:
    """PGs waiting for a backfill reservation, and the OSDs whose reservations are full."""
    pgs = snap.pgs
    per_osd = np.maximum(osd_max_backfills(snap), 1)    # each OSD's own (`config set osd.N`, masks)
    out: Backfill = {"waiting_pgs": 0, "osd_max_backfills": cluster_backfills(snap), "full_osds": []}
    if pgs is None or not pgs.count:
        return out
    verdict = {s: ("backfill_wait" in s, "backfilling" in s) for s in set(pgs.state)}
    kinds = np.array(list(map(verdict.__getitem__, pgs.state)), dtype=bool).reshape(-1, 2)
    waiting, active = kinds[:, 0], kinds[:, 1]
    out["waiting_pgs"] = int(waiting.sum())
    rows = np.flatnonzero(active)
    if not out["waiting_pgs"] or not rows.size:
        return out
    n = snap.osds.count
    local = np.zeros(n, np.int64)
    remote = np.zeros(n, np.int64)
    primary = pgs.acting[rows, 0]
    ok = (primary >= 0) & (primary < n)
    np.add.at(local, primary[ok], 1)
    up = pgs.up[rows]
    targets = up[new_slots(up, pgs.acting[rows])]
    np.add.at(remote, targets[(targets >= 0) & (targets < n)], 1)
    full = np.flatnonzero((local >= per_osd) | (remote >= per_osd))
    most = np.maximum(local, remote)
    ranked: List[int] = sorted(full.tolist(), key=lambda o: (-int(most[o]), o))
    out["full_osds"] = [{"osd": o, "local": int(local[o]), "remote": int(remote[o])}
                        for o in ranked[:FULL_SHOWN]]
    out["full_osds_total"] = int(full.size)
    return out
