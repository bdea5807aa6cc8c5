"""pg-upmap-items that bring PG counts to the weight-proportional share.

The goal at each level is floor(share) <= count <= ceil(share) on every OSD, first per
pool, then for the OSDs' totals over all pools. A move takes one replica of one PG off
one OSD and puts it on another that the PG's rule allows (analysis/legality.py). Moves are
chosen so that each one brings an OSD above its ceiling down or one below its floor up
(the lower bound counts exactly those), from the most overfull OSD ("push") and into the
most underfull one ("pull"); a move that only lowers the squared deviation is the
fallback when the rule leaves no direct move. Optionally, bytes come last (bytes mode).
"""
from collections import defaultdict
import copy
from dataclasses import dataclass, field
from typing import Any, DefaultDict, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..analysis.legality import RuleShape, ancestors, breaks, replaceable, rule_shape
from ..analysis.share import rule_share, weight_share
from ..crush.placement import Placer
from ..crush.upmap import NotExpressible, build_items
from ..model.constants import CRUSH_ITEM_NONE
from ..model.distribution import rule_weights, unreachable, up_counts
from ..model.errors import AdvisorError
from ..model.snapshot import Pool, Snapshot
from .budget import Budget, Stop

EPS = 1e-9
FIRST = 1e3     # ranks the OSDs that fix a bound unit before all others
TIE = 1e-2      # weight of the pool's own deviation next to the total's
# The work one run may do, in units of one (PG, OSD) legality check (some 40 ns here):
# the pools' states first, then the checks, at least MOVE_COST a look for a move (a move
# looks at ROWS_MAX PGs of an OSD at a time). Past it a run stops with a note, and the
# next one continues from its items. Some 8 s of this 2-core machine
# (qa/bench_large_inputs.py): 10,000 OSDs and 320,000 PGs cost 9.0e7 to build and need
# 36,582 moves at least (8.2e7 checks); a pool of 2^20 PGs costs 1.7e8 to build and 4e7
# to balance; 1,000 pools of 1,024 PGs cost 1.8e8 to build, and what is left makes some
# of their 337,089 moves.
WORK_MAX = 220_000_000
# what building the states costs, in those units (measured on the maps above: a hash
# 31 ns, CRUSH's bookkeeping 0.8 us a replica, a state's arrays 0.36 us a replica and
# 0.54 ms a pool)
DRAW_COST = 1           # a (PG, bucket item) pair CRUSH hashed
CRUSH_REPLICA_COST = 20     # a replica CRUSH mapped
STATE_REPLICA_COST = 9      # a replica of a pool's state
STATE_POOL_COST = 13_500    # a pool's state
ROWS_MAX = 256
POOL = 64           # destinations a look keeps in cost order (see Balancer._cand)
MOVE_COST = 2048    # legality checks a look for a move counts at least (see _push)
REGROUP_WIDTH = 8   # buckets a regroup takes from, and as many it gives to, at most
REGROUP_BATCH = 16  # PGs moved between the best pair of buckets before the next search, at most


class Level:
    """PG counts per OSD beside their share; the goal is floor(share) <= count <= ceil(share)."""

    def __init__(self, counts: np.ndarray, share: np.ndarray) -> None:
        self.counts = counts.astype(np.int64)
        self.share = share
        self.lo = np.floor(share + EPS)
        self.hi = np.ceil(share - EPS)

    def dev(self) -> np.ndarray:
        return self.counts - self.share

    def excess(self) -> np.ndarray:
        return self.counts > self.hi

    def deficit(self) -> np.ndarray:
        return self.counts < self.lo

    def bound(self) -> int:
        """Moves needed at least: each takes one replica off one OSD and adds one to another."""
        over = np.maximum(self.counts - self.hi, 0).sum()
        under = np.maximum(self.lo - self.counts, 0).sum()
        return int(max(over, under))

    def clear(self) -> bool:
        return not (self.excess().any() or self.deficit().any())


