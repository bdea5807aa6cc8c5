"""Robert Jenkins' 32-bit mix as CRUSH uses it (rjenkins1), on whole numpy arrays.

All arithmetic is uint32 and wraps as C's does. Arguments broadcast against each
other, so one call hashes every (PG, bucket item) pair at once.

A hash is some 40 array operations, each with a fixed cost whatever the array's size:
CRUSH's retries end on a handful of rows, where that fixed cost is all there is. Up to
SCALAR_MAX values are hashed one at a time with Python's ints instead (the same
arithmetic, masked to 32 bits; test_crush.py checks both against libceph-common).
"""
import math
from typing import List, Sequence, Tuple

import numpy as np
from numpy.typing import ArrayLike

U32 = np.uint32
M32 = 0xFFFFFFFF
SEED = 1315423911
X0 = 231232
Y0 = 1232
# at most this many values are hashed one by one: one value's scalar hash costs 14 us, an
# array call's fixed cost is some 360 us (timeit, 2-core machine of this project)
SCALAR_MAX = 16
_S = {k: U32(k) for k in (3, 5, 8, 10, 12, 13, 15, 16)}
S3, S5, S8, S10, S12, S13, S15, S16 = (_S[k] for k in (3, 5, 8, 10, 12, 13, 15, 16))


def _mix(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """One crush_hashmix round, in place on three same-shaped uint32 arrays."""
    a -= b; a -= c; a ^= c >> S13         # noqa: E702 (the C macro's lines, one per row)
    b -= c; b -= a; b ^= a << S8          # noqa: E702
    c -= a; c -= b; c ^= b >> S13         # noqa: E702
    a -= b; a -= c; a ^= c >> S12         # noqa: E702
    b -= c; b -= a; b ^= a << S16         # noqa: E702
    c -= a; c -= b; c ^= b >> S5          # noqa: E702
    a -= b; a -= c; a ^= c >> S3          # noqa: E702
    b -= c; b -= a; b ^= a << S10         # noqa: E702
    c -= a; c -= b; c ^= b >> S15         # noqa: E702


def _mix1(a: int, b: int, c: int) -> Tuple[int, int, int]:
    """_mix on one value each, as Python ints kept to 32 bits."""
    a = (a - b - c) & M32; a ^= c >> 13               # noqa: E702
    b = (b - c - a) & M32; b ^= (a << 8) & M32        # noqa: E702
    c = (c - a - b) & M32; c ^= b >> 13               # noqa: E702
    a = (a - b - c) & M32; a ^= c >> 12               # noqa: E702
    b = (b - c - a) & M32; b ^= (a << 16) & M32       # noqa: E702
    c = (c - a - b) & M32; c ^= b >> 5                # noqa: E702
    a = (a - b - c) & M32; a ^= c >> 3                # noqa: E702
    b = (b - c - a) & M32; b ^= (a << 10) & M32       # noqa: E702
    c = (c - a - b) & M32; c ^= b >> 15               # noqa: E702
    return a, b, c


# the mix rounds of crush_hash32_rjenkins1_N: (p, q) of each _mix(p, q, h), over the
# registers (the N inputs, then x, then y)
_ROUNDS2 = ((0, 1), (2, 0), (1, 3))
_ROUNDS3 = ((0, 1), (2, 3), (4, 0), (1, 3), (4, 2))
_ROUNDS4 = ((0, 1), (2, 3), (0, 4), (5, 1), (2, 4), (5, 3))


def _hash1(rounds: Tuple[Tuple[int, int], ...], vals: Sequence[int]) -> int:
    """One value's hash, with Python ints."""
    h = SEED
    for v in vals:
        h ^= v
    regs = [*vals, X0, Y0]
    for p, q in rounds:
        regs[p], regs[q], h = _mix1(regs[p], regs[q], h)
    return h


def _u32(shape: Tuple[int, ...], v: ArrayLike) -> np.ndarray:
    """v broadcast to shape as a fresh uint32 array (negative ids wrap, as C's cast)."""
    out = np.empty(shape, dtype=U32)
    out[...] = np.asarray(v).astype(U32, copy=False)
    return out


def _lists(shape: Tuple[int, ...], *vs: ArrayLike) -> List[List[int]]:
    return [_u32(shape, v).ravel().tolist() for v in vs]


def _hash(rounds: Tuple[Tuple[int, int], ...], vals: Sequence[ArrayLike]) -> np.ndarray:
    """The hash of the broadcast inputs: one value at a time up to SCALAR_MAX, else as arrays."""
    shape = np.broadcast_shapes(*(np.shape(v) for v in vals))
    if math.prod(shape) <= SCALAR_MAX:
        rows = zip(*_lists(shape, *vals))
        return np.array([_hash1(rounds, row) for row in rows], dtype=U32).reshape(shape)
    regs = [_u32(shape, v) for v in vals]
    h = regs[0] ^ regs[1]
    for r in regs[2:]:
        h ^= r
    h ^= U32(SEED)
    regs += [_u32(shape, X0), _u32(shape, Y0)]
    for p, q in rounds:
        _mix(regs[p], regs[q], h)
    return h


def hash32_2(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """crush_hash32_rjenkins1_2(a, b)."""
    return _hash(_ROUNDS2, (a, b))


def hash32_3(a: ArrayLike, b: ArrayLike, c: ArrayLike) -> np.ndarray:
    """crush_hash32_rjenkins1_3(a, b, c)."""
    return _hash(_ROUNDS3, (a, b, c))


def hash32_4(a: ArrayLike, b: ArrayLike, c: ArrayLike, d: ArrayLike) -> np.ndarray:
    """crush_hash32_rjenkins1_4(a, b, c, d) (list and tree buckets)."""
    return _hash(_ROUNDS4, (a, b, c, d))
