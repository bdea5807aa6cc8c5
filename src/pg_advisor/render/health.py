"""Health checks from a status report: what `ceph health detail` shows for pg_advisor.

Pure: the module hands the result to set_health_checks, so checks appear and clear as the
report changes.
"""
from typing import Any, Dict, List

MIB = 1 << 20


def _check(summary: str, detail: List[str], severity: str = "warning") -> Dict[str, Any]:
    return {"severity": severity, "summary": summary, "count": len(detail), "detail": detail}


def health_checks(report: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    checks: Dict[str, Dict[str, Any]] = {}
    # a pg_num change only where it presses (sizer.PoolSizing.pressing): a fresh cluster's
    # near-empty pools, which pg_autoscaler would leave, raise nothing
    pools = [p for p in report["pools"] if p.get("recommended_pg_num") is not None
             and p.get("pressing") and p.get("pg_autoscale_mode") != "on"]
    few = [p for p in pools if p["recommended_pg_num"] > p["pg_num_target"]]
    many = [p for p in pools if p["recommended_pg_num"] < p["pg_num_target"]]
    if few:
        checks["PG_ADVISOR_TOO_FEW_PGS"] = _check(
            f"{len(few)} pool(s) have fewer PGs than pg_advisor recommends",
            [p["recommendation"] for p in few])
    if many:
        checks["PG_ADVISOR_TOO_MANY_PGS"] = _check(
            f"{len(many)} pool(s) have more PGs than pg_advisor recommends",
            [p["recommendation"] for p in many])
    lost = [p for p in report["pools"] if p.get("not_mapped")]
    if lost:
        checks["PG_ADVISOR_POOL_NOT_MAPPED"] = _check(
            f"{len(lost)} pool(s) pg_advisor cannot map: no sizing, balance or what-if for them",
            [f"{p['name']}: {p['not_mapped']}" for p in lost])
    sizing = report["cluster"].get("sizing")
    if sizing is None:
        return checks
    limit = sizing["pgs_per_osd_limit"]
    crowded = [o for o in report["osds"] if o["pgs"] is not None and o["pgs"] > limit]
    if crowded:
        checks["PG_ADVISOR_PG_PER_OSD_LIMIT"] = _check(
            f"{len(crowded)} OSD(s) hold more than {limit} PGs "
            f"(mon_max_pg_per_osd {report['cluster']['mon_max_pg_per_osd']} less headroom)",
            [f"osd.{o['id']} holds {o['pgs']} PGs" for o in crowded])
    budget = sizing["pg_memory_budget"]
    heavy = [o for o in report["osds"]
             if max(o.get("pg_memory_now") or 0, o.get("pg_memory_steady") or 0) > budget]
    if heavy:
        checks["PG_ADVISOR_OSD_MEMORY"] = _check(
            f"{len(heavy)} OSD(s) may need more PG memory than {budget / MIB:.0f} MiB",
            [f"osd.{o['id']}: PG memory {(o.get('pg_memory_now') or 0) / MIB:.0f} MiB now, up to "
             f"{(o.get('pg_memory_steady') or 0) / MIB:.0f} MiB with full PG logs" for o in heavy])
    return checks
