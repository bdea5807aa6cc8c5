"""pg-upmap-items that bring PG counts to the weight-proportional share: one run.

The goal at each level is floor(share) <= count <= ceil(share) on every OSD, first per
pool, then for the OSDs' totals over all pools. A move takes one replica of one PG off
one OSD and puts it on another that the PG's rule allows (rules/legality.py). A run
builds each pool's state (pool_state.py), makes the moves its strategies choose
(strategies.py) from what the move search finds (search.py) within its budget
(budget.py), then, in bytes mode, evens how full the OSDs are (evener.py); its result is
the item lists that give the new up sets.
"""
import copy
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..rules.legality import ancestors
from ..crush.placement import Placer
from ..crush.upmap import build_items, NotExpressible
from ..rules.reach import rule_weights, unreachable
from ..model.distribution import up_counts
from ..model.errors import AdvisorError
from ..model.misplaced import MisplacedBudget
from ..model.snapshot import Pool, Rule, Snapshot
from ..model.work import count
from ..analysis.space import fill_room, full_note
from .budget import Budget, Limits, Stop
from .pool_state import (EPS, BalanceResult, build_state, ChainMove, Level, moves_between, PoolState,
                         StateSource)
from .search import MOVE_COST, MoveSearch, Primaries
from .strategies import CountEvener
from .unlist import FullnessGuard, remove_needless

# what the other modules import from here, the run's module (EPS and MOVE_COST are
# pool_state's and search's: here for the callers that read them beside the run)
__all__ = ["Balancer", "BalanceResult", "EPS", "Level", "MOVE_COST", "PoolState", "WORK_MAX"]

# The work one run's search may do, in units of one (PG, OSD) legality check (some 40 ns),
# at least MOVE_COST a look. Past it a run stops with a note and the next continues from
# its items; sized so that the largest maps of doc/balance.rst and doc/robustness.rst end
# within it (qa/bench/large_inputs.py). Building the pools' states is not charged to it:
# that cost follows the PGs, which are bounded before any mapping (commands/bounds.py
# offline, the loader's replica bound in the mgr), and charged here it left nothing for
# the moves: 2^20 PGs on 20,000 OSDs cost 377,797,233 units to build, and every run of
# that map stopped with no move made (issue 58).
WORK_MAX = 220_000_000
# what building the states costs, in those units (a hash 31 ns, CRUSH's bookkeeping
# 0.8 us a replica, a state's arrays 0.36 us a replica and 0.54 ms a pool): said in the
# work bound's note and counted with the search (model/work.py), not bounded here
DRAW_COST = 1           # a (PG, bucket item) pair CRUSH hashed
CRUSH_REPLICA_COST = 20     # a replica CRUSH mapped
STATE_REPLICA_COST = 9      # a replica of a pool's state
STATE_POOL_COST = 13_500    # a pool's state


