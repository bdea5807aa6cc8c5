"""pg_advisor's sizing beside pg_autoscaler's: where they differ, why, in words; and the
sizing's cluster-wide figures as plain data for the views."""
from typing import Any, Dict, List, Mapping, Optional

from .sizer import PoolSizing, SizingResult

# why pg_advisor's number differs, by the reason codes it carries, strongest first
WHY = (
    ("cap_pgs", "the PG limit: at pg_autoscaler's number an OSD would pass mon_max_pg_per_osd "
                "less headroom"),
    ("cap_peak", "OSD memory: at pg_autoscaler's number an OSD's PG memory would outgrow its "
                 "osd_memory_target when it recovers"),
    ("cap_memory", "OSD memory in steady state"),
    ("max", "the pool's pg_num_max (or the mon's ceiling)"),
    ("min", "the pool's pg_num_min"),
    ("bulk_kept", "a bulk pool is never merged for lack of data"),
    ("merge_avoided", "a merge that moves data for no gain is avoided: pg_advisor merges only "
                      "under PG or memory pressure, or once the ideal is past the merge band"),
    ("hysteresis", "growth waits for the hysteresis band"),
    ("overlap", "its root overlaps another: pg_advisor splits the shared OSDs' budget by data, "
                "pg_autoscaler (Tentacle) does not scale such pools"),
)


def autoscaler_difference(s: PoolSizing, auto: Optional[Mapping[str, Any]],
                          sizing: SizingResult) -> Optional[str]:
    """Why pg_advisor's recommendation is not pg_autoscaler's `pg_num_final`, or None when
    they agree (or pg_autoscaler's is not known)."""
    if not auto or auto.get("pg_num_final") is None:
        return None
    theirs = int(auto["pg_num_final"])
    if not s.known:
        return (f"pg_autoscaler would pick {theirs}; pg_advisor makes no recommendation without "
                "the pool's usage")
    if theirs == s.recommended:
        return None
    codes = {r.code for r in s.reasons}
    why: List[str] = [text for code, text in WHY if code in codes]
    if "share" in codes and not why:
        if s.kind.value == "bulk":
            why.append("a bulk pool is counted as the free space of its OSDs it will fill, shared "
                       "with the other pools there by data (pg_autoscaler: an even split of what "
                       "the other pools leave)")
        else:
            why.append("pg_advisor gives the pools with data their OSDs' whole PG budget by data "
                       "share; pg_autoscaler gives a non-bulk pool its share of the capacity, i.e. "
                       "how full its OSDs are")
        ratio = float(s.pool.options.get("target_size_ratio", 0) or 0)
        if ratio and float(auto.get("effective_target_ratio", ratio) or 0) > ratio + 1e-9:
            why.append(f"pg_autoscaler normalises target_size_ratio by the ratios on the root ({ratio:g} "
                       f"counts as {float(auto['effective_target_ratio']):.3g} there); pg_advisor reads "
                       "it as a share of the capacity, beside the other pools' data")
        if s.pool.type == "erasure":
            why.append("an EC PG counts its k+m shards against the budget (pg_autoscaler divides "
                       "by the raw rate (k+m)/k)")
        if sizing.target_source == "target_pgs_per_osd":
            why.append(f"the module's target_pgs_per_osd {sizing.target_pgs} is set (pg_autoscaler "
                       "uses mon_target_pg_per_osd)")
    if "near_empty" in codes and not why:
        why.append("near-empty pools get their floor")
    return (f"pg_autoscaler would pick {theirs}, pg_advisor {s.recommended}: "
            + ("; ".join(why) if why else "rounding of a different ideal"))


def sizing_summary(sizing: SizingResult) -> Dict[str, Any]:
    """The cluster-wide sizing figures: the target and where it comes from, the caps, which
    of them binds, overlapping roots and overcommitted targets."""
    return {
        "target_pgs_per_osd": sizing.target_pgs,
        "target_source": sizing.target_source,
        "pgs_per_osd_limit": sizing.limit_pgs,
        "pg_memory_budget": int(sizing.memory_budget),
        "balanced": sizing.balanced,
        "pgs_per_osd_max_recommended": int(sizing.pgs_per_osd_after.max(initial=0)),
        "pg_memory_max_recommended": int(sizing.memory_after.max(initial=0)),
        "pg_memory_peak_max_recommended": int(sizing.peak_after.max(initial=0)),
        "binding": sizing.binding,
        "pgs_per_osd_memory_allows": sizing.memory_allows,
        "memory_allows_osd": sizing.memory_allows_osd,
        "overlapping_roots": [{"roots": list(x.roots), "osds": x.osds, "pools": list(x.pools)}
                              for x in sizing.overlaps],
        "overcommitted": [{"root": c.root, "pools": list(c.pools), "factor": round(c.factor, 4),
                           "by": c.what, "text": c.sentence()} for c in sizing.overcommits],
    }
