"""The older bucket algorithms: uniform, list, tree and straw (v1), as mapper.c chooses.

Each function takes a group of rows whose buckets share one algorithm and one size `s`
(mapper's bucket_choose groups them so) and returns, per row, the column of the bucket's
item that is chosen. Rows are independent draws; loops run over items or tree levels.

* uniform (bucket_perm_choose): the item at position r % s of a permutation of the
  bucket that hash(x, bucket id, p) shuffles, one swap per position p. Ceph keeps a
  partial permutation per bucket between calls (crush_work), but builds it for one x
  only and always from position 0 on, so the item is a function of (x, r): built here
  afresh per row, as far as that row's position.
* list (bucket_list_choose): from the last item to the first, an item wins when
  hash(x, item, r, bucket id) scaled to the weight of it and all before it falls under
  its own weight; no winner takes the first item.
* tree (bucket_tree_choose): from the root of a binary tree down, left or right by a
  draw over the node's weight. A node's weight is the sum of the items' under it, as
  crush_make_tree_bucket builds it (and crush_adjust_tree_bucket_item_weight keeps it).
* straw (bucket_straw_choose): the highest of hash(x, item, r) & 0xffff times the item's
  straw; straw lengths come from the weights as crush_calc_straw computes them.

Only straw2 takes choose_args weight sets: these algorithms ignore them, as Ceph does.
"""
import math
from typing import Callable, List, NamedTuple, Sequence

import numpy as np

from ..model.constants import CRUSH_BUCKET_ALGS
from ..model.mappable import tree_depth
from .hashing import hash32_3, hash32_4
from .straw2 import BLOCK

M32 = 0xFFFFFFFF
# Ceph's CRUSH_BUCKET_* values
ALG_IDS = CRUSH_BUCKET_ALGS
UNIFORM, LIST, TREE, STRAW, STRAW2 = (ALG_IDS[a] for a in ("uniform", "list", "tree", "straw", "straw2"))
# the algorithms whose draw needs the per-bucket numbers `aux` holds (compiled.py)
NEEDS_AUX = (LIST, TREE, STRAW)


def straws(weights: Sequence[int], version: int) -> List[int]:
    """crush_calc_straw: each item's straw (16.16) from the 16.16 weights, for the map's
    straw_calc_version (0 counts ties and zero weights as Ceph's first version did)."""
    size = len(weights)
    order = sorted(range(size), key=lambda i: weights[i])   # stable, as its insertion sort
    out = [0] * size
    numleft, straw, wbelow, lastw = size, 1.0, 0.0, 0.0
    i = 0
    while i < size:
        if weights[order[i]] == 0:
            out[order[i]] = 0                # zero weights get no straw
            i += 1
            if version >= 1:
                numleft -= 1
            continue
        out[order[i]] = int(straw * 0x10000) & M32     # (C: a double stored to a __u32)
        i += 1
        if i == size:
            break
        cur, prev = weights[order[i]], weights[order[i - 1]]
        if version == 0:
            if cur == prev:
                continue
            wbelow += (float(prev) - lastw) * numleft
            j = i
            while j < size and weights[order[j]] == cur:
                numleft -= 1
                j += 1
        else:
            wbelow += (float(prev) - lastw) * numleft
            numleft -= 1
        wnext = float((numleft * (cur - prev)) & M32)    # unsigned 32-bit in C
        pbelow = wbelow / (wbelow + wnext)
        straw *= math.pow(1.0 / pbelow, 1.0 / numleft)
        lastw = float(prev)
    return out


def tree_nodes(weights: Sequence[int]) -> List[int]:
    """A tree bucket's node weights as crush_make_bucket builds them (1 << depth nodes,
    item i at the odd node 2i + 1, each inner node the sum of the leaves below it, node 0
    unused), unsigned 32-bit as Ceph keeps them."""
    size = len(weights)
    depth = tree_depth(size)
    nodes = np.zeros(1 << depth, dtype=np.int64)
    nodes[1:2 * size:2] = np.asarray(weights, dtype=np.int64)
    for h in range(1, depth):                  # each height from its children below
        inner = np.arange(1 << h, 1 << depth, 1 << (h + 1))
        nodes[inner] = nodes[inner - (1 << (h - 1))] + nodes[inner + (1 << (h - 1))]
    return (nodes & M32).tolist()


def aux_row(alg: int, weights: Sequence[int], straw_calc_version: int) -> List[int]:
    """What a bucket's draw needs beside its items and weights: the straws (straw), the
    node weights (tree: tree_nodes), or the running sums of the weights from 0 (list: its
    sum_weights)."""
    if alg == STRAW:
        return straws(weights, straw_calc_version)
    if alg == TREE:
        return tree_nodes(weights) if len(weights) else []
    return np.concatenate([[0], np.cumsum(np.asarray(weights, dtype=np.int64))]).tolist()


