"""A dump's values checked before anything is sized by them.

The loaders also run inside the mgr, so a corrupt number is refused at once, never
allocated or looped over: each field is read through these checks (finite, within its
bound), and a bad one is an AdvisorError(EINVAL) sentence naming where it was.
"""
import math
import re
from collections import abc
from typing import Any, List, Optional, Sequence, Tuple, Union

from .cluster import Json
from .constants import CRUSH_ITEM_NONE, NO_OSD
from .errors import AdvisorError
from .options import INT_TEXT


# What a dump may claim, checked before anything is sized by it: the loader also runs inside
# the mgr, so a corrupt number must be refused at once, never allocated or looped over. Each
# bound is far above what a real cluster reaches.
MAX_OSD = 1 << 20           # OSD ids 0..MAX_OSD-1 (large clusters have ~10^4 OSDs)
MAX_BUCKETS = 1 << 16       # bucket ids -1..-MAX_BUCKETS (CRUSH numbers them from -1 down)
MAX_PG_NUM = 1 << 20        # pg_num of one pool (mon_max_pool_pg_num is 65536 by default)
MAX_PG_REPLICAS = 1 << 22   # pg_num x size summed over the pools: what one CRUSH run holds
MAX_POOL_SIZE = 255         # replicas or shards of a PG (pg_pool_t keeps size in a byte)
MAX_TRIES = 1000            # CRUSH retries (choose_total_tries is 50 by default)
MAX_ID = (1 << 31) - 1      # pool, rule and bucket type ids are 32-bit in Ceph
MAX_INT64 = (1 << 63) - 1   # bytes, objects, log entries
MAX_KB = 1 << 53            # OSD sizes in KiB: x 1024 stays within int64
MAX_WEIGHT = 0xFFFFFFFF     # CRUSH weights are unsigned 16.16
MAX_OSD_CRUSH_WEIGHT = 1e6  # one OSD's CRUSH weight (TiB by convention) as a command takes it


Number = Union[int, float]


def show(v: Any) -> str:
    """A value for a message, cut short (a dump may hold a 4000-digit number)."""
    s = str(v) if isinstance(v, (int, float, str)) else type(v).__name__
    return s if len(s) <= 24 else s[:20] + "..."


# how Ceph writes a number as a string ("16", "0.5"): ASCII digits, no spaces or "_" (which
# Python's int() and float() would take, as they take other scripts' digits)
_FLOAT_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?\Z")


def number(v: Any, what: str) -> Number:
    """A finite number; Ceph prints some numbers as strings ("16"), so those count too."""
    if type(v) is int:      # the usual case first: a loader reads millions of these
        return v
    if isinstance(v, str):
        if INT_TEXT.match(v):
            v = int(v)
        elif _FLOAT_TEXT.match(v):
            v = float(v)
        else:
            raise AdvisorError.invalid(f"{what} is not a number")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise AdvisorError.invalid(f"{what} is not a number")
    if isinstance(v, float) and not math.isfinite(v):
        # json reads NaN, Infinity and 1e999; nothing in a cluster map is infinite
        raise AdvisorError.invalid(f"{what} is {v}, not a finite number")
    return v


def within(v: Number, lo: Number, hi: Number, what: str) -> None:
    if not lo <= v <= hi:
        raise AdvisorError.invalid(f"{what} is {show(v)}; it must be within {lo}..{hi}")


def as_int(v: Any, what: str, lo: int = -MAX_INT64 - 1, hi: int = MAX_INT64) -> int:
    if type(v) is int and lo <= v <= hi:
        return v
    x = number(v, what)
    if isinstance(x, float) and not x.is_integer():
        raise AdvisorError.invalid(f"{what} is {show(x)}, not a whole number")
    n = int(x)
    within(n, lo, hi, what)
    return n


def as_float(v: Any, what: str, lo: float, hi: float) -> float:
    x = number(v, what)
    within(x, lo, hi, what)    # before float(): a huge int would overflow it
    return float(x)


def get_field(doc: Json, key: str, what: str, default: Any = None) -> Any:
    """doc[key]; `default`, when given, stands in for a missing or null field."""
    # (json gives dicts: typing's Mapping check is 20 times slower, for the rest)
    if type(doc) is not dict and not isinstance(doc, abc.Mapping):
        raise AdvisorError.invalid(f"{what}: not an object")
    if default is not None and doc.get(key) is None:
        return default
    if key not in doc:
        raise AdvisorError.invalid(f"{what}: missing field '{key}'")
    return doc[key]


def int_field(doc: Json, key: str, what: str, lo: int = -MAX_INT64 - 1, hi: int = MAX_INT64,
              default: Optional[int] = None) -> int:
    return as_int(get_field(doc, key, what, default), f"{what}: field '{key}'", lo, hi)


def float_field(doc: Json, key: str, what: str, lo: float, hi: float,
                default: Optional[float] = None) -> float:
    return as_float(get_field(doc, key, what, default), f"{what}: field '{key}'", lo, hi)


def str_field(doc: Json, key: str, what: str, default: Optional[str] = None) -> str:
    v = get_field(doc, key, what, default)
    if not isinstance(v, str):
        raise AdvisorError.invalid(f"{what}: field '{key}' is not a string")
    return v


def list_field(doc: Json, key: str, what: str, default: Optional[list] = None) -> Sequence[Any]:
    v = get_field(doc, key, what, default)
    if not isinstance(v, list):
        raise AdvisorError.invalid(f"{what}: field '{key}' is not a list")
    return v


def map_field(doc: Json, key: str, what: str) -> Json:
    """An optional object field ({} when missing or null)."""
    v = get_field(doc, key, what, {})
    if type(v) is not dict and not isinstance(v, abc.Mapping):
        raise AdvisorError.invalid(f"{what}: field '{key}' is not an object")
    return v


def osd_ids(row: Any, what: str) -> List[int]:
    """An up/acting/upmap set: at most MAX_POOL_SIZE OSD ids, -1 or CRUSH_ITEM_NONE for holes."""
    if not isinstance(row, list):
        raise AdvisorError.invalid(f"{what} is not a list")
    if len(row) > MAX_POOL_SIZE:
        raise AdvisorError.invalid(f"{what} has {len(row)} OSDs; a PG has at most {MAX_POOL_SIZE}")
    if all(type(o) is int for o in row) and (not row or NO_OSD <= min(row) and max(row) <= CRUSH_ITEM_NONE):
        return row      # the usual case, checked at C speed
    return [as_int(o, what, NO_OSD, CRUSH_ITEM_NONE) for o in row]


def parse_pgid(pgid: Any, what: str) -> Tuple[int, int]:
    try:
        pool, ps = pgid.split(".")
        p, s = int(pool), int(ps, 16)
    except (ValueError, AttributeError):
        raise AdvisorError.invalid(f"{what}: '{show(pgid)}' is not a PG id") from None
    if not (0 <= p <= MAX_ID and 0 <= s < MAX_PG_NUM):
        raise AdvisorError.invalid(f"{what}: PG id '{show(pgid)}' is out of range")
    return p, s
