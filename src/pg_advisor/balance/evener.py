"""Bytes mode: once the counts are balanced, even out how full the OSDs are.

Fullness is the bytes of the PG replicas on an OSD (an EC shard holds 1/k of its PG)
over the OSD's size (from the OSD stats; its CRUSH weight when sizes are unknown), against
the mean fullness of the OSDs of its CRUSH root and device class: an ssd root of a few
small pools is emptier than the hdd one by design, and no move evens the two. Counts
stay within floor/ceil of their shares, per pool and in total: a replica moves alone only
where both ends have room; otherwise two PGs of one pool swap places between a fuller
and an emptier OSD, the bigger going down. The fullest OSD comes down, or the emptiest
goes up, by at least `min_gain` x the mean fullness per move, or nothing is done: PGs of
nearly equal size are not shuffled for nothing. A step that changes no PG's primary (see
pool_state.moves_primary) is taken over a better one that does if it gains at least half as
much (KEEP_RATIO): few primaries change for a few more moves (figures in doc/balance.rst).
"""
from typing import List, Optional, Tuple

import numpy as np

from ..rules.legality import has_ancestor, replaceable
from .balancer import Balancer
from .budget import Stop
from .pool_state import moves_primary, PoolState
from .report_types import Fullness
from .unlist import FullnessGuard

CANDIDATES = 32     # partner OSDs examined per step, the most promising first
SWAP_CANDIDATES = 8
KEEP_RATIO = 0.5    # see the docstring
# A step's own cost in the balancer's units of work (~40 ns each) per OSD: it sorts every
# OSD by fullness and builds arrays over them (some 3.5 ms a step at 10,000 OSDs). With the
# legality checks it makes, it counts against the one bound of a run (balancer.WORK_MAX):
# uncounted, 9,697 steps took 35 s on a 10,000-OSD map (qa/bench/large_inputs.py).
STEP_UNITS_PER_OSD = 8


class Move:
    """A single move (`second` is None) or a swap: (row, from, to) for each half. `keeps`:
    it changes no PG's primary."""

    def __init__(self, gain: float, st: PoolState, first: Tuple[int, int, int],
                 second: Optional[Tuple[int, int, int]] = None, keeps: bool = True) -> None:
        self.gain, self.st, self.first, self.second, self.keeps = gain, st, first, second, keeps

    @property
    def moves(self) -> int:
        return 1 if self.second is None else 2

    def per_move(self) -> float:
        return self.gain / self.moves


def capacity(b: Balancer) -> Tuple[np.ndarray, np.ndarray, str]:
    """(OSDs any balanced pool may use, their sizes, the basis): all in one unit, their
    sizes if all are known, else CRUSH weights. An OSD at the fill limit counts: it takes no
    PG, but moves off it are what bring it down."""
    n = b.snap.osds.count
    considered = np.zeros(n, bool)
    for st in b.states:
        considered |= st.members
    o = b.snap.osds
    sized = bool((o.bytes_total[considered] > 0).all())
    cap = np.where(considered, o.bytes_total if sized else o.crush_weight, 1.0).astype(float)
    cap[cap <= 0] = 1.0
    return considered, cap, "osd size" if sized else "crush weight"


def groups(b: Balancer) -> np.ndarray:
    """Per OSD: its group, one per CRUSH root (its topmost ancestor) and device class."""
    n = b.snap.osds.count
    root, found = np.zeros(n, np.int64), np.zeros(n, bool)
    for t in sorted(b.anc, reverse=True):       # the highest type an OSD has is its root's
        if t:
            a = b.anc[t]
            real = has_ancestor(a) & ~found
            root[real], found = a[real], found | real
    _, cls = np.unique(np.array([c or "" for c in b.snap.osds.device_class], dtype=object).astype(str),
                       return_inverse=True)
    _, g = np.unique(np.stack([root, cls.reshape(-1).astype(np.int64)]), axis=1, return_inverse=True)
    out: np.ndarray = g.reshape(-1)
    return out


def group_mean(g: np.ndarray, considered: np.ndarray, cap: np.ndarray, used: np.ndarray) -> np.ndarray:
    """Per OSD: the mean fullness of the considered OSDs of its group (0 where none holds data)."""
    k = int(g.max(initial=0)) + 1
    num = np.bincount(g[considered], weights=used[considered], minlength=k)
    den = np.bincount(g[considered], weights=cap[considered], minlength=k)
    out: np.ndarray = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)[g]
    return out


def used_bytes(b: Balancer, start: bool = False) -> np.ndarray:
    """Bytes of PG replicas per OSD, now (as proposed) or before balancing."""
    n = b.snap.osds.count
    used = np.zeros(n)
    for st in b.states:
        up = st.start if start else st.up
        ok = (up >= 0) & (up < n)
        used += np.bincount(up[ok], weights=np.broadcast_to(st.bytes[:, None], up.shape)[ok],
                            minlength=n)
    return used


