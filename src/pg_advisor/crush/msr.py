"""crush_msr_do_rule (mapper.c, Squid and later) for many inputs at once: the "multi-step
retry" rules of types msr_firstn and msr_indep, which EC profiles with
crush-osds-per-failure-domain / crush-num-failure-domains get (`choosemsr 3 type host;
choosemsr 2 type osd`: at most 2 shards per host).

What Ceph does, and so what this does, row by row in lockstep (loops run over descents,
strides, collision tries and the rule's steps, never over PGs):

* config steps first (`set_msr_descents`, `set_msr_collision_tries`) override the map's
  tunables (100 and 100 by default); then blocks of `take; choosemsr...; emit`, each
  filling the next output positions (as many as the product of its counts, 0 meaning
  the pool's size), from a workspace of one vector per choose step, cleared per block.
* a descent (`tryno`) walks the block depth first: a step of count n splits its range of
  positions into n strides; a stride whose leaf positions are all filled is skipped; else
  a draw from the bucket (r = ((tryno * size + stride) << 16) + collision try, weight-set
  position = the stride's index) down to an item of the step's type, retried up to
  msr_collision_tries times while the item is in another stride of the range (one
  already in this stride is fine). None found: the stride is skipped this descent.
* a leaf (type 0) that is out (reweight: the per-input coin of is_out) is skipped, not
  remembered; one that is in is recorded and emitted (msr_firstn: appended in emission
  order; msr_indep: at its own position). A bucket is recorded in its stride after its
  children were tried; one that placed nothing and was new there is removed again when
  the call ends, so until then it still collides for the strides after it.
* descents repeat (up to msr_descents) while a row's block has unfilled positions: so an
  out OSD is replaced by another OSD of its host, or by one of another host not used by
  another stride. msr_indep leaves CRUSH_ITEM_NONE where nothing was found.

Refused (EINVAL, one sentence) where Ceph maps nothing or crashes: a step other than
those, a block without choose steps or whose last step is not of type osd (or an osd
step before the last), a take of a device or of a missing bucket, negative counts; and,
while mapping, a draw that meets an empty bucket or a device where a bucket was due.
"""
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

import numpy as np

from ..model.constants import CRUSH_ITEM_NONE, CRUSH_ITEM_UNDEF
from ..model.errors import AdvisorError
from ..model.snapshot import Rule
from .compiled import MSR_CONFIG_OPS, RULE_MSR_FIRSTN, CompiledCrush
from .descent import EMPTY, OK, RunContext

NOT_FROM = -1       # no bucket drew this slot (bucket indexes are >= 0)


@dataclass(frozen=True)
class Block:
    root: int                             # bucket index (-1 - id) the block takes
    steps: Tuple[Tuple[int, int], ...]    # (count, 0 = the pool's size; bucket type id)


@dataclass(frozen=True)
class Program:
    descents: int
    collision_tries: int
    blocks: Tuple[Block, ...]


@dataclass(frozen=True)
class Span:
    """What a crush_msr_choose call fills: positions [lo, hi) (start_index, end_index),
    in strides of total // count (total_descendants: the product of the counts from its
    step on, more than hi - lo where result_max cuts the block short)."""
    lo: int
    hi: int
    total: int


@dataclass(frozen=True)
class Stride:
    """One stride of a Span in crush_msr_choose's loop: positions [s0, s1) (stride_start,
    stride_end), index (stride_index: the draw's r and weight-set position), length
    (stride_length), and the span whose other strides its draws collide with."""
    span: Span
    index: int
    s0: int
    s1: int
    length: int

    def inner(self) -> Span:
        """The span the next step fills: this stride (the recursive call's arguments)."""
        return Span(self.s0, self.s1, self.length)


def program(cm: CompiledCrush, rule: Rule) -> Program:
    """The rule as crush_msr_do_rule reads it, checked (once per map and rule)."""
    key = ("msr", rule.id)
    got: Optional[Program] = cm.memo.get(key)
    if got is None:
        got = cm.memo[key] = _parse(cm, rule)
    return got


