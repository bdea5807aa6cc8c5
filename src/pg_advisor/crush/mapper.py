"""crush_do_rule for many inputs at once.

The same control flow as Ceph's mapper.c (firstn with retries and chooseleaf recursion,
indep with its positional retries), run in lockstep over rows: every row is one PG's
input x, and masks say which rows are still retrying. Loops here run over replicas,
retries and tree depth, never over PGs.
"""
import dataclasses
from dataclasses import dataclass
from typing import NamedTuple, Optional, Tuple

import numpy as np

from ..model.constants import CRUSH_ITEM_NONE, CRUSH_ITEM_UNDEF
from ..model.work import count
from ..model.snapshot import Rule
from .compiled import MSR_RULE_TYPES, MSR_STEP_OPS
from .choose_rows import Choose, FirstnRows, LeafTries, place_leaves
from .descent import BAD, EMPTY, OK, RunContext

KNOB_STEPS = {"set_chooseleaf_vary_r": "vary_r", "set_chooseleaf_stable": "stable",
              "set_choose_local_tries": "local_tries", "set_choose_local_fallback_tries": "local_fallback"}
AHEAD_ROWS = 64   # tries drawn at once in a retry: up to this many (row, try) pairs
AHEAD_MAX = 8     # and at most this many tries of one row


