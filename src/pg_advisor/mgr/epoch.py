"""The mgr's OSDMap epoch, learned through notify rather than asked on every poll.

`get_osdmap()` hands the module a copy of the mgr's whole OSDMap (every OSD, pool, pg_temp
and upmap entry), only to read its epoch; the mgr already tells each module of a new map
(notify "osd_map"). The epoch is asked of the mgr once after each notify, and again after
EPOCH_MAX_AGE in case a notify never comes (a module not yet serving, a mgr that drops
one). Each copy is counted and timed: the read's log line says what they cost.
"""
import time
from typing import Any, Callable, Optional, Tuple

EPOCH_MAX_AGE = 30.0    # seconds an epoch learned serves without a notify


class MapEpoch:
    def __init__(self, get_osdmap: Callable[[], Any]) -> None:
        self._get_osdmap = get_osdmap
        self._told = 0                 # osd_map notifies so far
        self._known: Optional[Tuple[int, int, float]] = None   # (epoch, notifies then, when)
        self.copies = 0                # get_osdmap() calls so far, and their seconds
        self.copy_seconds = 0.0

    def map_changed(self) -> None:
        """The mgr's notify("osd_map"): the next question asks the mgr."""
        self._told += 1

    def epoch(self) -> int:
        """The mgr's OSDMap epoch: the one last asked while no notify came since (and for at
        most EPOCH_MAX_AGE), else asked now."""
        told, now = self._told, time.monotonic()
        known = self._known
        if known is not None and known[1] == told and now - known[2] < EPOCH_MAX_AGE:
            return known[0]
        return self.ask(told)

    def ask(self, told: Optional[int] = None) -> int:
        """The epoch of a copy of the mgr's map now. `told`: the notifies counted before the
        copy (a notify during it leaves the answer not trusted: asked again next time)."""
        told = self._told if told is None else told
        t0 = time.monotonic()
        e = int(self._get_osdmap().get_epoch())
        t1 = time.monotonic()
        self.copies += 1
        self.copy_seconds += t1 - t0
        self._known = (e, told, t1)
        return e

    def spent(self) -> Tuple[int, float]:
        """(copies, seconds) since the last call: for the read's log line."""
        out = (self.copies, self.copy_seconds)
        self.copies, self.copy_seconds = 0, 0.0
        return out
