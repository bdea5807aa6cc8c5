"""The model of Ceph's backfill that qa/bench/pacing.py times its paths with.

A PG whose up set changes backfills its new OSDs from its acting primary (the first OSD of
the old up set, which pg_temp keeps acting), once it holds a local reservation at that
primary and a remote one at each new OSD, at most osd_max_backfills of each kind per OSD
(Ceph's local and remote reservers), taken in the order the map changes queued the PGs; a
PG waiting for one OSD does not hold back another PG. Each backfill copies the PG's bytes
at one rate, to all its new OSDs at once. Left out: degraded recovery, client I/O,
reservation priorities and preemption, PGs growing while they wait, peering time.
"""
from dataclasses import dataclass
from typing import Iterable, List, Tuple

import numpy as np


@dataclass
class PgBackfill:
    primary: int                  # holds the local reservation
    targets: Tuple[int, ...]      # the new OSDs: a remote reservation each
    leaving: Tuple[int, ...]      # the OSDs whose copy goes once it is done
    left: float                   # bytes still to copy (to each target)


class Backfills:
    """The PGs queued and backfilling, advanced tick by tick."""

    def __init__(self, osds: int, max_backfills: int, rate: float, copies_bytes: float) -> None:
        self.osds = osds
        self.local = [0] * osds      # reservations held (Python ints: checked per PG, per tick)
        self.remote = [0] * osds
        self.max = max_backfills
        self.rate = rate                      # bytes per second, one backfill
        self.copies_bytes = copies_bytes      # every copy of every object: the misplaced ratio's base
        self.queued: List[PgBackfill] = []
        self.running: List[PgBackfill] = []
        self.peak_running = 0
        self.peak_misplaced = 0.0
        self.moved = 0.0                      # bytes copied, summed over targets
        self.left = 0.0                       # bytes still to copy, summed over targets

    def add(self, pgs: Iterable[PgBackfill]) -> None:
        for b in pgs:
            self.queued.append(b)
            self.left += b.left * len(b.targets)
        self._start()

    def advance(self, dt: float) -> None:
        """dt seconds of copying; the finished free their reservations, the queued start."""
        step = self.rate * dt
        done = False
        for b in self.running:
            got = min(step, b.left) * len(b.targets)
            b.left -= step
            self.moved += got
            self.left -= got
            done = done or b.left <= 0
        if done:
            for b in self.running:
                if b.left <= 0:
                    self.local[b.primary] -= 1
                    for t in b.targets:
                        self.remote[t] -= 1
            self.running = [b for b in self.running if b.left > 0]
            self._start()

    def _start(self) -> None:
        waiting = []
        local, remote, most = self.local, self.remote, self.max
        for b in self.queued:
            if local[b.primary] < most and all(remote[t] < most for t in b.targets):
                local[b.primary] += 1
                for t in b.targets:
                    remote[t] += 1
                self.running.append(b)
            else:
                waiting.append(b)
        self.queued = waiting
        self.peak_running = max(self.peak_running, len(self.running))
        self.peak_misplaced = max(self.peak_misplaced, self.misplaced())

    def misplaced(self) -> float:
        """Misplaced object copies as a share of all (the ratio Ceph's gates read)."""
        return max(self.left, 0.0) / self.copies_bytes if self.copies_bytes > 0 else 0.0

    def load(self) -> np.ndarray:
        """Per OSD: PGs backfilling or waiting to, into or out of it (the executor's
        backfill_load)."""
        return ends(self.queued + self.running, self.osds)

    def idle(self) -> bool:
        return not self.queued and not self.running


def ends(pgs: Iterable[PgBackfill], osds: int) -> np.ndarray:
    """Per OSD: the PGs of `pgs` moving into or out of it."""
    every = [o for b in pgs for o in b.targets + b.leaving]
    return np.bincount(np.array(every, np.int64), minlength=osds) if every else np.zeros(osds, np.int64)


def pg_backfills(before: np.ndarray, after: np.ndarray, nbytes: float) -> List[PgBackfill]:
    """The backfills of PGs whose up sets go from `before` to `after` (rows of OSD ids,
    replicated: -1 pads), each holding `nbytes`."""
    out = []
    for old, new in zip(before.tolist(), after.tolist()):
        old_set, new_set = {o for o in old if o >= 0}, {o for o in new if o >= 0}
        targets = tuple(sorted(new_set - old_set))
        if targets:
            out.append(PgBackfill(old[0], targets, tuple(sorted(old_set - new_set)), nbytes))
    return out