def ahead_of(rows: int) -> int:
    """How many tries of each of `rows` retrying rows to draw at once: a few rows cost
    numpy's fixed cost per call whatever their number, so their next tries come along."""
    return max(1, min(AHEAD_MAX, AHEAD_ROWS // max(rows, 1)))


class IndepRows(NamedTuple):
    """crush_choose_indep's arguments that differ by row (one row per input)."""
    bucket: np.ndarray        # the bucket chosen from (an index, -1-id)
    x: np.ndarray
    left: np.ndarray          # how many positions to fill from outpos on
    out: np.ndarray           # filled in place, holes CRUSH_ITEM_NONE
    out2: Optional[np.ndarray]    # a chooseleaf's devices, alike
    outpos: np.ndarray
    parent_r: np.ndarray      # the r of the chooseleaf above (0 at the top)


def choose_firstn(ctx: RunContext, batch: FirstnRows, spec: Choose,
                  reach: Optional[np.ndarray] = None) -> np.ndarray:
    """crush_choose_firstn over rows: fills out (and out2) in place, returns outpos. Under
    local retries (argonaut's and bobtail's tunables) by firstn_local.py."""
    if spec.local_tries > 0 or spec.local_fallback > 0:
        from .firstn_local import choose_firstn_local     # (it builds on this module)
        return choose_firstn_local(ctx, batch, spec, reach)
    return _choose_firstn(ctx, batch, spec, reach)


def _choose_firstn(ctx: RunContext, batch: FirstnRows, spec: Choose,
                   reach: Optional[np.ndarray] = None) -> np.ndarray:
    """crush_choose_firstn over rows; fills out (and out2) in place, returns outpos.
    `reach` (a top-level choose, whose `out` holds only its own picks): a row that has
    placed every item its bucket can reach stops (each further try would collide)."""
    bucket, x, out, out2, outpos, count, rep_start, rep_end, parent_r = batch
    type_id, tries, recurse_to_leaf = spec.type_id, spec.tries, spec.recurse_to_leaf
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
            # a row's tries within a rep differ only in r: the next `ahead` of them are
            # drawn at once (each against the same state), and the first that ends the
            # rep (a win, or a bad item) is kept, as if tried one after another
            ahead = ahead_of(todo.size)
            rows = np.repeat(todo, ahead)
            f = ftotal[rows] + np.tile(np.arange(ahead), todo.size)
            live = f < tries
            rows, f = rows[live], f[live]
            r = rep[rows] + parent_r[rows] + f
            item, itype, status = ctx.descend(bucket[rows], x[rows], r, outpos[rows], type_id)
            ok = status == OK
            pos = outpos[rows]
            collide = ok & ((out[rows] == item[:, None]) & (cols[None, :] < pos[:, None])).any(axis=1)
            reject = status == EMPTY
            leaves: Optional[np.ndarray] = None
            if recurse_to_leaf and out2 is not None:
                leaves = out2[rows]
                reject |= place_leaves(ctx, spec, leaves, ok & ~collide,
                                       LeafTries(item, x[rows], r, pos, count[rows]), choose_firstn)
            chk = np.flatnonzero(ok & ~collide & ~reject & (itype == 0))
            if chk.size:
                reject[chk] = ctx.is_out(item[chk], x[rows[chk]])
            won = ok & ~collide & ~reject
            ends = np.flatnonzero(won | (status == BAD))
            done, first = np.unique(rows[ends], return_index=True)
            pick = ends[first]          # each row's first try that ends its rep
            pick = pick[won[pick]]
            wr = rows[pick]
            out[wr, outpos[wr]] = item[pick]
            if leaves is not None and out2 is not None:
                out2[wr] = leaves[pick]
            outpos[wr] += 1
            count[wr] -= 1
            ftotal[todo] += ahead
            todo = todo[~np.isin(todo, done) & (ftotal[todo] < tries)]
    return outpos


def _choose_indep(ctx: RunContext, batch: IndepRows, spec: Choose,
                  reach: Optional[np.ndarray] = None) -> None:
    """crush_choose_indep over rows: positional, holes become CRUSH_ITEM_NONE. `reach`
    (a top-level choose): a row that holds every item its bucket can reach stops (each
    further try collides, or sets a hole where one would be left anyway)."""
    bucket, x, left, out, out2, outpos, _ = batch
    tries = spec.tries
    left = left.copy()
    endpos = outpos + left
    cols = np.arange(out.shape[1])
    span = (cols[None, :] >= outpos[:, None]) & (cols[None, :] < endpos[:, None])
    out[span] = CRUSH_ITEM_UNDEF
    if out2 is not None:
        out2[span] = CRUSH_ITEM_UNDEF
    width = int((endpos - outpos).max(initial=0))
    t = _IndepTry(ctx, batch, spec, span)
    for ftotal in range(tries):
        in_pass = left > 0
        if reach is not None:
            in_pass &= t.placed(np.arange(x.shape[0])) < reach[bucket]
        if not in_pass.any():
            break
        rows = np.flatnonzero(in_pass)
        # after the first pass (or with a few tries a pass left) rows retry on their own:
        # each runs to its end, its open positions tried at once
        if (ftotal > 0 or int(left[rows].sum()) <= AHEAD_ROWS) and AHEAD_MAX > 1:
            t.finish(rows, ftotal, left, reach)
            break
        for k in range(width):
            rep = outpos + k
            rows = np.flatnonzero(in_pass & (rep < endpos))
            rows = rows[out[rows, rep[rows]] == CRUSH_ITEM_UNDEF]
            if not rows.size:
                continue
            rp = rep[rows]
            t.commit(rows, rp, t.draw(rows, rp, np.full(rows.size, ftotal)), left)
    out[span & (out == CRUSH_ITEM_UNDEF)] = CRUSH_ITEM_NONE
    if out2 is not None:
        out2[span & (out2 == CRUSH_ITEM_UNDEF)] = CRUSH_ITEM_NONE


class Tries(NamedTuple):
    """Tries of crush_choose_indep, one per element."""
    bad: np.ndarray      # a hole for good (a device where a bucket was due)
    fine: np.ndarray     # the item placed
    item: np.ndarray
    # for a chooseleaf, whether the try writes out2 and what: the leaf, a hole where none
    # was found, or a device it then rejects, which mapper.c leaves there (where no later
    # try places one, it is the leaf the rule emits)
    wrote: np.ndarray
    leaf: np.ndarray


@dataclass
class _IndepTry:
    """One try of crush_choose_indep at position rp of some rows in pass f, read from the
    state without changing it (draw), and its outcome written (commit)."""
    ctx: RunContext
    batch: IndepRows
    spec: Choose
    span: np.ndarray      # each row's positions [outpos, outpos + left)

    def draw(self, rows: np.ndarray, rp: np.ndarray, f: np.ndarray) -> "Tries":
        """The tries' outcomes (Tries)."""
        ctx, b, spec = self.ctx, self.batch, self.spec
        numrep = spec.numrep
        r = rp + b.parent_r[rows] + numrep * f
        apart = ctx.uniform_apart(numrep)
        item, itype, status, r = ctx.descend_r(b.bucket[rows], b.x[rows], r, b.outpos[rows],
                                               spec.type_id, None if apart is None else (apart, r + f))
        bad = status == BAD
        ok = status == OK
        collide = ok & ((b.out[rows] == item[:, None]) & self.span[rows]).any(axis=1)
        fine = ok & ~collide
        leaf = np.where(item >= 0, item, CRUSH_ITEM_NONE)
        wrote = np.zeros(rows.size, dtype=bool)
        if spec.recurse_to_leaf and b.out2 is not None:
            wrote = fine.copy()
            sub = np.flatnonzero(fine & (item < 0))
            if sub.size:
                lr = rows[sub]
                leaves = b.out2[lr]
                _choose_indep(ctx, IndepRows(-1 - item[sub], b.x[lr], np.ones(sub.size, np.int64),
                                             leaves, None, rp[sub], r[sub]), spec.leaf())
                leaf[sub] = leaves[np.arange(sub.size), rp[sub]]
                fine[sub] &= leaf[sub] != CRUSH_ITEM_NONE
        chk = np.flatnonzero(fine & (itype == 0))
        if chk.size:
            fine[chk] &= ~ctx.is_out(item[chk], b.x[rows[chk]])
        return Tries(bad, fine, item, wrote, leaf)

    def placed(self, rows: np.ndarray) -> np.ndarray:
        held = self.batch.out[rows]
        return (self.span[rows] & (held != CRUSH_ITEM_UNDEF) & (held != CRUSH_ITEM_NONE)).sum(axis=1)

    def commit(self, rows: np.ndarray, rp: np.ndarray, t: "Tries", left: np.ndarray) -> np.ndarray:
        """The outcome of each row's tries (rows grouped, their tries in mapper.c's order):
        the first that changes the state (a hole, or the item and its leaf placed) and
        nothing after it; before it, the out2 each failed try leaves (the last one at each
        position). Returns the index of each row's first such try."""
        bad, fine, item, wrote, leaf = t
        ends = np.flatnonzero(bad | fine)
        done, first = np.unique(rows[ends], return_index=True)
        pick = ends[first]
        out, out2 = self.batch.out, self.batch.out2
        if out2 is not None and wrote.any():
            stop = np.full(rows.size, rows.size)
            ended = np.isin(rows, done)
            stop[ended] = pick[np.searchsorted(done, rows[ended])]
            w = np.flatnonzero(wrote & (np.arange(rows.size) < stop))[::-1]
            _, last = np.unique(rows[w] * out.shape[1] + rp[w], return_index=True)
            w = w[last]
            out2[rows[w], rp[w]] = leaf[w]
        hole = pick[bad[pick]]
        out[rows[hole], rp[hole]] = CRUSH_ITEM_NONE
        put = pick[fine[pick]]
        out[rows[put], rp[put]] = item[put]
        if out2 is not None:
            out2[rows[hole], rp[hole]] = CRUSH_ITEM_NONE
            if self.spec.recurse_to_leaf:
                out2[rows[put], rp[put]] = leaf[put]
        left[rows[pick]] -= 1
        return pick

    def finish(self, rows: np.ndarray, f0: int, left: np.ndarray, reach: Optional[np.ndarray]) -> None:
        """Every try left of a few rows from pass f0 on, in mapper.c's order (pass by pass,
        position by position): each row's next tries are drawn at once against its state,
        the first that changes it is kept and those after it drawn again."""
        out, span, tries = self.batch.out, self.span, self.spec.tries
        cols = np.arange(out.shape[1])
        nf = np.full(rows.size, f0, dtype=np.int64)     # each row's next try: pass, column
        nc = np.zeros(rows.size, dtype=np.int64)
        while rows.size:
            open_ = span[rows] & (out[rows] == CRUSH_ITEM_UNDEF)
            live = open_.any(axis=1) & (nf < tries)
            if reach is not None:
                live &= self.placed(rows) < reach[self.batch.bucket[rows]]
            rows, nf, nc, open_ = rows[live], nf[live], nc[live], open_[live]
            if not rows.size:
                break
            passes = np.arange(ahead_of(int(open_.sum())))
            due = open_[:, None, :] & ((nf[:, None] + passes[None, :]) < tries)[:, :, None]
            due &= (passes[None, :, None] > 0) | (cols[None, None, :] >= nc[:, None, None])
            ri, pi, rp = np.nonzero(due)     # in order: row, pass, column
            tried = rows[ri]
            pick = self.commit(tried, rp, self.draw(tried, rp, nf[ri] + pi), left)
            # a row whose tries changed nothing goes on after them; one that changed resumes
            # after that try
            at = ri[pick]
            nf[at] += pi[pick] - passes.size
            nf += passes.size
            nc[:] = 0
            nc[at] = rp[pick] + 1


def do_rule(ctx: RunContext, rule: Rule, x: np.ndarray,
            result_max: int) -> Tuple[np.ndarray, np.ndarray]:
    """crush_do_rule for every input x, on ctx's map, weight set and reweights: (result (n,
    result_max), result length (n,)). What it costs is added to ctx.work."""
    cm = ctx.cm
    cm.check_mappable(rule)
    if ctx.dev_weight.dtype != np.int64:
        ctx = dataclasses.replace(ctx, dev_weight=ctx.dev_weight.astype(np.int64))
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
    # the firstn knobs a rule's set_* step overrides when its argument is 0 or more
    knobs = {"vary_r": t.chooseleaf_vary_r, "stable": t.chooseleaf_stable,
             "local_tries": t.choose_local_tries, "local_fallback": t.choose_local_fallback_tries}
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
        elif step.op in KNOB_STEPS:
            if step.arg1 >= 0:
                knobs[KNOB_STEPS[step.op]] = step.arg1
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
            if firstn:
                recurse_tries = leaf_tries or (1 if t.chooseleaf_descend_once else choose_tries)
                spec = Choose(step.arg2, choose_tries, recurse_tries, leafy, **knobs)
            else:
                spec = Choose(step.arg2, choose_tries, leaf_tries or 1, leafy, numrep=numrep)
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
                    got = choose_firstn(ctx, FirstnRows(b, x[rows], seg, seg2, zeros, room, zeros,
                                                        np.full(rows.size, numrep), zeros),
                                        spec, ctx.reach(step.arg2, leafy or step.arg2 == 0))
                else:
                    got = np.minimum(numrep, room)
                    _choose_indep(ctx, IndepRows(b, x[rows], got, seg, seg2, zeros, zeros), spec,
                                  ctx.reach(step.arg2, leafy != (step.arg2 == 0)))
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
