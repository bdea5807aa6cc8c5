"""A pool as the balancer sees it while it moves replicas: its up sets, counts against
the share at each level, and which OSDs its rule allows; and the result of a run."""
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, DefaultDict, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

import numpy as np

from ..rules.legality import breaks, Reach, rule_shape, RuleShape
from ..rules.share import rule_share, weight_share
from ..crush.placement import Placer
from ..model.constants import CRUSH_ITEM_NONE
from ..model.distribution import up_counts
from ..model.pg_states import not_well
from ..model.snapshot import Pool, Rule, Snapshot
from .budget import Budget


EPS = 1e-9      # shares are floats: a count within EPS of one is at it


class Level:
    """PG counts per OSD beside their share; the goal is floor(share) <= count <= ceil(share),
    widened by `slack` PGs each way (a deviation of slack + 1: Guards.deviation)."""

    def __init__(self, counts: np.ndarray, share: np.ndarray, slack: int = 0) -> None:
        self.counts = counts.astype(np.int64)
        self.share = share
        self.lo = np.maximum(np.floor(share + EPS) - slack, 0.0)
        self.hi = np.ceil(share - EPS) + slack

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
    allowed: np.ndarray      # OSDs the rule may use (root/class, weight, up, in) as destinations:
    #                          less those at the fill limit (balancer.py), unlike `members`
    shape: RuleShape
    healthy: np.ndarray      # rows that may be moved (complete, all OSDs up, active and whole)
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
    # the run's budget, where rebuilding an OSD's array counts as work (Budget.rows_built)
    budget: Optional[Budget] = None
    # OSD -> (its rows when last taken, the window a move looks at first): see look.windows
    cursor: Dict[int, Tuple[np.ndarray, int]] = field(default_factory=dict)
    members: np.ndarray = field(init=False)        # `allowed` as built: the OSDs whose fullness counts
    # only the PGs with item lists may move (the map holds the most the run allows: balancer.py)
    only_listed: bool = False
    slack: int = 0                      # the goal's PGs each way past floor and ceiling (Level)
    moves: int = 0                      # replica moves made on this state so far
    last: Tuple[int, int] = (-1, -1)    # the last one's (row, source)

    def __post_init__(self) -> None:
        self.members = self.allowed.copy()
        n = self.share.shape[0]
        self.level = Level(up_counts(self.up, n), self.share, self.slack)
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
        # asked for again and again (a pull looks at up to search.CANDIDATES_MAX sources)
        # while a move changes only two OSDs: each array is kept until its OSD's rows change
        got = self._rows.get(osd)
        if got is None:
            lo, hi = np.searchsorted(self._by_osd, [osd, osd + 1])
            got = self._rows[osd] = self._by_row[lo:hi]
        a: np.ndarray = got
        if osd in self._stale:
            if self.budget is not None:
                self.budget.rows_built += a.size
            added = self._added.pop(osd, [])
            if added:
                a = np.unique(np.concatenate([a, np.array(added, dtype=np.int64)]))
            a = self._rows[osd] = a[self.holds(a, osd)]
            self._stale.discard(osd)
        return a[self.listed(a)] if self.only_listed else a

    def listed(self, rows: np.ndarray) -> np.ndarray:
        """Per row: does its up set need an item list (is it not CRUSH's own set)?"""
        up, raw = self.up[rows], self.raw[rows]
        if self.pool.type == "replicated":
            return ~((up[:, :, None] == raw[:, None, :]).any(axis=2) | (up < 0)).all(axis=1)
        out: np.ndarray = (up != raw).any(axis=1)
        return out

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

    def reach(self, anc: Dict[int, np.ndarray]) -> Reach:
        """Where the pool's rule may place a replica, given the OSDs' ancestors."""
        return Reach(anc, self.shape, self.allowed)

    def forbidden(self, rows: np.ndarray, srcs: Optional[np.ndarray] = None) -> np.ndarray:
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


# one replica move as a chain names it: (pool, row, from, to)
ChainMove = Tuple[PoolState, int, int, int]


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


@dataclass
class StateSource:
    """What each pool's state of a run is built from."""
    snap: Snapshot
    placer: Placer
    anc: Any                # the OSDs' ancestors (rules/legality.ancestors)
    usable: np.ndarray      # per OSD: may a move use it (up, in, weighted, not drained)
    # a rule's weights per OSD (0 where the run gives no share) and the OSDs it cannot reach
    weights: Callable[[Rule], Tuple[np.ndarray, List[int]]]
    slack: int = 0          # the goal's PGs past floor and ceiling of the share (Level)
    fixed: FrozenSet[str] = frozenset()     # pgids not moved (Limits.fixed)


