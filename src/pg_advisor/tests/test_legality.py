"""Replacements under rules of more than one choose step: the rule's limits, not CRUSH's buckets."""
from typing import Dict, List

import numpy as np
import pytest

from pg_advisor.rules.legality import breaks, Choose, Reach, replaceable, RuleShape, shape_of
from pg_advisor.model import snapshot

HOST, RACK, ROOM = 1, 3, 7


def tree(racks: int, hosts: int, osds: int) -> Dict[int, np.ndarray]:
    """Ancestors of racks x hosts x OSDs numbered in order (rack r holds hosts r*hosts..)."""
    n = racks * hosts * osds
    o = np.arange(n)
    return {0: o, HOST: -100 - o // osds, RACK: -10 - o // (hosts * osds), ROOM: np.full(n, -2)}


EC83 = shape_of([Choose(RACK, 4, False), Choose(HOST, 3, True)])     # choose indep 4 rack, 3 host


def can(shape: RuleShape, anc: Dict[int, np.ndarray], up: List[int], src: int, dst: int) -> bool:
    u = np.array([up])
    return bool(replaceable(Reach(anc, shape, np.ones(anc[0].size, bool)), u, u, np.array([src]),
                            np.array([dst]))[0, 0])


def test_a_shard_may_move_into_another_rack_of_its_pg_with_a_free_slot() -> None:
    anc = tree(racks=5, hosts=4, osds=1)          # osd o: host o, rack o // 4
    # racks 0,1,2 hold 3 shards each (hosts 0-2, 4-6, 8-10), rack 3 holds 2 (hosts 12, 13)
    up = [0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13]
    assert EC83.limits[0].cap == 3 and EC83.limits[0].span == 4
    assert can(EC83, anc, up, 0, 14)              # rack 3 takes its third shard
    assert can(EC83, anc, up, 0, 3)               # the free host of its own rack
    assert not can(EC83, anc, up, 4, 16)          # rack 1 keeps two: a fifth rack


def test_the_rules_limits_each_on_its_own() -> None:
    anc = tree(racks=5, hosts=4, osds=2)          # osd o: host o // 2, rack o // 8
    # racks 0,1,2: hosts 0-2, 4-6, 8-10 (first OSD of each); rack 3: hosts 12, 13
    up = [0, 2, 4, 8, 10, 12, 16, 18, 20, 24, 26]
    assert can(EC83, anc, up, 0, 6)               # same rack, a host the PG does not use
    assert not can(EC83, anc, up, 0, 3)           # same host as another shard (osd 2)
    assert can(EC83, anc, up, 0, 28)              # rack 3's free slot
    assert not can(EC83, anc, up, 24, 6)          # rack 0 would hold 4 shards
    assert not can(EC83, anc, up, 0, 32)          # a fifth rack
    # rack 3 keeps one shard: a shard of it moving to rack 4 makes five racks
    assert not can(EC83, anc, up, 26, 32)


def test_a_rack_emptied_by_the_move_makes_room_for_another() -> None:
    anc = tree(racks=5, hosts=4, osds=1)
    # 10 shards: racks 0,1,2 full, rack 3 holds one (host 12)
    up = [0, 1, 2, 4, 5, 6, 8, 9, 10, 12]
    assert can(EC83, anc, up, 12, 16)             # rack 3 -> rack 4: still 4 racks


TWO_BY_TWO = shape_of([Choose(RACK, 2, False), Choose(HOST, 2, True)])   # size 4


def test_two_racks_of_two_hosts_leave_no_single_move_across_racks() -> None:
    anc = tree(racks=3, hosts=3, osds=1)
    up = [0, 1, 3, 4]
    assert can(TWO_BY_TWO, anc, up, 0, 2)         # another host of the same rack
    assert not can(TWO_BY_TWO, anc, up, 0, 5)     # rack 1 would hold 3
    assert not can(TWO_BY_TWO, anc, up, 0, 6)     # a third rack


def test_a_later_choose_step_is_counted_over_the_whole_pg_as_ceph_does() -> None:
    # choose 2 room, choose 2 rack, chooseleaf 1 host: Ceph's verify_upmap allows 2 racks
    # in all, while CRUSH itself puts 4 there; every such set breaks Ceph's count
    anc = tree(racks=4, hosts=2, osds=1)
    anc[ROOM] = -1000 - np.arange(8) // 4         # rooms of 2 racks
    shape = shape_of([Choose(ROOM, 2, False), Choose(RACK, 2, False), Choose(HOST, 1, True)])
    assert shape.limits[1].total == 2 and shape.limits[0].total is None
    assert breaks(shape, anc, np.array([[0, 2, 4, 6]])).tolist() == [True]
    # a PG of two replicas, one per rack (the rule's cap) and two racks in all: fine
    assert breaks(shape, anc, np.array([[0, 2, -1, -1]])).tolist() == [False]
    assert not can(shape, anc, [0, 2, 4, 6], 0, 1)


def test_breaks_sees_each_limit() -> None:
    anc = tree(racks=5, hosts=4, osds=1)
    ok = [0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13]
    four_in_a_rack = [0, 1, 2, 3, 5, 6, 8, 9, 10, 12, 13]
    five_racks = [0, 1, 2, 4, 5, 6, 8, 9, 12, 13, 16]
    two_on_a_host = [0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 12]
    got = breaks(EC83, anc, np.array([ok, four_in_a_rack, five_racks, two_on_a_host]))
    assert got.tolist() == [False, True, True, True]


@pytest.mark.parametrize("hole", [-1, 0x7FFFFFFF])
def test_holes_count_for_nothing(hole: int) -> None:
    anc = tree(racks=5, hosts=4, osds=1)
    up = [0, 1, 2, 4, 5, 6, 8, 9, 10, hole, hole]
    assert can(EC83, anc, up, 0, 16)              # 4 racks with the new one
    assert breaks(EC83, anc, np.array([up])).tolist() == [False]


def test_ancestors_cost_a_vector_per_type_not_per_osd(snap: snapshot.Snapshot,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # each OSD's ancestor of each type, set a bucket's OSDs at a time: the vectors made
    # are one per type, whatever the OSD count (one per OSD and level took 0.18 s at
    # 10,000 OSDs, quadratic in them, for every status and balance)
    from pg_advisor.rules.legality import ancestors, has_ancestor
    from pg_advisor.model.snapshot import bucket_parents, walk_up
    from .fakes import calls
    made = calls(monkeypatch, np, "arange")
    anc = ancestors(snap)
    assert len(made) <= len(set(snap.crush_types.values())) + 1
    parent = bucket_parents(snap.buckets)
    for osd in range(snap.osds.count):        # as a walk up from each OSD says
        chain = {snap.buckets[b].type_id: b for b in walk_up(parent, osd)}
        for t, vec in anc.items():
            if t == 0:
                assert vec[osd] == osd
            elif t in chain:
                assert vec[osd] == chain[t]
            else:
                assert not has_ancestor(vec[osd:osd + 1])[0]
