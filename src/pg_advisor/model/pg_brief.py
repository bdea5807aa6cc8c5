"""The PG stats of a big cluster, read the narrow way.

Inside ceph-mgr, `get('pg_dump')` turns every PG's full stats (some hundred fields) into
Python objects, holding the GIL and the PG map's lock all along: at 320,000 PGs that took
17-32 s and left the mgr 6-8 GiB larger, and the mgr's reports to the mon stopped meanwhile
(qa/bench_mgr_scale.py, issue 26). What pg_advisor needs per PG is narrower:

- state, up, up_primary and acting: `pg dump pgs_brief`, which the mgr writes as JSON
  without our GIL (0.6 s there, and 0.8 s to parse);
- bytes: `get('pg_progress')` (0.3 s there);
- the OSDs' own figures: `get('osd_stats')`; the misplaced total: `get('pg_status')`.

From these this builds the document `snapshot.load` reads from a pg dump. What the brief
stats lack is said, not made up: a PG's objects are its pool's objects (`ceph df`) shared
out by its bytes (evenly where the pool's PGs report none), and the PG logs are absent
(`Pgs.logs` is False: the memory their logs hold now is not reported).
"""
from typing import Any, Dict, List, Mapping, Optional

import numpy as np

Json = Any


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


def _pool_of(pgid: Any) -> int:
    try:
        return int(str(pgid).split(".", 1)[0])
    except ValueError:
        return -1        # the loader names the bad PG id


def brief_pg_map(brief: Json, progress: Json, osd_stats: Json, pg_status: Json,
                 df: Optional[Json]) -> Dict[str, Any]:
    """A pg_map document (as `get('pg_dump')` gives) from the narrow reads above."""
    rows = brief_rows(brief)
    per_pg = progress.get("pgs", {}) if isinstance(progress, Mapping) else {}
    if not isinstance(per_pg, Mapping):
        per_pg = {}
    stats: List[Dict[str, Any]] = []
    nbytes = np.zeros(len(rows), dtype=np.float64)
    pool = np.zeros(len(rows), dtype=np.int64)
    for i, r in enumerate(rows):
        if not isinstance(r, Mapping):
            stats.append(r)      # left for the loader to refuse, by name
            continue
        got = per_pg.get(r.get("pgid"))
        b = got.get("num_bytes", 0) if isinstance(got, Mapping) else 0
        row = r if isinstance(r, dict) else dict(r)     # the parsed rows are ours: no copy
        row["stat_sum"] = {"num_bytes": b}
        stats.append(row)
        nbytes[i] = float(b) if type(b) is int and b > 0 else 0.0
        pool[i] = _pool_of(r.get("pgid"))
    # objects: the pool's, by each PG's share of the pool's bytes (evenly without bytes)
    ids, at = np.unique(pool, return_inverse=True)
    objects = _pool_objects(df)
    total = np.array([objects.get(int(p), 0) for p in ids], dtype=np.float64)
    pool_bytes = np.bincount(at, weights=nbytes, minlength=ids.size)
    pool_pgs = np.bincount(at, minlength=ids.size).astype(np.float64)
    share = np.where(pool_bytes[at] > 0, nbytes / np.maximum(pool_bytes[at], 1.0),
                     1.0 / np.maximum(pool_pgs[at], 1.0))
    est = np.floor(total[at] * share).astype(np.int64).tolist()
    for row, n in zip(stats, est):
        if isinstance(row, dict) and "stat_sum" in row:
            row["stat_sum"]["num_objects"] = n
    misplaced = pg_status.get("misplaced_objects", 0) if isinstance(pg_status, Mapping) else 0
    osds = osd_stats.get("osd_stats", []) if isinstance(osd_stats, Mapping) else []
    return {"pg_stats": stats, "osd_stats": osds,
            "pg_stats_sum": {"stat_sum": {"num_objects_misplaced": misplaced}}}
