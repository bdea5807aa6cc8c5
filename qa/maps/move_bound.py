"""A tighter lower bound on a balance's moves than the balancer's own, by MILP (doc/balance.rst).
The fewest the rule's counts allow (scipy's HiGHS): a[r, o] in [0, 1]: row r ends with a replica
on OSD o (relaxed, so the dual bound holds even at the time limit); y[r, b] in {0, 1}: it uses
bucket b, under the rule's caps, spans and totals; each OSD within floor/ceil of its shares.
`PYTHONPATH=src /usr/bin/python3 -m qa.maps.move_bound [--time-limit 900]`: on the reweighted "multi" map.
"""
from dataclasses import dataclass
import time
from typing import Dict, List, Optional, Tuple

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from pg_advisor.balance.balancer import EPS, Balancer
from pg_advisor.rules.legality import ancestors

MAX_VARIABLES = 4_000_000       # PG rows x candidate OSDs over all pools: beyond, no bound


@dataclass(frozen=True)
class MoveBound:
    bound: int              # no balancer needs fewer moves (the MILP's dual bound)
    lp: float               # the same with the span limits relaxed (an LP)
    optimal: bool           # the MILP was solved, not stopped by its time limit
    best: Optional[int]     # moves of the best placement it found that checks (optimal: the fewest)
    moves: int          # the balancer's moves from the same start (after its repairs)
    seconds: float


class Rows:
    """Constraint rows built block by block: sum(coef * x[cols]) <= or == rhs."""

    def __init__(self) -> None:
        self.r: List[np.ndarray] = []
        self.c: List[np.ndarray] = []
        self.v: List[np.ndarray] = []
        self.b: List[np.ndarray] = []
        self.count = 0

    def add(self, rhs: np.ndarray, *terms: Tuple[np.ndarray, np.ndarray, float]) -> None:
        """rhs.size new rows: entries (local_row[i], cols[i]) times coef of each term."""
        for local_row, cols, coef in terms:
            self.r.append(local_row + self.count)
            self.c.append(cols)
            self.v.append(np.full(cols.size, coef))
        self.b.append(np.asarray(rhs, dtype=float))
        self.count += rhs.size

    def within_share(self, rows: np.ndarray, cols: np.ndarray, share: np.ndarray) -> None:
        """floor(share) <= each row's sum <= ceil(share)."""
        self.add(np.ceil(share - EPS), (rows, cols, 1.0))
        self.add(-np.floor(share + EPS), (rows, cols, -1.0))

    def matrix(self, nvars: int) -> Tuple[sparse.csr_matrix, np.ndarray]:
        m = sparse.csr_matrix((np.concatenate(self.v), (np.concatenate(self.r), np.concatenate(self.c))),
                              shape=(self.count, nvars))
        return m, np.concatenate(self.b)


