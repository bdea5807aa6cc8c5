"""The balancer keeps primaries where it can: a move of another replica first, a primary that must
move sent where primaries are short, the read tie-break changing no count."""
import copy
from typing import Any, Dict, Tuple

import numpy as np
import pytest

from pg_advisor.model import snapshot
from pg_advisor.balance.balancer import Balancer
from pg_advisor.balance.proposal import Aim
from pg_advisor_testkit.loose import balance_report
from pg_advisor.crush.placement import Placer
from pg_advisor.model.options import BalanceMode
from pg_advisor.rules.legality import replaceable

from pg_advisor_testkit.dumps import DUMP_FILES, read
from .layouts import OSDS_ANYWHERE, load, use_rule
from pg_advisor_testkit.proposals import applied, changed_primaries


def read_dumps() -> Dict[str, Any]:
    return {k: read(v) for k, v in DUMP_FILES.items()}


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
    b.search._look = Look(st, src, rows, b.search._col)
    try:
        take = st.allowed.copy()
        take[src] = False
        mv = b.search._choose(b.search._look, take, np.zeros(take.size))
        assert mv is not None
        return mv
    finally:
        b.search._look.release()
        b.search._look = None


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
    b.primaries.share = np.full(n, 10.0)
    picked = set()
    for short in range(1, n):
        b.primaries.held = np.full(n, 10, np.int64)
        b.primaries.held[short] = 0
        row, dst = _choice(b, st, src, prim_rows)
        legal = replaceable(st.reach(b.anc), st.up[prim_rows], st.forbidden(prim_rows),
                            np.full(prim_rows.size, src), np.array([short]))[:, 0]
        if legal.any():
            assert dst == short, (short, dst)       # there, when any of the rows may go there
        picked.add(dst)
        # with other replicas on src to move, none of them a primary, the primary stays
        row, dst = _choice(b, st, src, rows)
        assert st.primary[row] != src
    assert len(picked) > 1
    b.primaries.read_ties = False       # off: the same destination whoever is short
    off = set()
    for short in range(1, n):
        b.primaries.held = np.full(n, 10, np.int64)
        b.primaries.held[short] = 0
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
    b.primaries.share = np.full(n, 10.0)
    picked = set()
    for over in range(1, n):
        b.primaries.held = np.full(n, 10, np.int64)
        b.primaries.held[over] = 30
        mv = b.search.pull(st, dst, give, np.zeros(n))
        assert mv is not None and st.primary[mv[0]] == mv[1]       # a primary, as only those
        if primaries_only(over).size:
            assert mv[1] == over, (over, mv)
        picked.add(mv[1])
    assert len(picked) > 1


def test_the_read_tie_break_changes_no_count_figure(dumps: Dict[str, Any]) -> None:
    # on and off: as many moves, as even per pool and in total, no more primaries changed
    # (qa/bench/balance.py --mode read-ties measures the primaries' spread on the benchmark's maps)
    racked = copy.deepcopy(dumps)
    use_rule(racked, "rbd", OSDS_ANYWHERE)
    for d in (dumps, racked):
        runs = []
        for on in (True, False):
            snap = load(copy.deepcopy(d))
            b = Balancer(snap)
            b.primaries.read_ties = on
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
                assert fb.primaries.held.tolist() == want.tolist()
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
        with_pref = balance_report(snap, Aim(mode=BalanceMode.BYTES, min_gain=0.002))
        with monkeypatch.context() as m:
            m.setattr(evener, "moves_primary",
                      lambda st, rows, srcs, erasure_too=False: np.zeros(rows.size, bool))
            without = balance_report(snap, Aim(mode=BalanceMode.BYTES, min_gain=0.002))
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
