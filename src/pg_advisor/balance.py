"""Layer 4: pg-upmap-items that bring PG counts to the weight-proportional share.

Phase 1, per pool: move replicas from the most overfull OSD to the most underfull one
that the PG's rule allows, while that strictly lowers the pool's squared deviation.
Phase 2, across pools: with every pool kept within floor/ceil of its share, move
replicas so that the OSDs' totals come within one of their total share too. Every
candidate destination is checked against the rule: same ancestors at each level a
choose step fixes, a failure-domain bucket no other replica uses, under the rule's root
and class, up, in and of non-zero weight, not already in the PG.
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .crush.compiled import CRUSH_ITEM_NONE
from .crush.placement import Placer
from .distribution import pool_share, rule_weights, up_counts
from .errors import AdvisorError
from .snapshot import Pool, Snapshot

EPS = 1e-9


def ancestors(snap: Snapshot) -> Dict[int, np.ndarray]:
    """type id -> vector over OSDs of their ancestor bucket of that type (real tree).

    OSDs without such an ancestor get a unique negative sentinel below any bucket id.
    """
    parent: Dict[int, int] = {}
    for b in snap.buckets.values():
        if not b.is_shadow:
            for child in b.items.tolist():
                parent.setdefault(child, b.id)
    n = snap.osds.count
    floor_id = min(list(snap.buckets) + [0]) - 1
    out: Dict[int, np.ndarray] = {0: np.arange(n, dtype=np.int64)}
    for t in set(snap.crush_types.values()) - {0}:
        out[t] = floor_id - np.arange(n, dtype=np.int64)
    for osd in range(n):
        node = parent.get(osd)
        while node is not None:
            out.setdefault(snap.buckets[node].type_id, floor_id - np.arange(n))[osd] = node
            node = parent.get(node)
    return out


@dataclass(frozen=True)
class RuleShape:
    """What a replacement must keep: ancestors at `fixed` types, distinctness at `domain`."""
    fixed: Tuple[int, ...]
    domain: int


def rule_shape(snap: Snapshot, pool: Pool) -> RuleShape:
    rule = snap.rules.get(pool.crush_rule)
    if rule is None:
        raise AdvisorError.invalid(f"pool {pool.name}: crush rule {pool.crush_rule} is missing")
    takes = [s for s in rule.steps if s.get("op") == "take"]
    chooses = [s for s in rule.steps if str(s.get("op", "")).startswith("choose")]
    if len(takes) != 1 or not chooses:
        raise AdvisorError.invalid(f"pool {pool.name}: rule '{rule.name}' has {len(takes)} take "
                                   f"steps; only single-take rules are balanced")
    types = [snap.crush_types[str(s["type"])] for s in chooses]
    return RuleShape(fixed=tuple(types[:-1]), domain=types[-1])


@dataclass
class PoolState:
    pool: Pool
    raw: np.ndarray          # CRUSH's own up sets (no upmaps)
    up: np.ndarray           # current, then proposed, up sets
    start: np.ndarray        # up sets before balancing
    share: np.ndarray        # weight-proportional share per OSD
    allowed: np.ndarray      # OSDs the rule may use (root/class, weight, up, in)
    shape: RuleShape
    healthy: np.ndarray      # rows that may be moved (complete, all OSDs up)
    counts: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.counts = up_counts(self.up, self.share.shape[0])


@dataclass
class BalanceResult:
    pools: List[PoolState]
    items: Dict[str, List[Tuple[int, int]]]       # pgid -> new full item list ([] = remove)
    moves: int
    lower_bound: int
    notes: List[str]


class Balancer:
    def __init__(self, snap: Snapshot, placer: Optional[Placer] = None,
                 pools: Optional[List[str]] = None, object_budget: Optional[float] = None) -> None:
        self.snap = snap
        # object copies the moves may misplace (None: no limit); each move misplaces the
        # PG's objects once
        self.object_budget = object_budget
        self.misplaced = 0.0
        self.width = 128      # destinations examined per move: the most underfull ones
        self.placer = placer or Placer(snap)
        self.anc = ancestors(snap)
        o = snap.osds
        self.usable = o.exists & o.up & o.in_ & (o.reweight > 0) & (o.crush_weight > 0)
        self.notes: List[str] = []
        self.states: List[PoolState] = []
        for pool in snap.pools:
            if pools is not None and pool.name not in pools:
                continue
            try:
                self.states.append(self._state(pool))
            except AdvisorError as e:
                self.notes.append(e.message)

    def _state(self, pool: Pool) -> PoolState:
        shape = rule_shape(self.snap, pool)
        rule = self.snap.rules[pool.crush_rule]
        w = rule_weights(self.snap, rule)
        cur = self.placer.map_pool(pool)
        raw = self.placer.map_pool(pool, upmaps=False)
        full = ((cur.up >= 0) & (cur.up != CRUSH_ITEM_NONE)).all(axis=1)
        return PoolState(pool=pool, raw=raw.up, up=cur.up.copy(), start=cur.up.copy(),
                         share=pool_share(pool, w), allowed=(w > 0) & self.usable,
                         shape=shape, healthy=full)

    # -- legality -------------------------------------------------------------------------------

    def destinations(self, st: PoolState, rows: np.ndarray, src: int,
                     cols: np.ndarray) -> np.ndarray:
        """(len(rows), len(cols)) mask: may OSD cols[j] replace `src` in PG rows[i]?"""
        up = st.up[rows]
        n = self.snap.osds.count
        ok = np.broadcast_to(st.allowed[cols], (rows.size, cols.size)).copy()
        # not already in the PG (EC: nor in CRUSH's own set, or Ceph skips the item)
        held = up if st.pool.type == "replicated" else np.concatenate([up, st.raw[rows]], axis=1)
        ok &= ~(cols[None, :, None] == held[:, None, :]).any(axis=2)
        for t in st.shape.fixed:                    # keep the upper levels the rule chose
            a = self.anc[t]
            ok &= (a[cols] == a[src])[None, :]
        dom = self.anc[st.shape.domain]
        # failure-domain buckets of the PG's other replicas (a large sentinel for holes)
        others = np.where((up != src) & (up >= 0) & (up < n), dom[np.clip(up, 0, n - 1)],
                          np.iinfo(np.int64).max)
        ok &= ~(dom[cols][None, :, None] == others[:, None, :]).any(axis=2)
        return ok

    # -- the two phases -------------------------------------------------------------------------

    def pg_objects(self, st: PoolState, row: int) -> float:
        pgs = self.snap.pgs
        if pgs is None:
            return 0.0
        hit = np.flatnonzero((pgs.pool == st.pool.id) & (pgs.ps == row))
        return float(pgs.objects[hit[0]]) if hit.size else 0.0

    def affordable(self, st: PoolState, row: int) -> bool:
        return (self.object_budget is None
                or self.misplaced + self.pg_objects(st, row) <= self.object_budget)

    def _move(self, st: PoolState, row: int, src: int, dst: int) -> None:
        if self.object_budget is not None:
            self.misplaced += self.pg_objects(st, row)
        pos = int(np.flatnonzero(st.up[row] == src)[0])
        st.up[row, pos] = dst
        st.counts[src] -= 1
        st.counts[dst] += 1

    def _best_move(self, st: PoolState, src: int, score: np.ndarray,
                   extra: Optional[np.ndarray] = None) -> Optional[Tuple[int, int]]:
        rows = np.flatnonzero(st.healthy & (st.up == src).any(axis=1))
        if not rows.size:
            return None
        # only destinations a move would improve, the most underfull first
        good = score < score[src] - 1 - EPS
        if extra is not None:
            good &= extra
        cols = np.flatnonzero(good & st.allowed)
        if cols.size > self.width:   # the `width` lowest, without sorting them all
            cols = cols[np.argpartition(score[cols], self.width - 1)[:self.width]]
        cols = cols[np.argsort(score[cols], kind="stable")]
        if not cols.size:
            return None
        ok = self.destinations(st, rows, src, cols)
        if not ok.any():
            return None
        # prefer undoing an existing item (a row where src is not CRUSH's own choice)
        moved = ~(st.raw[rows] == src).any(axis=1)
        cost = np.where(ok, score[cols][None, :], np.inf) - moved[:, None] * EPS
        r, d = np.unravel_index(int(np.argmin(cost)), cost.shape)
        return int(rows[r]), int(cols[d])

    def _try(self, st: PoolState, src: int, dev: np.ndarray,
             room: Optional[np.ndarray] = None) -> Optional[bool]:
        """Make the best improving move off `src`: True if made, None if there is none,
        False if it would break the misplaced budget (the round ends there)."""
        mv = self._best_move(st, src, dev, room)
        if mv is None:
            return None
        if not self.affordable(st, mv[0]):
            return False
        self._move(st, mv[0], src, mv[1])
        return True

    @staticmethod
    def _sources(dev: np.ndarray) -> Iterator[int]:
        """OSDs from the most overfull down; the full sort only if the first has no move."""
        top = int(np.argmax(dev))
        yield top
        for src in np.argsort(-dev, kind="stable").tolist():
            if src != top:
                yield src

    def _step(self, dev: np.ndarray, attempt: Callable[[int], Optional[bool]]) -> Optional[bool]:
        """Offer sources, most overfull first, until `attempt` makes a move (True), the
        budget stops the round (False), or no source above its share has one (None)."""
        for src in self._sources(dev):
            if dev[src] <= 0.5:
                return None
            outcome = attempt(src)
            if outcome is not None:
                return outcome
        return None

    def _loop(self, budget: int, step: Callable[[], Optional[bool]]) -> Tuple[int, bool]:
        """Run steps until none helps or `budget` moves are made: (moves, budget hit)."""
        used = 0
        while used < budget:
            outcome = step()
            if outcome is None:
                return used, False
            if outcome is False:
                return used, True
            used += 1
        return used, True

    def balance_pools(self, budget: int) -> int:
        used = 0
        for st in self.states:
            def step(st: PoolState = st) -> Optional[bool]:
                dev = st.counts - st.share
                return self._step(dev, lambda src: self._try(st, src, dev))
            n, stopped = self._loop(budget - used, step)
            used += n
            if stopped:
                break
        return used

    def balance_total(self, budget: int) -> int:
        n = self.snap.osds.count
        share = sum((st.share for st in self.states), np.zeros(n))

        def attempt(src: int, dev: np.ndarray) -> Optional[bool]:
            for st in self.states:
                # keep the pool within floor/ceil of its own share at both ends
                if st.counts[src] - 1 < np.floor(st.share[src] + EPS):
                    continue
                outcome = self._try(st, src, dev, st.counts + 1 <= np.ceil(st.share - EPS))
                if outcome is not None:
                    return outcome
            return None

        def step() -> Optional[bool]:
            dev = sum((st.counts for st in self.states), np.zeros(n)) - share
            return self._step(dev, lambda src: attempt(src, dev))
        return self._loop(budget, step)[0]

    # -- results --------------------------------------------------------------------------------

    def items(self) -> Dict[str, List[Tuple[int, int]]]:
        """The new full item list of every PG whose up set changed (empty: remove them)."""
        out: Dict[str, List[Tuple[int, int]]] = {}
        for st in self.states:
            changed = np.flatnonzero((st.up != st.start).any(axis=1))
            for r in changed.tolist():
                raw, want = st.raw[r].tolist(), st.up[r].tolist()
                if st.pool.type == "replicated":
                    gone = [o for o in raw if o >= 0 and o not in want]
                    new = [o for o in want if o >= 0 and o not in raw]
                    pairs = list(zip(gone, new))
                else:
                    pairs = [(a, b) for a, b in zip(raw, want) if a != b]
                out[f"{st.pool.id}.{r:x}"] = pairs
        return out

    def lower_bound(self) -> int:
        """Replicas that must move at least, per pool: those above each OSD's rounded-up
        share, or those missing below each rounded-down share, whichever is more (one move
        takes one replica off one OSD and puts it on one other)."""
        total = 0
        for st in self.states:
            c = up_counts(st.start, st.share.shape[0])
            over = np.maximum(c - np.ceil(st.share - EPS), 0).sum()
            under = np.maximum(np.floor(st.share + EPS) - c, 0).sum()
            total += int(max(over, under))
        return total

    def run(self, max_moves: int = 1 << 30) -> BalanceResult:
        lb = self.lower_bound()
        used = self.balance_pools(max_moves)
        used += self.balance_total(max_moves - used)
        moves = int(sum(((st.up != st.start) & (st.start >= 0)).sum() for st in self.states))
        return BalanceResult(pools=self.states, items=self.items(), moves=moves, lower_bound=lb,
                             notes=self.notes)


def _spreads(states: List[PoolState], use_start: bool) -> Dict[str, Any]:
    from .distribution import spread   # local: the report is the only user
    n = states[0].share.shape[0] if states else 0
    tot, share = np.zeros(n), np.zeros(n)
    pools: List[Dict[str, Any]] = []
    for st in states:
        c = up_counts(st.start if use_start else st.up, n)
        pools.append({"pool": st.pool.name, **spread(c, st.share).as_dict()})
        tot += c
        share += st.share
    return {"pools": pools, "total": spread(tot, share).as_dict() if states else None}


def commands(items: Dict[str, List[Tuple[int, int]]]) -> List[str]:
    """The `ceph` commands that set the items, as `osdmaptool --upmap` writes them."""
    out = []
    for pgid, pairs in sorted(items.items(), key=lambda kv: tuple(int(x, 16) for x in kv[0].split("."))):
        if pairs:
            out.append(f"ceph osd pg-upmap-items {pgid} " + " ".join(f"{a} {b}" for a, b in pairs))
        else:
            out.append(f"ceph osd rm-pg-upmap-items {pgid}")
    return out


def eval_report(snap: Snapshot, pools: Optional[List[str]] = None,
                placer: Optional[Placer] = None) -> Dict[str, Any]:
    """The distribution now; score: the largest deviation from a share (<= 1 is the limit)."""
    for name in pools or []:
        snap.pool_by_name(name)
    b = Balancer(snap, placer, pools)
    now = _spreads(b.states, True)
    devs = [p["max_deviation"] for p in now["pools"]]
    if now["total"] is not None:
        devs.append(now["total"]["max_deviation"])
    return {"epoch": snap.epoch, "score": max(devs, default=0.0), "distribution": now,
            "upmap_items": len(snap.pg_upmap_items), "notes": b.notes}


def misplaced_budget(snap: Snapshot, ratio: float) -> Optional[float]:
    """Object copies a round may misplace: ratio x all copies, less what is misplaced now."""
    pgs = snap.pgs
    if pgs is None:
        return None
    size = {p.id: p.size for p in snap.pools}
    copies = float(sum(int(o) * size.get(int(p), 0) for p, o in zip(pgs.pool, pgs.objects)))
    return max(ratio * copies - snap.misplaced_objects, 0.0)


def balance_report(snap: Snapshot, pools: Optional[List[str]] = None, max_items: int = 1 << 20,
                   mode: str = "pgs", placer: Optional[Placer] = None,
                   object_budget: Optional[float] = None) -> Dict[str, Any]:
    if mode != "pgs":
        raise AdvisorError.invalid(f"mode '{mode}' is not available yet: use --mode pgs")
    if max_items < 1:
        raise AdvisorError.invalid(f"--max-items must be at least 1, not {max_items}")
    for name in pools or []:
        snap.pool_by_name(name)
    b = Balancer(snap, placer, pools, object_budget)
    res = b.run(max_items)
    return {
        "epoch": snap.epoch, "mode": mode,
        "commands": commands(res.items),
        "items": {k: [list(p) for p in v] for k, v in sorted(res.items.items())},
        "before": _spreads(res.pools, True), "after": _spreads(res.pools, False),
        "moves": res.moves, "lower_bound": res.lower_bound, "notes": res.notes,
        "objects_misplaced": int(b.misplaced) if object_budget is not None else None,
    }
