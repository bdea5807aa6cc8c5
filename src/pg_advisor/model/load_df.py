"""The pools' usage (`ceph df -f json`, or the mgr's df), with the PG stats' sums where
df is not given."""
from typing import Dict, Optional, Tuple

from .checks import get_field, int_field, list_field
from .cluster import Json


def pool_usage(df: Optional[Json], pg_map: Optional[Json]
               ) -> Dict[int, Tuple[int, int, Optional[int]]]:
    """Stored bytes, objects and raw bytes used per pool: `ceph df` when given, else the PG
    stats (which do not say the raw bytes)."""
    usage: Dict[int, Tuple[int, int, Optional[int]]] = {}
    if df is not None:
        for p in list_field(df, "pools", "df"):
            st = get_field(p, "stats", "df: pool")
            usage[int_field(p, "id", "df: pool")] = (
                int_field(st, "stored", "df: pool stats", 0), int_field(st, "objects", "df: pool stats", 0),
                int_field(st, "bytes_used", "df: pool stats", 0) if "bytes_used" in st else None)
    elif pg_map is not None:
        for p in list_field(pg_map, "pool_stats", "pg dump", []):
            st = get_field(p, "stat_sum", "pg dump: pool_stats")
            usage[int_field(p, "poolid", "pg dump: pool_stats")] = (
                int_field(st, "num_bytes", "pg dump: pool_stats", 0),
                int_field(st, "num_objects", "pg dump: pool_stats", 0), None)
    return usage