def move_bound(bal: Balancer, time_limit: float = 120.0) -> Optional[MoveBound]:
    """The bound for a Balancer that has run (its states hold base and up); None when too
    large or no placement meets the targets under the rule's counts."""
    t0 = time.monotonic()
    n = bal.snap.osds.count
    if sum(st.base.shape[0] * int(st.allowed.sum()) for st in bal.states) > MAX_VARIABLES:
        return None
    anc = ancestors(bal.snap)
    eq, le = Rows(), Rows()
    lbs: List[np.ndarray] = []
    ubs: List[np.ndarray] = []
    objs: List[np.ndarray] = []
    integer: List[np.ndarray] = []
    layout: List[Tuple[int, np.ndarray, int, int]] = []
    tot_cols, tot_osds = [], []
    col0 = 0

    def new_vars(lb: np.ndarray, ub: np.ndarray, obj: np.ndarray, integral: float) -> np.ndarray:
        nonlocal col0
        for out, v in ((lbs, lb), (ubs, ub), (objs, obj), (integer, np.full(lb.shape, integral))):
            out.append(v.reshape(-1).astype(float))
        col0 += lb.size
        return col0 - lb.size + np.arange(lb.size).reshape(lb.shape)

    for st in bal.states:
        base = st.base
        valid = (base >= 0) & (base < n)
        cand = np.union1d(np.flatnonzero(st.allowed), base[valid])
        R, C = base.shape[0], cand.size
        on_base = np.zeros((R, C), bool)
        rr, kk = np.nonzero(valid)
        on_base[rr, np.searchsorted(cand, base[rr, kk])] = True
        # a healthy row may take any allowed OSD or keep one it holds; others stay put
        ub = np.where(st.healthy[:, None], st.allowed[cand][None, :] | on_base, on_base)
        lb = np.where(st.healthy[:, None], False, on_base)
        layout.append((col0, cand, R, C))
        var = new_vars(lb, ub, -1.0 * on_base, 0.0)
        # each row keeps its number of replicas
        eq.add(valid.sum(axis=1), (np.repeat(np.arange(R), C), var.reshape(-1), 1.0))
        # y[r, b] = 1 when row r uses bucket b (integer so that spans bind)
        width = int(valid.sum(axis=1).max(initial=0))
        for lim in st.shape.limits:
            if lim.type == 0:
                continue
            bucket_ids, bucket = np.unique(anc[lim.type][cand], return_inverse=True)
            nb = bucket_ids.size
            cap = min(lim.cap, width)
            y = new_vars(np.zeros((R, nb)), np.ones((R, nb)), np.zeros((R, nb)), 1.0)
            # sum of a over the bucket - cap * y <= 0
            rows = (np.arange(R)[:, None] * nb + bucket[None, :]).reshape(-1)
            le.add(np.zeros(R * nb), (rows, var.reshape(-1), 1.0),
                   (np.arange(R * nb), y.reshape(-1), -float(cap)))
            # at most `span` buckets per bucket of the step before (or in all)
            if lim.above is None:
                group = np.zeros(nb, np.int64)
            else:
                first = np.array([np.flatnonzero(bucket == b)[0] for b in range(nb)])
                _, group = np.unique(anc[lim.above][cand[first]], return_inverse=True)
            ng = int(group.max(initial=-1)) + 1
            le.add(np.full(R * ng, float(lim.span)),
                   ((np.arange(R)[:, None] * ng + group[None, :]).reshape(-1), y.reshape(-1), 1.0))
            if lim.total is not None:
                le.add(np.full(R, float(lim.total)), (np.repeat(np.arange(R), nb), y.reshape(-1), 1.0))
        # each OSD's count in the pool within its share
        le.within_share(np.broadcast_to(np.arange(C), (R, C)).reshape(-1), var.reshape(-1), st.share[cand])
        tot_cols.append(var.reshape(-1))
        tot_osds.append(np.broadcast_to(cand, (R, C)).reshape(-1))
    if len(bal.states) > 1:      # each OSD's total over the pools, the same way
        le.within_share(np.concatenate(tot_osds), np.concatenate(tot_cols), bal.total.share)
    A_ub, b_ub = le.matrix(col0)
    A_eq, b_eq = eq.matrix(col0)
    c = np.concatenate(objs)
    lo, hi = np.concatenate(lbs), np.concatenate(ubs)
    relaxed = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                      bounds=np.stack([lo, hi], axis=1), method="highs")
    if relaxed.status != 0:
        return None
    shards = sum(int(((st.base >= 0) & (st.base < n)).sum()) for st in bal.states)
    res = milp(c, integrality=np.concatenate(integer), bounds=Bounds(lo, hi),
               constraints=[LinearConstraint(A_ub, -np.inf, b_ub), LinearConstraint(A_eq, b_eq, b_eq)],
               options={"time_limit": time_limit})
    moves = int(sum(((st.up != st.base) & (st.base >= 0)).sum() for st in bal.states))
    lp = shards + float(relaxed.fun)        # replicas that leave their OSD, spans relaxed
    dual = getattr(res, "mip_dual_bound", None)
    if res.status not in (0, 1) or dual is None or not np.isfinite(dual):
        return MoveBound(bound=int(np.ceil(lp - 1e-6)), lp=lp, optimal=False, best=None,
                         moves=moves, seconds=time.monotonic() - t0)
    best = None
    if res.x is not None:                   # the best placement found, checked
        x = res.x
        finals = []
        for c0, cand, R, C in layout:
            a = x[c0:c0 + R * C].reshape(R, C)
            if np.any(np.minimum(np.abs(a), np.abs(1 - a)) > 1e-6):
                break                       # fractional: the bound stands, no placement
            fin = np.full((R, int((a > 0.5).sum(axis=1).max(initial=0))), -1, np.int64)
            for r in range(R):
                got = cand[a[r] > 0.5]
                fin[r, :got.size] = got
            finals.append(fin)
        else:
            if _spans_ok(bal, anc, finals):
                best = int(round(shards + float(res.fun)))
    # the LP's bound holds too (a MILP stopped early may report less)
    proven = int(np.ceil(shards + float(dual) - 1e-6))
    return MoveBound(bound=max(proven, int(np.ceil(lp - 1e-6))), lp=lp, optimal=res.status == 0,
                     best=best, moves=moves, seconds=time.monotonic() - t0)


def _spans_ok(bal: Balancer, anc: Dict[int, np.ndarray], finals: List[np.ndarray]) -> bool:
    """Do the LP's sets keep each rule's limit on the buckets one PG uses?"""
    for st, fin in zip(bal.states, finals):
        for lim in st.shape.limits:
            if lim.type == 0:
                continue
            for row in fin:
                osds = row[row >= 0]
                b = anc[lim.type][osds]
                if lim.total is not None and np.unique(b).size > lim.total:
                    return False
                groups = [b] if lim.above is None else \
                    [b[anc[lim.above][osds] == q] for q in np.unique(anc[lim.above][osds]).tolist()]
                if any(np.unique(g).size > lim.span for g in groups):
                    return False
    return True


def main(argv: Optional[List[str]] = None) -> int:
    import argparse
    import tempfile
    from pathlib import Path

    from pg_advisor.model import snapshot

    from .monbuilt import reweighted_multi
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=900.0, help="the MILP's, seconds")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="move-bound-") as d:
        _, osd_dump, crush = reweighted_multi(Path(d))
    bal = Balancer(snapshot.load(osd_dump, crush))
    t0 = time.monotonic()
    res = bal.run()
    took = time.monotonic() - t0
    mb = move_bound(bal, args.time_limit)
    print('"multi" map, 3 OSDs reweighted, Ceph\'s items set')
    print(f"balancer: {res.moves} moves ({res.repairs} repairs of Ceph's items), {mb.moves if mb else '?'} "
          f"replicas off their OSD, in {took:.1f} s; its own bound {res.lower_bound}")
    if mb is None:
        print("no bound: too large, or no placement meets the targets")
        return 1
    print(f"LP (spans relaxed): {mb.lp:.1f}; MILP: bound {mb.bound}, best placement found "
          f"{mb.best}, {'solved' if mb.optimal else 'stopped at its time limit'} in {mb.seconds:.0f} s")
    print(f"balancer / MILP bound: {mb.moves / mb.bound:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