def _parse(cm: CompiledCrush, rule: Rule) -> Program:
    def refuse(why: str) -> AdvisorError:
        return AdvisorError.invalid(f"crush rule '{rule.name}' (type msr): {why}")
    descents, tries = cm.tunables.msr_descents, cm.tunables.msr_collision_tries
    steps = list(rule.steps)
    k = 0
    while k < len(steps) and steps[k].op in MSR_CONFIG_OPS:
        if steps[k].arg1 < 0:      # Ceph reads it unsigned: some 4 billion tries
            raise refuse(f"{steps[k].op} {steps[k].arg1} is negative")
        if steps[k].op == "set_msr_descents":
            descents = steps[k].arg1
        else:
            tries = steps[k].arg1
        k += 1
    blocks: List[Block] = []
    nothing = "Ceph maps no PG with it"
    while k < len(steps):
        if steps[k].op != "take":
            raise refuse(f"step '{steps[k].op}' where a take is due; {nothing}")
        item = steps[k].arg1
        if item >= 0:           # Ceph emits it at the same position again and asserts
            raise refuse("a take of a device is not supported (Ceph's mapper asserts on it)")
        if not (-1 - item < cm.max_buckets and cm.exists[-1 - item]):
            raise refuse(f"take of bucket {item}, which is not in the map")
        k += 1
        chooses: List[Tuple[int, int]] = []
        while k < len(steps) and steps[k].op == "choosemsr":
            if steps[k].arg1 < 0:
                raise refuse(f"choosemsr {steps[k].arg1}: a negative count is not supported")
            chooses.append((steps[k].arg1, steps[k].arg2))
            k += 1
        if k >= len(steps) or steps[k].op != "emit":
            what = f"step '{steps[k].op}'" if k < len(steps) else "the end of the rule"
            raise refuse(f"{what} where choosemsr or emit is due; {nothing}")
        k += 1
        if not chooses:
            raise refuse("a take with no choosemsr before its emit (Ceph's mapper asserts on it)")
        types = [t for _, t in chooses]
        if types[-1] != 0 or 0 in types[:-1]:
            raise refuse(f"choosemsr steps of types {types}: only the last may, and must, pick "
                         f"OSDs (type 0); {nothing} in that block")
        blocks.append(Block(root=-1 - item, steps=tuple(chooses)))
    if not blocks:
        raise refuse(f"no take ... emit block; {nothing}")
    return Program(descents=descents, collision_tries=tries, blocks=tuple(blocks))


def _hazard(cm: CompiledCrush, type_id: int) -> np.ndarray:
    """Bucket index -> can a descent from it toward type_id meet an empty bucket or (type
    above 0) a device? Ceph's mapper asserts or reads out of bounds there: rows are not
    skipped on its behalf where it can (see _Run.hopeless)."""
    key = ("msr-hazard", type_id)
    got: Optional[np.ndarray] = cm.memo.get(key)
    if got is not None:
        return got
    nb = cm.max_buckets
    out = np.zeros(nb, dtype=np.int8)       # 0 unknown, 1 safe, 2 hazard
    for root in range(nb):
        stack = [root]
        while stack:            # iterative: a chain of thousands of buckets is legal
            b = stack[-1]
            if out[b]:
                stack.pop()
                continue
            kids = cm.items[b, :cm.size[b]].tolist()
            inner = [-1 - c for c in kids if c < 0 and cm.type_id[-1 - c] != type_id]
            todo = [c for c in inner if not out[c]]
            if todo:
                stack.extend(todo)
                continue
            bad = not kids or (type_id != 0 and any(c >= 0 for c in kids)) \
                or any(out[c] == 2 for c in inner)
            out[b] = 2 if bad else 1
            stack.pop()
    got = cm.memo[key] = out == 2
    got.setflags(write=False)
    return got


