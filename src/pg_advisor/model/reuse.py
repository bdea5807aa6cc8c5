"""One snapshot, kept while the cluster it was read from has not changed.

Reading a cluster costs what the cluster holds: the PG map of 320,000 PGs becomes
millions of Python objects, and CRUSH maps every PG again. Inside the mgr that ran on every
tick and froze it at 10,000 OSDs. The adapter names what would change the answer (the
OSDMap epoch, the PG map's summary, the settings the model reads) in a key read cheaply;
while the key is the same, the last snapshot and everything memoized on it (its CRUSH
results, its status) serve again. A key that cannot be read (None) means: read again.
"""
import threading
import time
from typing import Callable, Hashable, Optional

from .errors import AdvisorError
from .snapshot import Snapshot

MAX_AGE = 60.0      # seconds a snapshot serves at most: what the key does not see (an OSD's
#                     fullness, the PGs it still deletes: osd_stats) shows within a minute
READ_SHARE = 0.05   # ... or longer where a read costs more: reading an unchanged cluster
#                     again takes at most this share of the mgr's time (a read of 10,000
#                     OSDs and 320,000 PGs takes 6 s: it serves 2 minutes)


class SnapshotReuse:
    def __init__(self, max_age: float = MAX_AGE, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age = max_age
        self.clock = clock                 # what a read's cost is measured with
        self.loads = 0                     # snapshots read so far (what a test counts)
        self._took = 0.0                   # seconds the last read took
        self._key: Optional[Hashable] = None
        self._snap: Optional[Snapshot] = None
        self._error: Optional[AdvisorError] = None
        self._at = 0.0
        self._lock = threading.Lock()
        self._reading = threading.Lock()

    def get(self, key: Optional[Hashable], load: Callable[[], Snapshot], now: float) -> Snapshot:
        """The kept snapshot if `key` is the one it was read under (and it is younger than
        max_age, or than the read's cost allows by READ_SHARE), else a new one from `load`
        (kept if its key is known). A cluster the loader refuses (AdvisorError) is refused
        again from memory under the same key: a setting out of bounds must not cost a full
        read on every tick."""
        kept = self._kept(key, now)
        if kept is not None:
            return kept
        # one read at a time: a command that asks while the background reads waits for that
        # read, and takes it if its key is the same (two threads each read 320,000 PGs at
        # once before, 9-11 s each)
        with self._reading:
            kept = self._kept(key, now)
            if kept is not None:
                return kept
            return self._read(key, load, now)

    def _kept(self, key: Optional[Hashable], now: float) -> Optional[Snapshot]:
        with self._lock:
            age_max = max(self.max_age, self._took / READ_SHARE)
            if (key is not None and key == self._key and now - self._at < age_max
                    and (self._snap is not None or self._error is not None)):
                if self._error is not None:
                    raise self._error
                return self._snap
        return None

    def _read(self, key: Optional[Hashable], load: Callable[[], Snapshot], now: float) -> Snapshot:
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
        return snap
