"""Replacements under msr rules (`choosemsr 3 type host; choosemsr 2 type osd`): at most 2
shards per host, any number of hosts (MSR itself may use a fourth after an OSD is out)."""
import dataclasses
from typing import Dict, List

import numpy as np

from pg_advisor.rules.legality import (ANY, Choose, Reach, RuleShape, breaks, choose_steps, replaceable,
                                       shape_of)
from pg_advisor.analysis.whatif import Change, mon_cleaned
from pg_advisor.balance.balancer import Balancer
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor.rules.reach import osds_under, rule_weights

from pg_advisor_testkit.dumps import read
from .test_crush_msr import MSR

HOST = 1
MSR_EC42 = shape_of([Choose(HOST, 3, False, msr=True), Choose(0, 2, False, msr=True)])
PLAIN_EC42 = shape_of([Choose(HOST, 3, False), Choose(0, 2, False)])   # choose indep 3 host; 2 osd


def hosts_of_3(hosts: int) -> Dict[int, np.ndarray]:
    o = np.arange(hosts * 3)
    return {0: o, HOST: -100 - o // 3}


def can(shape: RuleShape, up: List[int], src: int, dst: int, hosts: int = 5) -> bool:
    anc = hosts_of_3(hosts)
    u = np.array([up])
    return bool(replaceable(Reach(anc, shape, np.ones(anc[0].size, bool)), u, u, np.array([src]),
                            np.array([dst]))[0, 0])


def test_an_msr_step_caps_each_bucket_and_spans_any_number() -> None:
    assert [(lim.cap, lim.span, lim.total) for lim in MSR_EC42.limits] == [(2, ANY, None), (1, ANY, None)]
    assert [(lim.cap, lim.span) for lim in PLAIN_EC42.limits] == [(2, 3), (1, 2)]


def test_a_shard_may_leave_for_a_fourth_host_but_never_make_three_on_one() -> None:
    up = [0, 1, 3, 4, 6, 7]                      # hosts 0, 1, 2 with 2 shards each
    assert can(MSR_EC42, up, 0, 2)                # the host's third OSD: still 2 there
    assert can(MSR_EC42, up, 0, 9)                # host 3: four hosts, as MSR itself does
    assert not can(PLAIN_EC42, up, 0, 9)          # a plain choose keeps to 3 hosts
    assert not can(MSR_EC42, up, 0, 5)            # host 1 would hold 3
    four = [0, 3, 4, 6, 7, 9]                     # host 0 and host 3 hold one each
    assert can(MSR_EC42, four, 9, 1)              # back to host 0: 2 there
    assert not can(MSR_EC42, four, 9, 5)          # host 1: 3 there


def test_breaks_sees_the_cap_not_the_span() -> None:
    anc = hosts_of_3(5)
    sets = np.array([[0, 1, 3, 4, 6, 7], [0, 1, 3, 4, 6, 9], [0, 1, 2, 3, 4, 6]])
    assert breaks(MSR_EC42, anc, sets).tolist() == [False, False, True]
    assert breaks(PLAIN_EC42, anc, sets).tolist() == [False, True, True]
    # the mon's verify_upmap skips choosemsr steps: it keeps even three shards on a host
    assert breaks(MSR_EC42, anc, sets, as_the_mon=True).tolist() == [False, False, False]
    assert breaks(PLAIN_EC42, anc, sets, as_the_mon=True).tolist() == [False, True, True]


def test_a_what_if_keeps_the_items_the_mon_keeps_on_an_msr_pool() -> None:
    # items that put three shards on host 0: the mon keeps them (qa/maps/test_crush_msr.py
    # shows it with osdmaptool --upmap-cleanup), so the what-if must keep them too
    snap = fixture()
    pool = snap.pools[0]
    placer = Placer(snap)
    m = placer.map_pool(pool)
    host = m.up // 3
    i = next(i for i in range(m.ps.size) if (host[i] == 0).sum() == 2 and (host[i] != 0).any())
    frm = int(next(o for o in m.up[i] if o // 3 != 0 and o >= 0))
    to = int(next(o for o in (0, 1, 2) if o not in m.up[i] and o != 4))
    pgid = m.pgid(i)
    snap = dataclasses.replace(snap, pg_upmap_items={pgid: ((frm, to),)})
    placer = Placer(snap)
    assert (placer.map_pool(pool).up[i] // 3 == 0).sum() == 3
    kept = mon_cleaned(snap, placer, snap.osds.reweight, None, Change())
    assert kept is placer      # nothing cancelled


def fixture() -> snapshot.Snapshot:
    return snapshot.load(read("osd_dump.json", MSR), read("crush_dump.json", MSR))


def test_the_fixtures_rule_reads_as_msr_steps_and_weighs_its_osds() -> None:
    snap = fixture()
    pool = snap.pools[0]
    assert choose_steps(snap, pool) == [Choose(HOST, 2, False, True), Choose(0, 2, False, True)]
    w = rule_weights(snap, snap.rules[pool.crush_rule])
    # every OSD under the root, as CRUSH weight x reweight: osd.4 is out, osd.9 weighs 0
    assert np.array_equal(w, osds_under(snap, -1) * snap.osds.reweight)
    assert np.flatnonzero(w == 0).tolist() == [4, 9]


def test_the_balancer_evens_an_msr_pool_within_its_caps() -> None:
    snap = fixture()
    pool = snap.pools[0]
    res = Balancer(snap).run()
    assert res.items
    before = Placer(snap).map_pool(pool).up
    items = {pg: tuple(pairs) for pg, pairs in res.items.items()}
    after = Placer(snap).with_upmaps(snap.pg_upmap, items).map_pool(pool).up
    w = rule_weights(snap, snap.rules[pool.crush_rule])
    share = w / w.sum() * after.size

    def spread(up: np.ndarray) -> float:
        return float(np.abs(np.bincount(up.ravel(), minlength=w.size) - share).max())
    assert spread(after) < spread(before) / 10
    hosts = after // 3                            # the fixture's hosts hold osds 3h..3h+2
    assert max(int((hosts == h).sum(axis=1).max()) for h in range(4)) == 2
    assert (np.sort(after, axis=1)[:, 1:] != np.sort(after, axis=1)[:, :-1]).all()
    assert not np.isin(after, [4, 9]).any()