@dataclass
class _State:
    """Rows' mapping state within a block: per choose step, what each position's stride
    holds (Ceph's step vectors; columns from the block's first position) and the bucket
    it was drawn from (to know when every candidate is taken); the output and how much
    of it is filled (returned_so_far); the next descent; a crash met (status, bucket)."""
    x: np.ndarray
    vec: List[np.ndarray]
    src: List[np.ndarray]
    out: np.ndarray
    got: np.ndarray
    tryno: np.ndarray
    crash: np.ndarray       # (m, 2): mapper's status (OK: none) and the bucket drawn from

    def take(self, idx: np.ndarray) -> "_State":
        """Copies of rows idx (repeats make independent copies)."""
        return _State(self.x[idx], [v[idx] for v in self.vec], [v[idx] for v in self.src],
                      self.out[idx], self.got[idx], self.tryno[idx], self.crash[idx])

    def put(self, idx: np.ndarray, other: "_State", oidx: np.ndarray) -> None:
        """Rows idx become other's rows oidx."""
        for mine, theirs in zip(self.vec + self.src, other.vec + other.src):
            mine[idx] = theirs[oidx]
        self.out[idx], self.got[idx] = other.out[oidx], other.got[oidx]
        self.tryno[idx], self.crash[idx] = other.tryno[oidx], other.crash[oidx]


# A row may run several descents (or collision tries) at once, as copies: one numpy pass
# over many copies costs less than many passes over a few rows (a row that can never fill
# a position runs msr_descents descents of msr_collision_tries tries). Copies made at once:
SPECULATE = 1 << 16
DEPTHS = (1, 4, 16, 64)     # copies per row in successive rounds, while any is left


