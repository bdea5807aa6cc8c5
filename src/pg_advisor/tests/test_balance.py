"""The balancer's proposals: legal, what their items give, within the bounds; the report and its
commands; bytes mode; OSDs a rule cannot reach; the work bound."""
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pytest

from pg_advisor.model import snapshot
from pg_advisor.balance.balancer import MOVE_COST, Balancer
from pg_advisor.balance.budget import Limits, Stop
from pg_advisor.balance.evener import byte_spread
from pg_advisor.balance.proposal import Aim, propose
from pg_advisor.balance import report_types as rt
from pg_advisor_testkit.loose import balance_report, eval_report
from pg_advisor.crush.placement import Placer
from pg_advisor.model.distribution import SpreadFields, up_counts
from pg_advisor.model.errors import AdvisorError
from pg_advisor.model.misplaced import MisplacedBudget
from pg_advisor.model.options import BalanceMode
from pg_advisor.rules.legality import ancestors, Reach, replaceable, rule_shape

from pg_advisor_testkit.dumps import DUMP_FILES, read
from .layouts import (HOST_WITHOUT_RACK, IN_HOSTLESS_RACK, RACK_THEN_HOST, RACK_WITHOUT_HOST, UNDER_ROOT,
                      Layout, load, regrow, use_rule)
from pg_advisor_testkit.proposals import applied
from pg_advisor_testkit.upmap_checker import check_up_set


ALL_POOLS = ("rbd", "ecpool", "fast")
PGS, BYTES = BalanceMode.PGS, BalanceMode.BYTES


def read_dumps() -> Dict[str, Any]:
    return {k: read(v) for k, v in DUMP_FILES.items()}


def test_every_proposal_is_legal_and_is_what_the_items_give(snap: snapshot.Snapshot,
                                                            dumps: Dict[str, Any]) -> None:
    res = Balancer(snap).run()
    assert res.items
    pools = {p["pool"]: p for p in dumps["osd_dump"]["pools"]}
    after = Placer(applied(snap, res.items))
    for st in res.pools:
        m = after.map_pool(st.pool)
        for r in range(m.up.shape[0]):
            got = m.up_list(r)
            want = [o for o in st.up[r].tolist() if o != -1]
            assert (sorted(got) == sorted(want)) if st.pool.type == "replicated" else got == want
            assert not check_up_set(dumps["osd_dump"], dumps["crush"], pools[st.pool.id], got), \
                f"{st.pool.id}.{r:x}"


def test_deviation_falls_and_moves_respect_the_bound(snap: snapshot.Snapshot) -> None:
    res = Balancer(snap).run()
    n = snap.osds.count
    for st in res.pools:
        before = np.abs(up_counts(st.start, n) - st.share)[st.share > 0].max()
        after = np.abs(up_counts(st.up, n) - st.share)[st.share > 0].max()
        assert after <= before
    assert res.moves >= res.lower_bound > 0


def test_checker_catches_a_broken_failure_domain(dumps: Dict[str, Any]) -> None:
    # the test of the test: osd.0 and osd.3 share host0
    rbd = next(p for p in dumps["osd_dump"]["pools"] if p["pool_name"] == "rbd")
    assert check_up_set(dumps["osd_dump"], dumps["crush"], rbd, [0, 3, 1])
    assert check_up_set(dumps["osd_dump"], dumps["crush"], rbd, [0, 0, 1])
    fast = next(p for p in dumps["osd_dump"]["pools"] if p["pool_name"] == "fast")
    assert any("outside" in m for m in check_up_set(dumps["osd_dump"], dumps["crush"], fast, [0, 5]))
    assert not check_up_set(dumps["osd_dump"], dumps["crush"], rbd, [0, 1, 2])


def test_report_and_commands(snap: snapshot.Snapshot) -> None:
    r = balance_report(snap)
    assert len(r["commands"]) == len(r["items"])
    for c in r["commands"]:
        assert c.startswith("ceph osd pg-upmap-items ") or c.startswith("ceph osd rm-pg-upmap-items ")
    assert r["after"]["total"]["stdev"] < r["before"]["total"]["stdev"]
    one = balance_report(snap, Aim(pools=["ecpool"]))
    assert all(k.startswith("2.") for k in one["items"])
    capped = balance_report(snap, limits=Limits(max_items=2))
    assert capped["moves"] <= 2