@dataclass
class PoolState:
    pool: Pool
    raw: np.ndarray          # CRUSH's own up sets (no upmaps)
    up: np.ndarray           # current, then proposed, up sets
    start: np.ndarray        # up sets before balancing
    base: np.ndarray         # up sets balancing starts from: `start` with broken items undone
    broken: np.ndarray       # rows whose items break the rule's counts (CRUSH's own set does not)
    share: np.ndarray        # share per OSD: weight-proportional within the rule's caps
    by_weight: np.ndarray    # the same replicas in proportion to weight alone
    allowed: np.ndarray      # OSDs the rule may use (root/class, weight, up, in)
    shape: RuleShape
    healthy: np.ndarray      # rows that may be moved (complete, all OSDs up)
    objects: np.ndarray      # per row: objects (what a move misplaces), 0 without PG stats
    bytes: np.ndarray        # per row: bytes one replica (EC: one shard) holds
    primary: np.ndarray      # per row: the primary before balancing (-1: none)
    level: Level = field(init=False)
    # per OSD: the healthy rows it holds, as arrays built once from the up sets (a Python
    # set per OSD cost 1.5 s for 2^20 PGs); a row moved in is added to its destination's
    # list, and one moved off stays in its source's array until that is built again (the
    # up set says where a row is: see holds)
    held_n: np.ndarray = field(init=False)         # per OSD: healthy rows it holds
    _rows: Dict[int, np.ndarray] = field(init=False)
    _added: DefaultDict[int, List[int]] = field(init=False)
    _stale: Set[int] = field(init=False)           # OSDs whose array may name rows gone
    _by_osd: np.ndarray = field(init=False)        # the first up sets' (OSD, row) pairs,
    _by_row: np.ndarray = field(init=False)        # sorted by OSD
    # rows turned into arrays so far (a counter the balancer shares and counts as work: an
    # OSD of half a million PGs costs that much each time its array is built again)
    built: List[int] = field(default_factory=lambda: [0])
    # OSD -> (its rows when last taken, the window a move looks at first): see _windows
    cursor: Dict[int, Tuple[np.ndarray, int]] = field(default_factory=dict)
    moves: int = 0                      # replica moves made on this state so far
    last: Tuple[int, int] = (-1, -1)    # the last one's (row, source)

    def __post_init__(self) -> None:
        n = self.share.shape[0]
        self.level = Level(up_counts(self.up, n), self.share)
        rows = np.flatnonzero(self.healthy)
        osd = self.up[rows].reshape(-1)
        row = np.repeat(rows, self.up.shape[1])
        ok = (osd >= 0) & (osd < n)
        osd, row = osd[ok], row[ok]
        self.held_n = np.bincount(osd, minlength=n).astype(np.int64)
        # grouped by OSD, rows ascending within each, cut out when first asked for (ids
        # may reach 2^20 while a few hundred OSDs exist; a thousand pools of a few PGs
        # per OSD cost 0.8 s to cut up at once)
        order = np.argsort(osd, kind="stable")
        self._by_osd, self._by_row = osd[order], row[order]
        self._rows = {}
        self._added = defaultdict(list)
        self._stale = set()

    @property
    def counts(self) -> np.ndarray:
        return self.level.counts

    def holds(self, rows: np.ndarray, osd: int) -> np.ndarray:
        """Per row: is it still on `osd`?"""
        return (self.up[rows] == osd).any(axis=1)

    def rows(self, osd: int) -> np.ndarray:
        """The healthy rows (PGs) with a replica on `osd`, ascending."""
        # asked for again and again (every pull looks at up to 128 sources) while a move
        # changes only two OSDs: each array is kept until its OSD's rows change
        got = self._rows.get(osd)
        if got is None:
            lo, hi = np.searchsorted(self._by_osd, [osd, osd + 1])
            got = self._rows[osd] = self._by_row[lo:hi]
        a: np.ndarray = got
        if osd in self._stale:
            self.built[0] += a.size
            added = self._added.pop(osd, [])
            if added:
                a = np.unique(np.concatenate([a, np.array(added, dtype=np.int64)]))
            a = self._rows[osd] = a[self.holds(a, osd)]
            self._stale.discard(osd)
        return a

    def move(self, row: int, src: int, dst: int) -> None:
        """The replica of `row` on `src` goes to `dst`."""
        self.up[row, self.up[row].tolist().index(src)] = dst
        self.moves += 1
        self.last = (row, src)
        self.level.counts[src] -= 1
        self.level.counts[dst] += 1
        self.held_n[src] -= 1
        self.held_n[dst] += 1
        self._added[dst].append(row)
        self._stale.update((src, dst))

    def held(self, rows: np.ndarray, srcs: Optional[np.ndarray] = None) -> np.ndarray:
        """OSDs a replacement must not be: the up set, and for EC also CRUSH's own set, but
        for the OSD CRUSH gives the slot each row moves off (`srcs`): moving a shard back
        there only drops that slot's item. Another slot's OSD could close a cycle of
        shards that items cannot write (crush/upmap.py)."""
        up = self.up[rows]
        if self.pool.type == "replicated":
            return up
        raw = self.raw[rows]
        if srcs is not None:
            raw = np.where(up == np.asarray(srcs)[:, None], -1, raw)
        return np.concatenate([up, raw], axis=1)