def _depth(round_: int, rows: int, left: int) -> int:
    return max(1, min(DEPTHS[min(round_, len(DEPTHS) - 1)], left, SPECULATE // max(rows, 1)))


def _flat(cm: CompiledCrush, type_id: int) -> np.ndarray:
    """Bucket index -> does it hold items of type_id only (devices, for 0), and some: a
    descent from it toward that type ends on one of its own items."""
    key = ("msr-flat", type_id)
    got: Optional[np.ndarray] = cm.memo.get(key)
    if got is None:
        kids = cm.items
        width = np.arange(kids.shape[1])[None, :] < cm.size[:, None]
        kind = np.where(kids >= 0, 0, cm.type_id[np.clip(-1 - kids, 0, cm.max_buckets - 1)])
        if type_id:
            kind = np.where(kids >= 0, -1, kind)
        got = cm.memo[key] = (cm.size > 0) & ((kind == type_id) | ~width).all(axis=1)
        got.setflags(write=False)
    return got


class _Run:
    """One block of the rule over rows of a _State, filling the block's span."""

    def __init__(self, ctx: RunContext, rule: Rule, block: Block, result_max: int,
                 span: Span, tries: int) -> None:
        self.ctx, self.rule, self.block = ctx, rule, block
        self.result_max, self.span, self.tries = result_max, span, tries
        self.lo = span.lo       # column 0 of the workspace is output position lo
        self.firstn = rule.type == RULE_MSR_FIRSTN
        self.reach = [ctx.reach(t) for _, t in block.steps]
        self.hazard = [_hazard(ctx.cm, t) for _, t in block.steps]
        self.flat = [_flat(ctx.cm, t) for _, t in block.steps]

    def state(self, x: np.ndarray, out: np.ndarray, got: np.ndarray) -> _State:
        n, width = x.shape[0], self.span.hi - self.span.lo
        return _State(x, [np.full((n, width), CRUSH_ITEM_UNDEF, dtype=np.int64) for _ in self.block.steps],
                      [np.full((n, width), NOT_FROM, dtype=np.int64) for _ in self.block.steps],
                      out, got, np.zeros(n, dtype=np.int64), np.zeros((n, 2), dtype=np.int64))

    def strides(self, level: int, span: Span) -> Iterator[Stride]:
        """crush_msr_choose's strides of span at the block's step `level`."""
        count = self.block.steps[level][0]
        length = span.total // (count if count else self.result_max)
        for index, s0 in enumerate(range(span.lo, span.hi, length)):
            yield Stride(span, index, s0, min(s0 + length, span.hi), length)

    def descents(self, st: _State, limit: np.ndarray, descents: int) -> None:
        """crush_msr_do_rule's loop over descents for the block's span: a row runs
        descents while it has positions to fill and descents left. After the first, a
        row runs the next few as copies from its state: all up to the first that places
        a leaf (or meets a crash) did nothing (a descent that places nothing leaves every
        stride as it found it), so that copy's state is what Ceph reaches."""
        root = self.block.root
        round_ = 0
        while True:
            rows = np.flatnonzero((st.got < limit) & (st.tryno < descents))
            if round_ and rows.size:
                dead = self.stuck(st, rows)
                st.tryno[rows[dead]] = descents     # the descents left would change nothing
                rows = rows[~dead]
            if not rows.size:
                return
            depth = _depth(round_, 1, descents)
            round_ += 1
            for part in np.array_split(rows, max(1, rows.size * depth // SPECULATE)):
                if depth == 1:
                    self.choose(st, 0, part, np.full(part.size, root, dtype=np.int64), self.span)
                    self.raise_crash(st, part)
                    st.tryno[part] += 1
                    continue
                rep = np.repeat(part, depth)
                k = np.tile(np.arange(depth), part.size)
                live = st.tryno[rep] + k < descents
                sub = st.take(rep[live])
                sub.tryno += k[live]
                before = sub.got.copy()
                self.choose(sub, 0, np.arange(rep[live].size),
                            np.full(int(live.sum()), root, dtype=np.int64), self.span)
                stop = np.zeros((part.size, depth), dtype=bool)
                at = np.full((part.size, depth), -1, dtype=np.int64)
                stop.reshape(-1)[live] = (sub.got > before) | (sub.crash[:, 0] != OK)
                at.reshape(-1)[live] = np.arange(rep[live].size)
                has = stop.any(axis=1)
                first = np.argmax(stop, axis=1)
                pick = at[np.arange(part.size), first][has]
                self.raise_crash(sub, pick)
                st.tryno[part[~has]] += depth
                sub.tryno[pick] += 1
                st.put(part[has], sub, pick)

    def stuck(self, st: _State, rows: np.ndarray) -> np.ndarray:
        """Rows no descent can change any more: every stride left to fill is dead."""
        return self.dead(st, 0, rows, np.full(rows.size, self.block.root, dtype=np.int64), self.span)

    def dead(self, st: _State, level: int, rows: np.ndarray, bucket: np.ndarray,
             span: Span) -> np.ndarray:
        """Rows whose unfilled strides of span, drawn from their bucket, place nothing
        whatever the draw: each item the bucket holds (only buckets that hold items of the
        step's type directly are judged) is in another stride (a collision), or is an OSD
        out for this input (is_out depends on the input and the OSD alone), or is a bucket
        whose own unfilled strides are dead. Such a bucket, new to its stride, is pushed
        and popped again at the call's end: until then it collides for the strides after
        it, which only leaves them more dead. So a descent that finds a row dead changes
        nothing, nor does any after it: they need not run."""
        type_id = self.block.steps[level][1]
        b0 = self.lo
        out = self.flat[level][bucket].copy()
        cols = np.arange(span.lo, span.hi)
        for stride in self.strides(level, span):
            s0, s1 = stride.s0, stride.s1
            sel = np.flatnonzero(out & (st.vec[-1][rows, s0 - b0:s1 - b0] == CRUSH_ITEM_UNDEF).any(axis=1))
            if not sel.size:
                continue
            b = bucket[sel]
            width = int(self.ctx.cm.size[b].max())
            items = self.ctx.cm.items[b, :width]
            pad = np.arange(width)[None, :] >= self.ctx.cm.size[b][:, None]
            seg = st.vec[level][rows[sel], span.lo - b0:span.hi - b0]
            eq = items[:, :, None] == seg[:, None, :]
            mine = (cols >= s0) & (cols < s1)
            fine = pad | (eq & ~mine).any(axis=2)
            if type_id == 0:
                x = np.broadcast_to(st.x[rows[sel]][:, None], items.shape)
                fine |= self.ctx.is_out(items, x)
            else:
                i, j = np.nonzero(~fine)
                if i.size:
                    fine[i, j] = self.dead(st, level + 1, rows[sel][i], -1 - items[i, j], stride.inner())
            out[sel] &= fine.all(axis=1)
        return out

    def raise_crash(self, st: _State, rows: np.ndarray) -> None:
        bad = rows[st.crash[rows, 0] != OK]
        if not bad.size:
            return
        status, bucket = st.crash[bad[0]].tolist()
        what = "an empty bucket" if status == EMPTY else "a device where a bucket was due"
        raise AdvisorError.invalid(
            f"crush rule '{self.rule.name}' (type msr): a draw from bucket "
            f"'{self.ctx.cm.names[bucket]}' meets {what}; Ceph's mapper asserts or reads out "
            f"of bounds there, so pg_advisor does not map it")

    def choose(self, st: _State, level: int, rows: np.ndarray, bucket: np.ndarray,
               span: Span) -> np.ndarray:
        """crush_msr_choose for `rows` (each from its bucket index) over span: how many
        leaves each row placed."""
        type_id = self.block.steps[level][1]
        vec, src = st.vec[level], st.src[level]
        leaf = st.vec[-1]
        b0 = self.lo
        mapped = np.zeros(rows.size, dtype=np.int64)
        undo: List[Tuple[Stride, np.ndarray]] = []
        for stride in self.strides(level, span):
            s0, s1 = stride.s0, stride.s1
            act = np.flatnonzero((leaf[rows, s0 - b0:s1 - b0] == CRUSH_ITEM_UNDEF).any(axis=1)
                                 & (st.crash[rows, 0] == OK))
            act = act[~self.hopeless(st, level, rows[act], bucket[act], stride)]
            if not act.size:
                continue
            found, cand = self.draw(st, level, rows[act], bucket[act], stride)
            act, cand = act[found], cand[found]
            if not act.size:
                continue
            r = rows[act]
            if type_id == 0:
                keep = ~self.ctx.is_out(cand, st.x[r])     # an out OSD: a later descent
                act, cand, r = act[keep], cand[keep], r[keep]
                vec[r, s0 - b0] = cand
                src[r, s0 - b0] = bucket[act]
                self.emit(st, r, s0, cand)
                mapped[act] += 1
                continue
            child = self.choose(st, level + 1, r, -1 - cand, stride.inner())
            pushed = self.push(st, level, r, bucket[act], stride, cand)
            drop = pushed & (child == 0)         # new here and placed nothing
            undo.append((stride, r[drop]))
            mapped[act[~drop]] += child[~drop]
        for stride, r in undo:                  # only now: until here they still collide
            self.pop(st, level, r, stride)
        return mapped

    def hopeless(self, st: _State, level: int, rows: np.ndarray, bucket: np.ndarray,
                 stride: Stride) -> np.ndarray:
        """Rows whose every possible draw is held by another stride of the span: each
        collision try would collide, and the tries change nothing, so Ceph's outcome (no
        candidate) is known without them. The stride holds nothing yet, and as many
        distinct items drawn from this very bucket sit in the other strides as a descent
        from it can end on. Not where a draw could meet what Ceph crashes on."""
        b0, lo, hi = self.lo, stride.span.lo, stride.span.hi
        vec, src = st.vec[level][rows, lo - b0:hi - b0], st.src[level][rows, lo - b0:hi - b0]
        cols = np.arange(lo, hi)
        mine = (cols >= stride.s0) & (cols < stride.s1)
        empty = ~(vec[:, mine] != CRUSH_ITEM_UNDEF).any(axis=1)
        taken = ((src == bucket[:, None]) & ~mine[None, :]).sum(axis=1)
        return empty & (taken >= self.reach[level][bucket]) & ~self.hazard[level][bucket]

    def draw(self, st: _State, level: int, rows: np.ndarray, bucket: np.ndarray,
             stride: Stride) -> Tuple[np.ndarray, np.ndarray]:
        """crush_msr_descend with the collision retries (crush_msr_valid_candidate): (which
        rows found a candidate, the candidates there). Rows whose draw meets what Ceph
        crashes on get it noted in st.crash and no candidate. Later tries run as copies
        too: they change nothing, so the first that stops (no collision, or a crash) is
        Ceph's."""
        b0, lo, hi = self.lo, stride.span.lo, stride.span.hi
        type_id = self.block.steps[level][1]
        cand = np.zeros(rows.size, dtype=np.int64)
        found = np.zeros(rows.size, dtype=bool)
        pending = np.arange(rows.size)
        local, round_ = 0, 0
        while pending.size and local < self.tries:
            depth = _depth(round_, pending.size, self.tries - local)
            round_ += 1
            rep = np.repeat(pending, depth)
            p = rows[rep]
            base = (st.tryno[p] * self.result_max + stride.index) << 16
            r = (base + local + np.tile(np.arange(depth), pending.size)) & 0xFFFFFFFF
            item, _, status = self.ctx.descend(bucket[rep], st.x[p], r,
                                               np.full(p.size, stride.index, dtype=np.int64), type_id)
            seg = st.vec[level][p, lo - b0:hi - b0]
            same = seg == item[:, None]
            at = np.argmax(same, axis=1) + lo
            ok = ~same.any(axis=1) | ((at >= stride.s0) & (at < stride.s1))   # the first match decides
            stop = (ok | (status != OK)).reshape(pending.size, depth)
            has = stop.any(axis=1)
            first = np.argmax(stop, axis=1)
            flat = np.arange(pending.size) * depth + first
            done = pending[has]
            crashed = status[flat[has]] != OK
            st.crash[rows[done[crashed]], 0] = status[flat[has]][crashed]
            st.crash[rows[done[crashed]], 1] = bucket[done[crashed]]
            good = done[~crashed]
            cand[good] = item[flat[has]][~crashed]
            found[good] = True
            pending = pending[~has]
            local += depth
        return found, cand

    def push(self, st: _State, level: int, rows: np.ndarray, bucket: np.ndarray, stride: Stride,
             cand: np.ndarray) -> np.ndarray:
        """crush_msr_push_used: the stride's first slot that holds cand or nothing gets it;
        True where it was new."""
        b0, s0 = self.lo, stride.s0
        seg = st.vec[level][rows, s0 - b0:stride.s1 - b0]
        hit = (seg == cand[:, None]) | (seg == CRUSH_ITEM_UNDEF)
        if not hit.any(axis=1).all():       # Ceph: BUG_ON("impossible")
            raise AdvisorError.invalid(f"crush rule '{self.rule.name}' (type msr): a stride "
                                       f"overflows its slots; Ceph's mapper asserts on it")
        at = np.argmax(hit, axis=1)
        new = seg[np.arange(rows.size), at] != cand
        st.vec[level][rows[new], s0 - b0 + at[new]] = cand[new]
        st.src[level][rows[new], s0 - b0 + at[new]] = bucket[new]
        return new

    def pop(self, st: _State, level: int, rows: np.ndarray, stride: Stride) -> None:
        """crush_msr_pop_used: the stride's last filled slot is emptied again."""
        if not rows.size:
            return
        b0, s0 = self.lo, stride.s0
        seg = st.vec[level][rows, s0 - b0:stride.s1 - b0]
        last = seg.shape[1] - 1 - np.argmax((seg != CRUSH_ITEM_UNDEF)[:, ::-1], axis=1)
        st.vec[level][rows, s0 - b0 + last] = CRUSH_ITEM_UNDEF
        st.src[level][rows, s0 - b0 + last] = NOT_FROM

    def emit(self, st: _State, rows: np.ndarray, position: int, item: np.ndarray) -> None:
        """crush_msr_emit_result: firstn in emission order, indep at the position."""
        if self.firstn:
            st.out[rows, st.got[rows]] = item
        else:
            st.out[rows, position] = item
        st.got[rows] += 1


def do_msr_rule(ctx: RunContext, rule: Rule, x: np.ndarray,
                result_max: int) -> Tuple[np.ndarray, np.ndarray]:
    """crush_msr_do_rule for every input x (uint32 values in int64): (result (n,
    result_max), result length: msr_firstn what was placed, msr_indep result_max)."""
    prog = program(ctx.cm, rule)
    n = x.shape[0]
    out = np.full((n, result_max), CRUSH_ITEM_NONE, dtype=np.int64)
    got = np.zeros(n, dtype=np.int64)       # Ceph's returned_so_far
    start = 0
    for block in prog.blocks:
        total = int(np.prod([c if c else result_max for c, _ in block.steps], dtype=np.int64))
        end = min(start + total, result_max)
        if end > start:
            run = _Run(ctx, rule, block, result_max, Span(start, end, total), prog.collision_tries)
            st = run.state(x, out, got)
            run.descents(st, got + (end - start), prog.descents)
            out, got = st.out, st.got
        start = end
    rlen = got if rule.type == RULE_MSR_FIRSTN else np.full(n, result_max, dtype=np.int64)
    return out, rlen
