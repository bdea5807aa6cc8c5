"""The pools' usage (`ceph df -f json`, or the mgr's df), with the PG stats' sums where
df is not given."""
from typing import Dict, Optional, Tuple

from .checks import get_field, int_field, list_field
from .cluster import Json


def pool_usage(df: Optional[Json], pg_map: Optional[Json]
               ) -> Dict[int, Tuple[int, int]]:
    """Stored bytes and objects per pool: `ceph df` when given, else the PG stats."""
    usage: Dict[int, Tuple[int, int]] = {}
    if df is not None:
        for p in list_field(df, "pools", "df"):
            st = get_field(p, "stats", "df: pool")
            usage[int_field(p, "id", "df: pool")] = (
                int_field(st, "stored", "df: pool stats", 0), int_field(st, "objects", "df: pool stats", 0))
    elif pg_map is not None:
        for p in list_field(pg_map, "pool_stats", "pg dump", []):
            st = get_field(p, "stat_sum", "pg dump: pool_stats")
            usage[int_field(p, "poolid", "pg dump: pool_stats")] = (
                int_field(st, "num_bytes", "pg dump: pool_stats", 0),
                int_field(st, "num_objects", "pg dump: pool_stats", 0))
    return usage
