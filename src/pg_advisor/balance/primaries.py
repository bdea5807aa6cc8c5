"""Read balance with pg-upmap-primary entries (Reef on): per replicated pool, the fewest
primary changes that bring the most primaries any one OSD holds down to the least it can be.

Reef's read_balance score of a pool depends on that maximum alone, so it is the goal;
entries move no data (the up set stays, only its first OSD changes). How Ceph treats an
entry, and so what may be proposed:
- it applies after pg_upmap and pg_upmap_items: its OSD, when in the set past the first
  slot and not out, trades places with the first; down OSDs are dropped after that;
- any OSD of the up set with primary affinity below 1 makes Ceph pick the primary again by
  hash, which may override the entry: such PGs are left as they are;
- the mon cancels an entry whose OSD is not in CRUSH's own set of the PG (before items) or
  is that set's first OSD, and refuses one whose OSD is not in the acting set past the
  first slot: a PG with a pg_temp (acting set not the up set) is left as it is;
- `osd pg-upmap-primary` needs require_min_compat_client reef.

The method is a min-cost flow over the OSDs. A PG whose primary is `a` and may be `b`
is an edge a -> b; moving it there costs 1 if it leaves its starting primary, -1 if it
returns to it, 0 otherwise, so the cost of a state is the number of PGs changed. For a
bound T, excess primaries flow from OSDs above T to OSDs below it along shortest (cheapest)
paths, many disjoint ones per Bellman-Ford pass. When no OSD above T reaches one below T,
no assignment has every OSD at T or less: the OSDs they reach already hold at least T each
and every PG of theirs can only stay among them. T then rises by one; the least T that
completes is the optimum, and a pass at that T from the start gives its fewest changes
(successive shortest paths give a flow of least cost). Ceph's own `balance_primaries`
evens each OSD toward a weighted share by single greedy moves: on the PGs both may change
its maximum is never lower than this one's, and it often changes more PGs for it.
"""
import math
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np

from ..analysis.read_balance import primary_counts, read_balance_score
from ..crush.placement import MAX_AFFINITY, Placer, PoolMapping
from ..model.mon_commands import rm_upmap_primary, upmap_primary
from ..model.snapshot import Pool, Snapshot
from ..model.work import count

# Ceph's releases in order; pg-upmap-primary came with reef. Ceph names releases in
# alphabetical order, so a name past the list's last letter is a later release.
RELEASES = ("argonaut", "bobtail", "cuttlefish", "dumpling", "emperor", "firefly", "giant",
            "hammer", "infernalis", "jewel", "kraken", "luminous", "mimic", "nautilus",
            "octopus", "pacific", "quincy", "reef", "squid", "tentacle")
FIRST_RELEASE = "reef"
# Primary changes a plan may propose (a PG changed counts once); each is a mon command
# and re-peers its PG, so a plan is a round, not a whole rebalance at any size.
MAX_CHANGES = 1000
# Work a plan may do, in units of one (PG, candidate) pair looked at (some 0.1 us each): a
# whole plan for a pool of 65,536 PGs x 3 on 10,000 OSDs is some 2.5 million. Past it the
# plan stops with a note, its changes so far kept (every state on the way is at least as
# even as the start).
WORK_MAX = 20_000_000
INF = 1 << 40


def allows_primaries(release: str) -> bool:
    """Does a require_min_compat_client of `release` let the mon take pg-upmap-primary?"""
    name = release.strip().lower()
    if name in RELEASES:
        return RELEASES.index(name) >= RELEASES.index(FIRST_RELEASE)
    # "unknown" (a map that never set it) and "" (no field: Pacific's maps have it; a
    # hand-made dump may not) are older than anything
    return bool(name) and name != "unknown" and name[0] > RELEASES[-1][0]


@dataclass
class ReadPlan:
    """The proposed pg-upmap-primary commands and what they do, per pool."""
    changes: List[Tuple[str, Optional[int]]] = field(default_factory=list)  # pgid, entry OSD or None
    cleanup: List[str] = field(default_factory=list)    # entries removed that change no primary
    pools: List[Dict[str, Any]] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    work: int = 0

    def commands(self) -> List[Dict[str, Any]]:
        """The mon commands, the primary changes first."""
        out: List[Dict[str, Any]] = []
        for pgid, osd in self.changes:
            if osd is None:
                out.append(rm_upmap_primary(pgid))
            else:
                out.append(upmap_primary(pgid, osd))
        out += [rm_upmap_primary(pgid) for pgid in self.cleanup]
        return out


