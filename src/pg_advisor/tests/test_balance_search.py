"""The balancer's search: an OSD's rows walked in windows, destinations checked once, the pool
state following moves, the k cheapest candidates, the states' cost, and the budget's
accounting."""
from collections import defaultdict
from typing import Any, Dict, List, Set

import numpy as np
import pytest

from pg_advisor.model import snapshot
from pg_advisor.balance.budget import Limits
from pg_advisor.balance.balancer import WORK_MAX, Balancer
from pg_advisor.crush.placement import Placer
from pg_advisor.model.misplaced import MisplacedBudget

from pg_advisor_testkit.dumps import DUMP_FILES, read


def read_dumps() -> Dict[str, Any]:
    return {k: read(v) for k, v in DUMP_FILES.items()}


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
    from pg_advisor.balance import search, strategies
    pairs = [0]
    real = search.replaceable

    def counted(reach: Any, up: Any, held: Any, srcs: np.ndarray, cols: np.ndarray) -> np.ndarray:
        pairs[0] += srcs.size * cols.size
        return real(reach, up, held, srcs, cols)
    monkeypatch.setattr(search, "replaceable", counted)
    monkeypatch.setattr(strategies, "replaceable", counted)
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
    # a look keeps its CANDIDATES_KEPT cheapest destinations; while the moves' destinations
    # grow dearer or leave `take`, cheapest() must still give exactly the k cheapest of all
    from types import SimpleNamespace
    from pg_advisor.balance import look as looks
    monkeypatch.setattr(looks, "CANDIDATES_KEPT", 8)
    rng = np.random.default_rng(11)
    for trial in range(200):
        n = int(rng.integers(1, 60))
        allowed = rng.random(n) < 0.8
        take = rng.random(n) < 0.7
        cost = rng.integers(0, 20, n).astype(float)      # ties on purpose
        look: Any = SimpleNamespace(st=SimpleNamespace(allowed=allowed), cost=None,
                                    candidates=np.zeros(0, np.int64), floor=np.inf)
        for _ in range(30):
            k = int(rng.integers(1, 6))
            cand, every = looks.cheapest(look, take, cost, k)
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
    # what building the states cost (said in the work bound's note): a placer that mapped
    # the pools before (the mgr's, while the cluster is unchanged) spares this run the CRUSH part
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
    # ... and is not charged to the search's bound (WORK_MAX)
    assert first.budget.work == 0 and again.budget.work == 0


def test_a_pg_moved_back_within_a_run_gives_its_budget_back(snap: snapshot.Snapshot) -> None:
    """A bytes step that undid a count move of the same round spent both OSDs' backfill
    room for nothing; with every OSD's room at 2 the round then set no item and waited,
    "throttled", for a backfill that never came (a thrash run's plan, 4 minutes and
    counting with every PG active+clean). Moved back, the PG costs nothing."""
    b = Balancer(snap, None, ["rbd"], Limits(misplaced=MisplacedBudget(1000.0, snap.misplaced_objects == 0),
                                             osd_room=np.full(snap.osds.count, 1)))
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
    room = Budget(copies_max=10, first_free=False, osd_room=np.array([1, 5]), work=0, work_max=WORK_MAX)
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
        b = Budget(copies_max=2, first_free=first_free, osd_room=None, work=0, work_max=WORK_MAX)
        b.start(5)
        assert b.charge(3, [0, 1]) is made
        assert b.stop is (None if made else Stop.MISPLACED)
    b.charge(1, [2, 3])
    assert b.stop is Stop.MISPLACED and b.throttled and b.misplaced == 3
    # the moves asked for: done, not throttled
    moves = Budget(copies_max=None, first_free=False, osd_room=None, work=0, work_max=WORK_MAX)
    moves.start(1)
    assert moves.charge(10 ** 9, [0, 1]) and moves.stop is Stop.MOVES and not moves.throttled
    moves.start(0)
    assert moves.stopped and not moves.charge(0, [0, 1])
