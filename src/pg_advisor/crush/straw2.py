"""straw2 bucket choice: every item draws ln(hash)/weight, the highest draw wins.

Mirrors bucket_straw2_choose and crush_ln in Ceph's mapper.c in fixed point, so the
winners are bit-for-bit Ceph's. Vectorized: rows are independent choices, columns
are the items of each row's bucket (padded with weight 0, which never wins).
"""
from typing import Callable, Tuple

import numpy as np

from .hashing import hash32_3
from .ln_table import LL, RH_LH

S64_MIN = np.iinfo(np.int64).min
LN_ONE = np.int64(0x1000000000000)  # 2^48: crush_ln(0xffff) is just below it


def crush_ln(u: np.ndarray) -> np.ndarray:
    """2^44 * log2(u + 1) in Ceph's fixed point, for u in [0, 0xffff]."""
    x = u.astype(np.int64) + 1
    # shift x up so that bit 15 (or 16) is set; iexpon is floor(log2(x)) before the shift
    floor_log2 = np.frexp(x.astype(np.float64))[1].astype(np.int64) - 1
    bits = np.where((x & 0x18000) == 0, 15 - floor_log2, 0)
    x = x << bits
    iexpon = (15 - bits).astype(np.uint64)
    index1 = (x >> 8) << 1
    rh = RH_LH[index1 - 256]
    lh = RH_LH[index1 + 1 - 256]
    xl64 = (x.astype(np.uint64) * rh) >> np.uint64(48)   # wraps mod 2^64, as in C
    ll = LL[(xl64 & np.uint64(0xFF)).astype(np.int64)]
    return (iexpon << np.uint64(44)) + ((lh + ll) >> np.uint64(4))


# crush_ln has only 2^16 inputs: tabulate it once, then a draw is one gather
LN_MINUS_ONE = crush_ln(np.arange(0x10000, dtype=np.uint32)).astype(np.int64) - LN_ONE
LN_MINUS_ONE.setflags(write=False)


# (row, item) draws computed at a time: a block's arrays stay in the CPU's cache through
# the hash's ~180 passes (twice as fast as streaming a whole map's from memory)
BLOCK = 1 << 17


def choose(ids: np.ndarray, weights: np.ndarray, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Index of the winning column per row.

    ids, weights: (n, m) item ids hashed and 16.16 weights; x, r: (n,) input and replica.
    """
    return choose_by(ids.shape[0], ids.shape[1], lambda sl: (ids[sl], weights[sl]), x, r)


def choose_by(n: int, m: int, rows: Callable[[slice], Tuple[np.ndarray, np.ndarray]],
              x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """choose() with each block's (ids, weights) gathered by `rows(slice)` when it is drawn,
    so the gather too stays in the cache."""
    step = max(1, BLOCK // max(m, 1))
    if n <= step:
        return _choose(*rows(slice(0, n)), x, r)
    out = np.empty(n, dtype=np.int64)
    for i in range(0, n, step):
        sl = slice(i, i + step)
        out[sl] = _choose(*rows(sl), x[sl], r[sl])
    return out


def _choose(ids: np.ndarray, weights: np.ndarray, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    u = hash32_3(x[:, None], ids, r[:, None]) & np.uint32(0xFFFF)
    ln = LN_MINUS_ONE[u]          # <= 0
    w = weights.astype(np.int64)
    live = w > 0
    # div64_s64 truncates toward zero; ln is never positive
    draw = np.where(live, -((-ln) // np.where(live, w, 1)), S64_MIN)
    return np.argmax(draw, axis=1)   # first maximum, like the C loop's strict '>'
