"""One immutable numpy view of the cluster, loaded from the dumps.

Built from the same four documents whether they come from the mgr (`get('osd_map')`,
`get('osd_map_crush')`, `get('pg_dump')`, `get('df')`) or from JSON dumps
(`ceph osd dump`, `ceph osd crush dump`, `ceph pg dump`, `ceph df`, all `-f json`):
the mgr hands out exactly those shapes, so one loader serves both and the live and
offline answers agree by construction. Nothing below this layer reads the mgr.

Here: load(), which checks each document's shape and runs a loader per dump
(load_crush, load_osdmap, load_df, load_pgs; their fields through checks.py), and the
cluster settings (Settings). The types are in cluster.py, named here too for the layers above.
"""
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from .checks import MAX_INT64, MAX_PG_NUM, as_int, float_field, int_field, map_field, str_field
from .cluster import CONFIG_DEFAULTS, POOL_TYPES, Bucket, FillRatios, Json, Osds, Pgs, Pool, Rule, Snapshot
from .errors import AdvisorError
from .crush_binary import with_stored
from .load_crush import (STEP_ARGS, TUNABLES, add_weight_above, bucket_parents, load_buckets,
                         load_choose_args, load_rules, load_tunables, load_types, walk_up)
from .load_df import pool_usage
from .load_osdmap import (bound_upmaps, highest_named, load_osds, load_pools, load_upmap_primaries,
                          load_upmaps)
from .load_pgs import check_pg_osds, load_pgs, pg_map_of
from .mappable import split_pools
from .osd_config import osd_settings

# the types and the loaders' names the layers above read here: one place to import from
__all__ = ["Bucket", "Rule", "Pool", "Osds", "Pgs", "Snapshot", "CONFIG_DEFAULTS", "CONFIG_BOUNDS",
           "CONFIG_MAX", "POOL_TYPES", "MAX_PG_NUM", "STEP_ARGS", "TUNABLES", "bucket_parents",
           "walk_up", "add_weight_above", "load_upmaps", "pg_map_of", "Settings", "load"]


# The range of each setting in CONFIG_DEFAULTS (others: 0..CONFIG_MAX); pg counts and
# memory are computed from them.
CONFIG_MAX = 1 << 40
# setting -> (least, most, ceiling): a ceiling above its bound caps nothing the model can
# reach, so it is read as the bound (a mon that allows pools of 2^24 PGs is still answered);
# any other value outside its bounds is refused. Unlisted settings: 0..CONFIG_MAX.
CONFIG_BOUNDS: Mapping[str, Tuple[int, int, bool]] = {
    # a threshold only, never a size: operators set it to 10^8 to silence Ceph's check, and
    # such a cluster must still be answered
    "mon_max_pg_per_osd": (1, 1 << 53, False),
    "mon_max_pool_pg_num": (1, MAX_PG_NUM, True),
    "mon_target_pg_per_osd": (1, 1 << 20, False),
    "osd_memory_target": (1, 1 << 50, False),
    "mgr_max_pg_num_change": (1, 1 << 20, True),
}


@dataclass(frozen=True)
class Settings:
    """The cluster's settings a snapshot is read with, beside its dumps: mon_max_pg_per_osd,
    and by name any other of CONFIG_DEFAULTS (`config`: the mgr's settings, or the CLI's
    flags); a value in `config`, unless None, wins over `mon_max_pg_per_osd`, names outside
    CONFIG_DEFAULTS are passed over, and each value is checked against CONFIG_BOUNDS."""
    mon_max_pg_per_osd: int = CONFIG_DEFAULTS["mon_max_pg_per_osd"]
    config: Optional[Mapping[str, Any]] = None
    # `ceph config dump -f json`: each OSD's own memory and PG-log settings (osd_config.py);
    # None: every OSD has `config`'s. Offline a bad dump is refused; the mgr passes
    # strict=False, and a dump it cannot read leaves every OSD at `config`'s values
    config_dump: Optional[Sequence[Json]] = None
    strict: bool = True
    # the binary CRUSH map (`ceph osd getcrushmap`): what its buckets store that the dump
    # does not show (model/crush_binary.py); None: computed from the dump's weights
    crush_binary: Optional[bytes] = None


def _load_config(settings: Settings) -> Dict[str, int]:
    raw = dict(CONFIG_DEFAULTS, mon_max_pg_per_osd=settings.mon_max_pg_per_osd)
    raw.update({k: v for k, v in (settings.config or {}).items()
                if k in CONFIG_DEFAULTS and v is not None})
    cfg = {}
    for k, v in raw.items():
        lo, hi, ceiling = CONFIG_BOUNDS.get(k, (0, CONFIG_MAX, False))
        cfg[k] = min(as_int(v, k, lo, max(hi, CONFIG_MAX) if ceiling else hi), hi)
    return cfg


