"""crush_choose_firstn under the tunables of argonaut and bobtail (choose_local_tries or
choose_local_fallback_tries above 0, or a rule's set_choose_local_* step), for many rows.

There a try that collides, or meets an out device, an empty bucket or a leaf it cannot
place, may draw again in the bucket where it happened (mapper.c's retry_bucket) rather
than descend from the top again: a collision up to choose_local_tries times, any failure
while the tries in that bucket are at most its size plus choose_local_fallback_tries. Past
half the bucket's size (and past the fallback count) such a bucket draws by permutation
(bucket_perm_choose), whatever its algorithm. Each draw takes r = rep + parent_r + ftotal,
as every retry counts toward choose_total_tries.

Unlike mapper._choose_firstn, which draws whole descents ahead, rows advance here one
bucket draw per pass, in lockstep, each with its own bucket, ftotal and flocal.
"""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .descent import RunContext
from .choose_rows import Choose, FirstnRows, LeafTries, place_leaves


def choose_firstn_local(ctx: RunContext, batch: FirstnRows, spec: Choose,
                        reach: Optional[np.ndarray] = None) -> np.ndarray:
    """crush_choose_firstn with local retries over rows: fills out (and out2) in place,
    returns outpos (mapper._choose_firstn's contract)."""
    bucket, x, out, out2, outpos, count, rep_start, rep_end, parent_r = batch
    outpos, count = outpos.copy(), count.copy()
    cols = np.arange(out.shape[1])
    n = x.shape[0]
    for k in range(int((rep_end - rep_start).max(initial=0))):
        rep = rep_start + k
        todo = np.flatnonzero((rep < rep_end) & (count > 0))
        if reach is not None:
            todo = todo[outpos[todo] < reach[bucket[todo]]]
        ftotal = np.zeros(n, dtype=np.int64)
        flocal = np.zeros(n, dtype=np.int64)
        here = bucket.copy()
        while todo.size:
            todo = _draw_once(ctx, batch, spec, _Rep(rep, todo, ftotal, flocal, here, outpos, count, cols))
    return outpos


@dataclass
class _Rep:
    """One rep's state over the rows (arrays shared with the caller, changed in place)."""
    rep: np.ndarray
    todo: np.ndarray
    ftotal: np.ndarray
    flocal: np.ndarray
    here: np.ndarray          # mapper.c's `in`: the bucket each row draws from
    outpos: np.ndarray
    count: np.ndarray
    cols: np.ndarray


def _draw_once(ctx: RunContext, batch: FirstnRows, spec: Choose, st: _Rep) -> np.ndarray:
    """One bucket draw for each row still in the rep; the rows that go on."""
    cm = ctx.cm
    rows = st.todo
    x = batch.x[rows]
    b = st.here[rows]
    size = cm.size[b]
    r = st.rep[rows] + batch.parent_r[rows] + st.ftotal[rows]
    pos = st.outpos[rows]
    item = np.zeros(rows.size, dtype=np.int64)
    go = np.flatnonzero(size > 0)
    fl = st.flocal[rows[go]]
    perm = (spec.local_fallback > 0) & (fl >= (size[go] >> 1)) & (fl > spec.local_fallback)
    plain, by_perm = go[~perm], go[perm]
    if plain.size:
        item[plain] = ctx.bucket_choose(b[plain], x[plain], r[plain], pos[plain])
    if by_perm.size:
        item[by_perm] = ctx.perm_choose(b[by_perm], x[by_perm], r[by_perm])
    itype = np.where(item < 0, cm.type_id[np.maximum(-1 - item, 0)], 0)
    other = np.zeros(rows.size, dtype=bool)
    other[go] = itype[go] != spec.type_id
    deeper = np.flatnonzero(other & (item < 0))
    st.here[rows[deeper]] = -1 - item[deeper]          # retry_bucket: no try spent
    cand = np.zeros(rows.size, dtype=bool)
    cand[go] = ~other[go]
    collide = cand & ((batch.out[rows] == item[:, None]) & (st.cols[None, :] < pos[:, None])).any(axis=1)
    reject = size == 0
    leaves: Optional[np.ndarray] = None
    if spec.recurse_to_leaf and batch.out2 is not None:
        leaves = lv = batch.out2[rows]
        # (the leaf's choose takes the same local retries: crush_do_rule passes them down)
        reject |= place_leaves(ctx, spec, lv, cand & ~collide, LeafTries(item, x, r, pos, st.count[rows]),
                               choose_firstn_local)
    chk = np.flatnonzero(cand & ~collide & ~reject & (itype == 0))
    if chk.size:
        reject[chk] = ctx.is_out(item[chk], x[chk])
    won = np.flatnonzero(cand & ~collide & ~reject)
    wr = rows[won]
    batch.out[wr, st.outpos[wr]] = item[won]
    if leaves is not None and batch.out2 is not None:
        batch.out2[wr] = leaves[won]
    st.outpos[wr] += 1
    st.count[wr] -= 1
    failed = np.flatnonzero((cand & (collide | reject)) | (size == 0))
    fr = rows[failed]
    st.ftotal[fr] += 1
    st.flocal[fr] += 1
    fl = st.flocal[fr]
    again = ((collide[failed] & (fl <= spec.local_tries))
             | ((spec.local_fallback > 0) & (fl <= size[failed] + spec.local_fallback)))
    descent = ~again & (st.ftotal[fr] < spec.tries)
    top = fr[descent]
    st.here[top] = batch.bucket[top]                    # retry_descent: from the top again
    st.flocal[top] = 0
    return np.sort(np.concatenate([rows[deeper], fr[again], top]))
