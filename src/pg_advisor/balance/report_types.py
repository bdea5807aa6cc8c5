"""The `balance` and `eval` reports' shapes, typed: what `ceph pg-advisor balance|eval -f json`
give and what render/balance_text.py reads. A reader asking for a key the report has not is
a type error, not a KeyError in the mgr."""
from typing import Dict, List, Optional, TypedDict

from ..model.distribution import SpreadFields


class PoolSpread(SpreadFields):
    """One pool's spread with its pool, as the reports' rows have it."""
    pool: str
    rule_limit: float        # how far the rule's shares are from shares by weight alone


def pool_spread(pool: str, s: SpreadFields, rule_limit: float) -> PoolSpread:
    return PoolSpread(pool=pool, osds=s["osds"], min=s["min"], max=s["max"], mean=s["mean"],
                      stdev=s["stdev"], max_deviation=s["max_deviation"], max_over=s["max_over"],
                      max_under=s["max_under"], rule_limit=rule_limit)


class Spreads(TypedDict):
    pools: List[PoolSpread]
    total: Optional[SpreadFields]     # all pools; None when no pool is balanced


class Fullness(TypedDict):
    """The fullest and emptiest OSDs against the mean (evener.fullness); None: no bytes."""
    basis: str                        # "osd size" or what stands in for it
    max_ratio: Optional[float]
    min_ratio: Optional[float]
    max_used: Optional[float]         # of the OSD's size (basis "osd size" only)
    min_used: Optional[float]


class FullnessChange(TypedDict):
    before: Fullness
    after: Fullness


class EvalReport(TypedDict):
    epoch: int
    score: float                      # the largest deviation from a share; <= 1 is even
    distribution: Spreads
    fullness: Optional[Fullness]      # None without PG stats
    upmap_items: int
    notes: List[str]


class BalanceReport(TypedDict):
    epoch: int
    mode: str
    commands: List[str]               # as `osdmaptool --upmap` writes them
    items: Dict[str, List[List[int]]]
    before: Spreads
    after: Spreads
    fullness: Optional[FullnessChange]
    moves: int
    lower_bound: int
    repairs: int
    notes: List[str]
    uneven: Dict[str, str]            # pool -> its OSD furthest off its share, after
    objects_misplaced: Optional[int]  # None when no misplaced budget bounds the run
    throttled: bool


class BalanceRun(BalanceReport, total=False):
    """A balance command's report: the proposal, and whether it was a dry run or what the
    mon accepted of it (applied, failed: set only when sent; checked: where what its map
    kept is told, execute/command_checks.py)."""
    dry_run: bool
    applied: int
    failed: List[str]
    checked: str
