"""The latency bench's own parts (qa/bench/latency/, qa/bench/latency/client.py) on made-up
input: the client's check finds a wrong or lost object, the split parents are Ceph's,
the slow ops are laid at the epochs made while they waited and at their own PG's new
interval, an object's PG is the one osdmaptool gives."""
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import numpy as np

from ...maps.object_hash import object_ps, stable_mod
from .client import BLOCKS, OBJECT, Client, name, whole
from .intervals import ChangeSpan, bursts, change_kind, slow_by_pg, split_parents
from .run import burst_table, pg_table


class _Completion:
    def __init__(self, ret: int) -> None:
        self.ret = ret

    def get_return_value(self) -> int:
        return self.ret


class _IO:
    """An ioctx that answers at once from a dict (objects as bytearrays)."""

    def __init__(self, objects: int) -> None:
        zero = np.zeros(BLOCKS, np.int64)
        self.data: Dict[str, bytearray] = {name(i): bytearray(whole(i, zero)) for i in range(objects)}
        self.fail_writes = False

    def aio_write(self, obj: str, data: bytes, off: int, oncomplete: Callable[[Any], None]) -> None:
        if self.fail_writes:
            oncomplete(_Completion(-110))
            return
        self.data[obj][off:off + len(data)] = data
        oncomplete(_Completion(0))

    def aio_read(self, obj: str, length: int, off: int,
                 oncomplete: Callable[[Any, Optional[bytes]], None]) -> None:
        oncomplete(_Completion(0), bytes(self.data[obj][off:off + length]))

    def read(self, obj: str, length: int, off: int) -> bytes:
        if obj not in self.data:
            raise KeyError(obj)
        return bytes(self.data[obj][off:off + length])


def _run(c: Client, ops: int) -> None:
    """Let the client issue about `ops` ops (each answered at once), then stop it."""
    t = threading.Thread(target=c.run)
    t.start()
    deadline = time.monotonic() + 60
    while len(c.rows) < ops and time.monotonic() < deadline:
        time.sleep(0.001)
    c.stop.set()
    t.join(10)
    assert len(c.rows) >= ops


def test_the_client_checks_every_read_and_the_read_back() -> None:
    io = _IO(40)
    c = Client(io, list(range(1, 40, 2)), depth=4, seed=1)
    _run(c, 2000)
    kinds = np.bincount(np.array(c.rows)[:, 3].astype(int), minlength=4)
    assert (kinds > 300).all()                    # all four kinds, in about equal parts
    assert c.versions.max() > 0 and not c.mismatches
    c.read_back()
    assert not c.mismatches
    # one byte of one owned object changed: the read-back names it
    io.data[name(3)][OBJECT - 1] ^= 1
    # and an object lost
    del io.data[name(5)]
    c.read_back()
    assert len(c.mismatches) == 2
    assert any("lat3" in m for m in c.mismatches) and any("lat5" in m for m in c.mismatches)


def test_a_read_of_stale_data_is_caught() -> None:
    io = _IO(8)
    c = Client(io, [0, 1, 2, 3], depth=1, seed=2)
    c.versions[:, :] = 7        # the client wrote version 7; the store still has 0
    _run(c, 50)
    assert c.mismatches          # reads among the first ops see version 0


def test_an_object_whose_write_failed_is_left_out_of_the_check() -> None:
    io = _IO(4)
    io.fail_writes = True
    c = Client(io, [0, 1, 2, 3], depth=2, seed=3)
    _run(c, 200)
    failed = int((np.array(c.rows)[:, 2] == 0).sum())
    assert failed > 0 and c.unknown
    c.read_back()
    assert not c.mismatches      # what failed is not known, the rest reads back as written


def test_split_parents_are_cephs() -> None:
    assert split_parents(32, 64) == set(range(32))
    assert split_parents(4, 6) == {0, 1}
    assert split_parents(3, 4) == {1}        # ceph_stable_mod(3, 4, 3) = 1
    assert split_parents(6, 8) == {2, 3}
    assert split_parents(8, 8) == set()


