"""Count mode's strategies: how a run brings every OSD's PG count within floor/ceil of its
share, first off the OSDs being drained (drain_moves.py), then per pool, then for the
totals over all pools. Direct moves first (a push from the most overfull OSD, a pull into
the most underfull), each fixing a bound the lower bound counts; where the rule leaves none, in
order: a regroup (a PG's replicas in one bucket moved together into another), a relaxed
move (one that only lowers the squared deviation) and a chain (two moves through an OSD
whose count ends as it began)."""
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Protocol, Tuple

import numpy as np

from ..rules.legality import replaceable
from .budget import Stop
from .drain_moves import Drainer, Run as DrainRun
from .pool_state import EPS, PoolState
from .search import CANDIDATES_MAX


FIRST = 1e3     # ranks the OSDs that fix a bound unit before all others
TIE = 1e-2      # weight of the pool's own deviation next to the total's
REGROUP_WIDTH = 8   # buckets a regroup takes from, and as many it gives to, at most
REGROUP_BATCH = 16  # PGs moved between the best pair of buckets before the next search, at most
# A total chain (CountEvener._total_chain) weighs this many OSDs off their totals' bounds,
# pools at each end and middle OSDs per pool, at most, and gives up past CHAIN_WORK units
# of work (some 0.16 s): what looking costs where no chain is legal (a rule-forced total)
CHAIN_OSDS = 8
CHAIN_POOLS = 4
CHAIN_MIDS = 8
CHAIN_WORK = 4_000_000


def _order(key: np.ndarray, mask: np.ndarray) -> List[int]:
    """Indices where `mask`, largest `key` first."""
    idx = np.flatnonzero(mask)
    return idx[np.argsort(-key[idx], kind="stable")].tolist()


@dataclass(frozen=True)
class _Group:
    """Each row's replicas in one bucket of the rule's first choose type, as a regroup
    would take them out: what _group_into weighs against each bucket they could go to."""
    rows: np.ndarray
    dev: np.ndarray           # the pool's deviation per OSD when taken
    at: np.ndarray            # (R, K) the up sets, clipped to OSD ids
    real: np.ndarray          # (R, K) which are OSDs
    inx: np.ndarray           # (R, K) which are in the bucket
    m: np.ndarray             # replicas per row in it
    lose: np.ndarray          # the squared deviation's change of taking them out
    src_min: np.ndarray       # the least deviation among them
    forbidden: np.ndarray     # (R, K') OSDs a replacement must not be

    @staticmethod
    def of(st: PoolState, anc: Dict[int, np.ndarray], rows: np.ndarray, x_id: int) -> "_Group":
        n = st.level.counts.size
        dev = st.level.dev()
        up = st.up[rows]
        at = np.clip(up, 0, n - 1)
        real = (up >= 0) & (up < n)
        inx = real & (anc[st.shape.limits[0].type][at] == x_id)
        src_dev = np.where(inx, dev[at], np.inf)
        return _Group(rows=rows, dev=dev, at=at, real=real, inx=inx, m=inx.sum(axis=1),
                      lose=np.where(inx, 1 - 2 * src_dev, 0.0).sum(axis=1),
                      src_min=src_dev.min(axis=1), forbidden=st.forbidden(rows))


class Run(DrainRun, Protocol):
    """What the strategies move replicas in: the balancer's run (balancer.Balancer), as a
    drain sees it, with the tally of its chains."""
    drain_chained: int