def _weakly(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` of an object, called through a weak reference: a callback the object's own
    parts keep must not keep it alive (a run's arrays would wait for the cycle collector,
    and the mgr builds a run for every round and command)."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any) -> Any:
        bound = ref()
        assert bound is not None, "called after its balancer was freed"
        return bound(*args)
    return call


class Balancer:
    def __init__(self, snap: Snapshot, placer: Optional[Placer] = None,
                 pools: Optional[List[str]] = None, limits: Limits = Limits(),
                 drain: Sequence[int] = ()) -> None:
        self.snap = snap
        # OSDs to empty (`drain`): no share and never a destination, so every replica on
        # them is excess the moves take off. A stored drain plan may name an OSD the map no
        # longer has (purged, then `osd setmaxosd` lower): nothing is left on it to move
        self.drain = np.array(sorted(o for o in set(drain) if 0 <= o < snap.osds.count), dtype=np.int64)
        self.placer = placer or Placer.of(snap)
        self.anc = ancestors(snap)
        o = snap.osds
        self.usable = o.exists & o.up & o.in_ & (o.reweight > 0) & (o.crush_weight > 0)
        self.usable[self.drain] = False
        self.notes: List[str] = []
        self.left_out: Dict[str, str] = {}      # pool name -> why it cannot be balanced
        self.states: List[PoolState] = []
        self._notes_of: Dict[str, List[str]] = {}     # pool name -> the notes its state gave
        self._by_rule: Dict[int, Tuple[np.ndarray, List[int]]] = {}   # rule -> weights, OSDs lost
        # the goal's width: floor to ceiling of each share, `deviation` - 1 PGs more each way
        self.slack = max(limits.guards.deviation, 1) - 1
        self._source = StateSource(snap, self.placer, self.anc, self.usable, _weakly(self._rule_weights),
                                   self.slack, limits.fixed)
        crush = copy.copy(self.placer.work)
        self._build_states(pools)
        self._sum_total()
        # space (analysis/space.py): an OSD takes PGs only while it has room for the largest
        # PG of the run's pools, so no move passes the fill limit, however the run goes on
        self.fill = limits.guards.fill
        self.room = np.array(fill_room(snap, self.fill), dtype=np.float64)
        self.reserve = max((float(st.bytes.max(initial=0.0)) for st in self.states), default=0.0)
        self.full: List[int] = []
        # PGs with pg_upmap_items in the map, as the run changes them (a bound: upmap_max)
        self.listed, self.upmap_max = len(snap.pg_upmap_items), limits.guards.upmap_max
        self._bound_lists()
        self._close(np.flatnonzero(self.usable & ((self.room < self.reserve) | (self.room <= 0))))
        # what the states cost (see WORK_MAX), CRUSH's where this run mapped the pools (a
        # placer that mapped them before, as the mgr's between changes, did it)
        self.built_cost = ((self.placer.work.draws - crush.draws) * DRAW_COST
                           + (self.placer.work.replicas - crush.replicas) * CRUSH_REPLICA_COST
                           + sum(st.up.size for st in self.states) * STATE_REPLICA_COST
                           + len(self.states) * STATE_POOL_COST)
        m = limits.misplaced or MisplacedBudget(None, False)     # (None: no misplaced bound)
        self.budget = Budget(m.copies, m.first_free,
                             limits.osd_room, 0, WORK_MAX, _weakly(self._note_work_stop))
        for st in self.states:
            st.budget = self.budget
        self.lb = 0
        self.drain_chained = 0      # a drain's chain moves (drain_moves.py)
        self.primaries = Primaries(snap, self.states)
        self.search = MoveSearch(self.anc, self.budget, self.primaries, snap.osds.count)

    def _build_states(self, pools: Optional[List[str]]) -> None:
        """Each pool's state (of `pools`, None: all), and why a pool has none."""
        for pool in self.snap.pools:
            if pools is not None and pool.name not in pools:
                continue
            start = len(self.notes)
            try:
                self.states.append(self._state(pool))
            except AdvisorError as e:
                self.notes.append(e.message)
                self.left_out[pool.name] = e.message
            self._notes_of[pool.name] = self.notes[start:]
        for pool, why in self.snap.unmapped:       # the loader set these aside: CRUSH cannot place them
            if pools is None or pool.name in pools:
                self.left_out[pool.name] = why
                self._notes_of[pool.name] = [f"pool {pool.name} is not mapped: {why}"]
                self.notes += self._notes_of[pool.name]

    def _sum_total(self) -> None:
        n = self.snap.osds.count
        self.total = Level(sum((st.counts for st in self.states), np.zeros(n, np.int64)),
                           sum((st.share for st in self.states), np.zeros(n)), self.slack)

    def only(self, names: Sequence[str]) -> "Balancer":
        """Keep the states of these pools alone (before any move): a caller that has looked
        at every pool's state need not build the ones it keeps again."""
        self.states = [st for st in self.states if st.pool.name in names]
        # as if built for these pools alone: their notes only, in the map's pool order
        self.notes = [n for name, notes in self._notes_of.items() if name in names for n in notes]
        self.left_out = {k: v for k, v in self.left_out.items() if k in names}
        self._sum_total()
        self.primaries.count(self.states)
        return self

    def _close(self, osds: np.ndarray) -> None:
        """No more PGs onto `osds`: they are at the fill limit (said in the run's notes)."""
        if osds.size:
            for st in self.states:
                st.allowed[osds] = False
            self.full = sorted(set(self.full) | set(osds.tolist()))

    def _fits(self, st: PoolState, row: int, after: List[int]) -> bool:
        """Has each OSD that PG `row` newly goes to room for it?"""
        size = float(st.bytes[row])
        kept = set(st.start[row].tolist()) | set(st.up[row].tolist())
        return size <= 0 or all(self.room[o] >= size for o in after if o not in kept and o >= 0)

    def at_upmap_max(self) -> bool:
        return self.upmap_max is not None and self.listed >= self.upmap_max

    def _bound_lists(self) -> None:
        """At upmap_max, only the PGs with item lists move (their lists change or go); told
        to the states only when that changes (a thousand pools, tens of thousands of moves)."""
        at = self.at_upmap_max()
        if any(st.only_listed != at for st in self.states[:1]):
            for st in self.states:
                st.only_listed = at

    @staticmethod
    def _listed(st: PoolState, row: int, up: List[int]) -> int:
        """1 if PG `row` at up set `up` needs an item list (it is not CRUSH's own set)."""
        return int(bool(moves_between(st.raw[row].tolist(), up, st.pool.type == "replicated")))

    def _refused(self, changes: List[Tuple[PoolState, int, List[int]]]) -> Optional[Stop]:
        """Why these PGs' new up sets, (state, row, up set) each, may not be made (None: they
        may): a destination without room, or item lists past upmap_max."""
        if not all(self._fits(st, row, after) for st, row, after in changes):
            return Stop.SPACE       # (a destination that filled up mid-run)
        more = sum(self._listed(st, row, after) - self._listed(st, row, st.up[row].tolist())
                   for st, row, after in changes)
        if self.upmap_max is not None and more > 0 and self.listed + more > self.upmap_max:
            return Stop.ENTRIES
        return None

    def _fill(self, st: PoolState, row: int, before: List[int]) -> None:
        """The room PG `row`'s moves took (a copy it no longer makes gives it back)."""
        size = float(st.bytes[row])
        start, after = set(st.start[row].tolist()), set(st.up[row].tolist())
        gone, came = set(before) - after - start, after - set(before) - start
        for o in gone:
            if o >= 0:
                self.room[o] += size
        for o in came:
            if o >= 0:
                self.room[o] -= size
        self._close(np.array([o for o in came if o >= 0 and self.room[o] < max(self.reserve, 1e-9)],
                             dtype=np.int64))

    def _state(self, pool: Pool) -> PoolState:
        return build_state(self._source, pool, self.notes)

    def _rule_weights(self, rule: Rule) -> Tuple[np.ndarray, List[int]]:
        """The OSDs' weights under `rule` (0 where its steps cannot reach, and on the OSDs
        being drained), and the OSDs it cannot reach; once per rule (a thousand pools may
        share one)."""
        if rule.id not in self._by_rule:
            w = rule_weights(self.snap, rule).copy()     # (shared, read-only)
            w[self.drain] = 0.0
            self._by_rule[rule.id] = (w, np.flatnonzero(unreachable(self.snap, rule)).tolist())
        w, lost = self._by_rule[rule.id]
        return w.copy(), lost

    @property
    def stopped(self) -> bool:
        return self.budget.stopped

    def _note_work_stop(self) -> None:
        """The note the work bound leaves: the figures that made the run long, as they are
        (not a guess at the cause)."""
        moved = int(sum(((st.up != st.start) & (st.start >= 0)).sum() for st in self.states))
        per_osd = max((float(st.counts.sum()) / max(int(st.allowed.sum()), 1) for st in self.states),
                      default=0.0)
        self.notes.append(f"stopped at {self.budget.work_max:,} units of work, the bound of one run's "
                          f"search (legality checks; building the pools' states cost "
                          f"{self.built_cost:,} beside it; {moved:,} replica moves made; "
                          f"the largest pool holds "
                          f"{per_osd:,.0f} PGs per OSD it may use): the items are a partial "
                          f"answer, and another run continues from them")

    def apply_move(self, st: PoolState, row: int, src: int, dst: int) -> bool:
        """Make the move unless a budget forbids it (then the run stops)."""
        return self.apply_all(st, row, [(src, dst)])

    def apply_chain(self, first: ChainMove, second: ChainMove) -> bool:
        """Both moves of a chain, (pool, row, from, to) each, or none if the budget cannot pay
        both (then the run stops): half a chain leaves its middle OSD past its count and its
        backfill room (the middle OSD backfills twice, in and then out)."""
        objects = [float(first[0].objects[first[1]]), float(second[0].objects[second[1]])]
        why = self._refused([(m[0], m[1], self._after(m[0], m[1], [(m[2], m[3])])) for m in (first, second)])
        if why is not None:
            self.budget.halt(why)
            return False
        if not self.budget.payable(objects, [first[2], first[3], second[2], second[3]]):
            return False
        try:
            if not self.apply_move(*first):
                return False
            if not self.apply_move(*second):
                # payable() paid what charge() takes: a bug, not the budget (the first move
                # stands, the middle OSD past its room)
                raise RuntimeError(f"chain {first[1:]} then {second[1:]}: paid, its second move refused")
            return True
        finally:
            self.budget.paid_in_full()

    def apply_all(self, st: PoolState, row: int, moves: List[Tuple[int, int]]) -> bool:
        """Make one PG's moves together, or none if a budget forbids them (then the run
        stops): a group's moves are legal only all at once. The move budget counts one PG's
        item list as one, however many replicas it moves."""
        replicated = st.pool.type == "replicated"
        before = st.up[row].tolist()
        after = self._after(st, row, moves)
        why = self._refused([(st, row, after)])
        if why is not None:
            self.budget.halt(why)
            return False
        start = st.start[row].tolist()
        earlier = moves_between(start, st.up[row].tolist(), replicated)
        if earlier and not moves_between(start, after, replicated):
            # back where the run found it: what its earlier moves took is given back
            self.budget.refund(float(st.objects[row]) * len(earlier), [o for m in earlier for o in m])
        elif not self.budget.charge(float(st.objects[row]) * len(moves), [o for m in moves for o in m]):
            return False
        for src, dst in moves:
            self.primaries.moving(st, row, src, dst)
            st.move(row, src, dst)
            self.total.counts[src] -= 1
            self.total.counts[dst] += 1
        self._fill(st, row, before)
        more = self._listed(st, row, after) - self._listed(st, row, before)
        if more:
            self.listed += more
            self._bound_lists()
        return True

    @staticmethod
    def _after(st: PoolState, row: int, moves: List[Tuple[int, int]]) -> List[int]:
        after = st.up[row].tolist()
        for src, dst in moves:
            after[after.index(src)] = dst
        return after

    # -- results --------------------------------------------------------------------------------

    def items(self) -> Dict[str, List[Tuple[int, int]]]:
        """The new full item list of every PG whose up set changed (empty: remove them),
        from CRUSH's sets as the mon applies items to them (down OSDs kept). A PG whose new
        set items cannot express goes back to where it was, with a note."""
        out: Dict[str, List[Tuple[int, int]]] = {}
        for st in self.states:
            changed = np.flatnonzero((st.up != st.start).any(axis=1))
            if not changed.size:
                continue
            _, raw = self.placer.crush_sets(st.pool)
            replicated = st.pool.type == "replicated"
            for r in changed.tolist():
                pgid = f"{st.pool.id}.{r:x}"
                try:
                    out[pgid] = build_items(raw[r].tolist(), st.up[r].tolist(), replicated,
                                            self.placer.weight)
                except NotExpressible as e:
                    self.notes.append(f"{pgid} left where it is: {e}")
                    for src, dst in moves_between(st.up[r].tolist(), st.start[r].tolist(), replicated):
                        st.move(r, src, dst)
                        self.total.counts[src] -= 1
                        self.total.counts[dst] += 1
        return out

    def lower_bound(self) -> int:
        """Replica moves needed at least: per pool, the replicas above each OSD's ceiling or
        missing below its floor, whichever is more, summed; or the same for the totals, if
        that is more (every move fixes at most one unit of each)."""
        n = self.snap.osds.count
        pools = sum(Level(up_counts(st.base, n), st.share, self.slack).bound() for st in self.states)
        total = Level(sum((up_counts(st.base, n) for st in self.states), np.zeros(n, np.int64)),
                      self.total.share, self.slack).bound()
        return max(pools, total)

    def _repair(self) -> None:
        """Undo the items of PGs that break their rule's counts (CRUSH's own set keeps them)."""
        for st in self.states:
            for r in st.broken.tolist():
                self.apply_all(st, r, moves_between(st.up[r].tolist(), st.raw[r].tolist(),
                                                    st.pool.type == "replicated"))
            st.base = st.up.copy()

    def _begin(self, max_moves: int) -> None:
        self.budget.start(max_moves)
        self._repair()
        self.lb = self.lower_bound()

    def _result(self) -> BalanceResult:
        items = self.items()     # first: a PG items cannot express is moved back
        moves = int(sum(((st.up != st.start) & (st.start >= 0)).sum() for st in self.states))
        repairs = int(sum(((st.base != st.start) & (st.start >= 0)).sum() for st in self.states))
        if self.full:
            self.notes.append(full_note(self.snap, self.full, self.fill))
        if self.at_upmap_max():
            self.notes.append(f"stopped at {self.listed:,} PGs with pg_upmap_items in the map, the "
                              f"bound upmap_max ({self.upmap_max:,}): no new item list past it, only "
                              f"the lists there changed or removed (each is in every OSDMap the mons "
                              f"build and send; option max_upmap_items)")
        return BalanceResult(pools=self.states, items=items, moves=moves,
                             lower_bound=self.lb, notes=self.notes, repairs=repairs)

    def run(self, max_moves: int = 1 << 30, then: Optional[Callable[[], None]] = None,
            even: bool = True, fullness: Optional[FullnessGuard] = None) -> BalanceResult:
        """Balance PG counts with at most `max_moves` replica moves (item lists), then run
        `then` (bytes mode's evener) within what is left of the budget. Not `even`: only
        empty the drained OSDs (evening the rest is `balance`'s). `fullness`: bytes mode with
        PG stats, whose lists may be there for fullness (a list is removed only where
        fullness keeps too: unlist.py)."""
        self._begin(max_moves)
        if even and not self.drain.size:
            removed = remove_needless(self, fullness)
            if removed:
                self.notes.append(f"{removed:,} PGs' pg_upmap_items removed first: CRUSH's own set "
                                  f"keeps each OSD within the goal")
        CountEvener(self).balance(even)     # (made per run: it refers back to this one)
        if then is not None and even:
            then()
        count("balance_work", self.built_cost + self.budget.work)     # (the states, then the search)
        return self._result()
