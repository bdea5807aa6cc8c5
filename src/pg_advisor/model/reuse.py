"""One snapshot, kept while the cluster it was read from has not changed, and read again
no more often than its cost allows.

Reading a cluster costs what the cluster holds: the PG map of 320,000 PGs becomes
millions of Python objects, and CRUSH maps every PG again: read on every tick, it would
keep a mgr of 10,000 OSDs busy. The adapter names what would change the answer in a key
read cheaply, in three parts: the map (the OSDMap epoch), the PG stats (the PG map's
summary) and the settings the model reads. While the key is the same, the last snapshot and
everything memoized on it (its CRUSH results, its status) serve again.

A busy cluster changes its PG stats every few seconds (each write moves the byte count), and
a big one changes its map often while it recovers. Where a read is costly (COSTLY seconds or
more), a changed key is read only once the last read is old enough for the reads to take at
most a share of the mgr's time: STATS_SHARE for new PG stats, MAP_SHARE for a new map but
never later than MAP_LAG_MAX (the executor waits for the map that shows its last step). New
settings are read at once (an operator who sets an option expects to see it), and so is
everything by a caller about to change the cluster, who asks for a `fresh` snapshot. A key
that cannot be read (None) counts as a new map.

The PG stats lag a new map by a few seconds (each PG's primary reports its new up set
once it has peered), and the summary in the key may not show it: a remap of a few empty PGs
can go from active+clean to active+clean between two reads. A snapshot read within SETTLE
seconds of its map's first read may hold the old up sets, so it counts as one whose PG
stats changed: read again once it is SETTLE_STEP seconds old, or as STATS_SHARE allows
where a read is costly (else a status could show the old up sets' PG counts for a minute
after a round of upmap items, the key unchanged).

Where a read is costly, a command that only looks (`lazy`) never reads: it takes the kept
snapshot, however old, and marks a read `due`, which the module's background then takes.
`ceph pg-advisor status` would otherwise wait 3.5-7 s at 10,000 OSDs whenever the kept
snapshot had just expired.
"""
import threading
import time
from typing import Callable, Hashable, NamedTuple, Optional

from .errors import AdvisorError
from .snapshot import Snapshot

MAX_AGE = 60.0      # seconds an unchanged snapshot serves at most: what the key does not see
#                     (an OSD's fullness, the PGs it still deletes: osd_stats) shows within a
#                     minute...
IDLE_SHARE = 0.02   # ... or longer where a read costs more: reading an unchanged cluster again
#                     takes at most this share of the mgr's time (a read of 10,000 OSDs and
#                     320,000 PGs costs 4-6 s: it serves 4-5 minutes)
COSTLY = 2.0        # seconds a read takes before changes are read at a bounded rate (a few
#                     hundred ms on a small cluster, 4-6 s at 10,000 OSDs)
STATS_SHARE = 0.05  # new PG stats alone: at most this share of the mgr's time
MAP_SHARE = 0.25    # a new map: at most this share...
MAP_LAG_MAX = 15.0  # ... but read within this many seconds of the last read (the executor
#                     checks a round's items once its map shows, or after 30 s)
SETTLE = 20.0       # seconds after a new map's first read in which the PG stats may lag it
SETTLE_STEP = 5.0   # ... and a snapshot read then is read again when this old (an OSD reports
#                     its PGs' stats to the mgr every mgr_stats_period, 5 s)


class ChangeKey(NamedTuple):
    """What the answers depend on, read cheaply, by part."""
    map: Hashable
    stats: Hashable
    settings: Hashable = None