@dataclass
class BalanceResult:
    pools: List[PoolState]
    items: Dict[str, List[Tuple[int, int]]]       # pgid -> new full item list ([] = remove)
    moves: int
    lower_bound: int         # of the moves after the repairs
    notes: List[str]
    repairs: int = 0         # replica moves undoing items that broke the rule


def moves_between(a: List[int], b: List[int], replicated: bool) -> List[Tuple[int, int]]:
    """The replica moves (src, dst) that turn up set `a` into `b`: replicated sets as
    sets, EC sets slot by slot. Moves within the balancer's own state, not items (those
    come from crush/upmap.build_items)."""
    if replicated:
        gone = [o for o in a if o >= 0 and o not in b]
        new = [o for o in b if o >= 0 and o not in a]
        return list(zip(gone, new))
    return [(x, y) for x, y in zip(a, b) if x != y]


def _windows(st: PoolState, osd: int) -> Iterator[np.ndarray]:
    """The healthy rows on `osd`: all of them when they are few, else ROWS_MAX at a time
    (an OSD may hold thousands of a pool's PGs; a move then costs what a window costs,
    not what the OSD holds). The windows come from an array of the OSD's rows taken once
    and walked with a cursor, each row checked still there: a set walked from its start
    again and again skips every slot its removed rows left, which grows with each move.
    At the array's end it is taken again, with the rows that came since."""
    if st.held_n[osd] <= ROWS_MAX:
        yield st.rows(osd)
        return
    arr, pos = st.cursor.get(osd, (np.zeros(0, np.int64), 0))
    for fresh in (pos >= arr.size, True):
        if fresh:       # (again once if the rest of the old array held none still there)
            arr, pos = st.rows(osd), 0
        found = False
        while pos < arr.size:
            st.cursor[osd] = (arr, pos)     # the next move starts here: this window may hold more
            w = arr[pos:pos + ROWS_MAX]
            live = w[st.holds(w, osd)]
            if live.size:
                found = True
                yield live
            pos += ROWS_MAX
        st.cursor[osd] = (arr, pos)
        if found or fresh:
            return


