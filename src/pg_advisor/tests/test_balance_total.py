"""The OSDs' totals over all pools where every pool already sits within floor/ceil of its
own share and no single move evens the totals: a chain of two pools' moves does."""
from typing import Any, Dict, List

import numpy as np
import pytest

from pg_advisor.balance.balancer import MOVE_COST, Balancer
from pg_advisor.balance.strategies import CountEvener
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor_testkit.proposals import applied
from pg_advisor_testkit.upmap_checker import check_up_set
from .layouts import load, regrow, use_rule

# host0 holds osd.0-3, host1 osd.4-7, reweighted as below; "rbd" may use every OSD, "ecpool"
# and "fast" only host0's (all of size 1, so that any OSD of a pool's bucket is legal)
REWEIGHT = [0.6, 1.0, 0.6, 0.9, 0.7, 0.8, 0.5, 1.0]
# each pool within floor/ceil of its share everywhere, but osd.1's total is 14 against
# 12.99: the two host0 pools above their floor there may only go to host0's other OSDs,
# whose totals are all at their ceilings, and rbd is at its floor on osd.1
COUNTS = {"rbd": [4, 5, 4, 5, 3, 4, 2, 5], "ecpool": [3, 6, 3, 4, 0, 0, 0, 0],
          "fast": [1, 3, 1, 3, 0, 0, 0, 0]}


def _two_hosts(dumps: Dict[str, Any]) -> Dict[str, Any]:
    def layout(more: List[str]) -> Dict[str, Any]:
        return {"default": ("root", ["host0", "host1"]),
                "host0": ("host", ["osd.0", "osd.1", "osd.2", "osd.3"]),
                "host1": ("host", ["osd.4", "osd.5"] + more)}
    regrow(dumps, layout(["osd.6"]), "hdd")
    regrow(dumps, layout(["osd.6", "osd.7"]), "hdd")
    for p in dumps["osd_dump"]["pools"]:
        p.update(type=1, size=1, min_size=1, erasure_code_profile="")
    use_rule(dumps, "rbd", ["take default", "choose_firstn 0 osd", "emit"])
    for name in ("ecpool", "fast"):
        use_rule(dumps, name, ["take host0", "choose_firstn 0 osd", "emit"])
    for o in dumps["osd_dump"]["osds"]:
        o["weight"] = REWEIGHT[o["osd"]]
    return dumps


def _stuck(snap: snapshot.Snapshot) -> snapshot.Snapshot:
    """The map with items that give COUNTS."""
    b = Balancer(snap)
    b.budget.start(1 << 30)
    for st in b.states:
        want = np.array(COUNTS[st.pool.name])
        while (st.counts != want).any():
            src = int(np.flatnonzero(st.counts > want)[0])
            dst = int(np.flatnonzero(st.counts < want)[0])
            assert b.apply_move(st, int(st.rows(src)[0]), src, dst)
    return applied(snap, b.items())


@pytest.fixture
def chains_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chain strategy on its own: the items that make the map stuck are ones a run
    would first remove (CRUSH's own sets keep every count within the goal: balance/unlist.py)."""
    monkeypatch.setattr("pg_advisor.balance.balancer.remove_needless", lambda run, fullness=None: 0)


def test_the_stuck_items_are_removed_first_where_that_evens_the_total(dumps: Dict[str, Any]) -> None:
    snap = _stuck(load(_two_hosts(dumps)))
    res = Balancer(snap).run()
    listed = {k for k in snap.pg_upmap_items}
    # lists removed, none made: the total evened by going back to CRUSH's own sets
    assert res.items and all(v == [] and k in listed for k, v in res.items.items()), res.items
    assert any("pg_upmap_items removed first" in n for n in res.notes)
    b = Balancer(applied(snap, res.items))
    assert b.total.clear() and all(st.level.clear() for st in b.states)


@pytest.mark.usefixtures("chains_alone")
def test_a_chain_of_two_pools_evens_the_total_that_no_single_move_can(dumps: Dict[str, Any]) -> None:
    snap = _stuck(load(_two_hosts(dumps)))
    b = Balancer(snap)
    T = b.total
    assert all(st.level.clear() for st in b.states)
    assert T.counts[1] == 14 and T.hi[1] == 13 and not T.deficit().any()
    # no single move does it: neither a push off osd.1 nor a pull anywhere finds one
    b.budget.start(1 << 30)
    ev = CountEvener(b)
    assert not ev._total_push(1) and b.budget.moves_left == 1 << 30
    res = b.run()
    # two moves, each pool still within floor/ceil of its share, the totals within theirs
    assert res.moves == 2 and res.lower_bound == 1, (res.moves, res.items)
    assert b.total.clear() and all(st.level.clear() for st in res.pools)
    after = Placer(applied(snap, res.items))
    pools = {p["pool"]: p for p in dumps["osd_dump"]["pools"]}
    for st in res.pools:
        m = after.map_pool(st.pool)
        assert (np.sort(m.up, axis=1) == np.sort(st.up, axis=1)).all()
        for r in range(m.up.shape[0]):
            assert not check_up_set(dumps["osd_dump"], dumps["crush"], pools[st.pool.id], m.up_list(r))
    # the search's work (not the states'): the direct searches that found nothing, the chain's
    # searches (a look at least MOVE_COST), well within a run's bound
    spent = b.budget.work
    assert 2 * MOVE_COST <= spent <= 64 * MOVE_COST, spent


@pytest.mark.usefixtures("chains_alone")
def test_a_chain_is_made_whole_or_not_at_all(dumps: Dict[str, Any]) -> None:
    """One move left: a chain needs two, so none is made (half a chain would move a total
    further off)."""
    snap = _stuck(load(_two_hosts(dumps)))
    res = Balancer(snap).run(max_moves=1)
    assert res.moves == 0 and res.items == {}
