"""The PG stats' loader (`ceph pg dump -f json`, the mgr's pg_dump, or the brief stats of
model/pg_brief.py): one numpy column per field, checked at C speed where the rows are
plain and row by row where they are not."""
import itertools
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .checks import (MAX_ID, MAX_INT64, MAX_PG_NUM, MAX_POOL_SIZE, get_field, int_field, list_field,
                     map_field, osd_ids, parse_pgid, show, str_field)
from .cluster import frozen, Json, Pgs
from .constants import CRUSH_ITEM_NONE, NO_OSD
from .errors import AdvisorError
from .pg_brief import SUMS


def pg_map_of(pg_dump: Json) -> Json:
    """`ceph pg dump -f json` wraps the map in {"pg_map": ...}; the mgr hands it bare."""
    if isinstance(pg_dump, Mapping) and "pg_map" in pg_dump:
        return pg_dump["pg_map"]
    return pg_dump


NO_DUPS = -1     # log_dups where the stats do not say (Ceph before 16.2.11/17.2.4, the brief stats)
Columns = Dict[str, Any]   # the PG stats as arrays (and the states as a list), in dump order


def load_pgs(pg_map: Json) -> Pgs:
    stats = list_field(pg_map, "pg_stats", "pg dump")
    # a dump as Ceph writes it takes the fast path; anything else the careful one, which
    # names the first bad field (and accepts what it accepts: numbers as strings, say)
    c = pg_columns_plain(stats)
    if c is None:
        c = pg_columns_checked(stats)
    for m in (c["up"], c["acting"]):
        m[m == CRUSH_ITEM_NONE] = NO_OSD
    sums = pg_map.get(SUMS)      # the brief stats' bytes and objects (model/pg_brief.py)
    if sums is not None:
        c["bytes"], c["objects"] = (_brief_column(v, len(stats)) for v in sums)
    order = np.lexsort((c["ps"], c["pool"]))
    logs = all(type(s) is dict and "log_size" in s for s in stats)
    return Pgs(logs=logs, pool=frozen(c["pool"][order]), ps=frozen(c["ps"][order]),
               up=frozen(c["up"][order]),
               up_primary=frozen(c["up_primary"][order]), bytes=frozen(c["bytes"][order]),
               objects=frozen(c["objects"][order]), state=_states(c["state"], order),
               acting=frozen(c["acting"][order]), log_size=frozen(c["log_size"][order]),
               log_tail=frozen(c["log_tail"][order]), split_bits=frozen(c["split_bits"][order]),
               log_dups=frozen(c["log_dups"][order]))


def _states(states: List[str], order: np.ndarray) -> Tuple[str, ...]:
    """The states in `order`, each distinct state one string object: the parsed ones would
    keep the memory of every row they were parsed among (320,000 rows: some 200 MiB the
    mgr could not give back while the snapshot lives)."""
    names: Dict[str, str] = {}
    for name in set(states):
        names[name] = "".join(list(name))      # a new object, not the parsed one
    return tuple(map(names.__getitem__, map(states.__getitem__, order.tolist())))


def _all_of(values: Sequence[Any], kind: type) -> bool:
    """Every value is exactly of type `kind` (not a subclass: a bool is no int here); the
    type check runs in C, a field over 320,000 PGs in a few ms."""
    return set(map(type, values)) <= {kind}


def _brief_column(v: Any, n: int) -> np.ndarray:
    if not (isinstance(v, np.ndarray) and v.shape == (n,) and v.dtype == np.int64 and (v >= 0).all()):
        raise AdvisorError.invalid("pg dump: the brief stats' byte or object counts do not fit its rows")
    return v


def _ints(values: List[Any], lo: int, hi: int) -> Optional[np.ndarray]:
    """Plain ints within [lo, hi] as an array, or None (bools, strings, floats, out of range)."""
    if not _all_of(values, int):
        return None
    a = np.array(values, dtype=np.int64) if values else np.zeros(0, dtype=np.int64)
    return a if not a.size or (lo <= a.min() and a.max() <= hi) else None


def _eversions(values: List[Any]) -> Optional[np.ndarray]:
    """Ceph versions ("EPOCH'VERSION") as an (n, 2) array, or None if any is not one."""
    if not _all_of(values, str) or not set(map(str.count, values, itertools.repeat("'"))) <= {1}:
        return None
    flat = _ints(list(map(int, "'".join(values).split("'"))) if values else [], 0, MAX_INT64)
    return None if flat is None else flat.reshape(-1, 2)


def _eversion(v: str, what: str) -> Tuple[int, int]:
    epoch, _, version = v.partition("'")
    try:
        e, n = int(epoch), int(version)
    except ValueError:
        raise AdvisorError.invalid(f"{what}: '{show(v)}' is not a version (EPOCH'VERSION)") from None
    if not (0 <= e <= MAX_INT64 and 0 <= n <= MAX_INT64):
        raise AdvisorError.invalid(f"{what}: '{show(v)}' is out of range")
    return e, n


def _osd_matrix(rows: List[Any], width: int) -> Optional[np.ndarray]:
    """Ragged up/acting lists as an (n, width) matrix padded with NO_OSD, or None."""
    if not _all_of(rows, list):
        return None
    lens = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    flat = _ints([o for r in rows for o in r], NO_OSD, CRUSH_ITEM_NONE)
    if flat is None:
        return None
    m = np.full((len(rows), width), NO_OSD, dtype=np.int64)
    m[np.arange(width) < lens[:, None]] = flat      # row by row, as flat was made
    return m