def _named_rows(pgids: Iterable[str], pool_id: int, size: int) -> np.ndarray:
    """Per row of the pool's `size` PGs: is it among `pgids`?"""
    out = np.zeros(size, dtype=bool)
    prefix = f"{pool_id}."
    for key in pgids:
        if key.startswith(prefix) and int(key[len(prefix):], 16) < size:
            out[int(key[len(prefix):], 16)] = True
    return out


def build_state(src: StateSource, pool: Pool, notes: List[str]) -> PoolState:
    """The pool's state as a run starts: CRUSH's sets and the up sets, which PGs may move
    (not those CRUSH itself breaks the rule on, nor a full pg-upmap's), the share at each
    OSD, and the OSDs the rule allows (usable ones its weights give a weight); what
    cannot be balanced, said in `notes`."""
    snap, placer, anc, usable = src.snap, src.placer, src.anc, src.usable
    shape = rule_shape(snap, pool)
    rule = snap.rules[pool.crush_rule]
    # 0 where the rule's steps cannot reach: no share, never a destination
    w, lost = src.weights(rule)
    if lost:
        notes.append(
            f"pool {pool.name}: rule '{rule.name}' cannot reach "
            f"{', '.join(f'osd.{o}' for o in lost)} (under its root but not under a bucket "
            f"of each type its steps choose): CRUSH maps nothing there, nor does the balancer")
    raw, cur = placer.map_pool_raw_and_up(pool)
    full = ((cur.up >= 0) & (cur.up != CRUSH_ITEM_NONE)).all(axis=1)
    objects, size = np.zeros(cur.up.shape[0]), np.zeros(cur.up.shape[0])
    pgs = snap.pgs
    unwell = np.zeros(full.size, dtype=bool)     # not active or not whole (stats): not moved
    if pgs is not None:
        mine = (pgs.pool == pool.id) & (pgs.ps < objects.size)
        objects[pgs.ps[mine]] = pgs.objects[mine]
        size[pgs.ps[mine]] = pgs.bytes[mine] / max(pool.data_chunks, 1)
        unwell[pgs.ps[mine]] = not_well(snap)[mine]
    stuck = full & breaks(shape, anc, raw.up)
    if stuck.any():
        notes.append(
            f"pool {pool.name}: CRUSH's own placement of {int(stuck.sum())} of its PGs "
            f"breaks a count Ceph checks for rule '{rule.name}' (verify_upmap counts the "
            f"buckets of a later choose step over the whole PG), so the mon would drop any "
            f"item on them: they are left as they are")
    # a full pg-upmap replaces CRUSH's set before the items apply, and the mon drops an
    # item whose source CRUSH does not give: items written from CRUSH's set would not do
    # what they say on such a PG, so it is left to whoever set the pg-upmap
    owned = _named_rows(snap.pg_upmap, pool.id, full.size)
    if owned.any():
        notes.append(f"pool {pool.name}: {int(owned.sum())} of its PGs have a pg-upmap (a "
                     f"full mapping): left as they are")
    held = _named_rows(src.fixed, pool.id, full.size)      # another plan's round just set their items
    whole = ((raw.up >= 0) & (raw.up != CRUSH_ITEM_NONE)).all(axis=1)
    broken = np.flatnonzero(full & whole & ~stuck & ~owned & breaks(shape, anc, cur.up))
    if broken.size:
        notes.append(
            f"pool {pool.name}: the items of {broken.size} of its PGs (first {pool.id}."
            f"{int(broken[0]):x}) put more replicas in one bucket, or use more buckets, than "
            f"rule '{rule.name}' allows (Ceph's verify_upmap does not check this): balancing "
            f"removes them first")
    # the share the rule allows (rules/share.py) of the replicas the pool has: a PG CRUSH
    # found too few OSDs for is short of replicas no move can add
    placed = float(up_counts(cur.up, w.shape[0]).sum())
    share = rule_share(snap, pool, w, anc, placed=placed)
    return PoolState(pool=pool, raw=raw.up, up=cur.up.copy(), start=cur.up.copy(),
                     base=cur.up.copy(), broken=broken,
                     share=share, by_weight=weight_share(pool, w, placed),
                     allowed=(w > 0) & usable,
                     shape=shape, healthy=full & ~stuck & ~owned & ~unwell & ~held,
                     objects=objects, bytes=size,
                     primary=cur.up_primary.copy(), slack=src.slack)
