"""The OSDMap epoch learned through notify (mgr/epoch.py): a copy of the mgr's map once per
notify, not once per poll; counted in copies of the map, not in seconds."""
from typing import Any, List

import pytest

from pg_advisor.mgr import epoch as epoch_mod
from pg_advisor.mgr.epoch import EPOCH_MAX_AGE, MapEpoch


class Maps:
    """A mgr's get_osdmap(): a copy whose epoch is `now`; counts the copies."""

    def __init__(self) -> None:
        self.now = 5
        self.copies = 0
        self.during: List[Any] = []     # called inside the next copy (a notify meanwhile)

    def get(self) -> Any:
        self.copies += 1
        e = self.now          # the copy is of the map as it is now
        while self.during:
            self.during.pop()()

        class Copy:
            def get_epoch(self) -> int:
                return e
        return Copy()


def test_an_unchanged_map_is_copied_once_and_each_notify_once_more() -> None:
    maps = Maps()
    me = MapEpoch(maps.get)
    assert [me.epoch() for _ in range(50)] == [5] * 50 and maps.copies == 1
    maps.now = 6
    assert me.epoch() == 5        # no word of it yet
    me.map_changed()
    assert [me.epoch() for _ in range(50)] == [6] * 50 and maps.copies == 2
    assert me.spent()[0] == 2 and me.spent() == (0, 0.0)


def test_a_notify_during_the_copy_leaves_the_answer_untrusted() -> None:
    maps = Maps()
    me = MapEpoch(maps.get)
    assert me.epoch() == 5

    def newer() -> None:      # a new map, and its notify, while the copy is being taken
        maps.now = 7
        me.map_changed()
    me.map_changed()
    maps.during.append(newer)
    assert me.epoch() == 5          # the copy's epoch, taken before the new map
    assert me.epoch() == 7 and maps.copies == 3      # asked again: a notify came during it
    assert me.epoch() == 7 and maps.copies == 3


def test_without_a_notify_the_epoch_is_asked_again_after_its_age(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(epoch_mod.time, "monotonic", lambda: clock[0])
    maps = Maps()
    me = MapEpoch(maps.get)
    me.epoch()
    maps.now = 9
    clock[0] += EPOCH_MAX_AGE - 1
    assert me.epoch() == 5 and maps.copies == 1
    clock[0] += 2
    assert me.epoch() == 9 and maps.copies == 2