def _field(rows: Sequence[Dict[str, Any]], key: str, default: Any) -> List[Any]:
    """Each row's `key`, `default` where it is absent or null (all of them, in the brief
    stats' rows, for the fields those lack: one C-level pass, not one call per row)."""
    got = [r.get(key) for r in rows]
    if None not in got:
        return got
    if got.count(None) == len(got):
        return [default] * len(got)
    return [default if v is None else v for v in got]


def pg_columns_plain(stats: Sequence[Any]) -> Optional[Columns]:
    """The columns of a well-formed dump, a field at a time over all PGs; None at the
    first thing that is not plain (the checked loop then finds and names it)."""
    try:
        if not _all_of(stats, dict):
            return None
        pgids = [s["pgid"] for s in stats]
        if not _all_of(pgids, str) or not set(map(str.count, pgids, itertools.repeat("."))) <= {1}:
            return None
        parts = ".".join(pgids).split(".")      # one split for all: POOL, SEED, POOL, ...
        pool = _ints(list(map(int, parts[0::2])), 0, MAX_ID)
        ps = _ints(list(map(int, parts[1::2], itertools.repeat(16))), 0, MAX_PG_NUM - 1)
        ups = [s["up"] for s in stats]
        actings = _field(stats, "acting", [])
        width = max(map(len, ups + actings), default=0)
        sums = _field(stats, "stat_sum", {})
        states = _field(stats, "state", "unknown")
        if width > MAX_POOL_SIZE or not _all_of(sums, dict) or not _all_of(states, str):
            return None
        c: Columns = {
            "pool": pool, "ps": ps, "up": _osd_matrix(ups, width), "acting": _osd_matrix(actings, width),
            "up_primary": _ints(_field(stats, "up_primary", NO_OSD), NO_OSD, CRUSH_ITEM_NONE),
            "bytes": _ints(_field(sums, "num_bytes", 0), 0, MAX_INT64),
            "objects": _ints(_field(sums, "num_objects", 0), 0, MAX_INT64),
            "log_size": _ints(_field(stats, "log_size", 0), 0, MAX_INT64),
            "log_tail": _eversions(_field(stats, "log_start", "0'0")),
            "split_bits": _ints(_field(stats, "parent_split_bits", 0), 0, 32),
            "log_dups": _ints(_field(stats, "log_dups_size", NO_DUPS), NO_DUPS, MAX_INT64),
            "state": states,
        }
    except (KeyError, TypeError, AttributeError, ValueError, OverflowError):
        return None
    return None if any(v is None for v in c.values()) else c


def pg_columns_checked(stats: Sequence[Any]) -> Columns:
    n = len(stats)
    ups, actings = [], []
    for s in stats:    # the rows first: their width sizes the matrices
        what = f"pg dump: pg {show(get_field(s, 'pgid', 'pg dump: pg'))}"
        ups.append(osd_ids(get_field(s, "up", what), f"{what}: up"))
        actings.append(osd_ids(get_field(s, "acting", what, []), f"{what}: acting"))
    width = max([len(r) for r in ups + actings], default=0)
    counts = ("pool", "ps", "bytes", "objects", "log_size", "split_bits", "log_dups")
    c: Columns = {k: np.zeros(n, dtype=np.int64) for k in counts}
    c["log_tail"] = np.zeros((n, 2), dtype=np.int64)
    c["up_primary"] = np.full(n, NO_OSD, dtype=np.int64)
    c["up"] = np.full((n, width), NO_OSD, dtype=np.int64)
    c["acting"] = np.full((n, width), NO_OSD, dtype=np.int64)
    c["state"] = []
    for i, s in enumerate(stats):
        c["pool"][i], c["ps"][i] = parse_pgid(s["pgid"], "pg dump")
        what = f"pg dump: pg {show(s['pgid'])}"
        c["up"][i, :len(ups[i])] = ups[i]
        c["acting"][i, :len(actings[i])] = actings[i]
        c["up_primary"][i] = int_field(s, "up_primary", what, NO_OSD, CRUSH_ITEM_NONE, NO_OSD)
        summ = map_field(s, "stat_sum", what)
        c["bytes"][i] = int_field(summ, "num_bytes", what, 0, MAX_INT64, 0)
        c["objects"][i] = int_field(summ, "num_objects", what, 0, MAX_INT64, 0)
        c["log_size"][i] = int_field(s, "log_size", what, 0, MAX_INT64, 0)
        c["log_tail"][i] = _eversion(str_field(s, "log_start", what, "0'0"), f"{what}: field 'log_start'")
        c["split_bits"][i] = int_field(s, "parent_split_bits", what, 0, 32, 0)
        c["log_dups"][i] = int_field(s, "log_dups_size", what, NO_DUPS, MAX_INT64, NO_DUPS)
        c["state"].append(str_field(s, "state", what, "unknown"))
    return c


def check_pg_osds(pgs: Pgs, n_osd: int) -> None:
    """Every OSD a PG's up or acting set names is one of the map's (the vectors index by it)."""
    for name, m in (("up", pgs.up), ("acting", pgs.acting)):
        bad = np.flatnonzero((m >= n_osd).any(axis=1)) if m.size else np.zeros(0, dtype=np.int64)
        if bad.size:
            i = int(bad[0])
            osd = int(m[i][m[i] >= n_osd][0])
            raise AdvisorError.invalid(f"pg dump: pg {int(pgs.pool[i])}.{int(pgs.ps[i]):x}: {name} "
                                       f"names osd.{osd}, which is not in the OSD map")