def relative(b: Balancer, start: bool = False) -> Tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """(the considered OSDs, their fullness, their group's mean fullness, the basis)."""
    considered, cap, basis = capacity(b)
    used = used_bytes(b, start)
    return considered, used / cap, group_mean(groups(b), considered, cap, used), basis


def fullness(b: Balancer, start: bool = False) -> Fullness:
    """The fullest and the emptiest OSD against the mean of their root and class (and how
    full each is of its size)."""
    considered, u, mean, basis = relative(b, start)
    live = np.flatnonzero(considered & (mean > 0))
    if not live.size:
        return Fullness(basis=basis, max_ratio=None, min_ratio=None, max_used=None, min_used=None)
    rel = u[live] / mean[live]
    hi, lo = live[int(np.argmax(rel))], live[int(np.argmin(rel))]
    sized = basis == "osd size"
    return Fullness(basis=basis, max_ratio=round(float(rel.max()), 6), min_ratio=round(float(rel.min()), 6),
                    max_used=round(float(u[hi]), 6) if sized else None,
                    min_used=round(float(u[lo]), 6) if sized else None)


def fullness_guard(b: Balancer, min_gain: float) -> FullnessGuard:
    """What a removal of item lists must keep in bytes mode (unlist.FullnessGuard): each OSD's
    fullness against its root and class, as the run starts, and the evener's min_gain as
    the margin."""
    considered, cap, _ = capacity(b)
    used = used_bytes(b)
    g = groups(b)
    return FullnessGuard(used, cap, group_mean(g, considered, cap, used), g, considered, min_gain)


def byte_spread(b: Balancer) -> float:
    """How far of its size the OSD furthest from its group's mean fullness is from it (0
    without data or sizes)."""
    considered, u, mean, basis = relative(b)
    live = considered & (mean > 0)
    return float(np.abs(u - mean)[live].max(initial=0.0)) if basis == "osd size" else 0.0


