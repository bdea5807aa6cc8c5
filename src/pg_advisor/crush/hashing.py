"""Robert Jenkins' 32-bit mix as CRUSH uses it (rjenkins1), on whole numpy arrays.

All arithmetic is uint32 and wraps as C's does. Arguments broadcast against each
other, so one call hashes every (PG, bucket item) pair at once.

A hash is some 40 array operations, each with a fixed cost whatever the array's size:
CRUSH's retries end on a handful of rows, where that fixed cost is all there is. Up to
SCALAR_MAX values are hashed one at a time with Python's ints instead (the same
arithmetic, masked to 32 bits; test_crush.py checks both against libceph-common).
"""
import math
from typing import List, Tuple

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


def _hash2(a: int, b: int) -> int:
    h = SEED ^ a ^ b
    x, y = X0, Y0
    a, b, h = _mix1(a, b, h)
    x, a, h = _mix1(x, a, h)
    b, y, h = _mix1(b, y, h)
    return h


def _hash3(a: int, b: int, c: int) -> int:
    h = SEED ^ a ^ b ^ c
    x, y = X0, Y0
    a, b, h = _mix1(a, b, h)
    c, x, h = _mix1(c, x, h)
    y, a, h = _mix1(y, a, h)
    b, x, h = _mix1(b, x, h)
    y, c, h = _mix1(y, c, h)
    return h


def _hash4(a: int, b: int, c: int, d: int) -> int:
    h = SEED ^ a ^ b ^ c ^ d
    x, y = X0, Y0
    a, b, h = _mix1(a, b, h)
    c, d, h = _mix1(c, d, h)
    a, x, h = _mix1(a, x, h)
    y, b, h = _mix1(y, b, h)
    c, x, h = _mix1(c, x, h)
    y, d, h = _mix1(y, d, h)
    return h


def _u32(shape: Tuple[int, ...], v: ArrayLike) -> np.ndarray:
    """v broadcast to shape as a fresh uint32 array (negative ids wrap, as C's cast)."""
    out = np.empty(shape, dtype=U32)
    out[...] = np.asarray(v).astype(U32, copy=False)
    return out


def _lists(shape: Tuple[int, ...], *vs: ArrayLike) -> List[List[int]]:
    return [_u32(shape, v).ravel().tolist() for v in vs]


def hash32_2(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """crush_hash32_rjenkins1_2(a, b)."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    if math.prod(shape) <= SCALAR_MAX:
        la, lb = _lists(shape, a, b)
        return np.array([_hash2(p, q) for p, q in zip(la, lb)], dtype=U32).reshape(shape)
    a, b = _u32(shape, a), _u32(shape, b)
    h = a ^ b
    h ^= U32(SEED)
    x, y = _u32(shape, X0), _u32(shape, Y0)
    _mix(a, b, h)
    _mix(x, a, h)
    _mix(b, y, h)
    return h


def hash32_3(a: ArrayLike, b: ArrayLike, c: ArrayLike) -> np.ndarray:
    """crush_hash32_rjenkins1_3(a, b, c)."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(c))
    if math.prod(shape) <= SCALAR_MAX:
        la, lb, lc = _lists(shape, a, b, c)
        return np.array([_hash3(p, q, s) for p, q, s in zip(la, lb, lc)], dtype=U32).reshape(shape)
    a, b, c = _u32(shape, a), _u32(shape, b), _u32(shape, c)
    h = a ^ b
    h ^= c
    h ^= U32(SEED)
    x, y = _u32(shape, X0), _u32(shape, Y0)
    _mix(a, b, h)
    _mix(c, x, h)
    _mix(y, a, h)
    _mix(b, x, h)
    _mix(y, c, h)
    return h


def hash32_4(a: ArrayLike, b: ArrayLike, c: ArrayLike, d: ArrayLike) -> np.ndarray:
    """crush_hash32_rjenkins1_4(a, b, c, d) (list and tree buckets)."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(c), np.shape(d))
    if math.prod(shape) <= SCALAR_MAX:
        vals = _lists(shape, a, b, c, d)
        return np.array([_hash4(*v) for v in zip(*vals)], dtype=U32).reshape(shape)
    a, b, c, d = _u32(shape, a), _u32(shape, b), _u32(shape, c), _u32(shape, d)
    h = a ^ b
    h ^= c
    h ^= d
    h ^= U32(SEED)
    x, y = _u32(shape, X0), _u32(shape, Y0)
    _mix(a, b, h)
    _mix(c, d, h)
    _mix(a, x, h)
    _mix(y, b, h)
    _mix(c, x, h)
    _mix(y, d, h)
    return h