def test_balance_and_eval_reports_have_exactly_their_typed_keys(snap: snapshot.Snapshot) -> None:
    # a key the typed reports do not name (or one they name and the report lacks) is a
    # reader's KeyError waiting: the renderers read the typed fields
    r = balance_report(snap)
    assert set(r) == set(rt.BalanceReport.__annotations__)
    assert set(rt.BalanceRun.__annotations__) - set(r) == {"dry_run", "applied", "failed", "checked"}
    for when in ("before", "after"):
        assert set(r[when]) == set(rt.Spreads.__annotations__)
        pools = r[when]["pools"]
        assert pools and all(set(p) == set(rt.PoolSpread.__annotations__) for p in pools)
        assert set(r[when]["total"]) == set(SpreadFields.__annotations__)
    assert set(r["fullness"]) == set(rt.FullnessChange.__annotations__)
    assert all(set(r["fullness"][w]) == set(rt.Fullness.__annotations__) for w in ("before", "after"))
    e = eval_report(snap)
    assert set(e) == set(rt.EvalReport.__annotations__)
    assert set(e["fullness"]) == set(rt.Fullness.__annotations__)
    assert all(set(p) == set(rt.PoolSpread.__annotations__) for p in e["distribution"]["pools"])


@pytest.mark.parametrize("aim, limits, code, message", [
    ({"mode": "weight"}, {}, -22, "not one of pgs, bytes"),    # a caller past the types
    ({}, {"max_items": 0}, -22, "at least 1"),
    ({"pools": ["nope"]}, {}, -2, "pool 'nope' does not exist"),
])
def test_bad_arguments(snap: snapshot.Snapshot, aim: Dict[str, Any], limits: Dict[str, Any], code: int,
                       message: str) -> None:
    with pytest.raises(AdvisorError) as e:
        balance_report(snap, Aim(**aim), Limits(**limits))
    assert e.value.code == code and message in e.value.message


def test_bytes_mode_is_legal_keeps_counts_and_evens_fullness(snap: snapshot.Snapshot,
                                                             dumps: Dict[str, Any]) -> None:
    # the fixture's PGs hold ~1 MiB each on 1 GiB OSDs, and its fullest OSD (host2's
    # other OSD is reweighted) can only swap within its host: such a swap gains less than the
    # default threshold (0.5% of the mean per move), so a lower one is asked for
    pgs, byt = balance_report(snap, Aim(mode=PGS)), balance_report(snap, Aim(mode=BYTES, min_gain=0.002))
    pools = {p["pool"]: p for p in dumps["osd_dump"]["pools"]}
    after = Placer(applied(snap, byt["items"]))
    n = snap.osds.count
    share = {st.pool.id: st.share for st in Balancer(snap).states}
    for pool in snap.pools:
        m = after.map_pool(pool)
        for r in range(m.up.shape[0]):
            assert not check_up_set(dumps["osd_dump"], dumps["crush"], pools[pool.id], m.up_list(r))
        # no OSD ends further outside floor/ceil of its share than counts alone leave it
        c = up_counts(m.up, n)
        outside = np.maximum(c - np.ceil(share[pool.id] - 1e-9), 0) + \
            np.maximum(np.floor(share[pool.id] + 1e-9) - c, 0)
        ref = up_counts(Placer(applied(snap, pgs["items"])).map_pool(pool).up, n)
        ref_outside = np.maximum(ref - np.ceil(share[pool.id] - 1e-9), 0) + \
            np.maximum(np.floor(share[pool.id] + 1e-9) - ref, 0)
        assert outside.sum() <= ref_outside.sum(), pool.name
    f_pgs, f_byt = pgs["fullness"]["after"], byt["fullness"]["after"]
    assert f_byt["max_ratio"] < f_pgs["max_ratio"] and f_byt["min_ratio"] > f_pgs["min_ratio"]


def test_background_rounds_leave_bytes_alone_within_the_spread(snap: snapshot.Snapshot) -> None:
    # rounds in the background even bytes only while the fullest OSD is at least
    # min_spread of its size above the mean (or the emptiest below): within it they even
    # counts only. Without the gate a thrashed cluster's balance plan chased the client's
    # writes for 30 minutes (doc/testing.rst).
    pgs = balance_report(snap, Aim(mode=PGS))
    on_demand = balance_report(snap, Aim(mode=BYTES, min_gain=0.002))
    assert len(on_demand["items"]) > len(pgs["items"])
    # what bytes mode starts from: the counts even; the OSD furthest from its root and
    # class's mean fullness, that far of its size
    spread = byte_spread(propose(snap, Aim(mode=PGS)).balancer)
    assert spread > 0
    background = balance_report(snap, Aim(mode=BYTES, min_gain=0.002, min_spread=spread * 1.01))
    assert background["items"] == pgs["items"]
    assert any("bytes left as they are" in n for n in background["notes"])
    assert balance_report(snap, Aim(mode=BYTES, min_gain=0.002, min_spread=spread * 0.99))["items"] == \
        on_demand["items"]


