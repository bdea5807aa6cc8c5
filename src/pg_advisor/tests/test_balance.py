from collections import defaultdict
import copy
from typing import Any, Dict, List, Optional, Set, Tuple

import numpy as np
import pytest

from pg_advisor.model import snapshot
from pg_advisor.balance.balancer import MOVE_COST, Balancer
from pg_advisor.balance.proposal import balance_report
from pg_advisor.crush.placement import Placer
from pg_advisor.model.distribution import up_counts
from pg_advisor.model.errors import AdvisorError
from pg_advisor.analysis.legality import ancestors, replaceable, rule_shape

from .conftest import DUMP_FILES, read
from .layouts import (HOST_WITHOUT_RACK, IN_HOSTLESS_RACK, OSDS_ANYWHERE, RACK_THEN_HOST,
                      RACK_WITHOUT_HOST, UNDER_ROOT, Layout, load, regrow, use_rule)
from .proposals import applied, changed_primaries
from .upmap_checker import check_up_set


ALL_POOLS = ("rbd", "ecpool", "fast")


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
    one = balance_report(snap, pools=["ecpool"])
    assert all(k.startswith("2.") for k in one["items"])
    capped = balance_report(snap, max_items=2)
    assert capped["moves"] <= 2


@pytest.mark.parametrize("kw, code, message", [
    ({"mode": "weight"}, -22, "not one of pgs, bytes"),
    ({"max_items": 0}, -22, "at least 1"),
    ({"pools": ["nope"]}, -2, "pool 'nope' does not exist"),
])
def test_bad_arguments(snap: snapshot.Snapshot, kw: Dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(AdvisorError) as e:
        balance_report(snap, **kw)
    assert e.value.code == code and message in e.value.message


def test_bytes_mode_is_legal_keeps_counts_and_evens_fullness(snap: snapshot.Snapshot,
                                                             dumps: Dict[str, Any]) -> None:
    # the fixture's PGs hold ~1 MiB each on 1 GiB OSDs, and its fullest OSD (host2's
    # other OSD is reweighted) can only swap within its host: such a swap gains less than the
    # default threshold (0.5% of the mean per move), so a lower one is asked for
    pgs, byt = balance_report(snap, mode="pgs"), balance_report(snap, mode="bytes", min_gain=0.002)
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
    pgs = balance_report(snap, mode="pgs")
    on_demand = balance_report(snap, mode="bytes", min_gain=0.002)
    assert len(on_demand["items"]) > len(pgs["items"])
    f = pgs["fullness"]["after"]          # what bytes mode starts from: the counts even
    mean = f["max_used"] / f["max_ratio"]
    spread = max(f["max_used"] - mean, mean - f["min_used"])
    background = balance_report(snap, mode="bytes", min_gain=0.002, min_spread=spread * 1.01)
    assert background["items"] == pgs["items"]
    assert any("bytes left as they are" in n for n in background["notes"])
    assert balance_report(snap, mode="bytes", min_gain=0.002, min_spread=spread * 0.99)["items"] == \
        on_demand["items"]


def test_plan_rounds_take_the_gain_option_and_the_spread() -> None:
    from pg_advisor.execute.driver import pacing
    from pg_advisor.execute.pacing import BYTES_SPREAD
    from pg_advisor.model.options import Options
    p = pacing(Options(balance_min_gain=0.03), 0.05)
    assert p.min_gain == 0.03 and p.min_spread == BYTES_SPREAD == 0.01


def test_bytes_mode_without_pg_stats_says_so(dumps: Dict[str, Any]) -> None:
    bare = snapshot.load(dumps["osd_dump"], dumps["crush"])
    r = balance_report(bare, mode="bytes")
    assert r["fullness"] is None and any("needs PG stats" in n for n in r["notes"])
    assert r["items"] == balance_report(bare, mode="pgs")["items"]


# (layout, rbd's rule or None: the fixture's, the pools whose rules cannot reach osd.6)
CANNOT_REACH = [(UNDER_ROOT, None, ALL_POOLS), (IN_HOSTLESS_RACK, None, ALL_POOLS),
                # host3 is a host: the host rules of ecpool and fast do reach osd.6
                (HOST_WITHOUT_RACK, RACK_THEN_HOST, ("rbd",)),
                (RACK_WITHOUT_HOST, RACK_THEN_HOST, ALL_POOLS)]


@pytest.mark.parametrize("mode", ["pgs", "bytes"])
@pytest.mark.parametrize("layout, steps, blind", CANNOT_REACH,
                         ids=["under-root", "hostless-rack", "rack-host-rule:host-without-rack",
                              "rack-host-rule:rack-without-host"])
def test_balance_moves_nothing_onto_an_osd_the_rule_cannot_reach(
        dumps: Dict[str, Any], layout: Layout, steps: Optional[List[str]],
        blind: Tuple[str, ...], mode: str) -> None:
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
    r = balance_report(s, max_items=1 << 20, mode=mode, min_gain=0.002)
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
    ok = replaceable(anc, shape, allowed, up, up, np.array([0]), np.array([3, new]))
    assert ok.tolist() == [[True, False]]
    # nor, for a rule that fixes racks first, one without a rack
    dumps2 = read_dumps()
    new2 = regrow(dumps2, HOST_WITHOUT_RACK, device_class="hdd")
    use_rule(dumps2, "rbd", RACK_THEN_HOST)
    s2 = load(dumps2)
    shape2 = rule_shape(s2, s2.pool_by_name("rbd"))
    assert shape2.types == (s2.crush_types["rack"], s2.crush_types["host"])
    ok2 = replaceable(ancestors(s2), shape2, np.ones(s2.osds.count, bool), up, up,
                      np.array([0]), np.array([new2]))
    assert ok2.tolist() == [[False]]


def test_work_bound_stops_the_run_with_a_note(snap: snapshot.Snapshot,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    whole = balance_report(snap, None, 1 << 20, "pgs", copies_max=1e18)
    assert whole["moves"] > 2 and not any("units of work" in n for n in whole["notes"])
    # the states' cost counts: a bound just above it leaves room for two looks
    built = Balancer(snap).built_cost
    assert built > 0
    bound = built + 2 * MOVE_COST
    monkeypatch.setattr("pg_advisor.balance.balancer.WORK_MAX", bound)
    cut = balance_report(snap, None, 1 << 20, "pgs", copies_max=1e18)
    note = next(n for n in cut["notes"] if f"stopped at {bound:,} units of work" in n)
    assert f"the pools' states cost {built:,}" in note, note
    # the figures as they are: the moves made, and the fixture's ~27 PGs per OSD (not "thousands")
    assert f"; {cut['moves']:,} replica moves made; the largest pool holds " in note, note
    assert 0 < cut["moves"] <= 2, note
    assert "thousands" not in note and " PGs per OSD it may use)" in note, note
    assert cut["moves"] < whole["moves"]
    # the work bound is not the misplaced budget: the executor must not wait on it
    assert cut["throttled"] is False


def test_bytes_mode_steps_count_against_the_work_bound(snap: snapshot.Snapshot,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # each step sorts every OSD and checks its candidates: uncounted, 9,697 steps took 35 s
    # on a 10,000-OSD map with PG stats, past any bound of the run
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
        return propose(snap, None, 1 << 20, "bytes", copies_max=1e18, min_gain=0.002)

    counts = propose(snap, None, 1 << 20, "pgs", copies_max=1e18)
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
    assert len(cut.result.items) < len(whole.result.items)


def test_moves_leave_each_pg_its_primary_where_another_replica_will_do(snap: snapshot.Snapshot) -> None:
    # a PG whose primary moves drops the client ops in flight at the old primary when its
    # backfill ends; moving one of its other replicas changes the same counts (undoing an
    # item, which returns a PG to CRUSH's own choice, is preferred first)
    res = Balancer(snap).run()
    before, after = Placer(snap), Placer(applied(snap, res.items))
    moves, changed = 0, []
    for st in res.pools:
        if st.pool.type != "replicated":        # the preference is for replicated pools
            continue
        m0, m1 = before.map_pool(st.pool), after.map_pool(st.pool)
        fresh = np.array([m0.pgid(r) not in snap.pg_upmap_items for r in range(m0.up.shape[0])])
        moves += int((m0.up != m1.up)[fresh].sum())
        changed += [m0.pgid(r) for r in np.flatnonzero(
            fresh & (m0.up_primary != m1.up_primary) & (m0.up_primary >= 0))]
    assert moves > 3 and changed == [], (moves, changed)


def _choice(b: Balancer, st: Any, src: int, rows: np.ndarray) -> Tuple[int, int]:
    """What a push from `src` picks among `rows` when every destination costs the same."""
    from pg_advisor.balance.look import Look
    b._look = Look(st, src, rows, b._col)
    try:
        take = st.allowed.copy()
        take[src] = False
        mv = b._choose(b._look, take, np.zeros(take.size))
        assert mv is not None
        return mv
    finally:
        b._look.release()
        b._look = None


def test_a_primary_that_must_move_goes_to_the_osd_most_short_of_primaries(dumps: Dict[str, Any]) -> None:
    # the read tie-break, last of the ties: it picks among moves the counts see as equal,
    # and never a primary's move over another replica's (a rule of OSDs anywhere: a PG's
    # replica may go to any OSD its set does not hold)
    use_rule(dumps, "rbd", OSDS_ANYWHERE)
    snap = load(dumps)
    b = Balancer(snap)
    st = next(s for s in b.states if s.pool.name == "rbd")
    src = 0
    rows = st.rows(src)
    prim_rows = rows[st.primary[rows] == src]
    assert prim_rows.size and prim_rows.size < rows.size
    n = snap.osds.count
    b.prim_share = np.full(n, 10.0)
    picked = set()
    for short in range(1, n):
        b.prim = np.full(n, 10, np.int64)
        b.prim[short] = 0
        row, dst = _choice(b, st, src, prim_rows)
        legal = replaceable(b.anc, st.shape, st.allowed, st.up[prim_rows], st.forbidden(prim_rows),
                            np.full(prim_rows.size, src), np.array([short]))[:, 0]
        if legal.any():
            assert dst == short, (short, dst)       # there, when any of the rows may go there
        picked.add(dst)
        # with other replicas on src to move, none of them a primary, the primary stays
        row, dst = _choice(b, st, src, rows)
        assert st.primary[row] != src
    assert len(picked) > 1
    b.read_ties = False                 # off: the same destination whoever is short
    off = set()
    for short in range(1, n):
        b.prim = np.full(n, 10, np.int64)
        b.prim[short] = 0
        off.add(_choice(b, st, src, prim_rows)[1])
    assert len(off) == 1


def test_a_primary_a_pull_must_take_comes_off_the_osd_most_over_its_primaries(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # the pull's side of the read tie-break: among sources the counts rank the same, and
    # only primaries to take, the one most over its fair share of primaries gives
    use_rule(dumps, "rbd", OSDS_ANYWHERE)
    snap = load(dumps)
    b = Balancer(snap)
    st = next(s for s in b.states if s.pool.name == "rbd")
    every = st.rows

    def primaries_only(osd: int) -> np.ndarray:
        r = every(osd)
        return r[st.primary[r] == osd]
    monkeypatch.setattr(st, "rows", primaries_only)
    n = snap.osds.count
    dst = 0
    give = st.allowed.copy()
    give[dst] = False
    b.prim_share = np.full(n, 10.0)
    picked = set()
    for over in range(1, n):
        b.prim = np.full(n, 10, np.int64)
        b.prim[over] = 30
        mv = b._pull(st, dst, give, np.zeros(n))
        assert mv is not None and st.primary[mv[0]] == mv[1]       # a primary, as only those
        if primaries_only(over).size:
            assert mv[1] == over, (over, mv)
        picked.add(mv[1])
    assert len(picked) > 1


def test_the_read_tie_break_changes_no_count_figure(dumps: Dict[str, Any]) -> None:
    # on and off: as many moves, as even per pool and in total, no more primaries changed
    # (qa/bench_read_balance.py measures the primaries' spread on the benchmark's maps)
    racked = copy.deepcopy(dumps)
    use_rule(racked, "rbd", OSDS_ANYWHERE)
    for d in (dumps, racked):
        runs = []
        for on in (True, False):
            snap = load(copy.deepcopy(d))
            b = Balancer(snap)
            b.read_ties = on
            res = b.run()
            worst = max(float(np.abs(st.counts - st.share)[st.share > 0].max()) for st in res.pools)
            total = float(np.abs(b.total.counts - b.total.share)[b.total.share > 0].max())
            items = {k: tuple(v) for k, v in res.items.items() if v}
            runs.append((res.moves, worst, total, changed_primaries(snap, items)))
            if on:
                # the primaries it kept count of are where the items put them (all primary
                # affinities 1: the role stays with the replica's place in the set; no item
                # before, as one the run rewrites may put the same OSDs in another order)
                flat = copy.deepcopy(d)
                for o in flat["osd_dump"]["osds"]:
                    o["primary_affinity"] = 1.0
                flat["osd_dump"]["pg_upmap_items"] = []
                flat_snap = load(flat)
                fb = Balancer(flat_snap)
                fres = fb.run()
                after = applied(flat_snap, {k: tuple(v) for k, v in fres.items.items() if v})
                pl = Placer(after)          # CRUSH's (the snapshot's PG stats are the old ones)
                want = np.zeros(after.osds.count, np.int64)
                for p in after.pools:
                    if p.type == "replicated":
                        up_primary = pl.map_pool(p).up_primary
                        want += np.bincount(up_primary[up_primary >= 0], minlength=want.size)
                assert fb.prim.tolist() == want.tolist()
        (m1, w1, t1, p1), (m0, w0, t0, p0) = runs
        assert m1 == m0 and w1 <= w0 + 1e-9 and t1 <= t0 + 1e-9 and p1 <= p0, runs


def test_bytes_mode_keeps_primaries_where_a_step_nearly_as_good_does(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # PG sizes spread lognormally on the fixture; the same runs with the preference
    # switched off (every step "keeps" the primaries) are the reference
    from pg_advisor.balance import evener
    kept, blind = 0, 0
    for seed in range(6):
        d = read_dumps()
        rng = np.random.default_rng(seed)
        for s in d["pg_dump"]["pg_map"]["pg_stats"]:
            s["stat_sum"]["num_bytes"] = int(2**20 * rng.lognormal(0, 1.0))
        snap = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])
        with_pref = balance_report(snap, mode="bytes", min_gain=0.002)
        with monkeypatch.context() as m:
            m.setattr(evener, "moves_primary",
                      lambda st, rows, srcs, erasure_too=False: np.zeros(rows.size, bool))
            without = balance_report(snap, mode="bytes", min_gain=0.002)
        a, b = changed_primaries(snap, with_pref["items"]), changed_primaries(snap, without["items"])
        assert a <= b, seed
        kept, blind = kept + a, blind + b
        # as even, within what one more step is worth
        for k in ("max_ratio", "min_ratio"):
            assert with_pref["fullness"]["after"][k] == pytest.approx(
                without["fullness"]["after"][k], abs=0.005), (seed, k)
    assert kept < blind * 0.6, (kept, blind)


def test_a_step_keeping_the_primaries_wins_at_half_the_gain(snap: snapshot.Snapshot) -> None:
    from pg_advisor.balance.evener import KEEP_RATIO, ByteEvener, Move
    ev = ByteEvener(Balancer(snap), 0.005)
    st = ev.balancer.states[0]
    worth = ev.min_gain

    def move(gain: float, keeps: bool, swap: bool = False) -> Move:
        return Move(gain, st, (0, 0, 1), (1, 1, 0) if swap else None, keeps=keeps)
    best = move(10 * worth, False)
    near = move(KEEP_RATIO * 10 * worth, True)
    far = move(KEEP_RATIO * 10 * worth * 0.99, True)
    assert ev._choose([best, near]) is near
    assert ev._choose([best, far]) is best
    # a swap is two moves: its gain counts per move
    assert ev._choose([best, move(2 * KEEP_RATIO * 10 * worth, True, swap=True)]) is not best
    assert ev._choose([best, move(KEEP_RATIO * 10 * worth, True, swap=True)]) is best
    # nothing below the minimum gain, keeping primaries or not
    assert ev._choose([move(worth * 0.9, True)]) is None
    only = move(worth, False)
    assert ev._choose([move(worth * 0.9, True), only]) is only


def test_windows_walk_an_osds_rows_and_never_run_dry() -> None:
    # an OSD of many PGs is looked at ROWS_MAX rows at a time, from a cursor; rows gone
    # since are skipped, and when all the old array's rest is gone it is taken again
    from pg_advisor.balance.look import ROWS_MAX, windows

    class Rows:
        """The part of a PoolState windows uses: one OSD's rows as a set."""
        def __init__(self, held: Set[int]) -> None:
            self.held = held
            self.cursor: Dict[int, Any] = {}
            self.built = [0]

        @property
        def held_n(self) -> Dict[int, int]:
            return defaultdict(int, {7: len(self.held)})

        def rows(self, osd: int) -> np.ndarray:
            self.built[0] += len(self.held)
            return np.array(sorted(self.held), dtype=np.int64)

        def holds(self, w: np.ndarray, osd: int) -> np.ndarray:
            return np.array([r in self.held for r in w.tolist()], dtype=bool)

    held = set(range(3 * ROWS_MAX))
    st: Any = Rows(held)
    first = next(windows(st, 7))
    assert first.size == ROWS_MAX and st.built[0] == 3 * ROWS_MAX
    assert set(np.concatenate(list(windows(st, 7))).tolist()) == held      # all, in windows
    # every row the old array still names goes, others come: the next window is the new ones
    st.cursor[7] = (st.cursor[7][0], ROWS_MAX)
    held.clear()
    held.update(range(10_000, 10_000 + 2 * ROWS_MAX))
    got = next(windows(st, 7))
    assert got.size and set(got.tolist()) <= held
    # few rows: all of them at once, as the pool state gives them
    small: Any = Rows({4, 5})
    assert [w.tolist() for w in windows(small, 7)] == [[4, 5]]


def _rbd_of(pg_num: int) -> snapshot.Snapshot:
    d = read_dumps()
    for p in d["osd_dump"]["pools"]:
        if p["pool_name"] == "rbd":
            for k in ("pg_num", "pg_placement_num", "pg_num_target", "pg_placement_num_target"):
                p[k] = pg_num
    d["pg_dump"]["pg_map"]["pg_stats"] = []
    return snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"])


def test_pushes_from_one_osd_check_only_new_destinations(monkeypatch: pytest.MonkeyPatch) -> None:
    # 4,096 PGs on 6 OSDs: an OSD's pushes reuse the window and the destinations the last
    # look checked (each move changes its own row alone), so a move checks a few (PG, OSD)
    # pairs, not a window's (550 a move when every push looked again)
    import pg_advisor.balance.balancer as balancer
    pairs = [0]
    real = balancer.replaceable

    def counted(anc: Any, shape: Any, allowed: Any, up: Any, held: Any, srcs: np.ndarray,
                cols: np.ndarray) -> np.ndarray:
        pairs[0] += srcs.size * cols.size
        return real(anc, shape, allowed, up, held, srcs, cols)
    monkeypatch.setattr(balancer, "replaceable", counted)
    res = Balancer(_rbd_of(4096)).run()
    assert res.moves == res.lower_bound > 100
    assert pairs[0] <= 32 * res.moves, (pairs[0], res.moves)


def test_pool_state_rows_follow_moves() -> None:
    # each OSD's rows come from arrays built once and lists of rows moved in: after any
    # moves they are what the up sets say, ascending, and held_n counts them
    b = Balancer(_rbd_of(512))
    st = b.states[0]
    rng = np.random.default_rng(5)
    n = st.share.size
    healthy = np.flatnonzero(st.healthy)

    def truth(osd: int) -> List[int]:
        return [int(r) for r in healthy if osd in st.up[r].tolist()]
    for _ in range(6):
        for _ in range(150):
            r = int(rng.choice(healthy))
            src = int(rng.choice(st.up[r]))
            free = [o for o in range(n) if o not in st.up[r].tolist()]
            st.move(r, src, int(rng.choice(free)))
        for osd in range(n):
            assert st.rows(osd).tolist() == truth(osd), osd
            assert st.held_n[osd] == len(truth(osd))


def test_candidates_are_the_k_cheapest_as_costs_change(monkeypatch: pytest.MonkeyPatch) -> None:
    # _cand keeps the POOL cheapest destinations of a look; while the moves' destinations
    # grow dearer or leave `take`, it must still give exactly the k cheapest of all
    from types import SimpleNamespace
    import pg_advisor.balance.balancer as balancer
    monkeypatch.setattr(balancer, "POOL", 8)
    rng = np.random.default_rng(11)
    b = Balancer.__new__(Balancer)
    for trial in range(200):
        n = int(rng.integers(1, 60))
        allowed = rng.random(n) < 0.8
        take = rng.random(n) < 0.7
        cost = rng.integers(0, 20, n).astype(float)      # ties on purpose
        look: Any = SimpleNamespace(st=SimpleNamespace(allowed=allowed), cost=None,
                                    pool=np.zeros(0, np.int64), floor=np.inf)
        for _ in range(30):
            k = int(rng.integers(1, 6))
            cand, every = b._cand(look, take, cost, k)
            legal = np.flatnonzero(take & allowed)
            want = np.sort(cost[legal])[:k]
            assert np.array_equal(np.sort(cost[cand]), want), (trial, cand, legal)
            assert set(cand.tolist()) <= set(legal.tolist()) and len(set(cand.tolist())) == cand.size
            assert every == (cand.size == legal.size)
            if not cand.size:
                break
            d = int(rng.choice(cand))                     # a move into d: dearer, maybe full
            cost[d] += float(rng.integers(0, 4))
            take[d] &= bool(rng.random() < 0.8)


def test_the_states_cost_counts_crush_only_where_this_balancer_mapped(snap: snapshot.Snapshot) -> None:
    # the bound counts what building the states cost: a placer that mapped the pools
    # before (the mgr's, while the cluster is unchanged) spares this run the CRUSH part
    from pg_advisor.balance import balancer as B
    placer = Placer(snap)
    first = Balancer(snap, placer)
    again = Balancer(snap, placer)
    replicas = sum(st.up.size for st in again.states)
    assert again.built_cost == replicas * B.STATE_REPLICA_COST + len(again.states) * B.STATE_POOL_COST
    crush = placer.work
    assert crush.replicas >= replicas and crush.draws >= crush.replicas
    assert first.built_cost == (again.built_cost + crush.draws * B.DRAW_COST
                                + crush.replicas * B.CRUSH_REPLICA_COST)
    assert first.budget.work == first.built_cost and again.budget.work == again.built_cost


def test_a_pg_moved_back_within_a_run_gives_its_budget_back(snap: snapshot.Snapshot) -> None:
    """A bytes step that undid a count move of the same round spent both OSDs' backfill
    room for nothing; with every OSD's room at 2 the round then set no item and waited,
    "throttled", for a backfill that never came (a thrash run's plan, 4 minutes and
    counting with every PG active+clean). Moved back, the PG costs nothing."""
    b = Balancer(snap, None, ["rbd"], 1000.0, (), np.full(snap.osds.count, 1))
    b._begin(10)
    st = b.states[0]
    row = 0
    a, others = int(st.up[row][0]), set(st.up[row].tolist())
    x = next(o for o in range(snap.osds.count) if o not in others)
    assert b.apply_move(st, row, a, x)
    room = b.budget.osd_room
    assert room is not None and room[a] == 0 and room[x] == 0 and b.budget.misplaced > 0
    assert b.apply_move(st, row, x, a)            # back where the run found it: given back
    assert room[a] == 1 and room[x] == 1 and b.budget.misplaced == 0 and b.budget.moves_left == 10
    assert not b.budget.stopped and (st.up[row] == st.start[row]).all()
    # so another PG may still move off that OSD in this round
    row2 = next(r for r in range(st.up.shape[0]) if a in st.up[r].tolist() and x not in st.up[r].tolist())
    assert b.apply_move(st, row2, a, x)


def test_the_budget_says_why_a_run_stopped() -> None:
    from pg_advisor.balance.budget import Budget, Stop
    room = Budget(copies_max=10, first_free=False, osd_room=np.array([1, 5]), work=0)
    room.start(3)
    assert room.charge(4, [0, 1]) and room.misplaced == 4 and room.osd_room is not None
    assert room.osd_room.tolist() == [0, 4] and room.moves_left == 2
    assert not room.charge(1, [0, 1]) and room.stop is Stop.ROOM and room.throttled
    assert room.misplaced == 4 and room.osd_room.tolist() == [0, 4]       # nothing taken
    room.halt(Stop.MISPLACED)
    assert room.stop is Stop.ROOM                 # the first reason stands
    room.halt(Stop.WORK)
    assert room.stop is Stop.WORK and not room.throttled     # but a partial answer says so
    # the misplaced budget; the first move free only when nothing is misplaced yet
    for first_free, made in ((False, False), (True, True)):
        b = Budget(copies_max=2, first_free=first_free, osd_room=None, work=0)
        b.start(5)
        assert b.charge(3, [0, 1]) is made
        assert b.stop is (None if made else Stop.MISPLACED)
    b.charge(1, [2, 3])
    assert b.stop is Stop.MISPLACED and b.throttled and b.misplaced == 3
    # the moves asked for: done, not throttled
    moves = Budget(copies_max=None, first_free=False, osd_room=None, work=0)
    moves.start(1)
    assert moves.charge(10 ** 9, [0, 1]) and moves.stop is Stop.MOVES and not moves.throttled
    moves.start(0)
    assert moves.stopped and not moves.charge(0, [0, 1])
