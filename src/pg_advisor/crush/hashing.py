"""Robert Jenkins' 32-bit mix as CRUSH uses it (rjenkins1), on whole numpy arrays.

All arithmetic is uint32 and wraps as C's does. Arguments broadcast against each
other, so one call hashes every (PG, bucket item) pair at once.
"""
from typing import Tuple

import numpy as np
from numpy.typing import ArrayLike

U32 = np.uint32
SEED = U32(1315423911)
X0 = U32(231232)
Y0 = U32(1232)
_S = {k: U32(k) for k in (3, 5, 8, 10, 12, 13, 15, 16)}


def _mix(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One crush_hashmix round, in place on three same-shaped uint32 arrays."""
    for (x, y, z, shift, left) in (("a", "b", "c", 13, False), ("b", "c", "a", 8, True),
                                   ("c", "a", "b", 13, False), ("a", "b", "c", 12, False),
                                   ("b", "c", "a", 16, True), ("c", "a", "b", 5, False),
                                   ("a", "b", "c", 3, False), ("b", "c", "a", 10, True),
                                   ("c", "a", "b", 15, False)):
        v = {"a": a, "b": b, "c": c}
        p, q, s = v[x], v[y], v[z]
        # p = p - q - s; p ^= (s >> k)  or  p ^= (s << k)
        np.subtract(p, q, out=p)
        np.subtract(p, s, out=p)
        np.bitwise_xor(p, (s << _S[shift]) if left else (s >> _S[shift]), out=p)
    return a, b, c


def _full(shape: Tuple[int, ...], v: ArrayLike) -> np.ndarray:
    return np.array(np.broadcast_to(np.asarray(v, dtype=U32), shape), dtype=U32)


def hash32_2(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """crush_hash32_rjenkins1_2(a, b)."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    a, b = _full(shape, a), _full(shape, b)
    h = SEED ^ a ^ b
    x, y = _full(shape, X0), _full(shape, Y0)
    _mix(a, b, h)
    _mix(x, a, h)
    _mix(b, y, h)
    return h


def hash32_3(a: ArrayLike, b: ArrayLike, c: ArrayLike) -> np.ndarray:
    """crush_hash32_rjenkins1_3(a, b, c)."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(c))
    a, b, c = _full(shape, a), _full(shape, b), _full(shape, c)
    h = SEED ^ a ^ b ^ c
    x, y = _full(shape, X0), _full(shape, Y0)
    _mix(a, b, h)
    _mix(c, x, h)
    _mix(y, a, h)
    _mix(b, x, h)
    _mix(y, c, h)
    return h
