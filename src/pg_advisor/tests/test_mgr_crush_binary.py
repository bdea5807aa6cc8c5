"""The mgr's read of the binary CRUSH map (mgr/crush_bin.py): asked of the mon only for a
map of tree or straw (v1) buckets, once per CRUSH map (crush_version), and a failure or a
map that does not read leaves the read to the dump. Through the module (mgr_stub.py) over
the tree_classes fixture: the class pool over shadow trees is mapped with the binary map
and set aside, with the reason, without it."""
import copy
from typing import Any, Dict, List

import pytest

from pg_advisor.crush.placement import Placer, crush_inputs
from pg_advisor.mgr.crush_bin import CrushBinary
from pg_advisor.model import snapshot
from pg_advisor.model.crush_binary import needs_binary
from pg_advisor.module import Module

from pg_advisor_testkit.dumps import FIXTURES, read
from . import mgr_stub
from .conftest import acting_at_once, cmd

TREES = FIXTURES / "tree_classes"
BINARY = (TREES / "crushmap.bin").read_bytes()


def keeper(answer: Any) -> CrushBinary:
    def ask() -> bytes:
        if isinstance(answer, Exception):
            raise answer
        return bytes(answer)
    warned: List[str] = []
    cb = CrushBinary(ask, warned.append)
    setattr(cb, "warned", warned)
    return cb


def test_only_maps_of_tree_or_straw_buckets_need_it() -> None:
    assert needs_binary(read("crush_dump.json", TREES))
    assert not needs_binary(read("crush_dump.json"))           # the captured cluster: straw2 only
    straw = copy.deepcopy(read("crush_dump.json"))
    straw["buckets"][0]["alg"] = "straw"
    assert needs_binary(straw)
    junks: List[Any] = [None, [], {}, {"buckets": None}, {"buckets": [1, "x", {"alg": 3}]}]
    for junk in junks:
        assert not needs_binary(junk)


def test_asked_once_per_crush_map_and_never_for_straw2() -> None:
    osd_dump, crush = read("osd_dump.json", TREES), read("crush_dump.json", TREES)
    cb = keeper(BINARY)
    for _ in range(3):
        assert cb.for_maps(osd_dump, crush) == BINARY
    assert cb.asked == 1
    newer = dict(osd_dump, crush_version=osd_dump["crush_version"] + 1)
    assert cb.for_maps(newer, crush) == BINARY and cb.asked == 2
    # a map of straw2 alone: never asked, and nothing kept
    assert cb.for_maps(read("osd_dump.json"), read("crush_dump.json")) is None and cb.asked == 2
    assert cb.for_maps(newer, crush) == BINARY and cb.asked == 3


@pytest.mark.parametrize("answer", [OSError("no mon"), b"", b"\x00" * 64, BINARY[:100], b"x" * 5],
                         ids=["mon-fails", "empty", "zeros", "cut", "junk"])
def test_a_failure_leaves_the_read_to_the_dump_and_asks_again(answer: Any) -> None:
    osd_dump, crush = read("osd_dump.json", TREES), read("crush_dump.json", TREES)
    cb = keeper(answer)
    assert cb.for_maps(osd_dump, crush) is None
    assert cb.for_maps(osd_dump, crush) is None and cb.asked == 2      # nothing kept
    assert len(getattr(cb, "warned")) == 2 and "binary CRUSH map unavailable" in getattr(cb, "warned")[0]


def tree_module(answer: Any) -> Module:
    """The module over the tree_classes maps (no PG stats: a cluster of no PGs reported yet),
    its binary map answered by `answer`."""
    docs: Dict[str, Any] = {"osd_map": read("osd_dump.json", TREES),
                            "osd_map_crush": read("crush_dump.json", TREES),
                            "pg_dump": {"pg_stats": [], "osd_stats": [], "pool_stats": []},
                            "df": {"stats": {}, "pools": []}}
    mgr_stub.BaseMgrModule.fake = mgr_stub.FakeMgr(docs)
    m = Module("pg_advisor", None, None)
    m.remote = lambda *a, **kw: None
    m.reader.crush_bin = keeper(answer)
    return acting_at_once(m)


def test_the_module_maps_shadow_trees_with_the_binary_map() -> None:
    m = tree_module(BINARY)
    code, status, err = cmd(m, "status")
    assert code == 0, err
    assert [(p["name"], p.get("not_mapped")) for p in status["pools"]] == [("rbd", None)]
    code, mapped, err = cmd(m, "map")
    assert code == 0, err
    assert len(mapped["pgs"]) == 576 and mapped["not_mapped"] == []
    assert m.reader.crush_bin.asked == 1


def test_without_the_binary_map_the_module_sets_the_pool_aside_with_the_reason() -> None:
    m = tree_module(OSError("no mon"))
    code, status, err = cmd(m, "status")
    assert code == 0, err
    [pool] = status["pools"]
    assert "a device-class shadow of a tree bucket" in pool["not_mapped"]
    code, mapped, err = cmd(m, "map")
    assert code != 0 and "a device-class shadow of a tree bucket" in err


def test_a_retry_follows_a_failure_at_most_once_a_minute() -> None:
    osd_dump, crush = read("osd_dump.json", TREES), read("crush_dump.json", TREES)
    cb = keeper(OSError("no mon"))
    assert cb.retry_key(1000.0) == 0
    cb.for_maps(osd_dump, crush)
    keys = {cb.retry_key(t) for t in (1000.0, 1010.0, 1019.9)}
    assert len(keys) == 1 and 0 not in keys                 # the same key within a minute
    assert cb.retry_key(1080.0) not in keys                 # another a minute on: read again
    cb.ask = lambda: BINARY
    assert cb.for_maps(osd_dump, crush) == BINARY and cb.retry_key(1080.0) == 0


def test_what_the_binary_map_stored_is_a_crush_input() -> None:
    # a read with the binary map after one without must not keep the earlier read's CRUSH
    # (Placer.carry: it compiled the shadow trees as unmappable)
    osd_dump, crush = read("osd_dump.json", TREES), read("crush_dump.json", TREES)
    plain = snapshot.load(osd_dump, crush, settings=snapshot.Settings(strict=False))
    Placer.of(plain)
    with_bin = snapshot.load(osd_dump, crush, settings=snapshot.Settings(crush_binary=BINARY, strict=False))
    assert crush_inputs(plain) != crush_inputs(with_bin)
    assert not Placer.carry(plain, with_bin)


def test_the_module_maps_the_pool_once_the_mon_answers_again() -> None:
    m = tree_module(OSError("no mon"))
    code, status, err = cmd(m, "status")
    assert code == 0 and status["pools"][0]["not_mapped"], err
    m.reader.crush_bin.ask = lambda: BINARY
    # no map change: the retry key alone makes the next read, which asks again
    code, status, err = cmd(m, "status")
    assert code == 0 and status["pools"][0]["not_mapped"] is None, status["pools"][0]["not_mapped"]
