"""The cluster as pg_advisor sees it: frozen records and numpy vectors, one Snapshot.

The types only; model/snapshot.py builds them from the dumps (a loader per dump beside
it), and every layer above reads them. Nothing here reads the mgr or a file.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .constants import WEIGHT_ONE
from .errors import AdvisorError


POOL_TYPES = {1: "replicated", 3: "erasure"}
# the pg_autoscale_mode values where pg_autoscaler changes pg_num itself, and where it
# warns or acts (Snapshot.autoscaler_acts/_speaks; a status row's autoscaler_mode)
AUTOSCALER_ACTS = frozenset({"on"})
AUTOSCALER_SPEAKS = frozenset({"on", "warn"})
AUTOSCALER_SILENT = "off"

# Cluster settings the layers above use, with Pacific's defaults for what a dump lacks.
CONFIG_DEFAULTS: Mapping[str, int] = {
    "mon_max_pg_per_osd": 250,
    "mon_max_pool_pg_num": 65536,
    "mon_target_pg_per_osd": 100,
    "osd_memory_target": 4 << 30,
    "osd_memory_base": 768 << 20,
    "osd_memory_cache_min": 128 << 20,
    "osd_min_pg_log_entries": 250,
    "osd_max_pg_log_entries": 10000,
    "osd_target_pg_log_entries_per_osd": 300000,
    "osd_pg_log_dups_tracked": 3000,
    "osd_max_backfills": 1,         # backfill reservations per OSD, local and remote
    "mgr_max_pg_num_change": 128,   # how far Ceph's mgr moves pg_num ahead of pgp_num at once
}

Json = Mapping[str, Any]


def frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Bucket:
    id: int
    name: str
    type_name: str
    type_id: int
    alg: str
    hash: str
    items: np.ndarray     # child ids (OSDs >= 0, buckets < 0)
    weights: np.ndarray   # child weights in CRUSH units (1.0 == 0x10000)
    # what Ceph stored beside them, from the binary map (model/crush_binary.py): a straw
    # bucket's straws, a tree's node weights, a list's sums; () when not read
    stored: Tuple[int, ...] = ()

    @property
    def fixed_weights(self) -> np.ndarray:
        """The weights as CRUSH stores them: 16.16 fixed point integers."""
        return np.rint(self.weights * WEIGHT_ONE).astype(np.int64)

    @property
    def is_shadow(self) -> bool:
        # device-class shadow trees are named "<bucket>~<class>"
        return "~" in self.name


# the choose steps of a rule (the type is the second argument of each)
CHOOSE_OPS = ("choose_firstn", "choose_indep", "chooseleaf_firstn", "chooseleaf_indep", "choosemsr")


@dataclass(frozen=True)
class RuleStep:
    """One step of a CRUSH rule, read once by the loader and used as it is by the mapper
    (crush/), the rules' questions (rules/) and the balancer: its op, and its arguments as
    crush_do_rule takes them. An op the model does not know is kept by name alone (its
    rule maps no pool: model/mappable.py)."""
    op: str
    arg1: int = 0      # take: the item; choose*: how many; set_*: the value
    arg2: int = 0      # choose*: the bucket type id

    @property
    def chooses(self) -> bool:
        return self.op in CHOOSE_OPS

    @property
    def leaf(self) -> bool:
        """A chooseleaf step: one OSD under each bucket it picks."""
        return self.op.startswith("chooseleaf")


@dataclass(frozen=True)
class Rule:
    id: int
    name: str
    type: int
    steps: Tuple[RuleStep, ...]
    ruleset: int = -1
    min_size: int = 1
    max_size: int = 10

    def take_items(self) -> List[int]:
        return [s.arg1 for s in self.steps if s.op == "take"]


@dataclass(frozen=True)
class Pool:
    id: int
    name: str
    type: str
    size: int
    min_size: int
    crush_rule: int
    pg_num: int
    pgp_num: int
    pg_num_target: int
    pgp_num_target: int
    autoscale_mode: str
    erasure_code_profile: str
    options: Mapping[str, Any]
    stored: Optional[int]
    objects: Optional[int]
    hashpspool: bool = True
    data_chunks: int = 1      # EC k: a shard holds 1/k of a PG's bytes; replicas hold all
    bulk: bool = False        # the pool's `bulk` flag: its operator says it will be big
    bytes_used: Optional[int] = None   # raw bytes on its OSDs (df's bytes_used), when known


@dataclass(frozen=True)
class Osds:
    """Per-OSD vectors indexed by OSD id: 0 up to the highest id the maps name (below
    max_osd), and on to the highest device CRUSH names when that is past max_osd (such a
    device never exists)."""
    exists: np.ndarray
    up: np.ndarray
    in_: np.ndarray
    reweight: np.ndarray        # 0..1 (0 when out)
    primary_affinity: np.ndarray  # 0..1 (1 is the default)
    crush_weight: np.ndarray    # in CRUSH units, from the non-shadow tree
    device_class: Tuple[Optional[str], ...]
    host: Tuple[Optional[str], ...]
    bytes_used: np.ndarray      # -1 where no stats were given
    bytes_total: np.ndarray
    pgs_held: np.ndarray        # PGs the OSD says it holds (osd_stats num_pgs), -1 unknown:
    #                             with a deleted pool's PGs still being removed, and strays

    @property
    def count(self) -> int:
        return int(self.exists.shape[0])


@dataclass(frozen=True)
class Pgs:
    """One row per PG present in the PG stats."""
    pool: np.ndarray        # pool id
    ps: np.ndarray          # placement seed (the part after the dot)
    up: np.ndarray          # (n, width) OSD ids, NO_OSD for holes/padding
    up_primary: np.ndarray
    bytes: np.ndarray
    objects: np.ndarray
    state: Tuple[str, ...]
    acting: np.ndarray      # (n, width) like up: the OSDs that hold the PG now
    log_size: np.ndarray    # span of the PG log's versions (head - tail)
    log_tail: np.ndarray    # (n, 2) the log's tail version (log_start) as epoch, version
    split_bits: np.ndarray  # parent_split_bits: > 0 for a PG born in a split
    # whether the stats gave the logs (log_size, log_start, parent_split_bits): the brief
    # stats a big cluster is read through (model/pg_brief.py) do not, and the three are 0
    logs: bool = True
    # log_dups_size: the dups the PG keeps, -1 where the stats do not say (None: nowhere)
    log_dups: Optional[np.ndarray] = None

    @property
    def count(self) -> int:
        return int(self.pool.shape[0])

    def rows_of(self, pgids: Sequence[str]) -> np.ndarray:
        """The rows (indices) of those PGs ("POOL.SEED", seed in hex) the stats have."""
        want = np.array([(int(p) << 32) | int(s, 16) for p, s in (x.split(".") for x in pgids)],
                        dtype=np.int64)
        return np.flatnonzero(np.isin((self.pool.astype(np.int64) << 32) | self.ps.astype(np.int64), want))


class FillRatios(NamedTuple):
    """The OSDMap's fullness ratios (`ceph osd set-nearfull-ratio` and its kin; Ceph's
    defaults here): past nearfull the cluster warns, past backfillfull an OSD refuses
    backfill into it (backfill_toofull), past full writes stop."""
    nearfull: float = 0.85
    backfillfull: float = 0.90
    full: float = 0.95


@dataclass(frozen=True)
class Snapshot:
    epoch: int
    flags: Tuple[str, ...]
    osds: Osds
    buckets: Mapping[int, Bucket]
    rules: Mapping[int, Rule]
    tunables: Mapping[str, Any]
    pools: Tuple[Pool, ...]
    pgs: Optional[Pgs]
    pg_upmap: Mapping[str, Tuple[int, ...]]
    pg_upmap_items: Mapping[str, Tuple[Tuple[int, int], ...]]
    crush_types: Mapping[str, int] = field(default_factory=dict)
    pg_upmap_primaries: Mapping[str, int] = field(default_factory=dict)
    # choose_args key (pool id, or -1 for the default) -> bucket id -> (weight_set, ids)
    choose_args: Mapping[int, Mapping[int, Tuple[Tuple[Tuple[int, ...], ...],
                                                 Optional[Tuple[int, ...]]]]] = \
        field(default_factory=dict)
    config: Mapping[str, int] = field(default_factory=lambda: dict(CONFIG_DEFAULTS))
    # settings whose value may differ per OSD (the mon's config database: `config set
    # osd.N`, per host or class, cephadm's memory autotune), each a vector over OSD ids;
    # a setting not here has its `config` value on every OSD
    osd_config: Mapping[str, np.ndarray] = field(default_factory=dict)
    # `ceph osd pool autoscale-status -f json`, by pool name, when known
    autoscale: Optional[Mapping[str, Mapping[str, Any]]] = None
    misplaced_objects: int = 0    # object copies misplaced now (PG stats)
    # pools whose rule the CRUSH model cannot follow (model/mappable.py), with the reason:
    # not in `pools`, so nothing built on CRUSH sees them; status and health name them
    unmapped: Tuple[Tuple[Pool, str], ...] = ()
    # the osd dump's require_min_compat_client ("luminous", "reef"; "" when the dump has
    # none): the oldest client release the mon lets in, which gates pg-upmap-primary (Reef)
    require_min_compat_client: str = ""
    fill_ratios: FillRatios = FillRatios()
    # what is computed from this snapshot alone and may be shared by whoever reads it (the
    # mgr reuses a snapshot while the cluster is unchanged: its CRUSH results, its status);
    # not an argument, so dataclasses.replace gives a changed copy a memo of its own
    memo: Dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def autoscaler_mode(self, pool: Pool) -> str:
        """What pg_autoscaler does with the pool: its pg_autoscale_mode (on, warn, off),
        off for every pool while the OSDMap has the `noautoscale` flag (`ceph osd pool set
        noautoscale`), as pg_autoscaler reads it."""
        return "off" if "noautoscale" in self.flags else (pool.autoscale_mode or "off")

    # pg_autoscaler's rule, said once: where it acts (on) pg_advisor never changes pg_num;
    # where it speaks (on, warn) pg_advisor raises no second warning and says where it
    # differs; where it is silent (off, or the noautoscale flag) pg_advisor's voice is the one
    def autoscaler_acts(self, pool: Pool) -> bool:
        return self.autoscaler_mode(pool) in AUTOSCALER_ACTS

    def autoscaler_speaks(self, pool: Pool) -> bool:
        return self.autoscaler_mode(pool) in AUTOSCALER_SPEAKS

    def autoscaler_silent(self, pool: Pool) -> bool:
        return self.autoscaler_mode(pool) == AUTOSCALER_SILENT

    @property
    def mon_max_pg_per_osd(self) -> int:
        """One place for it: the config the snapshot was loaded with."""
        return int(self.config["mon_max_pg_per_osd"])

    def pg_rows(self, pool_id: int) -> np.ndarray:
        """The rows of the PG stats that belong to the pool, ascending. One sort for every
        pool (kept in the memo), so a pass over the pools costs O(PGs log PGs) once, not
        a mask of every PG per pool."""
        if self.pgs is None:
            return np.zeros(0, dtype=np.int64)
        kept = self.memo.get("pg_rows")
        if kept is None:
            order = np.argsort(self.pgs.pool, kind="stable")
            ids, starts = np.unique(self.pgs.pool[order], return_index=True)
            ends = np.append(starts[1:], order.size)
            spans = dict(zip(ids.tolist(), zip(starts.tolist(), ends.tolist())))
            kept = self.memo.setdefault("pg_rows", (order, spans))
        order, spans = kept
        a, b = spans.get(pool_id, (0, 0))
        return np.asarray(order[a:b])

    def pool_by_name(self, name: str) -> Pool:
        for p in self.pools:
            if p.name == name:
                return p
        for p, why in self.unmapped:
            if p.name == name:
                raise AdvisorError.invalid(f"pool '{name}' is not mapped: {why}")
        raise AdvisorError.not_found(f"pool '{name}' does not exist")

    def rule(self, rule_id: int) -> Rule:
        try:
            return self.rules[rule_id]
        except KeyError:
            raise AdvisorError.invalid(f"crush rule {rule_id} is not in the CRUSH map") from None
