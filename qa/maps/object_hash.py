"""Which PG an object is in, as librados computes it (object_hash rjenkins, no namespace):
ceph_str_hash_rjenkins (lookup2) over the name, then the stable mod over pg_num."""
from pg_advisor.crush.hashing import M32, _mix1 as _mix   # lookup2's mix is CRUSH's rjenkins1 mix

GOLDEN = 0x9E3779B9


def str_hash(name: str) -> int:
    """ceph_str_hash_rjenkins(name)."""
    k = name.encode()
    a = b = GOLDEN
    c = 0
    i = 0
    while len(k) - i >= 12:
        a = (a + int.from_bytes(k[i:i + 4], "little")) & M32
        b = (b + int.from_bytes(k[i + 4:i + 8], "little")) & M32
        c = (c + int.from_bytes(k[i + 8:i + 12], "little")) & M32
        a, b, c = _mix(a, b, c)
        i += 12
    tail = k[i:]
    # the last 11 bytes; c's low byte holds the length
    a = (a + int.from_bytes(tail[0:4], "little")) & M32
    b = (b + int.from_bytes(tail[4:8], "little")) & M32
    c = (c + len(k) + (int.from_bytes(tail[8:11], "little") << 8)) & M32
    return _mix(a, b, c)[2]


def stable_mod(x: int, b: int) -> int:
    """ceph_stable_mod: x mod b, stable as b grows one at a time."""
    mask = (1 << (b - 1).bit_length()) - 1
    return x & mask if (x & mask) < b else x & (mask >> 1)


def object_ps(name: str, pg_num: int) -> int:
    """The placement seed (the PG's number in its pool) of object `name` at pg_num."""
    return stable_mod(str_hash(name), pg_num)