def _blocks(n: int, s: int, fn: Callable[[slice], np.ndarray]) -> np.ndarray:
    """fn over row blocks of about BLOCK (row, item) pairs (see straw2.BLOCK)."""
    step = max(1, BLOCK // max(s, 1))
    if n <= step:
        return fn(slice(0, n))
    out = np.empty(n, dtype=np.int64)
    for i in range(0, n, step):
        sl = slice(i, i + step)
        out[sl] = fn(sl)
    return out


class Tables(NamedTuple):
    """What a draw reads of the compiled map (compiled.CompiledCrush.tables): per bucket,
    its children, their weights and the aux row (aux_row)."""
    items: np.ndarray
    weights: np.ndarray
    aux: np.ndarray


def choose(tables: Tables, alg: int, bucket: np.ndarray, s: int, x: np.ndarray,
           r: np.ndarray) -> np.ndarray:
    """The chosen column per row: bucket is each row's bucket index (-1 - id), all of
    algorithm `alg` and size `s`."""
    items, weights, aux = tables
    bid = -1 - bucket
    if alg == UNIFORM:
        return _blocks(bucket.size, s, lambda sl: _uniform(bid[sl], s, x[sl], r[sl]))
    if alg == LIST:
        return _blocks(bucket.size, s, lambda sl: _list(
            items[bucket[sl], :s], weights[bucket[sl], :s], aux[bucket[sl], 1:s + 1], bid[sl], x[sl], r[sl]))
    if alg == TREE:
        return _blocks(bucket.size, s, lambda sl: _tree(aux[bucket[sl], :1 << tree_depth(s)], bid[sl], s,
                                                        x[sl], r[sl]))
    if alg == STRAW:
        return _blocks(bucket.size, s, lambda sl: _straw(items[bucket[sl], :s], aux[bucket[sl], :s],
                                                         x[sl], r[sl]))
    raise ValueError(f"bucket algorithm {alg} has no draw here")


def perm_column(bid: np.ndarray, s: int, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """bucket_perm_choose's column for buckets `bid` (ids) of size s: a uniform bucket's
    draw, and any bucket's fallback draw under choose_local_fallback_tries."""
    return _blocks(bid.size, s, lambda sl: _uniform(bid[sl], s, x[sl], r[sl]))


def _uniform(bid: np.ndarray, s: int, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    n = bid.size
    pr = (r & M32) % s               # (C: an int taken modulo an unsigned size)
    perm = np.tile(np.arange(s, dtype=np.int64), (n, 1))
    top = int(pr.max()) if n else 0
    for p in range(min(top, s - 2) + 1):     # the last position has nothing to swap with
        rows = np.flatnonzero(pr >= p)
        j = p + hash32_3(x[rows], bid[rows], p).astype(np.int64) % (s - p)
        here = perm[rows, p].copy()
        perm[rows, p] = perm[rows, j]
        perm[rows, j] = here
    return perm[np.arange(n), pr]


def _list(items: np.ndarray, weights: np.ndarray, sums: np.ndarray, bid: np.ndarray,
          x: np.ndarray, r: np.ndarray) -> np.ndarray:
    u = (hash32_4(x[:, None], items, r[:, None], bid[:, None]) & np.uint32(0xFFFF)).astype(np.int64)
    wins = ((u * sums) >> 16) < weights
    s = items.shape[1]
    last = s - 1 - np.argmax(wins[:, ::-1], axis=1)       # the first from the end
    return np.where(wins.any(axis=1), last, 0)


def _tree(nodes: np.ndarray, bid: np.ndarray, s: int, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """bucket_tree_choose: from the root down, left where the hash falls within the left
    child's weight; `nodes` each row's node weights (tree_nodes, or as the binary map
    stored them)."""
    depth = tree_depth(s)
    node = np.full(bid.size, 1 << (depth - 1), dtype=np.int64)      # the root
    rows = np.arange(bid.size)
    for h in range(depth - 1, 0, -1):
        w = nodes[rows, node].astype(np.uint64)
        t = (hash32_4(x, node, r, bid).astype(np.uint64) * w) >> np.uint64(32)
        half = 1 << (h - 1)
        left = node - half
        node = np.where(t < nodes[rows, left].astype(np.uint64), left, node + half)
    # (a subtree of weight 0 leads right, past the last item: Ceph reads beyond its
    # items there; such a bucket is never drawn while a sibling has weight, and a stored
    # tree whose weights lead there otherwise is set aside: model/mappable.py)
    return np.minimum(node >> 1, s - 1)


def _straw(items: np.ndarray, lengths: np.ndarray, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    u = (hash32_3(x[:, None], items, r[:, None]) & np.uint32(0xFFFF)).astype(np.int64)
    return np.argmax(u * lengths, axis=1)        # the first highest, as the C loop's '>'