def test_slow_ops_are_laid_at_the_epochs_made_while_they_waited() -> None:
    """Ops every 10 ms, 5 ms each, from t=0 to 100 s; the change from 10 to 90 s. An
    "up" epoch at 20 s holds three ops 800 ms, an "acting" one at 40 s one op 300 ms,
    an "other" at 60.002 s only a 5 ms op; one slow op (400 ms at 70 s) has no epoch at all. The
    epochs before the change (5 s) and after (95 s) are left out."""
    start = np.arange(0.0, 100.0, 0.01)
    end = start + 0.005
    for t, ms, n in ((20.0, 800, 3), (40.0, 300, 1), (70.0, 400, 1)):
        k = int(round((t - 0.1) * 100))
        end[k:k + n] = start[k:k + n] + ms / 1000.0      # started 100 ms before, waiting at t
    ops = np.stack([start, end, np.ones_like(start), np.zeros_like(start)], axis=1)
    offset = 1000.0                                      # wall clock minus monotonic
    epochs = [(5.0 + offset, 4, 0, 0), (20.0 + offset, 2, 5, 1), (40.0 + offset, 0, 3, 0),
              (50.0 + offset, 0, 0, 2), (60.002 + offset, 0, 0, 0), (95.0 + offset, 1, 0, 0)]
    b = bursts(ops, epochs, ChangeSpan(10.0, 90.0, offset))
    assert b["slow_ops"] == 5
    assert (b["up_epochs"], b["acting_epochs"], b["up_thru_epochs"], b["other_epochs"]) == (1, 1, 1, 1)
    assert b["up_worst_ms"] == [800.0, 800.0]
    assert b["acting_worst_ms"] == [300.0, 300.0]
    assert b["other_worst_ms"] == [5.0, 5.0]
    assert b["up_thru_worst_ms"] == [0.0, 0.0] and b["slow_at_up_thru"] == 0
    assert (b["slow_at_up"], b["slow_at_acting"], b["slow_at_other"], b["slow_at_none"]) == (3, 1, 0, 1)
    assert len(burst_table([{"method": "ceph", "bursts": b, "cpu_s": {"osd": 1.0}}])) == 2
    # each second 10.5 .. 89.5: mostly no op in flight (one starts at each, one ended
    # before); the 800 ms ops (19.9-20.7) are at 20.5
    assert b["any_second_epochs"] == 80 and b["any_second_worst_ms"] == [0.0, 800.0]


def test_an_objects_pg_is_the_one_osdmaptool_gives(tmp_path: Path) -> None:
    # names of every length around lookup2's 12-byte blocks, the bench's own among them
    om = tmp_path / "om"
    subprocess.run(["osdmaptool", "--createsimple", "4", "--with-default-pool", str(om), "--clobber"],
                   check=True, capture_output=True)
    printed = subprocess.run(["osdmaptool", str(om), "--print"], capture_output=True, text=True, check=True)
    m = re.search(r"^pool 1 .* pg_num (\d+) ", printed.stdout, re.M)
    assert m, printed.stdout
    pg_num = int(m.group(1))
    names = [name(i) for i in (0, 7, 1637, 123456789)] + ["x" * n for n in range(1, 26)] + ["obj-17"]
    for n in names:
        out = subprocess.run(["osdmaptool", str(om), "--test-map-object", n, "--pool", "1"],
                             capture_output=True, text=True, check=True).stdout
        assert f"'{n}' -> 1.{object_ps(n, pg_num):x} ->" in out, (n, out)
    # the stable mod keeps a seed as pg_num grows past it (a split's parent and child)
    assert [stable_mod(13, n) for n in (8, 12, 14, 16)] == [5, 5, 13, 13]


def test_slow_ops_are_laid_at_their_own_pgs_new_interval() -> None:
    """One slow op each on six objects in six PGs (of 8), a change of each kind on their
    PGs while it waits; the sixth's PG changed 10 s before its op: none."""
    objs: Dict[str, int] = {}
    for i in range(100):
        objs.setdefault(f"5.{object_ps(name(i), 8):x}", i)
    pgs = list(objs)[:6]
    start = np.arange(0.0, 100.0, 0.01)
    end = start + 0.005
    obj = np.full_like(start, 99.0)
    offset = 1000.0
    changes = []
    kinds = ((20.0, "move"), (30.0, "remap"), (40.0, "temp"), (50.0, "drop"), (60.0, "order"), (70.0, "move"))
    for i, (t, kind) in enumerate(kinds):
        k = int(round((t - 0.5) * 100)) if i < 5 else int(round(80.0 * 100))
        end[k] = start[k] + 1.2                            # waited over the change
        obj[k] = float(objs[pgs[i]])
        changes.append((t + offset, pgs[i], kind))
    changes.append((20.1 + offset, pgs[1], "move"))         # another PG's, while op 0 waited
    changes.append((5.0 + offset, pgs[0], "move"))          # before the change: not counted
    ops = np.stack([start, end, np.ones_like(start), np.zeros_like(start), obj], axis=1)
    p = slow_by_pg(ops, changes, ChangeSpan(10.0, 90.0, offset), 5, (8, 8))
    kinds5 = ("move", "remap", "temp", "drop", "order")
    assert [p[k] for k in kinds5 + ("none",)] == [1, 1, 1, 1, 1, 1], p
    assert [p[k + "_intervals"] for k in kinds5] == [3, 1, 1, 1, 1], p
    assert [p[k + "_with_slow"] for k in kinds5] == [1, 1, 1, 1, 1], p
    assert len(pg_table([{"method": "ceph", "slow_by_pg": p}])) == 2
    a, b, c = (1, 2), (1, 3), (3, 1)
    assert [change_kind(None, (a, 1, a, 1), False),
            change_kind((a, 1, a, 1), (b, 1, a, 1), False),        # remapped, pg_temp primed
            change_kind((a, 1, a, 1), (b, 1, b, 1), False),        # remapped, unprimed
            change_kind((a, 1, a, 1), (a, 1, b, 1), False),        # a pg_temp set
            change_kind((b, 1, a, 1), (b, 1, b, 1), False),        # backfill done: dropped
            change_kind((b, 1, b, 1), (c, 3, c, 3), False),
            change_kind((a, 1, a, 1), (a, 1, a, 1), True)] == \
        ["move", "move", "remap", "temp", "drop", "order", "move"]