def test_plan_rounds_take_the_gain_option_and_the_spread(dumps: Dict[str, Any]) -> None:
    from pg_advisor.execute.pacing import pacing
    from pg_advisor.execute.pacing import BYTES_SPREAD
    from pg_advisor.model.options import Options
    p = pacing(Options(balance_min_gain=0.03), 0.05, snapshot.load(dumps["osd_dump"], dumps["crush"]))
    assert p.min_gain == 0.03 and p.min_spread == BYTES_SPREAD == 0.01


def test_bytes_mode_without_pg_stats_says_so(dumps: Dict[str, Any]) -> None:
    bare = snapshot.load(dumps["osd_dump"], dumps["crush"])
    r = balance_report(bare, Aim(mode=BYTES))
    assert r["fullness"] is None and any("needs PG stats" in n for n in r["notes"])
    assert r["items"] == balance_report(bare, Aim(mode=PGS))["items"]


# (layout, rbd's rule or None: the fixture's, the pools whose rules cannot reach osd.6)
CANNOT_REACH = [(UNDER_ROOT, None, ALL_POOLS), (IN_HOSTLESS_RACK, None, ALL_POOLS),
                # host3 is a host: the host rules of ecpool and fast do reach osd.6
                (HOST_WITHOUT_RACK, RACK_THEN_HOST, ("rbd",)),
                (RACK_WITHOUT_HOST, RACK_THEN_HOST, ALL_POOLS)]


@pytest.mark.parametrize("mode", [PGS, BYTES])
@pytest.mark.parametrize("layout, steps, blind", CANNOT_REACH,
                         ids=["under-root", "hostless-rack", "rack-host-rule:host-without-rack",
                              "rack-host-rule:rack-without-host"])
def test_balance_moves_nothing_onto_an_osd_the_rule_cannot_reach(
        dumps: Dict[str, Any], layout: Layout, steps: Optional[List[str]],
        blind: Tuple[str, ...], mode: BalanceMode) -> None:
    # CRUSH never maps a replica there (a device where a host/rack was due is rejected), so
    # its count is 0: with a share it would be the first place every pull goes
    new = regrow(dumps, layout)
    if steps is not None:
        use_rule(dumps, "rbd", steps)
    s = load(dumps)
    blind_ids = {p.id for p in s.pools if p.name in blind}
    for st in Balancer(s).states:
        assert (st.share[new] == 0) == (st.pool.id in blind_ids), st.pool.name
        assert st.allowed[new] == (st.pool.id not in blind_ids), st.pool.name
    r = balance_report(s, Aim(mode=mode, min_gain=0.002), Limits(max_items=1 << 20))
    assert r["items"]                   # the other OSDs are still balanced
    assert any(f"cannot reach osd.{new}" in n for n in r["notes"])   # and it says why
    onto = [(pg, p) for pg, pairs in r["items"].items() for p in pairs
            if p[1] == new and int(pg.split(".")[0]) in blind_ids]
    assert not onto
    after = Placer(applied(s, r["items"]))
    pools = {p["pool"]: p for p in dumps["osd_dump"]["pools"]}
    for pool in s.pools:
        m = after.map_pool(pool)
        assert pool.id not in blind_ids or not (m.up == new).any(), pool.name
        for i in range(m.up.shape[0]):
            assert not check_up_set(dumps["osd_dump"], dumps["crush"], pools[pool.id], m.up_list(i))


def test_no_replacement_by_an_osd_without_a_failure_domain_ancestor(dumps: Dict[str, Any]) -> None:
    # even where `allowed` says yes, an OSD with no host is no host's replacement
    new = regrow(dumps, UNDER_ROOT, device_class="hdd")
    s = load(dumps)
    anc = ancestors(s)
    shape = rule_shape(s, s.pool_by_name("rbd"))
    allowed = np.ones(s.osds.count, bool)
    up = np.array([[0, 1, 2]])
    ok = replaceable(Reach(anc, shape, allowed), up, up, np.array([0]), np.array([3, new]))
    assert ok.tolist() == [[True, False]]
    # nor, for a rule that fixes racks first, one without a rack
    dumps2 = read_dumps()
    new2 = regrow(dumps2, HOST_WITHOUT_RACK, device_class="hdd")
    use_rule(dumps2, "rbd", RACK_THEN_HOST)
    s2 = load(dumps2)
    shape2 = rule_shape(s2, s2.pool_by_name("rbd"))
    assert shape2.types == (s2.crush_types["rack"], s2.crush_types["host"])
    ok2 = replaceable(Reach(ancestors(s2), shape2, np.ones(s2.osds.count, bool)), up, up,
                      np.array([0]), np.array([new2]))
    assert ok2.tolist() == [[False]]


