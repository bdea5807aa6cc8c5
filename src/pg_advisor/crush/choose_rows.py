"""What a crush_choose_firstn call works on, for the two ways it is run (mapper.py's
tries drawn ahead, firstn_local.py's local retries): its arguments common to all rows
(Choose), those per row (FirstnRows), and a chooseleaf's device under each item tried
(place_leaves), which both share.
"""
from typing import Callable, NamedTuple, Optional

import numpy as np

from .descent import RunContext


class Choose(NamedTuple):
    """What a crush_choose_firstn or crush_choose_indep call takes once for all its rows."""
    type_id: int              # the type of the items chosen (0: devices)
    tries: int
    recurse_tries: int        # a chooseleaf's tries for the device below each item
    recurse_to_leaf: bool     # a chooseleaf: that device into out2
    vary_r: int = 0           # firstn's chooseleaf tunables
    stable: int = 0
    numrep: int = 0           # indep's: r's stride from one pass to the next
    local_tries: int = 0      # firstn's retries in the bucket of a collision (pre-firefly)
    local_fallback: int = 0   # ... and of any failure, by permutation past half its size

    def leaf(self) -> "Choose":
        """The choose of a device below each item of a chooseleaf (mapper.c's recursion)."""
        return self._replace(type_id=0, tries=self.recurse_tries, recurse_tries=0, recurse_to_leaf=False)


class FirstnRows(NamedTuple):
    """crush_choose_firstn's arguments that differ by row (one row per input)."""
    bucket: np.ndarray        # the bucket chosen from (an index, -1-id)
    x: np.ndarray
    out: np.ndarray           # the items chosen, filled in place from outpos on
    out2: Optional[np.ndarray]    # a chooseleaf's devices, alike
    outpos: np.ndarray
    room: np.ndarray          # how many items out may still take (mapper.c's count)
    rep_start: np.ndarray     # the replicas tried: [rep_start, rep_end)
    rep_end: np.ndarray
    parent_r: np.ndarray      # the r of the chooseleaf above (0 at the top)


Chooser = Callable[[RunContext, FirstnRows, Choose], np.ndarray]   # crush_choose_firstn: outpos


class LeafTries(NamedTuple):
    """Tries of a chooseleaf firstn, one per element: the item each drew, its row's input,
    the r it drew with, the position it fills and its row's room left (mapper.c's count)."""
    item: np.ndarray
    x: np.ndarray
    r: np.ndarray
    pos: np.ndarray
    room: np.ndarray


def place_leaves(ctx: RunContext, spec: Choose, leaves: np.ndarray, keep: np.ndarray,
                 t: LeafTries, choose: Chooser) -> np.ndarray:
    """The device below each kept try's item at its position in `leaves` (its row's copy
    of out2): mapper.c's recursion into a bucket (r >> (vary_r - 1), one rep or, with
    stable, from 0, by `choose`: the caller's crush_choose_firstn), or the item itself where
    it is a device. Which tries found none."""
    failed = np.zeros(t.item.size, dtype=bool)
    sub = np.flatnonzero(keep & (t.item < 0))
    if sub.size:
        sub_r = (t.r[sub] >> (spec.vary_r - 1)) if spec.vary_r else np.zeros(sub.size, np.int64)
        leaf = leaves[sub]
        p = t.pos[sub]
        got = choose(ctx, FirstnRows(
            -1 - t.item[sub], t.x[sub], leaf, None, p, t.room[sub], np.zeros_like(p) if spec.stable else p,
            np.ones_like(p) if spec.stable else p + 1, sub_r), spec.leaf())
        leaves[sub] = leaf
        failed[sub] = got <= p
    dev = np.flatnonzero(keep & (t.item >= 0))
    leaves[dev, t.pos[dev]] = t.item[dev]
    return failed
