"""What one crush_do_rule run reads and draws, for many rows at once: each row's bucket
choice by its algorithm, the reweight coin flip, the descent from a bucket to an item of
the wanted type, and what the tree lets a choose reach (mapper.py and msr.py loop over
these; they never loop over PGs).
"""
from dataclasses import dataclass, field
from typing import Any, Optional, Tuple

import numpy as np

from ..model.constants import WEIGHT_ONE
from . import buckets, straw2
from .compiled import ChooseArgs, CompiledCrush
from .hashing import hash32_2

OK, EMPTY, BAD = 0, 1, 2
MEMO_MAX = 64     # entries of a compiled map's memo before weighed reaches are dropped


@dataclass
class CrushWork:
    """What CRUSH runs cost so far: a caller that bounds its work (the balancer) counts it."""
    draws: int = 0       # (input, bucket item) pairs hashed
    replicas: int = 0    # inputs times the replicas asked of each


@dataclass(frozen=True)
class RunContext:
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
                col = buckets.choose(cm.tables, alg, bb, s, x[sel], r[sel])
                out[sel] = cm.items[bb, col]
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

    def perm_choose(self, b: np.ndarray, x: np.ndarray, r: np.ndarray) -> np.ndarray:
        """bucket_perm_choose on each row's bucket b (an index), whatever its algorithm: the
        item at position r % size of the bucket's permutation for x (mapper.c's fallback
        draw under choose_local_fallback_tries; a uniform bucket's own draw)."""
        cm = self.cm
        out = np.empty(b.shape[0], dtype=np.int64)
        sizes = cm.size[b]
        for s in np.unique(sizes).tolist():
            sel = np.flatnonzero(sizes == s)
            self.work.draws += sel.size * s
            out[sel] = cm.items[b[sel], buckets.perm_column(-1 - b[sel], s, x[sel], r[sel])]
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

    def reach(self, type_id: int, accepted: bool = False) -> np.ndarray:
        """Bucket index -> how many items of type_id a descent from it can end on (at most:
        an item held twice counts twice). Once a choose has placed that many distinct
        items, every later try collides and changes nothing: the caller may stop.

        `accepted` (a choose of devices, or a chooseleaf): count only the items a try can
        keep, devices of weight above 0 and buckets holding such a device below them; a
        device of weight 0 is rejected at every try, as is a bucket whose leaf choice can
        only find those. A row missing OSDs (too many out) then stops where it would
        retry all its tries for nothing. (Not for a chooseleaf indep of devices: each
        rejected device is left as its leaf, the last one tried where none is kept, so
        its tries matter to the end.)"""
        cm = self.cm
        key: Tuple[Any, ...] = ("reach", type_id)
        if accepted:
            wmax = self.dev_weight.shape[0]
            dead = np.flatnonzero(self.dev_weight[:cm.max_devices] == 0)
            key = ("reach", type_id, wmax, dead.tobytes())
        known: Optional[np.ndarray] = cm.memo.get(key)
        if known is None:
            if accepted and len(cm.memo) > MEMO_MAX:     # one per weight set tried
                for k in [k for k in cm.memo if isinstance(k, tuple) and len(k) == 4 and k[0] == "reach"]:
                    del cm.memo[k]
            alive = None
            if accepted:
                ids = np.arange(cm.max_devices)
                alive = ids < self.dev_weight.shape[0]
                alive[alive] = self.dev_weight[ids[alive]] > 0
            known = cm.memo[key] = self._reach(type_id, alive)
            known.setflags(write=False)
        return known

    def _reach(self, type_id: int, alive: Optional[np.ndarray]) -> np.ndarray:
        """reach's counts; `alive` (per device id) the devices a try may keep (None: all)."""
        cm = self.cm
        nb = cm.max_buckets
        got = np.full(nb, -1, dtype=np.int64)
        live = np.zeros(nb, dtype=bool)      # a kept device somewhere below

        def kept(c: int) -> bool:
            if alive is None:
                return True
            return bool(live[-1 - c]) if c < 0 else 0 <= c < alive.shape[0] and bool(alive[c])
        for root in range(nb):
            stack = [root]
            while stack:            # iterative: a chain of thousands of buckets is legal
                b = stack[-1]
                if got[b] >= 0:
                    stack.pop()
                    continue
                kids = cm.items[b, :cm.size[b]].tolist()
                inner = [-1 - c for c in kids if c < 0 and got[-1 - c] < 0]
                if inner:
                    stack.extend(inner)
                    continue
                live[b] = any(kept(c) for c in kids)
                got[b] = sum((1 if kept(c) else 0) if (c >= 0 and type_id == 0) or
                             (c < 0 and cm.type_id[-1 - c] == type_id)
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
