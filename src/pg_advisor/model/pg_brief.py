"""The PG stats of a big cluster, read the narrow way.

Inside ceph-mgr, `get('pg_dump')` turns every PG's full stats (some hundred fields) into
Python objects, holding the GIL and the PG map's lock all along: at 320,000 PGs that takes
17-32 s and leaves the mgr 6-8 GiB larger, and the mgr's reports to the mon stop meanwhile
(as qa/bench/mgr_scale.py measures). What pg_advisor needs per PG is narrower:

- state, up, up_primary and acting: `pg dump pgs_brief`, which the mgr writes as JSON
  without our GIL (0.6 s there), parsed here a chunk of rows at a time (0.9 s in all);
- bytes: `get('pg_progress')` (0.3 s there);
- the OSDs' own figures: `get('osd_stats')`; the misplaced total: `get('pg_status')`.

From these this builds the document `snapshot.load` reads from a pg dump, with the bytes
and objects as columns rather than a dict per PG. What the brief
stats lack is said, not made up: a PG's objects are its pool's objects (`ceph df`) shared
out by its bytes (evenly where the pool's PGs report none), and the PG logs are absent
(`Pgs.logs` is False: the memory their logs hold now is not reported).
"""
import json
from typing import Any, Callable, Dict, List, Mapping, Optional

import numpy as np

Json = Any
SUMS = "pg_advisor_sums"    # the pg_map's key for the (bytes, objects) columns made here
CHUNK_BYTES = 1 << 20       # some 10,000 rows: one json.loads of a chunk holds the GIL ~30 ms
ROWS_KEY = '"pg_stats":['


def parse_brief(text: str, pause: Callable[[], None] = lambda: None) -> Json:
    """`pg dump pgs_brief -f json` as a document, its rows parsed a chunk at a time with
    `pause()` between chunks: inside the mgr, one json.loads of the 30 MB that 320,000 PGs
    write held the GIL 0.9 s, and every other module's command waited. A text the chunks do
    not parse exactly is parsed whole (ValueError if it is not JSON)."""
    got = _parse_chunked(text, pause)
    return got if got is not None else json.loads(text)


def _parse_chunked(text: str, pause: Callable[[], None]) -> Optional[Json]:
    at = text.find(ROWS_KEY)
    start = at + len(ROWS_KEY) if at >= 0 else (text.index("[") + 1 if text.lstrip()[:1] == "[" else -1)
    end = text.rfind("]")
    if start < 0 or end < start:
        return None
    try:     # the wrapper with the rows taken out must be a document of its own
        doc = json.loads(text[:start] + text[end:])
        if brief_rows(doc):
            return None
    except ValueError:
        return None
    rows: List[Any] = []
    pos = start
    while pos < end:
        cut = text.find("},{", pos + CHUNK_BYTES, end)     # between two rows (compact JSON)
        stop = end if cut < 0 else cut + 1
        try:
            rows.extend(json.loads("[" + text[pos:stop] + "]"))
        except ValueError:
            return None
        pos = stop + 1
        pause()
    if isinstance(doc, list):
        return rows
    doc["pg_stats"] = rows
    return doc


def brief_rows(brief: Json) -> List[Any]:
    """The rows of `pg dump pgs_brief -f json`: a bare list, or {"pg_stats": [...]}."""
    if isinstance(brief, Mapping):
        brief = brief.get("pg_stats")
    if not isinstance(brief, list):
        raise ValueError("pg dump pgs_brief: no list of PGs")
    return brief


def _pool_objects(df: Optional[Json]) -> Dict[int, int]:
    out: Dict[int, int] = {}
    for p in (df or {}).get("pools", []) if isinstance(df, Mapping) else []:
        try:
            out[int(p["id"])] = max(int(p["stats"]["objects"]), 0)
        except (KeyError, TypeError, ValueError):
            continue     # the loader checks df itself; an odd row here only loses its estimate
    return out


def _pool_ids(pgids: List[Any]) -> np.ndarray:
    """The pool of each PG id, -1 where it is not one (the loader names the bad PG id)."""
    heads = [p.partition(".")[0] if type(p) is str else "" for p in pgids]
    return np.array([int(h) if h.isdigit() and len(h) < 12 else -1 for h in heads], dtype=np.int64)


def brief_pg_map(brief: Json, progress: Json, osd_stats: Json, pg_status: Json,
                 df: Optional[Json]) -> Dict[str, Any]:
    """A pg_map document (as `get('pg_dump')` gives) from the narrow reads above: the rows
    as they came, and their bytes and objects as columns under SUMS (a field at a time over
    all PGs, no per-PG dict made). A byte count pg_progress lacks, or gives as anything but
    a count, is 0."""
    rows = brief_rows(brief)
    per_pg = progress.get("pgs", {}) if isinstance(progress, Mapping) else {}
    if not isinstance(per_pg, Mapping):
        per_pg = {}
    pgids = [r.get("pgid") if isinstance(r, Mapping) else None for r in rows]
    got = [per_pg.get(p) if type(p) is str else None for p in pgids]
    raw = [g.get("num_bytes", 0) if isinstance(g, Mapping) else 0 for g in got]
    nbytes = np.array([b if type(b) is int and 0 < b < 1 << 62 else 0 for b in raw], dtype=np.int64)
    pool = _pool_ids(pgids)
    # objects: the pool's, by each PG's share of the pool's bytes (evenly without bytes)
    ids, at = np.unique(pool, return_inverse=True)
    objects = _pool_objects(df)
    total = np.array([objects.get(int(p), 0) for p in ids], dtype=np.float64)
    weight = nbytes.astype(np.float64)
    pool_bytes = np.bincount(at, weights=weight, minlength=ids.size)
    pool_pgs = np.bincount(at, minlength=ids.size).astype(np.float64)
    share = np.where(pool_bytes[at] > 0, weight / np.maximum(pool_bytes[at], 1.0),
                     1.0 / np.maximum(pool_pgs[at], 1.0))
    est = np.floor(total[at] * share).astype(np.int64)
    misplaced = pg_status.get("misplaced_objects", 0) if isinstance(pg_status, Mapping) else 0
    osds = osd_stats.get("osd_stats", []) if isinstance(osd_stats, Mapping) else []
    return {"pg_stats": rows, "osd_stats": osds, SUMS: (nbytes, est),
            "pg_stats_sum": {"stat_sum": {"num_objects_misplaced": misplaced}}}