class _Look:
    """One window of an OSD's rows and what checking them against destinations found,
    kept for the next look at the same OSD. A move changes its own row's up set alone,
    so while the only moves made are of this window's rows off this OSD (the push loop
    over one OSD), the other rows' answers stand and a move costs a few vector operations
    instead of a window's checks; any other move ends the look."""

    def __init__(self, st: PoolState, src: int, rows: np.ndarray, col: np.ndarray) -> None:
        self.st, self.src, self.rows = st, src, rows
        self.srcs = np.full(rows.size, src)
        self.held = st.held(rows, self.srcs)
        self.live = np.ones(rows.size, dtype=bool)
        # (rows, destinations checked): legal; and per OSD its column there (-1: none yet)
        self.ok = np.zeros((rows.size, 0), dtype=bool)
        # (`col` is the balancer's, all -1 between looks: one over max_osd per look would
        # cost more than the look where ids reach 2^20)
        self.col = col
        self.added: List[np.ndarray] = []
        # ties: undoing an item first, then not moving the primary (see _push)
        self.undo = ~(st.raw[rows] == src).any(axis=1)
        self.primary = moves_primary(st, rows, self.srcs)
        self.moves = st.moves
        self.pending = -1           # the row index the last answer gave
        # the POOL cheapest destinations under the caller's `cost` (that very array), and
        # the cost of the cheapest outside them (see Balancer._cand)
        self.cost: Optional[np.ndarray] = None
        self.pool = np.zeros(0, np.int64)
        self.floor = np.inf

    def still(self, st: PoolState, src: int) -> bool:
        """Is this look valid for the next push from `src` on `st`? It is if nothing
        moved since, or the one move made was its last answer's row off `src`."""
        if st is not self.st or src != self.src:
            return False
        if st.moves == self.moves:
            return True
        if (st.moves == self.moves + 1 and self.pending >= 0
                and st.last == (int(self.rows[self.pending]), src)):
            self.live[self.pending] = False
            self.moves, self.pending = st.moves, -1
            return True
        return False

    def release(self) -> None:
        """Give the balancer's `col` back as it was (all -1)."""
        for dsts in self.added:
            self.col[dsts] = -1

    def add(self, dsts: np.ndarray, ok: np.ndarray) -> None:
        self.col[dsts] = np.arange(self.ok.shape[1], self.ok.shape[1] + dsts.size)
        self.added.append(dsts)
        self.ok = np.concatenate([self.ok, ok], axis=1)


