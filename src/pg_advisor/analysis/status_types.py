"""The status report's shape, typed: what `ceph pg-advisor status -f json` gives, and what
the panel, /metrics and the health checks read. A reader that asks for a key the report has
not is a type error, not a KeyError in the mgr. (The sizing's, the read balance's and a
spread's own parts stay documents of their makers.)"""
from typing import Any, Dict, List, Optional, TypedDict


class PoolEntry(TypedDict):
    recommended_pg_num: Optional[int]
    recommendation: Optional[str]
    reasons: Optional[List[Dict[str, Any]]]
    pressing: Optional[bool]
    automatic: Optional[bool]
    sizing: Optional[str]
    moved_bytes_estimate: Optional[int]
    data_share: Optional[float]
    autoscaler_pg_num: Optional[int]
    autoscaler_would_adjust: Optional[bool]
    autoscaler_mode: str
    autoscaler_difference: Optional[str]
    id: int
    name: str
    type: str
    size: int
    min_size: int
    crush_rule: int
    crush_rule_name: Optional[str]
    pg_num: int
    pgp_num: int
    pg_num_target: int
    pgp_num_target: int
    pg_autoscale_mode: str
    stored: Optional[int]
    objects: Optional[int]
    pgs_reported: int
    not_mapped: Optional[str]
    read_balance: Optional[Dict[str, Any]]


# (the functional form: `in` is a keyword, which the class form cannot name)
OsdRow = TypedDict("OsdRow", {
    "id": int, "host": Optional[str], "device_class": Optional[str], "crush_weight": float,
    "reweight": float, "up": bool, "in": bool, "pgs": Optional[int],
    "pgs_by_pool": Optional[Dict[str, int]], "pg_share": float, "pg_share_by_pool": Dict[str, float],
    "pg_target": float, "pg_target_by_pool": Dict[str, float], "utilization": Optional[float],
    "bytes_used": Optional[int], "bytes_total": Optional[int], "pg_memory_now": Optional[int],
    "pgs_unlisted": Optional[int], "pg_memory_steady": Optional[int], "pg_memory_peak": Optional[int],
    "pg_memory_budget": int, "pg_memory_peak_budget": int, "pgs_recommended": Optional[int],
    "primaries": int, "primary_share": float,
})


class Distribution(TypedDict):
    pools: List[Dict[str, Any]]          # a spread per pool (Spread.as_dict, with its pool)
    total: Optional[Dict[str, Any]]      # of all pools, for the whole cluster
    extremes: Dict[str, Any]


class UpmapEntries(TypedDict):
    """The upmap entries the OSDMap holds (each is in every map the mons build and send)."""
    pg_upmap_items: int           # PGs with items
    pg_upmap_items_pairs: int     # (from, to) pairs in them
    pg_upmap: int                 # PGs with a full mapping
    pg_upmap_primaries: int
    pg_upmap_items_ours: Optional[int]    # those pg_advisor set (None offline: unknown)


class ClusterSummary(TypedDict):
    osds: int
    osds_up: int
    osds_in: int
    pools: int
    pgs: int
    pg_replicas: int
    mon_max_pg_per_osd: int
    pgs_per_osd_max: Optional[int]
    pgs_per_osd_mean: Optional[float]
    max_pgs_ratio_of_limit: Optional[float]
    sizing: Optional[Dict[str, Any]]
    upmap_entries: UpmapEntries


class FullOsd(TypedDict):
    osd: int
    local: int       # backfills it is the primary of
    remote: int      # backfills into it


class Backfill(TypedDict, total=False):
    waiting_pgs: int          # PGs in backfill_wait
    osd_max_backfills: int
    full_osds: List[FullOsd]  # at most FULL_SHOWN, fullest first
    full_osds_total: int      # how many there are (only when some PG waits)


class FullByBytes(TypedDict):
    osd: int
    used_ratio: float          # bytes used / size


class Space(TypedDict):
    """The OSDs that take no PG now: past the fill limit, counting what is copied onto them."""
    fill_limit: str            # nearfull or backfillfull (option fill_limit)
    ratio: float               # the cluster's ratio for it
    osds: List[FullByBytes]    # at most space.NAMED, fullest first
    osds_total: int


class StatusReport(TypedDict):
    epoch: int
    pool_filter: Optional[str]
    pg_source: Optional[str]
    autoscaler_silent: bool
    pools: List[PoolEntry]
    osds: List[OsdRow]
    distribution: Distribution
    cluster: ClusterSummary
    backfill: Backfill
    space: Space
    notes: List[str]