class CountEvener:
    """Count mode's moves in one run, chosen by the strategies above and made through the
    run (its apply_move, apply_all and apply_chain charge the budget)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._chain_until = 0     # the work past which a total chain's search gives up

    @property
    def stopped(self) -> bool:
        return self.run.budget.stopped

    def balance(self, even: bool = True) -> None:
        """Every pool's replicas off the drained OSDs (drain_moves.py), then, if `even`,
        each pool's counts, then the totals."""
        r = self.run
        if r.drain.size:
            d = Drainer(r, self._group_plan)
            d.drain()
            r.drain_chained += d.chained
        if not even:
            return
        for st in r.states:
            self.fix_pool(st)
        if len(r.states) > 1:
            self.fix_total()

    # -- per pool -------------------------------------------------------------------------------

    def _cost(self, st: PoolState, ix: Any) -> Any:
        """Where a push from the pool prefers to go: into the pool's deficits first; among
        the rest of the OSDs with room, the one whose total over all pools is lowest, so the
        across-pools phase has less to do."""
        L, T = st.level, self.run.total
        return (T.counts[ix] - T.share[ix] - FIRST * (L.counts[ix] < L.lo[ix])
                + TIE * (L.counts[ix] - L.share[ix]))

    def fix_pool(self, st: PoolState) -> None:
        # first the buckets of the rule's first choose type, whole PGs' groups at a time:
        # cheaper than finding, OSD by OSD, that no single move crosses them
        # (not while every OSD is within the goal: a wider one would still be given lists)
        while not st.level.clear() and self._regroup(st, strict=True):
            pass
        while not self.stopped:
            if self._direct(st) == 0 and (st.level.clear() or not (
                    self._regroup(st) or self._relaxed(st) or self._chain(st))):
                return

    def _direct(self, st: PoolState) -> int:
        """Pushes off the OSDs above their ceiling, then pulls onto those below their
        floor, most off first: the moves made."""
        L, T, search = st.level, self.run.total, self.run.search
        made = 0
        cost = self._cost(st, slice(None))
        for src in _order(L.dev(), L.excess()):
            if self.stopped:        # (a stopped run still walked 18,734 OSDs' windows)
                return made
            while L.counts[src] > L.hi[src]:
                mv = search.push(st, src, L.counts < L.hi, cost)
                if mv is None or not self.run.apply_move(st, mv[0], src, mv[1]):
                    break
                cost[[src, mv[1]]] = self._cost(st, [src, mv[1]])
                made += 1
        for dst in _order(-L.dev(), L.deficit()):
            if self.stopped:
                return made
            while L.counts[dst] < L.lo[dst]:
                pref = T.dev() + FIRST * L.excess() + TIE * L.dev()
                mv = search.pull(st, dst, L.counts > L.lo, pref)
                if mv is None or not self.run.apply_move(st, mv[0], mv[1], dst):
                    break
                made += 1
        return made

    def _relaxed(self, st: PoolState) -> bool:
        """One move that lowers the pool's squared deviation without fixing a bound (a
        chain's first link, when the rule allows no direct move): True if made."""
        L, search = st.level, self.run.search
        dev = L.dev()
        for src in _order(dev, L.excess()):
            mv = search.push(st, src, dev < dev[src] - 1 - EPS, dev)
            if mv is not None:
                return self.run.apply_move(st, mv[0], src, mv[1])
        for dst in _order(-dev, L.deficit()):
            mv = search.pull(st, dst, dev > dev[dst] + 1 + EPS, dev)
            if mv is not None:
                return self.run.apply_move(st, mv[0], mv[1], dst)
        return False

    def _chain(self, st: PoolState) -> bool:
        """Two moves through an OSD y whose count ends as it began: one PG's replica from
        an OSD x above its ceiling onto y, another PG's from y onto an OSD z further below
        its share. For when the PGs on x may go nowhere below their share directly (EC 8+3
        with 3 shards per rack: every PG on x already uses the hosts of the OSDs below
        their share in x's rack), while y's PGs may. Made when it lowers the pool's squared
        deviation, the best z over all y for the first such x: True if made."""
        budget = self.run.budget
        if self.stopped or budget.moves_left < 2:
            return False
        L = st.level
        dev = L.dev()
        mids = np.flatnonzero(st.allowed)
        if mids.size > CANDIDATES_MAX:     # the OSDs least above their share: y's count returns
            mids = mids[np.argpartition(dev[mids], CANDIDATES_MAX - 1)[:CANDIDATES_MAX]]
        for x in _order(dev, L.excess()):
            into = np.flatnonzero((dev < dev[x] - 1 - EPS) & st.allowed)
            rows = st.rows(x)
            if not into.size or not rows.size:
                continue
            if not budget.spend(rows.size * mids.size):
                return False
            best = self._best_link(st, x, rows, mids, into)
            if best is None:
                continue
            r1, y, r2, z = best
            if not budget.affordable(float(st.objects[r1] + st.objects[r2])):
                budget.halt(Stop.MISPLACED)
                return False
            return self.run.apply_move(st, r1, x, y) and self.run.apply_move(st, r2, y, z)
        return False

    def _best_link(self, st: PoolState, x: int, rows: np.ndarray, mids: np.ndarray,
                   into: np.ndarray) -> Optional[Tuple[int, int, int, int]]:
        """A chain's two moves off `x` (its `rows`), through one of `mids`, onto the OSD of
        `into` furthest below its share: (r1, y, r2, z), or None."""
        anc, dev = self.run.anc, st.level.dev()
        xs = np.full(rows.size, x)
        first = replaceable(st.reach(anc), st.up[rows], st.forbidden(rows, xs), xs, mids)
        best: Optional[Tuple[float, int, int, int, int]] = None   # (dev z, r1, y, r2, z)
        for j in np.flatnonzero(first.any(axis=0)).tolist():
            y = int(mids[j])
            r1 = int(rows[int(np.argmax(first[:, j]))])
            # y's own PGs: their moves do not depend on r1's (r1 is not on y yet)
            ys = st.rows(y)
            if not ys.size or not self.run.budget.spend(ys.size * into.size):
                continue
            ysrc = np.full(ys.size, y)
            ok = replaceable(st.reach(anc), st.up[ys], st.forbidden(ys, ysrc), ysrc, into)
            if not ok.any():
                continue
            score = np.where(ok, dev[into][None, :], np.inf)
            i, k = np.unravel_index(int(np.argmin(score)), score.shape)
            if best is None or score[i, k] < best[0]:
                best = (float(score[i, k]), r1, y, int(ys[i]), int(into[k]))
        return None if best is None else best[1:]

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
        top = self.run.anc[lims[0].type]
        ids, unit = np.unique(top, return_inverse=True)
        dev = st.level.dev()
        bdev = np.bincount(unit, weights=dev, minlength=ids.size)
        best: Optional[Tuple[float, int, int, np.ndarray, np.ndarray]] = None
        # each source bucket's groups and each target's candidates once: no move is made
        # while the pairs are weighed
        groups: Dict[int, _Group] = {}
        targets: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}      # y: (its OSDs, candidates)
        for x, y, rows in self._bucket_pairs(st, unit, bdev, strict):
            if x not in groups:
                groups[x] = _Group.of(st, self.run.anc, rows, int(ids[x]))
            if y not in targets:
                into = unit == y
                targets[y] = into, self._group_cands(st, dev, into, strict)
            score = self._group_into(st, groups[x], *targets[y], strict)[0]
            i = int(np.argmin(score))
            if score[i] < np.inf and (best is None or score[i] < best[0]):
                best = (float(score[i]), x, y, rows, score)
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
            if not self.run.apply_all(st, r, list(zip(src.tolist(), dst.tolist()))):
                break
            made += 1
        return made > 0

    def _bucket_pairs(self, st: PoolState, unit: np.ndarray, bdev: np.ndarray,
                      strict: bool) -> Iterator[Tuple[int, int, np.ndarray]]:
        """The (from, into) bucket pairs a regroup weighs, most promising first, each with
        the rows of the PGs in its `from` bucket (none: left out), taken as the pairs are
        weighed (an OSD's rows built again count as work when the next check is paid)."""
        if strict:      # buckets a PG or more off their share, most off first
            xs = _order(bdev, bdev > 1 - EPS)[:REGROUP_WIDTH]
            ys = _order(-bdev, bdev < -1 + EPS)[:REGROUP_WIDTH]
        else:           # also those holding an OSD off its share
            n = bdev.size
            over = np.bincount(unit, weights=st.level.excess(), minlength=n) > 0
            under = np.bincount(unit, weights=st.level.deficit(), minlength=n) > 0
            xs = _order(bdev + FIRST * over, (bdev > EPS) | over)[:REGROUP_WIDTH]
            ys = _order(FIRST * under - bdev, np.ones(n, bool))[:REGROUP_WIDTH]
        for x in xs:
            rows = np.unique(np.concatenate(
                [st.rows(o) for o in np.flatnonzero(unit == x).tolist()] + [np.zeros(0, np.int64)]))
            if rows.size:
                for y in ys:
                    yield x, y, rows

    def _group_plan(self, st: PoolState, rows: np.ndarray, x_id: int, into: np.ndarray,
                    strict: bool) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Moving each row's group in bucket `x_id` into the bucket `into`, onto the OSD
        furthest below its share under each bucket of the rule's second choose type:
        (per row the squared-deviation change per replica, inf where not allowed or no
        gain; (R, K) the group's positions in the up set; the candidate OSDs; (R, C) the
        ones each row takes)."""
        g = _Group.of(st, self.run.anc, rows, x_id)
        return self._group_into(st, g, into, self._group_cands(st, g.dev, into, strict), strict)

    def _group_cands(self, st: PoolState, dev: np.ndarray, into: np.ndarray, strict: bool) -> np.ndarray:
        """The OSDs a regroup into `into` takes: the one furthest below its share (`dev`, the
        pool's deviation) under each bucket of the rule's second choose type, furthest
        below first."""
        low = self.run.anc[st.shape.limits[1].type]
        cand = np.flatnonzero(into & st.allowed & ((not strict) | (dev < -EPS)))
        cand = cand[np.argsort(dev[cand], kind="stable")]
        cand = cand[np.unique(low[cand], return_index=True)[1]]
        return cand[np.argsort(dev[cand], kind="stable")]

    def _group_into(self, st: PoolState, g: "_Group", into: np.ndarray, cand: np.ndarray,
                    strict: bool) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """_group_plan for the groups `g` and the candidates `cand` (each computed once a
        bucket: a regroup's search weighs every source bucket against several)."""
        dev = g.dev
        uses = (g.real & into[g.at]).any(axis=1)
        n_rows = g.rows.size
        if not self.run.budget.spend(n_rows * max(cand.size, 1)):
            return np.full(n_rows, np.inf), g.inx, cand, np.zeros((n_rows, cand.size), bool)
        free = np.ones((n_rows, cand.size), bool)                                  # (R, C)
        for j in range(g.forbidden.shape[1]):       # column by column: cheaper than one 3-D op
            free &= g.forbidden[:, j, None] != cand[None, :]
        rank = np.cumsum(free, axis=1)
        pick = free & (rank <= g.m[:, None])
        have = rank[:, -1] if cand.size else np.zeros(n_rows, np.int64)
        gain = g.lose + np.where(pick, 1 + 2 * dev[cand][None, :], 0.0).sum(axis=1)
        ok = (~uses & (have >= g.m) & (g.m > 0) & (g.m <= st.shape.limits[0].cap) & (gain < -EPS)
              & ((not strict) | (g.src_min > EPS)))
        # per replica moved: a group of two that gains as much as one of three is better
        return np.where(ok, gain / np.maximum(g.m, 1), np.inf), g.inx, cand, pick

    # -- across pools ---------------------------------------------------------------------------

    def fix_total(self) -> None:
        T = self.run.total
        while not self.stopped:
            made = 0
            for src in _order(T.dev(), T.excess()):
                while T.counts[src] > T.hi[src] and self._total_push(src):
                    made += 1
            for dst in _order(-T.dev(), T.deficit()):
                while T.counts[dst] < T.lo[dst] and self._total_pull(dst):
                    made += 1
            if made == 0 and not self._total_chain():
                return

    def _by_pool_dev(self, osd: int) -> List[PoolState]:
        return sorted(self.run.states, key=lambda s: -(s.level.counts[osd] - s.level.share[osd]))

    def _total_push(self, src: int) -> bool:
        """Move one replica off `src`, from the pool most over its share there; every pool
        stays within floor/ceil of its own share at both ends."""
        T = self.run.total
        for st in self._by_pool_dev(src):
            L = st.level
            if L.counts[src] <= L.lo[src]:
                continue
            cost = T.dev() - FIRST * T.deficit() + TIE * L.dev()
            mv = self.run.search.push(st, src, (T.counts < T.hi) & (L.counts < L.hi), cost)
            if mv is not None:
                return self.run.apply_move(st, mv[0], src, mv[1])
        return False

    def _total_pull(self, dst: int) -> bool:
        T = self.run.total
        for st in reversed(self._by_pool_dev(dst)):
            L = st.level
            if L.counts[dst] >= L.hi[dst]:
                continue
            pref = T.dev() + FIRST * T.excess() + TIE * L.dev()
            mv = self.run.search.pull(st, dst, (T.counts > T.lo) & (L.counts > L.lo), pref)
            if mv is not None:
                return self.run.apply_move(st, mv[0], mv[1], dst)
        return False

    def _total_chain(self) -> bool:
        """Two moves of two pools (or two PGs of one) through an OSD y whose total ends as it
        began, for a total above its ceiling (or below its floor) that no single move
        fixes: every pool above its floor there may go only to OSDs whose totals are at
        their ceilings (a pool confined to a room, say, whose room is full), while from one
        of those another pool may leave for an OSD with room (a pool that crosses rooms).
        Each pool stays within floor/ceil of its own share at every OSD: the pools' extra
        PGs trade places so that the totals even out. True if made."""
        T, budget = self.run.total, self.run.budget
        if self.stopped or budget.moves_left < 2:
            return False
        self._chain_until = budget.work + CHAIN_WORK
        for x in _order(T.dev(), T.excess())[:CHAIN_OSDS]:
            if self._chain_off(x):
                return True
        for z in _order(-T.dev(), T.deficit())[:CHAIN_OSDS]:
            if self._chain_onto(z):
                return True
        return False

    @property
    def _chain_over(self) -> bool:
        return self.stopped or self.run.budget.work > self._chain_until

    def _chain_off(self, x: int) -> bool:
        """A chain taking one replica off `x`: pool a from x onto y, pool b from y onto z."""
        T, search = self.run.total, self.run.search
        for a in [s for s in self._by_pool_dev(x) if s.level.counts[x] > s.level.lo[x]][:CHAIN_POOLS]:
            A = a.level
            mids = (A.counts < A.hi) & (T.counts >= T.hi) & a.allowed
            for _ in range(CHAIN_MIDS):
                mv = search.push(a, x, mids, T.dev() + TIE * A.dev()) if mids.any() else None
                if mv is None or self._chain_over:
                    break
                r1, y = mv
                mids[y] = False
                # pool a's replica arrives on y first: one more of a there
                for b in [s for s in self._by_pool_dev(y)
                          if s.level.counts[y] + (s is a) > s.level.lo[y]][:CHAIN_POOLS]:
                    if self._chain_over:
                        return False
                    B = b.level
                    into = (T.counts < T.hi) & (B.counts < B.hi)
                    into[x] = False
                    got = search.push(b, y, into, T.dev() - FIRST * T.deficit() + TIE * B.dev())
                    if got is not None:
                        return self.run.apply_chain((a, r1, x, y), (b, got[0], y, got[1]))
        return False

    def _chain_onto(self, z: int) -> bool:
        """A chain bringing one replica onto `z`: pool b from y onto z, pool a from x onto y."""
        T, search = self.run.total, self.run.search
        for b in [s for s in reversed(self._by_pool_dev(z))
                  if s.level.counts[z] < s.level.hi[z]][:CHAIN_POOLS]:
            B = b.level
            mids = (B.counts > B.lo) & (T.counts <= T.lo) & b.allowed
            for _ in range(CHAIN_MIDS):
                mv = search.pull(b, z, mids, B.dev() + TIE * T.dev()) if mids.any() else None
                if mv is None or self._chain_over:
                    break
                r2, y = mv
                mids[y] = False
                # pool b's replica leaves y first: one fewer of b there
                for a in [s for s in reversed(self._by_pool_dev(y))
                          if s.level.counts[y] - (s is b) < s.level.hi[y]][:CHAIN_POOLS]:
                    if self._chain_over:
                        return False
                    A = a.level
                    give = (T.counts > T.lo) & (A.counts > A.lo)
                    give[z] = False
                    got = search.pull(a, y, give, T.dev() + FIRST * T.excess() + TIE * A.dev())
                    if got is not None and not (a is b and got[0] == r2):
                        return self.run.apply_chain((a, got[0], got[1], y), (b, r2, y, z))
        return False