def moves_primary(st: PoolState, rows: np.ndarray, srcs: np.ndarray,
                  erasure_too: bool = False) -> np.ndarray:
    """Per row: is the replica on its source the PG's primary? Moving it changes the
    primary when the backfill ends, and the OSD that stops being primary drops the client
    ops in flight there without a word (the client waits objecter_timeout, 10 s, to find
    out); moving another replica changes no primary. A tie-break: counts come first.
    Replicated pools only unless `erasure_too`: on EC rules of two choose steps it steered
    the count search off the path that reaches every OSD within one PG (the reweighted
    "multi" map's EC 8+3)."""
    if st.pool.type != "replicated" and not erasure_too:
        return np.zeros(rows.size, dtype=bool)
    return st.primary[rows] == srcs


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
        # them is excess the moves take off
        self.drain = np.array(sorted(set(drain)), dtype=np.int64)
        self.width = 128      # candidates examined per move: the most promising ones
        self._look: Optional[_Look] = None      # the last push's window (see _Look)
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
        return self

    def _state(self, pool: Pool) -> PoolState:
        shape = rule_shape(self.snap, pool)
        rule = self.snap.rules[pool.crush_rule]
        # 0 where the rule's steps cannot reach: no share, never a destination
        if rule.id not in self._by_rule:     # (a thousand pools may share one rule)
            w = rule_weights(self.snap, rule)
            w[self.drain] = 0.0
            self._by_rule[rule.id] = (w, np.flatnonzero(unreachable(self.snap, rule)).tolist())
        w, lost = self._by_rule[rule.id]
        w = w.copy()
        if lost:
            self.notes.append(
                f"pool {pool.name}: rule '{rule.name}' cannot reach "
                f"{', '.join(f'osd.{o}' for o in lost)} (under its root but not under a bucket "
                f"of each type its steps choose): CRUSH maps nothing there, nor does the balancer")
        raw, cur = self.placer.map_pool_raw_and_up(pool)
        full = ((cur.up >= 0) & (cur.up != CRUSH_ITEM_NONE)).all(axis=1)
        objects, size = np.zeros(cur.up.shape[0]), np.zeros(cur.up.shape[0])
        pgs = self.snap.pgs
        if pgs is not None:
            mine = (pgs.pool == pool.id) & (pgs.ps < objects.size)
            objects[pgs.ps[mine]] = pgs.objects[mine]
            size[pgs.ps[mine]] = pgs.bytes[mine] / max(pool.data_chunks, 1)
        stuck = full & breaks(shape, self.anc, raw.up)
        if stuck.any():
            self.notes.append(
                f"pool {pool.name}: CRUSH's own placement of {int(stuck.sum())} of its PGs "
                f"breaks a count Ceph checks for rule '{rule.name}' (verify_upmap counts the "
                f"buckets of a later choose step over the whole PG), so the mon would drop any "
                f"item on them: they are left as they are")
        # a full pg-upmap replaces CRUSH's set before the items apply, and the mon drops an
        # item whose source CRUSH does not give: items written from CRUSH's set would not do
        # what they say on such a PG, so it is left to whoever set the pg-upmap
        owned = np.zeros(full.size, dtype=bool)
        prefix = f"{pool.id}."
        for key in self.snap.pg_upmap:
            if key.startswith(prefix) and int(key[len(prefix):], 16) < owned.size:
                owned[int(key[len(prefix):], 16)] = True
        if owned.any():
            self.notes.append(f"pool {pool.name}: {int(owned.sum())} of its PGs have a pg-upmap (a "
                              f"full mapping): left as they are")
        whole = ((raw.up >= 0) & (raw.up != CRUSH_ITEM_NONE)).all(axis=1)
        broken = np.flatnonzero(full & whole & ~stuck & ~owned & breaks(shape, self.anc, cur.up))
        if broken.size:
            self.notes.append(
                f"pool {pool.name}: the items of {broken.size} of its PGs (first {pool.id}."
                f"{int(broken[0]):x}) put more replicas in one bucket, or use more buckets, than "
                f"rule '{rule.name}' allows (Ceph's verify_upmap does not check this): balancing "
                f"removes them first")
        # the share the rule allows (analysis/share.py) of the replicas the pool has: a PG CRUSH
        # found too few OSDs for is short of replicas no move can add
        placed = float(up_counts(cur.up, w.shape[0]).sum())
        share = rule_share(self.snap, pool, w, self.anc, placed=placed)
        return PoolState(pool=pool, raw=raw.up, up=cur.up.copy(), start=cur.up.copy(),
                         base=cur.up.copy(), broken=broken,
                         share=share, by_weight=weight_share(pool, w, placed),
                         allowed=(w > 0) & self.usable,
                         shape=shape, healthy=full & ~stuck & ~owned, objects=objects, bytes=size,
                         primary=cur.up_primary.copy())

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
        for rows in _windows(st, src):
            if not rows.size:
                return None
            if self._look is not None:
                self._look.release()
            look = self._look = _Look(st, src, rows, self._col)
            mv = self._choose(look, take, cost)
            if mv is not None or self._work_stopped:
                return mv
        return None

    def _cand(self, look: "_Look", take: np.ndarray, cost: np.ndarray,
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

    def _choose(self, look: "_Look", take: np.ndarray, cost: np.ndarray) -> Optional[Tuple[int, int]]:
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
            if not self._spend(max(int(look.live.sum()) * new.size, MOVE_COST)):
                return None
            if new.size:
                look.add(new, replaceable(self.anc, st.shape, st.allowed, st.up[look.rows], look.held,
                                          look.srcs, new))
                at = look.col[cand]
            ok = look.ok[:, at] & look.live[:, None]
            if ok.any():
                c = (np.where(ok, cost[cand][None, :], np.inf) - look.undo[:, None] * EPS
                     + look.primary[:, None] * (EPS / 2))
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
        parts = [st.rows(s) if st.held_n[s] <= ROWS_MAX else next(_windows(st, s))
                 for s in srcs.tolist()]
        if not parts:
            return None
        rows = np.concatenate(parts)
        owners = np.repeat(srcs, [p.size for p in parts])
        if not rows.size or not self._spend(rows.size):
            return None
        ok = replaceable(self.anc, st.shape, st.allowed, st.up[rows], st.held(rows, owners), owners,
                         np.array([dst]))[:, 0]
        if not ok.any():
            return None
        undo = ~(st.raw[rows] == owners[:, None]).any(axis=1)
        score = np.where(ok, pref[owners], -np.inf) + undo * EPS - moves_primary(st, rows, owners) * (EPS / 2)
        i = int(np.argmax(score))
        return int(rows[i]), int(owners[i])

    @property
    def stopped(self) -> bool:
        return self.budget.stopped

    @property
    def _work_stopped(self) -> bool:
        return self.budget.stop is Stop.WORK

    def _spend(self, pairs: int) -> bool:
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
        if not self.budget.charge(float(st.objects[row]) * len(moves), [o for m in moves for o in m]):
            return False
        for src, dst in moves:
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
            if not self._spend(rows.size * mids.size):
                return False
            xs = np.full(rows.size, x)
            first = replaceable(self.anc, st.shape, st.allowed, st.up[rows], st.held(rows, xs), xs, mids)
            best: Optional[Tuple[float, int, int, int, int]] = None   # (dev z, r1, y, r2, z)
            for j in np.flatnonzero(first.any(axis=0)).tolist():
                y = int(mids[j])
                r1 = int(rows[int(np.argmax(first[:, j]))])
                # y's own PGs: their moves do not depend on r1's (r1 is not on y yet)
                ys = st.rows(y)
                if not ys.size or not self._spend(ys.size * into.size):
                    continue
                ysrc = np.full(ys.size, y)
                ok = replaceable(self.anc, st.shape, st.allowed, st.up[ys], st.held(ys, ysrc), ysrc, into)
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
        cand = np.flatnonzero(into & st.allowed & (~strict | (dev < -EPS)))
        cand = cand[np.argsort(dev[cand], kind="stable")]
        cand = cand[np.unique(low[cand], return_index=True)[1]]
        cand = cand[np.argsort(dev[cand], kind="stable")]
        if not self._spend(rows.size * max(cand.size, 1)):
            return np.full(rows.size, np.inf), inx, cand, np.zeros((rows.size, cand.size), bool)
        free = ~(cand[None, :, None] == st.held(rows)[:, None, :]).any(axis=2)    # (R, C)
        rank = np.cumsum(free, axis=1)
        pick = free & (rank <= m[:, None])
        have = rank[:, -1] if cand.size else np.zeros(rows.size, np.int64)
        gain = lose + np.where(pick, 1 + 2 * dev[cand][None, :], 0.0).sum(axis=1)
        ok = (~uses & (have >= m) & (m > 0) & (m <= st.shape.limits[0].cap) & (gain < -EPS)
              & (~strict | (src_dev.min(axis=1) > EPS)))
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

    def begin(self, max_moves: int) -> None:
        self.budget.start(max_moves)
        self._repair()
        self.lb = self.lower_bound()

    def balance_counts(self) -> None:
        if self.drain.size:
            for st in self.states:
                self._empty_drained(st)
        for st in self.states:
            self._fix_pool(st)
        if len(self.states) > 1:
            self._fix_total()

    def result(self) -> BalanceResult:
        items = self.items()     # first: a PG items cannot express is moved back
        moves = int(sum(((st.up != st.start) & (st.start >= 0)).sum() for st in self.states))
        repairs = int(sum(((st.base != st.start) & (st.start >= 0)).sum() for st in self.states))
        return BalanceResult(pools=self.states, items=items, moves=moves,
                             lower_bound=self.lb, notes=self.notes, repairs=repairs)

    def run(self, max_moves: int = 1 << 30) -> BalanceResult:
        """Balance PG counts with at most `max_moves` replica moves."""
        self.begin(max_moves)
        self.balance_counts()
        return self.result()