class _Work:
    """The plan's work so far, against its bound."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.done = 0

    def spend(self, n: int) -> None:
        self.done += n

    @property
    def over(self) -> bool:
        return self.done > self.limit


@dataclass
class _Run:
    cur: np.ndarray      # per changeable PG: its primary at the end
    changed: int         # PGs whose primary is not the one they started with
    done: bool           # every OSD at T or below
    why: str             # "", "stuck" (T cannot be reached), "budget", "work"


class _Flow:
    """One pool's changeable PGs and the moves between their candidates."""

    def __init__(self, cand: np.ndarray, start: np.ndarray, fixed: np.ndarray, work: _Work) -> None:
        self.cand = cand            # (k, w) OSDs each PG's primary may be, -1 padding
        self.start = start          # (k,) where each PG's primary starts
        self.fixed = fixed          # per OSD: primaries of the PGs that cannot change
        self.n = fixed.size
        self.work = work

    def counts(self, cur: np.ndarray) -> np.ndarray:
        return self.fixed + np.bincount(cur, minlength=self.n)[:self.n]

    def run(self, cur: np.ndarray, changed: int, t: int, budget: Optional[int]) -> _Run:
        """Successive shortest paths from `cur` until no OSD holds more than t. Each pass
        finds the distances once and then sends, along the tree path to every nearest
        OSD below t, as many PGs as the path's OSDs and its edges' unmoved PGs allow: all
        those moves are shortest paths still, for they use PGs no other move of the pass did."""
        cur = cur.copy()
        cnt = self.counts(cur)
        stamp = np.full(cur.size, -1, dtype=np.int64)
        rounds = 0
        while True:
            if not (cnt > t).any():
                return _Run(cur, changed, True, "")
            if self.work.over:
                return _Run(cur, changed, False, "work")
            dist, parent, order, lo, hi = self._paths(cur, cnt, t)
            sinks = np.flatnonzero((cnt < t) & (dist < INF))
            if not sinks.size:
                return _Run(cur, changed, False, "stuck")
            d = int(dist[sinks].min())
            moved = 0
            for target in sinks[dist[sinks] == d].tolist():
                osds = self._trace(target, parent)
                root = osds[-1]
                if parent[root] >= 0:
                    continue
                k = min(int(cnt[root]) - t, t - int(cnt[target]))
                if budget is not None and d > 0:
                    k = min(k, (budget - changed) // d)
                hops: List[np.ndarray] = []
                for into, frm in zip(osds[:-1], osds[1:]):
                    if k <= 0:
                        break
                    pgs = order[lo[frm]:hi[frm]]
                    pgs = pgs[stamp[pgs] != rounds]
                    home = self.start[pgs]
                    cost = (into != home).astype(np.int64) - (frm != home)
                    pgs = pgs[(self.cand[pgs] == into).any(axis=1) & (dist[frm] + cost == dist[into])]
                    self.work.spend(int(hi[frm] - lo[frm]))
                    k = min(k, pgs.size)
                    hops.append(pgs)
                if k <= 0:
                    continue
                for into, pgs in zip(osds[:-1], hops):
                    stamp[pgs[:k]] = rounds
                    cur[pgs[:k]] = into
                cnt[root] -= k
                cnt[target] += k
                changed += d * k
                moved += k
            rounds += 1
            if not moved:      # the budget: the cheapest move left costs too much
                return _Run(cur, changed, False, "budget")

    def _trace(self, target: int, parent: np.ndarray) -> List[int]:
        """The OSDs of the tree path into `target`, from it back to its root (the tree has
        no cycle, as no cycle costs less than nothing; the bound is a guard)."""
        osds = [target]
        while parent[osds[-1]] >= 0 and len(osds) <= self.n:
            osds.append(int(parent[osds[-1]]))
        return osds

    def _paths(self, cur: np.ndarray, cnt: np.ndarray, t: int
               ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Bellman-Ford from every OSD above t at once, by frontiers (a queue of the OSDs
        whose distance fell): per OSD its distance and its parent on the tree (-1 at the
        roots), and the PGs by primary (`order`; OSD o's are order[lo[o]:hi[o]])."""
        dist = np.full(self.n, INF, dtype=np.int64)
        parent = np.full(self.n, -1, dtype=np.int64)
        # the PGs by their current primary: an OSD's out-edges are a slice
        order = np.argsort(cur, kind="stable")
        lo = np.searchsorted(cur[order], np.arange(self.n), side="left")
        hi = np.searchsorted(cur[order], np.arange(self.n), side="right")
        frontier = np.flatnonzero(cnt > t)
        dist[frontier] = 0
        for _ in range(self.n + 1):     # no negative cycle: a path visits each OSD once
            lens = hi[frontier] - lo[frontier]
            total = int(lens.sum())
            if not total:
                break
            offs = np.repeat(lo[frontier] - np.cumsum(lens) + lens, lens) + np.arange(total)
            pgs = order[offs]
            dst = self.cand[pgs]
            src = cur[pgs]
            self.work.spend(dst.size)
            home = self.start[pgs]
            cost = (dst != home[:, None]).astype(np.int64) - (src != home)[:, None]
            val = dist[src][:, None] + cost
            ok = (dst >= 0) & (dst != src[:, None])
            ok &= val < dist[np.where(ok, dst, 0)]
            r, c = np.nonzero(ok)
            if not r.size:
                break
            to, v, via = dst[r, c], val[r, c], src[r]
            pick = np.lexsort((v, to))
            to, v, via = to[pick], v[pick], via[pick]
            first = np.r_[True, to[1:] != to[:-1]]
            to, v, via = to[first], v[first], via[first]
            dist[to] = v
            parent[to] = via
            frontier = to
        return dist, parent, order, lo, hi


@dataclass
class _PoolView:
    """A replicated pool as the plan sees it."""
    pool: Pool
    before: PoolMapping          # the map now (items, entries)
    natural: np.ndarray          # per PG: its primary with no entry
    raw: np.ndarray              # CRUSH's own sets (no upmaps)
    rows: np.ndarray             # the changeable PGs
    cand: np.ndarray             # (rows, size) their candidates, -1 padding
    start: np.ndarray            # their primaries to start from
    fixed: np.ndarray            # per OSD: the other PGs' primaries
    stale: Dict[int, str]        # PG -> why its entry does nothing (or will be cancelled)


def plan_primaries(snap: Snapshot, pools: Optional[Sequence[str]] = None,
                   placer: Optional[Placer] = None, frozen: Iterable[str] = (),
                   max_changes: int = MAX_CHANGES, work_max: int = WORK_MAX) -> ReadPlan:
    """pg-upmap-primary changes that minimise each replicated pool's most primaries on one
    OSD, then the PGs changed. `placer`: the map to plan on (a proposal's items may be in
    its snapshot; by default the snapshot's own); `frozen`: PGs left as they are (the round
    moves them with items); `max_changes`: primary changes at most, over all pools."""
    for name in pools or ():
        snap.pool_by_name(name)         # a name that is no pool is refused, not skipped
    placer = placer or Placer.of(snap)
    base = placer.snap
    plan = ReadPlan()
    allowed = allows_primaries(snap.require_min_compat_client)
    if not allowed:
        plan.notes.append(f"pg-upmap-primary needs require_min_compat_client reef or later (it is "
                          f"'{snap.require_min_compat_client or 'unknown'}'): the scores only, no "
                          f"changes (`ceph osd set-require-min-compat-client reef` allows them, "
                          f"and shuts out older clients)")
    natural = placer.with_upmaps(base.pg_upmap, base.pg_upmap_items, {})
    frozen_set = set(frozen)
    work = _Work(work_max)
    entries = _by_pool(base.pg_upmap_primaries)
    left = max(0, max_changes)
    new_entries = dict(base.pg_upmap_primaries)
    done: List[Tuple[Pool, _PoolView, np.ndarray, Dict[str, Any]]] = []
    for pool in snap.pools:
        if pools is not None and pool.name not in pools:
            continue
        mine = entries.get(pool.id, {})
        if pool.type != "replicated":
            if mine:
                plan.notes.append(f"pool {pool.name}: erasure-coded, yet {len(mine)} pg_upmap_primary "
                                  f"entries: removed (pg-upmap-primary is for replicated pools)")
                if allowed:
                    plan.cleanup += sorted(_pgid(pool, s) for s in mine if _pgid(pool, s) not in frozen_set)
            else:
                plan.notes.append(f"pool {pool.name}: erasure-coded: pg-upmap-primary is for "
                                  f"replicated pools; left alone")
            continue
        view = _view(snap, pool, placer, natural, mine, frozen_set)
        counts = primary_counts(snap, view.before.up_primary)
        eligible = np.union1d(np.unique(view.cand[view.cand >= 0]),
                              np.flatnonzero(view.fixed))
        with_primary = int((view.before.up_primary >= 0).sum())
        floor = math.ceil(with_primary / eligible.size) if eligible.size else 0
        report: Dict[str, Any] = {"pool": pool.name, "pg_num": pool.pg_num,
                                  "max_before": int(counts.max()) if counts.size else 0,
                                  "floor": floor, "fixed": pool.pg_num - int(view.rows.size),
                                  "changes": 0, "cleanup": 0}
        final = view.start
        if allowed and view.rows.size and not work.over:
            final, why = _assign(view.cand, view.start, view.fixed, floor, left, work)
            if why:
                plan.notes.append(f"pool {pool.name}: {why}")
        if allowed:
            changes, cleanup = _commands(pool, view, final, mine)
            left -= len(changes)
            plan.changes += changes
            plan.cleanup += cleanup
            report.update(changes=len(changes), cleanup=len(cleanup))
            for pgid, osd in changes:
                _set(new_entries, pgid, osd)
            for pgid in cleanup:
                new_entries.pop(pgid, None)
        done.append((pool, view, final, report))
    if work.over:
        plan.notes.append(f"the plan's work bound ({work_max:,} units) was reached: its changes so far "
                          f"are kept; another round continues")
    after = placer.with_upmaps(base.pg_upmap, base.pg_upmap_items, new_entries)
    for pool, view, final, report in done:
        m = after.map_pool(pool)
        counts = primary_counts(snap, m.up_primary)
        report["max_after"] = int(counts.max()) if counts.size else 0
        report["score_before"] = _score(snap, pool, view.before)
        report["score_after"] = _score(snap, pool, m)
        plan.pools.append(report)
        # the exact model of the new map against the plan: they agree by construction
        off = int((m.up_primary[view.rows] != final).sum()) if allowed else 0
        if off:
            plan.notes.append(f"pool {pool.name}: the map with these entries gives {off} PGs another "
                              f"primary than planned")
    plan.work = work.done
    count("primaries", work.done)
    return plan


def _pgid(pool: Pool, seed: int) -> str:
    return f"{pool.id}.{seed:x}"


def _set(entries: Dict[str, int], pgid: str, osd: Optional[int]) -> None:
    if osd is None:
        entries.pop(pgid, None)
    else:
        entries[pgid] = osd


def _by_pool(entries: Mapping[str, int]) -> Dict[int, Dict[int, int]]:
    """pool id -> seed -> entry OSD."""
    out: Dict[int, Dict[int, int]] = {}
    for pgid, osd in entries.items():
        head, tail = pgid.split(".")
        out.setdefault(int(head), {})[int(tail, 16)] = int(osd)
    return out


def _score(snap: Snapshot, pool: Pool, m: PoolMapping) -> Optional[float]:
    r = read_balance_score(snap, pool, up=(m.up, m.up_primary))
    return None if r is None else r.get("score_stable")


def _view(snap: Snapshot, pool: Pool, placer: Placer, natural: Placer, entries: Mapping[int, int],
          frozen: Set[str]) -> _PoolView:
    before = placer.map_pool(pool)
    nat = natural.map_pool(pool).up_primary
    _, raw = placer.crush_sets(pool)
    up = before.up
    n_pg, n_osd = up.shape[0], snap.osds.count
    real = (up >= 0) & (up < n_osd)
    osd = np.where(real, up, 0)
    o = snap.osds
    usable = (o.exists & o.up & o.in_ & (placer.weight > 0) & (placer.affinity > 0))[osd] & real
    # what the mon keeps: an OSD of CRUSH's own set past its first; the PG's own primary
    # needs no entry
    in_raw = (raw[:, :, None] == up[:, None, :]).any(axis=1) & (up != raw[:, :1])
    cand = np.where(usable & (in_raw | (up == nat[:, None])), up, -1)
    ok = (before.up_primary >= 0) & (nat >= 0)
    # any OSD of the set with primary affinity below 1: Ceph picks the primary by hash
    ok &= ~(real & (placer.affinity[osd] != MAX_AFFINITY)).any(axis=1)
    if snap.pgs is not None:
        rows = snap.pg_rows(pool.id)
        seeds = snap.pgs.ps[rows]
        temp = ~(snap.pgs.up[rows] == snap.pgs.acting[rows]).all(axis=1) & (seeds < n_pg)
        ok[seeds[temp]] = False
    held = {int(t, 16) for h, t in (x.split(".") for x in frozen) if int(h) == pool.id}
    held = {s for s in held if s < n_pg}
    ok[sorted(held)] = False
    prefix = f"{pool.id}."
    for pgid, row in placer.snap.pg_upmap.items():
        # a pg_upmap naming an out OSD: Ceph ignores it, its items and the entry alike
        seed = int(pgid.split(".")[1], 16) if pgid.startswith(prefix) else n_pg
        if seed < n_pg and any(0 <= x < placer.weight.size and placer.weight[x] == 0 for x in row):
            ok[seed] = False
    start = before.up_primary.copy()
    stale: Dict[int, str] = {}
    for seed, e in entries.items():
        if seed >= n_pg or seed in held:
            continue
        members = up[seed][real[seed]].tolist()
        crush = raw[seed][raw[seed] >= 0].tolist()
        if e not in members:
            stale[seed] = "not in the up set"
        elif e == nat[seed]:
            stale[seed] = "the PG's own primary"
        elif e not in crush or e == crush[0]:
            # the mon cancels it at its next check: plan from what the PG gets then
            stale[seed] = "not in CRUSH's own set past its first OSD"
            start[seed] = nat[seed]
    rows = np.flatnonzero(ok)
    fixed = primary_counts(snap, np.where(ok, -1, start))
    return _PoolView(pool=pool, before=before, natural=nat, raw=raw, rows=rows, cand=cand[rows],
                     start=start[rows], fixed=fixed, stale=stale)


def assign(cand: np.ndarray, start: np.ndarray, fixed: np.ndarray, floor: int = 0,
           max_changes: int = MAX_CHANGES, work_max: int = WORK_MAX) -> Tuple[np.ndarray, str]:
    """The core alone: PG i's primary is start[i] and may be any OSD of cand[i] (-1 pads);
    OSD o also holds fixed[o] primaries that stay. Returns each PG's primary at the least
    maximum per OSD reachable with at most `max_changes` PGs changed, with the fewest
    changes for it, and why it stopped short if it did. `floor`: a known lower bound."""
    return _assign(cand, start, fixed, floor, max_changes, _Work(work_max))


def _assign(cand: np.ndarray, start: np.ndarray, fixed: np.ndarray, floor: int, budget: int,
            work: _Work) -> Tuple[np.ndarray, str]:
    flow = _Flow(cand, start, fixed, work)
    top = int(flow.counts(start).max())
    lb = max(floor, int(fixed.max()) if fixed.size else 0)
    if top <= lb:
        return start, ""
    # the optimum: the bound rises, from the state reached, while it cannot be reached
    t, r = lb, flow.run(start, 0, lb, None)
    while r.why == "stuck":
        t += 1
        r = flow.run(r.cur, r.changed, t, None)
    if r.done and t > lb:
        r = flow.run(start, 0, t, None)    # from the start again: the fewest changes for t
    if r.done and r.changed <= budget:
        return r.cur, ""
    if r.why == "work":
        keep = r.changed <= budget
        return (r.cur if keep else start), "the work bound stopped it short of the optimum"
    # too many changes: the least bound whose cheapest plan fits (that cost falls as the
    # bound rises)
    lo, hi, fit = t + 1, top, None
    while lo < hi and not work.over:
        mid = (lo + hi) // 2
        r = flow.run(start, 0, mid, budget)
        if r.done:
            fit, hi = r, mid
        elif r.why != "work":
            lo = mid + 1
    if fit is not None:
        return fit.cur, (f"max_changes reached: at most {hi} primaries on an OSD, where {t} "
                         f"is the least possible")
    if work.over:
        return start, "the work bound stopped it before any change"
    # none fits: fewer OSDs at the maximum is still a step toward it
    r = flow.run(start, 0, top - 1, budget)
    return r.cur, f"max_changes reached before the most primaries on an OSD could fall below {top}"


def _commands(pool: Pool, view: _PoolView, final: np.ndarray,
              entries: Mapping[int, int]) -> Tuple[List[Tuple[str, Optional[int]]], List[str]]:
    """The commands for the pool: one per PG whose primary changes (an entry set, or removed
    when the PG's own primary is the one wanted), and the removal of entries that do
    nothing (or that the mon will cancel) on PGs whose primary stays."""
    changes: List[Tuple[str, Optional[int]]] = []
    moved = view.rows[final != view.start]
    for seed, osd in zip(moved.tolist(), final[final != view.start].tolist()):
        if osd == int(view.natural[seed]):
            if seed in entries:
                changes.append((_pgid(pool, seed), None))
        elif entries.get(seed) != osd:
            changes.append((_pgid(pool, seed), osd))
    # a PG the plan changes got its command above
    gone = set(moved.tolist())
    cleanup = [_pgid(pool, s) for s in sorted(view.stale) if s not in gone]
    return changes, cleanup
