"""crush_do_rule for many inputs at once.

The same control flow as Ceph's mapper.c (firstn with retries and chooseleaf recursion,
indep with its positional retries), run in lockstep over rows: every row is one PG's
input x, and masks say which rows are still retrying. Loops here run over replicas,
retries and tree depth, never over PGs.
"""
from dataclasses import dataclass, field
from typing import Optional, Tuple

import numpy as np

from ..model.constants import CRUSH_ITEM_NONE, CRUSH_ITEM_UNDEF, WEIGHT_ONE
from ..model.mappable import LOCAL_TRIES
from ..model.work import count
from . import buckets, straw2
from .compiled import MSR_RULE_TYPES, MSR_STEP_OPS, ChooseArgs, CompiledCrush, CompiledRule
from .hashing import hash32_2

OK, EMPTY, BAD = 0, 1, 2


@dataclass
class CrushWork:
    """What CRUSH runs cost so far: a caller that bounds its work (the balancer) counts it."""
    draws: int = 0       # (input, bucket item) pairs hashed
    replicas: int = 0    # inputs times the replicas asked of each


@dataclass(frozen=True)
class _Ctx:
    cm: CompiledCrush
    args: Optional[ChooseArgs]
    dev_weight: np.ndarray   # 16.16 reweight per OSD id (0 = out)
    work: CrushWork = field(default_factory=CrushWork)

    def bucket_choose(self, b: np.ndarray, x: np.ndarray, r: np.ndarray,
                      position: np.ndarray) -> np.ndarray:
        """The item each row's bucket b (an index, -1-id) picks for (x, r), by the
        bucket's algorithm (rows grouped by algorithm and size)."""
        cm = self.cm
        out = np.empty(b.shape[0], dtype=np.int64)
        keys = (cm.alg_id[b] << 32) | cm.size[b]
        for key in np.unique(keys).tolist():
            alg, s = key >> 32, key & 0xFFFFFFFF
            sel = np.flatnonzero(keys == key)
            bb = b[sel]
            if s == 1:      # every algorithm takes a lone item whatever the draw: no hash
                out[sel] = cm.items[bb, 0]     # (a chain of thousands of such buckets is legal)
                continue
            self.work.draws += sel.size * s
            if alg != buckets.STRAW2:       # (weight sets are straw2's alone)
                out[sel] = cm.items[bb, buckets.choose(cm, alg, bb, s, x[sel], r[sel])]
                continue
            args = self.args
            pos = None if args is None else np.minimum(position[sel], args.positions[bb] - 1)

            def rows(sl: slice, bb: np.ndarray = bb, s: int = s,
                     pos: Optional[np.ndarray] = pos) -> Tuple[np.ndarray, np.ndarray]:
                if args is None or pos is None:
                    return cm.items[bb[sl], :s], cm.weights[bb[sl], :s]
                return args.ids[bb[sl], :s], args.weights[bb[sl], pos[sl], :s]
            # (gathered a block at a time, as drawn)
            win = straw2.choose_by(sel.size, s, rows, x[sel], r[sel])
            out[sel] = cm.items[bb, win]
        return out

    def is_out(self, item: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Reweight as a per-input coin flip: an OSD at 0.8 rejects ~20% of inputs."""
        wmax = self.dev_weight.shape[0]
        inside = item < wmax
        w = np.where(inside, self.dev_weight[np.minimum(item, wmax - 1)], 0)
        coin = (hash32_2(x, item) & np.uint32(0xFFFF)).astype(np.int64)
        self.work.draws += coin.size
        return ~inside | ((w < WEIGHT_ONE) & ((w == 0) | (coin >= w)))

    def hops(self, want_type: int) -> np.ndarray:
        """Bucket index -> where a descent toward want_type really chooses: past every
        bucket of one child (it always takes that child) that is not itself of want_type.
        A chain of thousands of nested buckets then costs one choice, not thousands."""
        cm = self.cm
        got: Optional[np.ndarray] = cm.memo.get(("hops", want_type))
        if got is None:
            got = cm.memo[("hops", want_type)] = self._hops(want_type)
            got.setflags(write=False)     # shared by every later run
        return got

    def _hops(self, want_type: int) -> np.ndarray:
        cm = self.cm
        nb = cm.max_buckets
        child = cm.items[:, 0] if cm.items.shape[1] else np.zeros(nb, dtype=np.int64)
        inner = (cm.size == 1) & (child < 0)
        idx = np.where(inner, -1 - child, 0)
        one = inner & (cm.type_id[idx] != want_type)
        nxt = np.where(one, idx, np.arange(nb))
        for _ in range(max(nb, 2).bit_length()):    # pointer doubling: log2(depth) steps
            nxt = nxt[nxt]
        return nxt

    def reach(self, type_id: int) -> np.ndarray:
        """Bucket index -> how many items of type_id a descent from it can end on (at most:
        an item held twice counts twice). Once a choose has placed that many distinct
        items, every later try collides and changes nothing: the caller may stop."""
        cm = self.cm
        known: Optional[np.ndarray] = cm.memo.get(("reach", type_id))
        if known is None:
            known = cm.memo[("reach", type_id)] = self._reach(type_id)
            known.setflags(write=False)
        return known

    def _reach(self, type_id: int) -> np.ndarray:
        cm = self.cm
        nb = cm.max_buckets
        got = np.full(nb, -1, dtype=np.int64)
        for root in range(nb):
            stack = [root]
            while stack:            # iterative: a chain of thousands of buckets is legal
                b = stack[-1]
                if got[b] >= 0:
                    stack.pop()
                    continue
                kids = cm.items[b, :cm.size[b]].tolist()
                inner = [-1 - c for c in kids if c < 0 and cm.type_id[-1 - c] != type_id
                         and got[-1 - c] < 0]
                if inner:
                    stack.extend(inner)
                    continue
                got[b] = sum(1 if (c >= 0 and type_id == 0) or (c < 0 and cm.type_id[-1 - c] == type_id)
                             else (int(got[-1 - c]) if c < 0 else 0) for c in kids)
                stack.pop()
        return got

    def uniform_apart(self, numrep: int) -> Optional[np.ndarray]:
        """Bucket index -> whether crush_choose_indep retries it with r + (numrep + 1) *
        ftotal rather than numrep * ftotal: a uniform bucket whose size numrep divides
        (whose retries would cycle through the same positions). None: no such bucket."""
        cm = self.cm
        key = ("uniform_apart", numrep)
        if key not in cm.memo:
            apart = (cm.alg_id == buckets.UNIFORM) & (cm.size % max(numrep, 1) == 0)
            cm.memo[key] = apart if apart.any() else None
        got: Optional[np.ndarray] = cm.memo[key]
        return got

    def descend(self, b: np.ndarray, x: np.ndarray, r: np.ndarray, position: np.ndarray,
                want_type: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """From buckets b down to an item of want_type: (item, its type, status)."""
        item, itype, status, _ = self.descend_r(b, x, r, position, want_type)
        return item, itype, status

    def descend_r(self, b: np.ndarray, x: np.ndarray, r: np.ndarray, position: np.ndarray,
                  want_type: int, apart: Optional[Tuple[np.ndarray, np.ndarray]] = None
                  ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """descend, where `apart` is (bucket index -> whether it draws otherwise, the r per
        row it draws with then); also the r the last bucket drew with (indep's leaf
        recursion starts from it)."""
        cm = self.cm
        n = b.shape[0]
        b = b.copy()
        item = np.zeros(n, dtype=np.int64)
        itype = np.zeros(n, dtype=np.int64)
        status = np.full(n, OK, dtype=np.int64)
        used = r.copy()
        pending = np.arange(n)
        hop = self.hops(want_type)
        while pending.size:
            b[pending] = hop[b[pending]]
            empty = cm.size[b[pending]] == 0
            status[pending[empty]] = EMPTY
            go = pending[~empty]
            if apart is not None:
                used[go] = np.where(apart[0][b[go]], apart[1][go], r[go])
            it = self.bucket_choose(b[go], x[go], used[go], position[go])
            ty = np.where(it < 0, cm.type_id[np.maximum(-1 - it, 0)], 0)
            item[go], itype[go] = it, ty
            deeper = (ty != want_type) & (it < 0)
            status[go[(ty != want_type) & (it >= 0)]] = BAD   # a device where a bucket was due
            pending = go[deeper]
            b[pending] = -1 - it[deeper]
        return item, itype, status, used


def _choose_firstn(ctx: _Ctx, bucket: np.ndarray, x: np.ndarray, type_id: int,
                   out: np.ndarray, out2: Optional[np.ndarray], outpos: np.ndarray,
                   count: np.ndarray, rep_start: np.ndarray, rep_end: np.ndarray,
                   tries: int, recurse_tries: int, recurse_to_leaf: bool, vary_r: int,
                   stable: int, parent_r: np.ndarray, reach: Optional[np.ndarray] = None) -> np.ndarray:
    """crush_choose_firstn over rows; fills out (and out2) in place, returns outpos.
    `reach` (a top-level choose, whose `out` holds only its own picks): a row that has
    placed every item its bucket can reach stops (each further try would collide)."""
    outpos = outpos.copy()
    count = count.copy()
    cols = np.arange(out.shape[1])
    for k in range(int((rep_end - rep_start).max(initial=0))):
        rep = rep_start + k
        ftotal = np.zeros(x.shape[0], dtype=np.int64)
        todo = np.flatnonzero((rep < rep_end) & (count > 0))
        if reach is not None:
            todo = todo[outpos[todo] < reach[bucket[todo]]]
        while todo.size:
            rows = todo
            r = rep[rows] + parent_r[rows] + ftotal[rows]
            item, itype, status = ctx.descend(bucket[rows], x[rows], r, outpos[rows], type_id)
            ok = status == OK
            pos = outpos[rows]
            collide = ok & ((out[rows] == item[:, None]) & (cols[None, :] < pos[:, None])).any(axis=1)
            reject = status == EMPTY
            if recurse_to_leaf and out2 is not None:
                cand = ok & ~collide
                sub = np.flatnonzero(cand & (item < 0))
                if sub.size:
                    lr = rows[sub]
                    sub_r = (r[sub] >> (vary_r - 1)) if vary_r else np.zeros(sub.size, np.int64)
                    leaf = out2[lr]
                    p = pos[sub]
                    got = _choose_firstn(
                        ctx, -1 - item[sub], x[lr], 0, leaf, None, p, count[lr],
                        np.zeros_like(p) if stable else p, np.ones_like(p) if stable else p + 1,
                        recurse_tries, 0, False, vary_r, stable, sub_r)
                    out2[lr] = leaf
                    reject[sub] = got <= p
                dev = np.flatnonzero(cand & (item >= 0))
                out2[rows[dev], pos[dev]] = item[dev]
            chk = np.flatnonzero(ok & ~collide & ~reject & (itype == 0))
            if chk.size:
                reject[chk] = ctx.is_out(item[chk], x[rows[chk]])
            failed = (reject | collide) & (status != BAD)
            ftotal[rows[failed]] += 1
            retry = failed & (ftotal[rows] < tries)
            won = ok & ~collide & ~reject
            wr = rows[won]
            out[wr, outpos[wr]] = item[won]
            outpos[wr] += 1
            count[wr] -= 1
            todo = rows[retry]
    return outpos


def _choose_indep(ctx: _Ctx, bucket: np.ndarray, x: np.ndarray, left: np.ndarray,
                  numrep: int, type_id: int, out: np.ndarray, outpos: np.ndarray,
                  tries: int, recurse_tries: int, recurse_to_leaf: bool,
                  out2: Optional[np.ndarray], parent_r: np.ndarray,
                  reach: Optional[np.ndarray] = None) -> None:
    """crush_choose_indep over rows: positional, holes become CRUSH_ITEM_NONE. `reach`
    (a top-level choose): a row that holds every item its bucket can reach stops (each
    further try collides, or sets a hole where one would be left anyway)."""
    left = left.copy()
    endpos = outpos + left
    cols = np.arange(out.shape[1])
    span = (cols[None, :] >= outpos[:, None]) & (cols[None, :] < endpos[:, None])
    out[span] = CRUSH_ITEM_UNDEF
    if out2 is not None:
        out2[span] = CRUSH_ITEM_UNDEF
    width = int((endpos - outpos).max(initial=0))
    for ftotal in range(tries):
        in_pass = left > 0
        if reach is not None:
            placed = (span & (out != CRUSH_ITEM_UNDEF) & (out != CRUSH_ITEM_NONE)).sum(axis=1)
            in_pass &= placed < reach[bucket]
        if not in_pass.any():
            break
        for k in range(width):
            rep = outpos + k
            rows = np.flatnonzero(in_pass & (rep < endpos))
            rows = rows[out[rows, rep[rows]] == CRUSH_ITEM_UNDEF]
            if not rows.size:
                continue
            rp = rep[rows]
            r = rp + parent_r[rows] + numrep * ftotal
            apart = ctx.uniform_apart(numrep)
            item, itype, status, r = ctx.descend_r(bucket[rows], x[rows], r, outpos[rows], type_id,
                                                   None if apart is None else (apart, r + ftotal))
            bad = status == BAD
            out[rows[bad], rp[bad]] = CRUSH_ITEM_NONE
            if out2 is not None:
                out2[rows[bad], rp[bad]] = CRUSH_ITEM_NONE
            left[rows[bad]] -= 1
            ok = status == OK
            collide = ok & ((out[rows] == item[:, None]) & span[rows]).any(axis=1)
            fine = ok & ~collide
            if recurse_to_leaf and out2 is not None:
                sub = np.flatnonzero(fine & (item < 0))
                if sub.size:
                    lr = rows[sub]
                    leaf = out2[lr]
                    _choose_indep(ctx, -1 - item[sub], x[lr], np.ones(sub.size, np.int64),
                                  numrep, 0, leaf, rp[sub], recurse_tries, 0, False, None, r[sub])
                    out2[lr] = leaf
                    fine[sub] &= leaf[np.arange(sub.size), rp[sub]] != CRUSH_ITEM_NONE
                dev = np.flatnonzero(fine & (item >= 0))
                out2[rows[dev], rp[dev]] = item[dev]
            chk = np.flatnonzero(fine & (itype == 0))
            if chk.size:
                fine[chk] &= ~ctx.is_out(item[chk], x[rows[chk]])
            out[rows[fine], rp[fine]] = item[fine]
            left[rows[fine]] -= 1
    out[span & (out == CRUSH_ITEM_UNDEF)] = CRUSH_ITEM_NONE
    if out2 is not None:
        out2[span & (out2 == CRUSH_ITEM_UNDEF)] = CRUSH_ITEM_NONE


def do_rule(cm: CompiledCrush, rule: CompiledRule, x: np.ndarray, result_max: int,
            dev_weight: np.ndarray, args: Optional[ChooseArgs] = None,
            work: Optional[CrushWork] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Map every input x through the rule: (result (n, result_max), result length (n,)).
    What it costs is added to `work`."""
    cm.check_mappable(rule)
    ctx = _Ctx(cm, args, dev_weight.astype(np.int64), work if work is not None else CrushWork())
    draws0 = ctx.work.draws
    ctx.work.replicas += x.shape[0] * result_max
    count("crush_replicas", x.shape[0] * result_max)
    x = x.astype(np.int64) & 0xFFFFFFFF
    if rule.type in MSR_RULE_TYPES:
        from .msr import do_msr_rule     # (msr builds on this module: imported when used)
        mapped = do_msr_rule(ctx, rule, x, result_max)
        count("crush_draws", ctx.work.draws - draws0)
        return mapped
    n = x.shape[0]
    t = cm.tunables
    choose_tries = t.choose_total_tries + 1   # the tunable counts retries, not tries
    leaf_tries = 0
    vary_r, stable = t.chooseleaf_vary_r, t.chooseleaf_stable
    w = np.full((n, result_max), CRUSH_ITEM_NONE, dtype=np.int64)
    wsize = np.zeros(n, dtype=np.int64)
    result = np.full((n, result_max), CRUSH_ITEM_NONE, dtype=np.int64)
    rlen = np.zeros(n, dtype=np.int64)
    for step in rule.steps:
        if step.op == "take":
            a = step.arg1
            if (0 <= a < cm.max_devices) or (0 <= -1 - a < cm.max_buckets and cm.exists[-1 - a]):
                w[:, 0] = a
                wsize[:] = 1
        elif step.op == "set_choose_tries":
            if step.arg1 > 0:
                choose_tries = step.arg1
        elif step.op == "set_chooseleaf_tries":
            if step.arg1 > 0:
                leaf_tries = step.arg1
        elif step.op in LOCAL_TRIES:
            continue        # 0 or less: the default (check_mappable refused the rest)
        elif step.op == "set_chooseleaf_vary_r":
            if step.arg1 >= 0:
                vary_r = step.arg1
        elif step.op == "set_chooseleaf_stable":
            if step.arg1 >= 0:
                stable = step.arg1
        elif step.op in MSR_STEP_OPS:
            continue        # unknown to crush_do_rule outside an msr rule: skipped
        elif step.op.startswith("choose"):
            active = wsize > 0
            if not active.any():
                continue
            firstn = step.op.endswith("firstn")
            leafy = step.op.startswith("chooseleaf")
            o = np.full((n, result_max), CRUSH_ITEM_NONE, dtype=np.int64)
            c = np.full((n, result_max), CRUSH_ITEM_NONE, dtype=np.int64)
            osize = np.zeros(n, dtype=np.int64)
            numrep = step.arg1 if step.arg1 > 0 else step.arg1 + result_max
            for i in range(int(wsize.max()) if numrep > 0 else 0):
                src = w[:, i]
                bidx = -1 - src
                rows = np.flatnonzero((wsize > i) & (bidx >= 0) & (bidx < cm.max_buckets))
                if not rows.size:
                    continue
                b = bidx[rows]
                seg = np.full((rows.size, numrep), CRUSH_ITEM_NONE, dtype=np.int64)
                seg2 = seg.copy()
                zeros = np.zeros(rows.size, dtype=np.int64)
                room = result_max - osize[rows]
                if firstn:
                    recurse_tries = leaf_tries or (1 if t.chooseleaf_descend_once else choose_tries)
                    got = _choose_firstn(ctx, b, x[rows], step.arg2, seg, seg2, zeros, room,
                                         zeros, np.full(rows.size, numrep), choose_tries,
                                         recurse_tries, leafy, vary_r, stable, zeros,
                                         ctx.reach(step.arg2))
                else:
                    got = np.minimum(numrep, room)
                    _choose_indep(ctx, b, x[rows], got, numrep, step.arg2, seg, zeros,
                                  choose_tries, leaf_tries or 1, leafy, seg2, zeros,
                                  ctx.reach(step.arg2))
                for k in range(numrep):
                    m = np.flatnonzero(got > k)
                    dst = osize[rows[m]] + k
                    o[rows[m], dst] = seg[m, k]
                    c[rows[m], dst] = seg2[m, k]
                osize[rows] += got
            if leafy:
                o = c
            w = np.where(active[:, None], o, w)
            wsize = np.where(active, osize, wsize)
        elif step.op == "emit":
            for k in range(result_max):
                m = np.flatnonzero((wsize > k) & (rlen < result_max))
                result[m, rlen[m]] = w[m, k]
                rlen[m] += 1
            wsize[:] = 0
    count("crush_draws", ctx.work.draws - draws0)
    return result, rlen
