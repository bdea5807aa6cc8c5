"""pg-upmap-items that bring PG counts to the weight-proportional share.

The goal at each level is floor(share) <= count <= ceil(share) on every OSD, first per
pool, then for the OSDs' totals over all pools. A move takes one replica of one PG off
one OSD and puts it on another that the PG's rule allows (analysis/legality.py). Moves are
chosen so that each one brings an OSD above its ceiling down or one below its floor up
(the lower bound counts exactly those), from the most overfull OSD ("push") and into the
most underfull one ("pull"); a move that only lowers the squared deviation is the
fallback when the rule leaves no direct move. Optionally, bytes come last (bytes mode).
"""
import copy
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..analysis.legality import ancestors, replaceable
from ..analysis.read_balance import primary_counts, primary_share
from ..crush.placement import Placer
from ..crush.upmap import build_items, NotExpressible
from ..model.distribution import rule_weights, unreachable, up_counts
from ..model.errors import AdvisorError
from ..model.snapshot import Pool, Rule, Snapshot
from ..model.work import count
from .budget import Budget, Stop
from .look import POOL, ROWS_MAX, Look, windows
from .pool_state import EPS, BalanceResult, build_state, Level, moves_between, moves_primary, PoolState


FIRST = 1e3     # ranks the OSDs that fix a bound unit before all others
TIE = 1e-2      # weight of the pool's own deviation next to the total's
# The work one run may do, in units of one (PG, OSD) legality check (some 40 ns): the
# pools' states first, then the checks, at least MOVE_COST a look. Past it a run stops
# with a note and the next continues from its items; sized so that the largest maps of
# doc/balance.rst and doc/robustness.rst end within it (qa/bench_large_inputs.py).
WORK_MAX = 220_000_000
# what building the states costs, in those units (a hash 31 ns, CRUSH's bookkeeping
# 0.8 us a replica, a state's arrays 0.36 us a replica and 0.54 ms a pool)
DRAW_COST = 1           # a (PG, bucket item) pair CRUSH hashed
CRUSH_REPLICA_COST = 20     # a replica CRUSH mapped
STATE_REPLICA_COST = 9      # a replica of a pool's state
STATE_POOL_COST = 13_500    # a pool's state
MOVE_COST = 2048    # legality checks a look for a move counts at least (see _push)
REGROUP_WIDTH = 8   # buckets a regroup takes from, and as many it gives to, at most
REGROUP_BATCH = 16  # PGs moved between the best pair of buckets before the next search, at most


def _order(key: np.ndarray, mask: np.ndarray) -> List[int]:
    """Indices where `mask`, largest `key` first."""
    idx = np.flatnonzero(mask)
    return idx[np.argsort(-key[idx], kind="stable")].tolist()