class SnapshotReuse:
    def __init__(self, max_age: float = MAX_AGE, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age = max_age
        self.clock = clock                 # what a read's cost is measured with
        self.loads = 0                     # snapshots read so far (what a test counts)
        self.due = False                   # a lazy caller took a snapshot a read would replace
        self._took = 0.0                   # seconds the last read took
        self._key: Optional[ChangeKey] = None
        self._snap: Optional[Snapshot] = None
        self._error: Optional[AdvisorError] = None
        self._at = 0.0
        self._map_at = float("-inf")       # when the kept snapshot's map was first read
        self._lock = threading.Lock()
        self._reading = threading.Lock()

    @property
    def last(self) -> Optional[Snapshot]:
        """The snapshot kept, however old (None: none): what a new read may take results
        from where they still hold (crush/placement.Placer.carry)."""
        return self._snap

    def get(self, key: Optional[ChangeKey], load: Callable[[], Snapshot], now: float,
            fresh: bool = False, lazy: bool = False) -> Snapshot:
        """The kept snapshot if `key` is the one it was read under (and it is younger than
        max_age, or than the read's cost allows by IDLE_SHARE), or if the key changed but a
        costly read is not due yet (module doc; never when `fresh`); else a new one from
        `load` (kept if its key is known). A cluster the loader refuses (AdvisorError) is
        refused again from memory under the same key: a setting out of bounds must not cost
        a full read on every tick."""
        kept = self._kept(key, now, fresh)
        if kept is not None:
            return kept
        if lazy and not fresh:
            with self._lock:
                if self._snap is not None and self._took >= COSTLY:
                    self.due = True          # the background reads it (module.py)
                    return self._snap
        # one read at a time: a command that asks while the background reads waits for that
        # read, and takes it if its key is the same (two threads each read 320,000 PGs at
        # once before, 9-11 s each)
        with self._reading:
            kept = self._kept(key, now, fresh)
            if kept is not None:
                return kept
            return self._read(key, load, now)

    @property
    def costly(self) -> bool:
        """Whether the last read took COSTLY seconds or more (False before the first)."""
        with self._lock:
            return self._snap is not None and self._took >= COSTLY

    def fresh_read_costly(self, key: Optional[ChangeKey], now: float) -> bool:
        """Whether a fresh snapshot under `key` now means a costly read (the last took
        COSTLY seconds or more): one runs already, or the kept snapshot would not serve."""
        if not self.costly:
            return False
        if self._reading.locked():
            return True
        try:
            return self._kept(key, now, True) is None
        except AdvisorError:      # refused from memory: answered at once
            return False

    def _kept(self, key: Optional[ChangeKey], now: float, fresh: bool) -> Optional[Snapshot]:
        with self._lock:
            age, took = now - self._at, self._took
            if key is not None and key == self._key:
                if self._at - self._map_at < SETTLE:     # its PG stats may lag its map
                    serves = max(SETTLE_STEP, took / STATS_SHARE)
                else:
                    serves = max(self.max_age, took / IDLE_SHARE)
                if age < serves and (
                        self._snap is not None or self._error is not None):
                    if self._error is not None:
                        raise self._error
                    return self._snap
                return None
            if fresh or self._snap is None or took < COSTLY or (
                    key is not None and self._key is not None and key.settings != self._key.settings):
                return None
            stats_only = key is not None and self._key is not None and key.map == self._key.map
            wait = took / STATS_SHARE if stats_only else min(took / MAP_SHARE, MAP_LAG_MAX)
            return self._snap if age < wait else None

    def _read(self, key: Optional[ChangeKey], load: Callable[[], Snapshot], now: float) -> Snapshot:
        with self._lock:         # a new map (an unreadable key may be one; not the first read)
            if self.loads and (key is None or self._key is None or key.map != self._key.map):
                self._map_at = now
        t0 = self.clock()
        try:
            snap = load()
        except AdvisorError as e:
            with self._lock:
                self.loads += 1
                self._key, self._snap, self._error, self._at = key, None, e, now
            raise
        with self._lock:
            self.loads += 1
            self._key, self._snap, self._error, self._at = key, snap, None, now
            self._took = self.clock() - t0
            self.due = False
        return snap