class ByteEvener:
    def __init__(self, balancer: Balancer, min_gain: float) -> None:
        self.balancer = balancer
        self.considered, cap, _ = capacity(balancer)
        self.used = used_bytes(balancer)
        total = self.used[self.considered].sum()
        self.mean = total / cap[self.considered].sum() if self.considered.any() else 0.0
        # each OSD's size scaled by its group's mean over the whole mean: used / cap is then
        # its fullness against its own root and class, in the units of the whole mean
        gm = group_mean(groups(balancer), self.considered, cap, self.used)
        self.cap = cap * np.where(gm > 0, gm / self.mean if self.mean > 0 else 1.0, 1.0)
        self.min_gain = min_gain * self.mean
        # a hard stop besides the gain: each step moves the extremes strictly inwards
        self.steps_left = 20 * int(self.considered.sum()) + 100

    def util(self) -> np.ndarray:
        return np.where(self.considered, self.used / self.cap, np.nan)

    # -- candidate steps ------------------------------------------------------------------------

    def _gain(self, us: np.ndarray, ud: np.ndarray, u: np.ndarray, s: int, d: np.ndarray,
              down: bool) -> np.ndarray:
        """How far the pair's fuller end comes down (down) or its emptier end goes up."""
        if down:
            return u[s] - np.maximum(us, ud)
        return np.minimum(us, ud) - u[d]

    def _moves(self, st: PoolState, s: int, ds: np.ndarray, u: np.ndarray,
               down: bool) -> List[Move]:
        L, T = st.level, self.balancer.total
        if L.counts[s] <= L.lo[s] or T.counts[s] <= T.lo[s]:
            return []
        ds = ds[(L.counts[ds] < L.hi[ds]) & (T.counts[ds] < T.hi[ds]) & st.allowed[ds]]
        rows = st.rows(s)
        if not ds.size or not rows.size:
            return []
        if not self.balancer.budget.spend(rows.size * ds.size):
            return []
        srcs = np.full(rows.size, s)
        ok = replaceable(st.reach(self.balancer.anc), st.up[rows], st.forbidden(rows, srcs),
                         srcs, ds)
        delta = st.bytes[rows][:, None]
        g = self._gain(u[s] - delta / self.cap[s], u[ds][None, :] + delta / self.cap[ds][None, :],
                       u, s, ds[None, :], down)
        g = np.where(ok, g, -np.inf)
        keeps = np.broadcast_to(~moves_primary(st, rows, np.full(rows.size, s), erasure_too=True)[:, None],
                                g.shape)
        return [Move(float(g[r, c]), st, (int(rows[r]), s, int(ds[c])), keeps=bool(keeps[r, c]))
                for r, c in self._picks(g, keeps)]

    def _swaps(self, st: PoolState, s: int, ds: np.ndarray, u: np.ndarray,
               down: bool) -> List[Move]:
        found: List[Move] = []
        rows_s = st.rows(s)
        if not rows_s.size:
            return found
        for d in ds[st.allowed[ds]].tolist():
            rows_d = st.rows(d)
            if not rows_d.size:
                continue
            if not self.balancer.budget.spend(rows_s.size + rows_d.size):
                break
            from_s, from_d = np.full(rows_s.size, s), np.full(rows_d.size, d)
            anc = self.balancer.anc
            a = rows_s[replaceable(st.reach(anc), st.up[rows_s], st.forbidden(rows_s, from_s),
                                   from_s, np.array([d]))[:, 0]]
            z = rows_d[replaceable(st.reach(anc), st.up[rows_d], st.forbidden(rows_d, from_d),
                                   from_d, np.array([s]))[:, 0]]
            if not a.size or not z.size:
                continue
            delta = st.bytes[a][:, None] - st.bytes[z][None, :]
            g = self._gain(u[s] - delta / self.cap[s], u[d] + delta / self.cap[d], u, s,
                           np.array(d), down)
            g = np.where(delta > 0, g, -np.inf)
            keeps = (~moves_primary(st, a, np.full(a.size, s), erasure_too=True)[:, None]
                     & ~moves_primary(st, z, np.full(z.size, d), erasure_too=True)[None, :])
            found += [Move(float(g[i, j]), st, (int(a[i]), s, d), (int(z[j]), d, s),
                           keeps=bool(keeps[i, j])) for i, j in self._picks(g, keeps)]
        return found

    @staticmethod
    def _picks(g: np.ndarray, keeps: np.ndarray) -> List[Tuple[int, int]]:
        """Where `g` is highest and, if that step changes a primary, where it is highest
        among the steps that keep them (for _choose); only finite gains."""
        out: List[Tuple[int, int]] = []
        for m in (g, np.where(keeps, g, -np.inf)):
            k = int(np.argmax(m))
            if np.isfinite(m.flat[k]):
                i, j = np.unravel_index(k, g.shape)
                out.append((int(i), int(j)))
                if keeps.flat[k]:     # the best keeps them: no second pick
                    break
        return out

    def _choose(self, found: List[Move]) -> Optional[Move]:
        """Of the steps worth making, the one that gains most per move, unless one that
        keeps every primary gains at least KEEP_RATIO of that: then the best such one."""
        found = [m for m in found if m.per_move() >= self.min_gain]
        if not found:
            return None
        best = max(found, key=Move.per_move)
        keepers = [m for m in found if m.keeps and m.per_move() >= KEEP_RATIO * best.per_move()]
        return max(keepers, key=Move.per_move) if keepers else best

    def _found(self, s: int, ds: np.ndarray, u: np.ndarray, down: bool) -> List[Move]:
        """The candidate steps between fuller `s` and the emptier `ds`."""
        found: List[Move] = []
        for st in self.balancer.states:
            found += self._moves(st, s, ds, u, down)
            if self.balancer.budget.moves_left >= 2:
                found += self._swaps(st, s, ds[:SWAP_CANDIDATES], u, down)
        return found

    # -- the loop -------------------------------------------------------------------------------

    def _apply(self, step: Move) -> bool:
        b, st = self.balancer, step.st
        halves = [h for h in (step.first, step.second) if h is not None]
        if not b.budget.affordable(sum(float(st.objects[r]) for r, _, _ in halves)):
            b.budget.halt(Stop.MISPLACED)
            return False
        done: List[Tuple[int, int, int]] = []
        for row, frm, to in halves:
            if not b.apply_move(st, row, frm, to):
                # a swap is both halves or neither: the first goes back (given back to the
                # budget, Balancer.apply_all) and the run stops where the budget did
                for r, f, t in reversed(done):
                    b.apply_move(st, r, t, f)
                    self.used[t] -= st.bytes[r]
                    self.used[f] += st.bytes[r]
                return False
            done.append((row, frm, to))
            self.used[frm] -= st.bytes[row]
            self.used[to] += st.bytes[row]
        return True

    def step(self) -> bool:
        """One step off the fullest OSD, or onto the emptiest: True if made."""
        u = self.util()
        live = np.flatnonzero(self.considered)
        if live.size < 2 or not self.balancer.budget.spend(STEP_UNITS_PER_OSD * int(u.size)):
            return False
        order = live[np.argsort(u[live], kind="stable")]
        full, empty = int(order[-1]), int(order[0])
        found = self._found(full, order[:CANDIDATES], u, True)
        for s in order[::-1][:SWAP_CANDIDATES].tolist():   # who can feed the emptiest
            found += self._found(s, np.array([empty]), u, False)
        pick = self._choose(found)
        return pick is not None and self._apply(pick)

    def run(self) -> None:
        while self.mean > 0 and not self.balancer.stopped and self.steps_left > 0 and self.step():
            self.steps_left -= 1