class Balancer:
    def __init__(self, snap: Snapshot, placer: Optional[Placer] = None,
                 pools: Optional[List[str]] = None, copies_max: Optional[float] = None,
                 drain: Sequence[int] = (), osd_room: Optional[np.ndarray] = None) -> None:
        self.snap = snap
        # OSDs to empty (`drain`): no share and never a destination, so every replica on
        # them is excess the moves take off. A stored drain plan may name an OSD the map no
        # longer has (purged, then `osd setmaxosd` lower): nothing is left on it to move
        self.drain = np.array(sorted(o for o in set(drain) if 0 <= o < snap.osds.count), dtype=np.int64)
        self.width = 128      # candidates examined per move: the most promising ones
        self._look: Optional[Look] = None      # the last push's window (see Look)
        self._col = np.full(snap.osds.count, -1, dtype=np.int64)
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
        crush = copy.copy(self.placer.work)
        for pool in snap.pools:
            if pools is not None and pool.name not in pools:
                continue
            start = len(self.notes)
            try:
                self.states.append(self._state(pool))
            except AdvisorError as e:
                self.notes.append(e.message)
                self.left_out[pool.name] = e.message
            self._notes_of[pool.name] = self.notes[start:]
        for pool, why in snap.unmapped:       # the loader set these aside: CRUSH cannot place them
            if pools is None or pool.name in pools:
                self.left_out[pool.name] = why
                self._notes_of[pool.name] = [f"pool {pool.name} is not mapped: {why}"]
                self.notes += self._notes_of[pool.name]
        self._built = [0]
        for st in self.states:
            st.built = self._built
        self._sum_total()
        # the work so far (see WORK_MAX): the states' cost, CRUSH's where this run mapped
        # the pools (a placer that mapped them before, as the mgr's between changes, did it)
        self.built_cost = ((self.placer.work.draws - crush.draws) * DRAW_COST
                           + (self.placer.work.replicas - crush.replicas) * CRUSH_REPLICA_COST
                           + sum(st.up.size for st in self.states) * STATE_REPLICA_COST
                           + len(self.states) * STATE_POOL_COST)
        self.budget = Budget(copies_max, copies_max is not None and snap.misplaced_objects == 0,
                             osd_room, self.built_cost)
        self.lb = 0
        self.read_ties = True       # the primaries' tie-break (off: for measuring it)
        self._sum_primaries()

    def _sum_primaries(self) -> None:
        """Per OSD, over the replicated pools: the primaries it holds and its fair share of
        them (analysis/read_balance), kept as moves change them: the last tie-break."""
        n = self.snap.osds.count
        self.prim = np.zeros(n, np.int64)
        self.prim_share = np.zeros(n)
        for st in self.states:
            if st.pool.type == "replicated":
                self.prim += primary_counts(self.snap, st.primary)
                self.prim_share += primary_share(self.snap, st.pool)

    @staticmethod
    def _primary_now(st: PoolState, row: int) -> int:
        """The PG's primary as the moves so far leave it: an item keeps a replica's place in
        the set, so the role is wherever the first primary's place now points (with primary
        affinity below 1 Ceph may pick another: close enough for a tie-break). st.primary
        stays the first: a move is costly if it changes the PG's primary from what it was
        when the run began, not from what an earlier move made it."""
        if st.primary[row] < 0:
            return -1
        at = np.flatnonzero(st.start[row] == st.primary[row])
        return int(st.up[row, int(at[0])]) if at.size else -1

    def _read_pref(self, osds: np.ndarray, short: bool) -> np.ndarray:
        """Per OSD of `osds`, in [0, 1): how far it is short of its primaries' share
        (`short`), or over it (else), ranked among `osds`; 0 when the tie-break is off."""
        if not self.read_ties or not osds.size:
            return np.zeros(osds.size)
        dev = self.prim[osds] - self.prim_share[osds]
        if short:
            dev = -dev
        lo = dev.min()
        return (dev - lo) / (dev.max() - lo + 1.0)

    def _sum_total(self) -> None:
        n = self.snap.osds.count
        self.total = Level(sum((st.counts for st in self.states), np.zeros(n, np.int64)),
                           sum((st.share for st in self.states), np.zeros(n)))

    def only(self, names: Sequence[str]) -> "Balancer":
        """Keep the states of these pools alone (before any move): a caller that has looked
        at every pool's state need not build the ones it keeps again."""
        self.states = [st for st in self.states if st.pool.name in names]
        # as if built for these pools alone: their notes only, in the map's pool order
        self.notes = [n for name, notes in self._notes_of.items() if name in names for n in notes]
        self.left_out = {k: v for k, v in self.left_out.items() if k in names}
        self._sum_total()
        self._sum_primaries()
        return self

    def _state(self, pool: Pool) -> PoolState:
        return build_state(self.snap, pool, self.placer, self.anc, self.usable, self._rule_weights,
                           self.notes)

    def _rule_weights(self, rule: Rule) -> Tuple[np.ndarray, List[int]]:
        """The OSDs' weights under `rule` (0 where its steps cannot reach, and on the OSDs
        being drained), and the OSDs it cannot reach; once per rule (a thousand pools may
        share one)."""
        if rule.id not in self._by_rule:
            w = rule_weights(self.snap, rule)
            w[self.drain] = 0.0
            self._by_rule[rule.id] = (w, np.flatnonzero(unreachable(self.snap, rule)).tolist())
        w, lost = self._by_rule[rule.id]
        return w.copy(), lost

    # -- single moves ---------------------------------------------------------------------------

    def _push(self, st: PoolState, src: int, take: np.ndarray,
              cost: np.ndarray) -> Optional[Tuple[int, int]]:
        """The best (row, destination) for a replica on `src`: lowest `cost` among `take`,
        and of equals a row where src is not CRUSH's own choice (that undoes an item), then
        one where src is not the primary (see moves_primary)."""
        look = self._look
        if look is not None and look.still(st, src):
            # the window the last look found its move in, as a fresh look would see it
            mv = self._choose(look, take, cost)
            if mv is not None or self._work_stopped:
                return mv
        if not (take & st.allowed).any():
            return None
        for rows in windows(st, src):
            if not rows.size:
                return None
            if self._look is not None:
                self._look.release()
            look = self._look = Look(st, src, rows, self._col)
            mv = self._choose(look, take, cost)
            if mv is not None or self._work_stopped:
                return mv
        return None

    def _cand(self, look: "Look", take: np.ndarray, cost: np.ndarray,
              k: int) -> Tuple[np.ndarray, bool]:
        """The k cheapest OSDs of `take` the rule allows, and whether they are all of them.
        The first k come from the look's few cheapest (POOL) while that is sure to hold
        them: only the OSDs the look's moves went to change cost or leave `take` (the
        caller's `cost` is the same array, changed in place), so while the k-th cheapest
        of the few costs no more than the cheapest outside them did, a pass over every OSD
        (10,000 of them) is not needed again."""
        if k <= POOL and look.cost is cost:
            live = look.pool[take[look.pool]]
            if live.size <= k and look.floor == np.inf:
                return live, True
            if live.size >= k:
                part = live[np.argpartition(cost[live], k - 1)[:k]]
                if cost[part].max() <= look.floor:
                    return part, False
        cols = np.flatnonzero(take & look.st.allowed)
        if k <= POOL:
            if cols.size <= POOL:
                look.pool, look.floor = cols, np.inf
            else:
                idx = np.argpartition(cost[cols], POOL)
                look.pool, look.floor = cols[idx[:POOL]], float(cost[cols[idx[POOL]]])
            look.cost = cost
            return self._cand(look, take, cost, k)
        if cols.size <= k:
            return cols, True
        return cols[np.argpartition(cost[cols], k - 1)[:k]], False

    def _choose(self, look: "Look", take: np.ndarray, cost: np.ndarray) -> Optional[Tuple[int, int]]:
        """The cheapest legal (row, destination) in the look's window, among the k
        cheapest destinations in `take` whenever any of those is legal: a few first,
        widened only if none is. Legality is checked only for destinations the window was
        not checked against before."""
        st = look.st
        for k in (16, self.width):
            cand, every = self._cand(look, take, cost, k)
            at = look.col[cand]
            new = cand[at < 0]
            # a look costs at least MOVE_COST: its Python around the checks is the same
            # for a few rows as for a window
            if not self.spend(max(int(look.live.sum()) * new.size, MOVE_COST)):
                return None
            if new.size:
                look.add(new, replaceable(self.anc, st.shape, st.allowed, st.up[look.rows], look.forbidden,
                                          look.srcs, new))
                at = look.col[cand]
            ok = look.ok[:, at] & look.live[:, None]
            if ok.any():
                # ties, in order: undo an item; keep the primary; if it must move, to the
                # OSD most short of primaries (each term below the one before it)
                c = (np.where(ok, cost[cand][None, :], np.inf) - look.undo[:, None] * EPS
                     + look.primary[:, None] * (EPS / 2 - self._read_pref(cand, True)[None, :] * (EPS / 4)))
                r, d = np.unravel_index(int(np.argmin(c)), c.shape)
                look.pending = int(r)
                if k > POOL:        # a destination outside the few: they may no longer hold the cheapest
                    look.cost = None
                return int(look.rows[r]), int(cand[d])
            if every:
                break
        return None

    def _pull(self, st: PoolState, dst: int, give: np.ndarray,
              pref: np.ndarray) -> Optional[Tuple[int, int]]:
        """The best (row, source) to bring a replica onto `dst`: highest `pref` among `give`."""
        if not st.allowed[dst]:
            return None
        srcs = np.flatnonzero(give)
        srcs = srcs[srcs != dst]
        if srcs.size > self.width:
            srcs = srcs[np.argpartition(-pref[srcs], self.width - 1)[:self.width]]
        # a window of each source (all of its PGs when they are few)
        parts = [st.rows(s) if st.held_n[s] <= ROWS_MAX else next(windows(st, s))
                 for s in srcs.tolist()]
        if not parts:
            return None
        rows = np.concatenate(parts)
        owners = np.repeat(srcs, [p.size for p in parts])
        if not rows.size or not self.spend(rows.size):
            return None
        ok = replaceable(self.anc, st.shape, st.allowed, st.up[rows], st.forbidden(rows, owners), owners,
                         np.array([dst]))[:, 0]
        if not ok.any():
            return None
        undo = ~(st.raw[rows] == owners[:, None]).any(axis=1)
        # ties as _choose's: a primary that must move comes off the OSD most over its share
        score = (np.where(ok, pref[owners], -np.inf) + undo * EPS
                 - moves_primary(st, rows, owners) * (EPS / 2 - self._read_pref(owners, False) * (EPS / 4)))
        i = int(np.argmax(score))
        return int(rows[i]), int(owners[i])

    @property
    def stopped(self) -> bool:
        return self.budget.stopped

    @property
    def _work_stopped(self) -> bool:
        return self.budget.stop is Stop.WORK

    def spend(self, pairs: int) -> bool:
        """Count `pairs` legality checks, and the rows turned into arrays since the last
        call; False (and the run stops) past WORK_MAX."""
        b = self.budget
        b.work += pairs + self._built[0]
        self._built[0] = 0
        if b.work > WORK_MAX and not self._work_stopped:
            b.halt(Stop.WORK)
            # the figures that made the run long, as they are: not a guess at the cause
            moved = int(sum(((st.up != st.start) & (st.start >= 0)).sum() for st in self.states))
            per_osd = max((float(st.counts.sum()) / max(int(st.allowed.sum()), 1) for st in self.states),
                          default=0.0)
            self.notes.append(f"stopped at {WORK_MAX:,} units of work, the bound of one run "
                              f"(the pools' states cost {self.built_cost:,}, the rest were legality "
                              f"checks; {moved:,} replica moves made; the largest pool holds "
                              f"{per_osd:,.0f} PGs per OSD it may use): the items are a partial "
                              f"answer, and another run continues from them")
        return not self._work_stopped

    def apply_move(self, st: PoolState, row: int, src: int, dst: int) -> bool:
        """Make the move unless a budget forbids it (then the run stops)."""
        return self._apply_all(st, row, [(src, dst)])

    def _apply_all(self, st: PoolState, row: int, moves: List[Tuple[int, int]]) -> bool:
        """Make one PG's moves together, or none if a budget forbids them (then the run
        stops): a group's moves are legal only all at once. The move budget counts one PG's
        item list as one, however many replicas it moves."""
        replicated = st.pool.type == "replicated"
        after = st.up[row].tolist()
        for src, dst in moves:
            after[after.index(src)] = dst
        start = st.start[row].tolist()
        earlier = moves_between(start, st.up[row].tolist(), replicated)
        if earlier and not moves_between(start, after, replicated):
            # back where the run found it: what its earlier moves took is given back
            self.budget.refund(float(st.objects[row]) * len(earlier), [o for m in earlier for o in m])
        elif not self.budget.charge(float(st.objects[row]) * len(moves), [o for m in moves for o in m]):
            return False
        for src, dst in moves:
            if st.pool.type == "replicated" and self._primary_now(st, row) == src:
                self.prim[src] -= 1
                self.prim[dst] += 1
            st.move(row, src, dst)
            self.total.counts[src] -= 1
            self.total.counts[dst] += 1
        return True

    # -- per pool -------------------------------------------------------------------------------

    def _cost(self, st: PoolState, ix: Any) -> Any:
        """Where a push from the pool prefers to go: into the pool's deficits first; among
        the rest of the OSDs with room, the one whose total over all pools is lowest, so the
        across-pools phase has less to do."""
        L, T = st.level, self.total
        return (T.counts[ix] - T.share[ix] - FIRST * (L.counts[ix] < L.lo[ix])
                + TIE * (L.counts[ix] - L.share[ix]))

    def _empty_drained(self, st: PoolState) -> None:
        """The pool's replicas off the OSDs being drained, before any other move: a run the
        work bound stops part-way has drained every pool it could, not evened the first few.
        A replica no single move takes off is left to _fix_pool's regroups and chains."""
        L = st.level
        cost = self._cost(st, slice(None))
        for src in self.drain.tolist():
            while L.counts[src] > L.hi[src] and not self.stopped:
                mv = self._push(st, src, L.counts < L.hi, cost)
                if mv is None or not self.apply_move(st, mv[0], src, mv[1]):
                    break
                cost[[src, mv[1]]] = self._cost(st, [src, mv[1]])

    def _fix_pool(self, st: PoolState) -> None:
        L, T = st.level, self.total
        # first the buckets of the rule's first choose type, whole PGs' groups at a time:
        # cheaper than finding, OSD by OSD, that no single move crosses them
        while self._regroup(st, strict=True):
            pass
        while not self.stopped:
            made = 0
            cost = self._cost(st, slice(None))
            for src in _order(L.dev(), L.excess()):
                while L.counts[src] > L.hi[src]:
                    mv = self._push(st, src, L.counts < L.hi, cost)
                    if mv is None or not self.apply_move(st, mv[0], src, mv[1]):
                        break
                    cost[[src, mv[1]]] = self._cost(st, [src, mv[1]])
                    made += 1
            for dst in _order(-L.dev(), L.deficit()):
                while L.counts[dst] < L.lo[dst]:
                    pref = T.dev() + FIRST * L.excess() + TIE * L.dev()
                    mv = self._pull(st, dst, L.counts > L.lo, pref)
                    if mv is None or not self.apply_move(st, mv[0], mv[1], dst):
                        break
                    made += 1
            if made == 0 and (L.clear() or not (
                    self._regroup(st) or self._relaxed(st) or self._chain(st))):
                return

    def _relaxed(self, st: PoolState) -> bool:
        """One move that lowers the pool's squared deviation without fixing a bound (a
        chain's first link, when the rule allows no direct move): True if made."""
        L = st.level
        dev = L.dev()
        for src in _order(dev, L.excess()):
            mv = self._push(st, src, dev < dev[src] - 1 - EPS, dev)
            if mv is not None:
                return self.apply_move(st, mv[0], src, mv[1])
        for dst in _order(-dev, L.deficit()):
            mv = self._pull(st, dst, dev > dev[dst] + 1 + EPS, dev)
            if mv is not None:
                return self.apply_move(st, mv[0], mv[1], dst)
        return False

    def _chain(self, st: PoolState) -> bool:
        """Two moves through an OSD y whose count ends as it began: one PG's replica from
        an OSD x above its ceiling onto y, another PG's from y onto an OSD z further below
        its share. For when the PGs on x may go nowhere below their share directly (EC 8+3
        with 3 shards per rack: every PG on x already uses the hosts of the OSDs below
        their share in x's rack), while y's PGs may. Made when it lowers the pool's squared
        deviation, the best z over all y for the first such x: True if made."""
        if self.stopped or self.budget.moves_left < 2:
            return False
        L = st.level
        dev = L.dev()
        mids = np.flatnonzero(st.allowed)
        if mids.size > self.width:     # the OSDs least above their share: y's count returns
            mids = mids[np.argpartition(dev[mids], self.width - 1)[:self.width]]
        for x in _order(dev, L.excess()):
            into = np.flatnonzero((dev < dev[x] - 1 - EPS) & st.allowed)
            rows = st.rows(x)
            if not into.size or not rows.size:
                continue
            if not self.spend(rows.size * mids.size):
                return False
            xs = np.full(rows.size, x)
            first = replaceable(self.anc, st.shape, st.allowed, st.up[rows], st.forbidden(rows, xs), xs, mids)
            best: Optional[Tuple[float, int, int, int, int]] = None   # (dev z, r1, y, r2, z)
            for j in np.flatnonzero(first.any(axis=0)).tolist():
                y = int(mids[j])
                r1 = int(rows[int(np.argmax(first[:, j]))])
                # y's own PGs: their moves do not depend on r1's (r1 is not on y yet)
                ys = st.rows(y)
                if not ys.size or not self.spend(ys.size * into.size):
                    continue
                ysrc = np.full(ys.size, y)
                ok = replaceable(self.anc, st.shape, st.allowed, st.up[ys], st.forbidden(ys, ysrc), ysrc,
                                 into)
                if not ok.any():
                    continue
                score = np.where(ok, dev[into][None, :], np.inf)
                i, k = np.unravel_index(int(np.argmin(score)), score.shape)
                if best is None or score[i, k] < best[0]:
                    best = (float(score[i, k]), r1, y, int(ys[i]), int(into[k]))
            if best is None:
                continue
            _, r1, y, r2, z = best
            if not self.budget.affordable(float(st.objects[r1] + st.objects[r2])):
                self.budget.halt(Stop.MISPLACED)
                return False
            return self.apply_move(st, r1, x, y) and self.apply_move(st, r2, y, z)
        return False

    def _regroup(self, st: PoolState, strict: bool = False) -> bool:
        """Move all of one PG's replicas in a bucket of the rule's first choose type into
        one such bucket the PG does not use, onto distinct buckets of the next type, as one
        item list: the only way a PG's set of racks changes when none of its racks has
        room for a fifth shard (11 shards in 4 racks of 3, or 4 replicas in 2 racks of 2).
        Each replica alone would break the rule on the way; all together keep it. Made
        when it lowers the pool's squared deviation; the best pair of buckets found, up to
        REGROUP_BATCH of its PGs are moved, each checked again as the counts change. True
        if any was made. Rules of two choose steps only (Ceph drops items on the PGs of
        longer ones). `strict`: only from OSDs above their share into OSDs below it, so
        that no move is wasted."""
        lims = st.shape.limits
        if len(lims) != 2 or lims[0].type == 0 or self.stopped:
            return False
        top = self.anc[lims[0].type]
        dev = st.level.dev()
        ids, unit = np.unique(top, return_inverse=True)
        bdev = np.bincount(unit, weights=dev, minlength=ids.size)
        if strict:      # buckets a PG or more off their share, most off first
            xs = _order(bdev, bdev > 1 - EPS)[:REGROUP_WIDTH]
            ys = _order(-bdev, bdev < -1 + EPS)[:REGROUP_WIDTH]
        else:           # also those holding an OSD off its share
            over = np.bincount(unit, weights=st.level.excess(), minlength=ids.size) > 0
            under = np.bincount(unit, weights=st.level.deficit(), minlength=ids.size) > 0
            xs = _order(bdev + FIRST * over, (bdev > EPS) | over)[:REGROUP_WIDTH]
            ys = _order(FIRST * under - bdev, np.ones(ids.size, bool))[:REGROUP_WIDTH]
        best: Optional[Tuple[float, int, int, np.ndarray, np.ndarray]] = None
        for x in xs:
            rows = np.unique(np.concatenate(
                [st.rows(o) for o in np.flatnonzero(unit == x).tolist()] + [np.zeros(0, np.int64)]))
            for y in ys:
                if not rows.size:
                    continue
                score = self._group_plan(st, rows, ids[x], unit == y, strict)[0]
                i = int(np.argmin(score))
                if score[i] < np.inf and (best is None or score[i] < best[0]):
                    best = (float(score[i]), int(x), int(y), rows, score)
        if best is None:
            return False
        _, x, y, rows, score = best
        made = 0
        # while both buckets are far off, several PGs at once: the search costs more than a move
        batch = int(max(1, min(bdev[x], -bdev[y], REGROUP_BATCH * 4) // 4))
        for r in rows[np.argsort(score, kind="stable")][:batch].tolist():
            # again for this PG alone: the moves before it changed the counts
            one, inx, cand, pick = self._group_plan(st, np.array([r]), ids[x], unit == y, strict)
            if one[0] == np.inf:
                continue
            src, dst = st.up[r][inx[0]], cand[pick[0]]
            if not self._apply_all(st, r, list(zip(src.tolist(), dst.tolist()))):
                break
            made += 1
        return made > 0

    def _group_plan(self, st: PoolState, rows: np.ndarray, x_id: int, into: np.ndarray,
                    strict: bool) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Moving each row's group in bucket `x_id` into the bucket `into`, onto the OSD
        furthest below its share under each bucket of the rule's second choose type:
        (per row the squared-deviation change per replica, inf where not allowed or no
        gain; (R, K) the group's positions in the up set; the candidate OSDs; (R, C) the
        ones each row takes)."""
        n = st.level.counts.size
        dev = st.level.dev()
        top, low = (self.anc[lim.type] for lim in st.shape.limits)
        up = st.up[rows]
        at = np.clip(up, 0, n - 1)
        real = (up >= 0) & (up < n)
        inx = real & (top[at] == x_id)
        m = inx.sum(axis=1)
        src_dev = np.where(inx, dev[at], np.inf)
        lose = np.where(inx, 1 - 2 * src_dev, 0.0).sum(axis=1)
        uses = (real & into[at]).any(axis=1)
        cand = np.flatnonzero(into & st.allowed & ((not strict) | (dev < -EPS)))
        cand = cand[np.argsort(dev[cand], kind="stable")]
        cand = cand[np.unique(low[cand], return_index=True)[1]]
        cand = cand[np.argsort(dev[cand], kind="stable")]
        if not self.spend(rows.size * max(cand.size, 1)):
            return np.full(rows.size, np.inf), inx, cand, np.zeros((rows.size, cand.size), bool)
        free = ~(cand[None, :, None] == st.forbidden(rows)[:, None, :]).any(axis=2)    # (R, C)
        rank = np.cumsum(free, axis=1)
        pick = free & (rank <= m[:, None])
        have = rank[:, -1] if cand.size else np.zeros(rows.size, np.int64)
        gain = lose + np.where(pick, 1 + 2 * dev[cand][None, :], 0.0).sum(axis=1)
        ok = (~uses & (have >= m) & (m > 0) & (m <= st.shape.limits[0].cap) & (gain < -EPS)
              & ((not strict) | (src_dev.min(axis=1) > EPS)))
        # per replica moved: a group of two that gains as much as one of three is better
        return np.where(ok, gain / np.maximum(m, 1), np.inf), inx, cand, pick

    # -- across pools ---------------------------------------------------------------------------

    def _fix_total(self) -> None:
        T = self.total
        while not self.stopped:
            made = 0
            for src in _order(T.dev(), T.excess()):
                while T.counts[src] > T.hi[src] and self._total_push(src):
                    made += 1
            for dst in _order(-T.dev(), T.deficit()):
                while T.counts[dst] < T.lo[dst] and self._total_pull(dst):
                    made += 1
            if made == 0:
                return

    def _by_pool_dev(self, osd: int) -> List[PoolState]:
        return sorted(self.states, key=lambda s: -(s.level.counts[osd] - s.level.share[osd]))

    def _total_push(self, src: int) -> bool:
        """Move one replica off `src`, from the pool most over its share there; every pool
        stays within floor/ceil of its own share at both ends."""
        T = self.total
        for st in self._by_pool_dev(src):
            L = st.level
            if L.counts[src] <= L.lo[src]:
                continue
            cost = T.dev() - FIRST * T.deficit() + TIE * L.dev()
            mv = self._push(st, src, (T.counts < T.hi) & (L.counts < L.hi), cost)
            if mv is not None:
                return self.apply_move(st, mv[0], src, mv[1])
        return False

    def _total_pull(self, dst: int) -> bool:
        T = self.total
        for st in reversed(self._by_pool_dev(dst)):
            L = st.level
            if L.counts[dst] >= L.hi[dst]:
                continue
            pref = T.dev() + FIRST * T.excess() + TIE * L.dev()
            mv = self._pull(st, dst, (T.counts > T.lo) & (L.counts > L.lo), pref)
            if mv is not None:
                return self.apply_move(st, mv[0], mv[1], dst)
        return False

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
        pools = sum(Level(up_counts(st.base, n), st.share).bound() for st in self.states)
        total = Level(sum((up_counts(st.base, n) for st in self.states), np.zeros(n, np.int64)),
                      self.total.share).bound()
        return max(pools, total)

    def _repair(self) -> None:
        """Undo the items of PGs that break their rule's counts (CRUSH's own set keeps them)."""
        for st in self.states:
            for r in st.broken.tolist():
                self._apply_all(st, r, moves_between(st.up[r].tolist(), st.raw[r].tolist(),
                                                     st.pool.type == "replicated"))
            st.base = st.up.copy()

    def _begin(self, max_moves: int) -> None:
        self.budget.start(max_moves)
        self._repair()
        self.lb = self.lower_bound()

    def _balance_counts(self) -> None:
        if self.drain.size:
            for st in self.states:
                self._empty_drained(st)
        for st in self.states:
            self._fix_pool(st)
        if len(self.states) > 1:
            self._fix_total()

    def _result(self) -> BalanceResult:
        items = self.items()     # first: a PG items cannot express is moved back
        moves = int(sum(((st.up != st.start) & (st.start >= 0)).sum() for st in self.states))
        repairs = int(sum(((st.base != st.start) & (st.start >= 0)).sum() for st in self.states))
        return BalanceResult(pools=self.states, items=items, moves=moves,
                             lower_bound=self.lb, notes=self.notes, repairs=repairs)

    def run(self, max_moves: int = 1 << 30, then: Optional[Callable[[], None]] = None) -> BalanceResult:
        """Balance PG counts with at most `max_moves` replica moves (item lists), then run
        `then` (bytes mode's evener) within what is left of the budget."""
        self._begin(max_moves)
        self._balance_counts()
        if then is not None:
            then()
        count("balance_work", self.budget.work)
        return self._result()
