"""What only the binary CRUSH map holds (`ceph osd getcrushmap -o FILE`): each bucket's
internals as Ceph stored them, which `ceph osd crush dump` does not print.

A straw (v1) bucket's straws and a tree bucket's node weights are computed by Ceph's
builder, and not always from the weights the dump shows: a tree bucket that Ceph grew an
item at a time (every device-class shadow tree: CrushWrapper::device_class_clone) holds
node weights added onto memory it never cleared (crush_add_tree_bucket_item), and a
straw bucket untouched since straw_calc_version changed keeps its old straws. The map is
encoded by CrushWrapper::encode: a header, then every bucket slot; only that part is read
here (rules, names and tunables come from the dump).
"""
import dataclasses
import struct
from typing import Dict, Mapping, NamedTuple, Optional, Tuple

from .checks import MAX_BUCKETS
from .cluster import Bucket
from .constants import CRUSH_BUCKET_ALGS
from .errors import AdvisorError

MAGIC = 0x00010000
ALG_NAMES = {v: k for k, v in CRUSH_BUCKET_ALGS.items()}
UNIFORM, LIST, TREE, STRAW, STRAW2 = (CRUSH_BUCKET_ALGS[a]
                                      for a in ("uniform", "list", "tree", "straw", "straw2"))
MAX_BYTES = 256 << 20      # a CRUSH map of 10,000 OSDs is a few hundred KiB


class StoredBucket(NamedTuple):
    """One bucket as the binary map holds it."""
    id: int
    alg: int
    items: Tuple[int, ...]
    weights: Tuple[int, ...]        # item weights, 16.16 (a uniform bucket's one, repeated)
    internals: Tuple[int, ...]      # straws (straw), node weights (tree), sums (list); else ()


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str, count: int = 1) -> Tuple[int, ...]:
        size = struct.calcsize("<" + fmt) * count
        if count < 0 or self.at + size > len(self.data):
            raise AdvisorError.invalid(f"crush map (binary): ends at byte {len(self.data)}, inside "
                                       f"a bucket (byte {self.at})")
        got = struct.unpack_from(f"<{count}{fmt}", self.data, self.at)
        self.at += size
        return got

    def one(self, fmt: str) -> int:
        return int(self.take(fmt)[0])


def needs_binary(crush: object) -> bool:
    """Whether a CRUSH dump holds a bucket whose draws need what only the binary map stores
    (a tree's node weights, a straw bucket's straws): False for a map of straw2, list and
    uniform buckets, and for anything that is not a dump."""
    buckets = crush.get("buckets") if isinstance(crush, dict) else None
    return isinstance(buckets, list) and any(
        isinstance(b, dict) and b.get("alg") in ("tree", "straw") for b in buckets)


def decode_buckets(data: bytes) -> Dict[int, StoredBucket]:
    """Bucket id -> the bucket as stored, from a binary CRUSH map. Raises AdvisorError
    (EINVAL) on anything that is not one, before reading further."""
    if not isinstance(data, (bytes, bytearray)) or len(data) > MAX_BYTES:
        raise AdvisorError.invalid(f"crush map (binary): not a CRUSH map of at most {MAX_BYTES} bytes")
    r = _Reader(bytes(data))
    if r.one("I") != MAGIC:
        raise AdvisorError.invalid("crush map (binary): no CRUSH magic at its start (is it the "
                                   "output of `ceph osd getcrushmap`?)")
    max_buckets = r.one("i")
    r.take("I")                          # max_rules
    r.take("i")                          # max_devices
    if not 0 <= max_buckets <= MAX_BUCKETS:
        raise AdvisorError.invalid(f"crush map (binary): {max_buckets} bucket slots; pg_advisor "
                                   f"reads at most {MAX_BUCKETS}")
    out: Dict[int, StoredBucket] = {}
    for _ in range(max_buckets):
        b = _bucket(r)
        if b is not None:
            out[b.id] = b
    return out


def _bucket(r: _Reader) -> Optional[StoredBucket]:
    alg = r.one("I")
    if alg == 0:
        return None
    if alg not in ALG_NAMES:
        raise AdvisorError.invalid(f"crush map (binary): bucket algorithm {alg} (byte {r.at - 4})")
    bid = r.one("i")
    r.take("H")                          # type
    r.take("B")                          # alg again
    r.take("B")                          # hash
    r.take("I")                          # weight
    size = r.one("I")
    if size > (len(r.data) - r.at) // 4:
        raise AdvisorError.invalid(f"crush map (binary): bucket {bid} of {size} items, past the "
                                   f"map's end")
    items = r.take("i", size)
    if alg == UNIFORM:
        return StoredBucket(bid, alg, items, (r.one("I"),) * size, ())
    if alg == STRAW2:
        return StoredBucket(bid, alg, items, r.take("I", size), ())
    if alg == TREE:
        nodes = r.take("I", r.one("B"))  # a byte: past 64 items it wraps (mappable.py)
        # the leaves are the odd nodes (crush_calc_tree_node): item i at 2i + 1
        leaves = tuple(nodes[2 * i + 1] if 2 * i + 1 < len(nodes) else 0 for i in range(size))
        return StoredBucket(bid, alg, items, leaves, nodes)
    pairs = r.take("I", 2 * size)        # list: weight, sum; straw: weight, straw
    return StoredBucket(bid, alg, items, pairs[0::2], pairs[1::2])


def with_stored(buckets: Mapping[int, Bucket], data: bytes, strict: bool = True) -> Dict[int, Bucket]:
    """The dump's buckets, each with what the binary map `data` stored for it (Bucket.stored)
    where both hold the same bucket (algorithm, items and item weights). A bucket they
    disagree on is refused when `strict` (not the same map), else left as the dump has it
    (the mgr reads the two a moment apart)."""
    stored = decode_buckets(data)
    out: Dict[int, Bucket] = dict(buckets)
    for bid, b in buckets.items():
        st = stored.get(bid)
        same = (st is not None and ALG_NAMES[st.alg] == b.alg and st.items == tuple(b.items.tolist())
                and (st.alg == UNIFORM or st.weights == tuple(b.fixed_weights.tolist())))
        if not same:
            if strict:
                raise AdvisorError.invalid(f"crush map (binary): bucket {b.name} ({bid}) is not the "
                                           f"dump's (are both of the same map?)")
            continue
        if st is not None and st.internals:
            out[bid] = dataclasses.replace(b, stored=st.internals)
    return out