def test_work_bound_stops_the_run_with_a_note(snap: snapshot.Snapshot,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    whole = balance_report(snap, Aim(mode=PGS), Limits(misplaced=MisplacedBudget(1e18, False)))
    assert whole["moves"] > 2 and not any("units of work" in n for n in whole["notes"])
    # the bound is the search's: a bound below what the states cost still leaves two looks
    # (charged to it, 2^20 PGs on 20,000 OSDs spent it all on the states, no move in any run)
    built = Balancer(snap).built_cost
    bound = 2 * MOVE_COST
    assert built > bound
    monkeypatch.setattr("pg_advisor.balance.balancer.WORK_MAX", bound)
    cut = balance_report(snap, Aim(mode=PGS), Limits(misplaced=MisplacedBudget(1e18, False)))
    note = next(n for n in cut["notes"] if f"stopped at {bound:,} units of work" in n)
    assert f"building the pools' states cost {built:,} beside it" in note, note
    # the figures as they are: the moves made, and the fixture's ~27 PGs per OSD (not "thousands")
    assert f"; {cut['moves']:,} replica moves made; the largest pool holds " in note, note
    assert 0 < cut["moves"] <= 2, note
    assert "thousands" not in note and " PGs per OSD it may use)" in note, note
    assert cut["moves"] < whole["moves"]
    # the work bound is not the misplaced budget: the executor must not wait on it
    assert cut["throttled"] is False


def test_a_stopped_run_looks_at_no_more_windows(snap: snapshot.Snapshot,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # once a bound stops the run, no search looks at an OSD's PGs again: a stopped run of
    # 20,000 OSDs still walked 18,734 OSDs' windows, 36 s for moves it could not make
    from pg_advisor.balance import search
    looked: List[bool] = []     # per window: was the run stopped when it was taken
    taken = search.windows

    def windows(st: Any, osd: int) -> Any:
        for w in taken(st, osd):
            looked.append(st.budget.stopped)
            yield w

    monkeypatch.setattr(search, "windows", windows)
    monkeypatch.setattr("pg_advisor.balance.balancer.WORK_MAX", 2 * MOVE_COST)
    for limits in (Limits(misplaced=MisplacedBudget(1e18, False)), Limits(max_items=2)):
        looked.clear()
        p = propose(snap, Aim(mode=PGS), limits)
        assert p.balancer.stopped and looked and not any(looked), (limits, looked)
    # and a pull, which takes windows of many sources at once, takes none once stopped
    b = Balancer(snap)
    st = b.states[0]
    b.budget.halt(Stop.WORK)
    looked.clear()
    assert b.search.pull(st, 0, np.ones(st.allowed.size, bool), np.zeros(st.allowed.size)) is None
    assert looked == []


def test_bytes_mode_steps_count_against_the_work_bound(snap: snapshot.Snapshot,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # each step sorts every OSD and checks its candidates: uncounted, the 9,697 steps of a
    # 10,000-OSD map with PG stats take 35 s, past any bound of the run
    from pg_advisor.balance import evener
    from pg_advisor.balance.proposal import propose
    steps: List[int] = []           # the run's work as each step began
    step_once = evener.ByteEvener.step

    def step(self: Any) -> bool:
        steps.append(self.balancer.budget.work)
        return step_once(self)

    monkeypatch.setattr(evener.ByteEvener, "step", step)

    def run() -> Any:
        steps.clear()
        return propose(snap, Aim(mode=BYTES, min_gain=0.002), Limits(misplaced=MisplacedBudget(1e18, False)))

    counts = propose(snap, Aim(mode=PGS), Limits(misplaced=MisplacedBudget(1e18, False)))
    whole = run()
    made, began = len(steps), list(steps)
    with monkeypatch.context() as m:
        m.setattr(evener, "STEP_UNITS_PER_OSD", 0)
        free = run()
    assert free.result.items == whole.result.items and len(steps) == made > 1
    assert whole.balancer.budget.work - free.balancer.budget.work == \
        made * evener.STEP_UNITS_PER_OSD * snap.osds.count
    assert len(whole.result.items) > len(counts.result.items)
    # the bound reached as the last step that moved something begins (the very last found
    # nothing): the run stops there, with the note, one step's moves short
    bound = began[-2]
    monkeypatch.setattr("pg_advisor.balance.balancer.WORK_MAX", bound)
    cut = run()
    assert any(f"stopped at {bound:,} units of work" in n for n in cut.notes), cut.notes
    assert cut.result.moves < whole.result.moves      # (a PG moved twice keeps one item list)
