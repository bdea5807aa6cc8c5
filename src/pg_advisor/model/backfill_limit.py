"""How many PGs a plan may have moving into or out of one OSD at once: the option
max_backfills_per_osd when the operator set one, else a figure from the cluster's own
backfill reservations.

Ceph lets each OSD run osd_max_backfills backfills as a primary (local reservations) and
as many as a target (remote ones); the rest wait in backfill_wait. A limit of
RESERVATION_DEPTH times that keeps every OSD a step touches with work queued behind what
it runs, so its reservations do not sit idle between two of the plan's polls, while no
OSD is handed a backlog Ceph would spend hours on. With Ceph's default (1) that is 8:
qa/bench/pacing.py measured a 32,768 -> 65,536 split at 10,000 OSDs in about 1.2x the
time of Ceph's own path at 8, 11x at the old fixed default of 2 (doc/execute.rst).

The cluster's figure is the lowest osd_max_backfills among the OSDs that are in (per OSD,
as the mon resolves `ceph config set osd...`, masks included, when the config dump was
read; else the mgr's own value): the slowest OSD a step may load sets the pace.
"""
import numpy as np

from .snapshot import Snapshot

RESERVATION_DEPTH = 8     # limit = this x osd_max_backfills (see above)
LIMIT_MAX = 1024          # as the option's bound: an OSD set to 10^8 backfills is not a plan's pace


def osd_max_backfills(snap: Snapshot) -> np.ndarray:
    """osd_max_backfills per OSD id: each OSD's own, or the cluster's where unknown."""
    per = snap.osd_config.get("osd_max_backfills")
    if per is not None and per.shape[0] == snap.osds.count:
        return per
    return np.full(snap.osds.count, int(snap.config["osd_max_backfills"]), np.int64)


def cluster_backfills(snap: Snapshot) -> int:
    """The lowest osd_max_backfills of the OSDs that are in (the cluster's value with none),
    at least 1 (an OSD at 0 backfills nothing, and a limit of 0 means none)."""
    o = snap.osds
    live = o.exists & o.in_
    per = osd_max_backfills(snap)
    low = int(per[live].min()) if live.any() else int(snap.config["osd_max_backfills"])
    return max(low, 1)


def backfill_limit(snap: Snapshot, option: int) -> int:
    """PGs moving into or out of one OSD at once: `option` (max_backfills_per_osd) when
    set, else RESERVATION_DEPTH x cluster_backfills."""
    if option > 0:
        return option
    return min(RESERVATION_DEPTH * cluster_backfills(snap), LIMIT_MAX)


def limit_source(snap: Snapshot, option: int) -> str:
    """Where the limit comes from, for the sentences that name it."""
    if option > 0:
        return f"max_backfills_per_osd {option}"
    return (f"{backfill_limit(snap, option)}: {RESERVATION_DEPTH} x osd_max_backfills "
            f"{cluster_backfills(snap)}")