def _load_autoscale(autoscale: Optional[Sequence[Json]]) -> Optional[Dict[str, Json]]:
    if autoscale is None:
        return None
    if not isinstance(autoscale, list) or any(not isinstance(a, Mapping) or "pool_name" not in a
                                              for a in autoscale):
        raise AdvisorError.invalid("autoscale status: not the output of "
                                   "`ceph osd pool autoscale-status -f json`")
    out: Dict[str, Json] = {}
    for a in autoscale:
        name = str_field(a, "pool_name", "autoscale status")
        entry = dict(a)
        if a.get("pg_num_final") is not None:
            entry["pg_num_final"] = int_field(a, "pg_num_final", f"autoscale status: pool {name}",
                                              0, MAX_PG_NUM)
        out[name] = entry
    return out


def _osd_config(settings: Settings, osds: Osds, cfg: Mapping[str, int]) -> Dict[str, Any]:
    """Each OSD's own settings from the config dump (none without one)."""
    if settings.config_dump is None:
        return {}
    try:
        return osd_settings(settings.config_dump, osds.host, osds.device_class, cfg)
    except AdvisorError as e:
        if settings.strict:
            raise AdvisorError.invalid(f"config dump: {e.message}") from None
        return {}


def load(osd_dump: Json, crush: Json, pg_dump: Optional[Json] = None,
         df: Optional[Json] = None, autoscale: Optional[Sequence[Json]] = None,
         settings: Settings = Settings()) -> Snapshot:
    """Build a Snapshot from the dumps (one parameter each; `autoscale`: `ceph osd pool
    autoscale-status -f json`) and the cluster's settings; raise AdvisorError(EINVAL) on
    anything malformed.

    Every number is checked (finite, within the bounds above) before it sizes anything.
    """
    for doc, what, keys in ((osd_dump, "osd dump", ("epoch", "pools", "osds", "max_osd")),
                            (crush, "crush dump", ("buckets", "rules", "devices"))):
        if not isinstance(doc, Mapping) or any(k not in doc for k in keys):
            raise AdvisorError.invalid(
                f"{what}: not the output of `ceph {'osd dump' if what == 'osd dump' else 'osd crush dump'}"
                f" -f json` (needs fields {', '.join(keys)})")
    pg_map = pg_map_of(pg_dump) if pg_dump is not None else None
    if pg_map is not None and (not isinstance(pg_map, Mapping) or "pg_stats" not in pg_map):
        raise AdvisorError.invalid("pg dump: not the output of `ceph pg dump -f json` "
                                   "(needs field pg_stats)")
    if df is not None and (not isinstance(df, Mapping) or "pools" not in df):
        raise AdvisorError.invalid("df: not the output of `ceph df -f json` (needs field pools)")
    cfg = _load_config(settings)
    try:
        buckets = load_buckets(crush)
        if settings.crush_binary is not None:
            buckets = with_stored(buckets, settings.crush_binary, settings.strict)
        types = load_types(crush)
        pools = load_pools(osd_dump, pool_usage(df, pg_map))
        bound_upmaps(osd_dump, pools)
        upmap, upmap_items = load_upmaps(osd_dump)
        stat_sum = map_field(map_field(pg_map or {}, "pg_stats_sum", "pg dump"), "stat_sum",
                             "pg dump: pg_stats_sum")
        pgs = load_pgs(pg_map) if pg_map is not None else None
        osds = load_osds(osd_dump, crush, buckets, pg_map, highest_named(upmap, upmap_items, pgs))
        if pgs is not None:
            check_pg_osds(pgs, osds.count)
        rules, tunables = load_rules(crush, types), load_tunables(crush)
        mapped, unmapped = split_pools(pools, rules, tuple(STEP_ARGS), buckets, tunables)
        per_osd = _osd_config(settings, osds, cfg)
        return Snapshot(
            epoch=int_field(osd_dump, "epoch", "osd dump", 0, (1 << 32) - 1),
            flags=tuple(f for f in str_field(osd_dump, "flags", "osd dump", "").split(",") if f),
            osds=osds,
            buckets=buckets,
            rules=rules,
            tunables=tunables,
            pools=mapped,
            unmapped=unmapped,
            pgs=pgs,
            pg_upmap=upmap, pg_upmap_items=upmap_items,
            pg_upmap_primaries=load_upmap_primaries(osd_dump),
            crush_types=types,
            choose_args=load_choose_args(crush, buckets),
            config=cfg,
            osd_config=per_osd,
            autoscale=_load_autoscale(autoscale),
            misplaced_objects=int_field(stat_sum, "num_objects_misplaced", "pg dump: pg_stats_sum",
                                        0, MAX_INT64, 0),
            require_min_compat_client=str_field(osd_dump, "require_min_compat_client", "osd dump", ""),
            fill_ratios=_fill_ratios(osd_dump))
    except AdvisorError:
        raise
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError) as e:
        # anything the field checks above did not anticipate still gets one clear line
        raise AdvisorError.invalid(f"malformed dump: {type(e).__name__}: {e}") from None


def _fill_ratios(osd_dump: Json) -> FillRatios:
    """The osd dump's nearfull, backfillfull and full ratios; Ceph's default where the dump
    has none, or 0 (a map from before Luminous kept them in the PG map)."""
    ratios = {k: float_field(osd_dump, f"{k}_ratio", "osd dump", 0.0, 1.0, 0.0) for k in FillRatios._fields}
    return FillRatios(**{k: v or getattr(FillRatios(), k) for k, v in ratios.items()})
