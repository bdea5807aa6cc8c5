"""Health checks from a status report: what `ceph health detail` shows for pg_advisor's
sizing (the checks themselves are built in model/health_checks.py).

Pure: the module hands the result to set_health_checks, so checks appear and clear as the
report changes.
"""
from typing import Any, Dict, Tuple

from ..model import health_checks as hc


def health_checks(report: Dict[str, Any]) -> hc.Checks:
    checks: hc.Checks = {}
    # a pg_num change only where it presses (sizer.PoolSizing.pressing): a fresh cluster's
    # near-empty pools, which pg_autoscaler would leave, raise nothing
    pools = [p for p in report["pools"] if p.get("recommended_pg_num") is not None
             and p.get("pressing") and p.get("pg_autoscale_mode") != "on"]
    few = [p["recommendation"] for p in pools if p["recommended_pg_num"] > p["pg_num_target"]]
    many = [p["recommendation"] for p in pools if p["recommended_pg_num"] < p["pg_num_target"]]
    if few:
        checks.update(hc.too_few_pgs(few))
    if many:
        checks.update(hc.too_many_pgs(many))
    lost = [f"{p['name']}: {p['not_mapped']}" for p in report["pools"] if p.get("not_mapped")]
    if lost:
        checks.update(hc.pool_not_mapped(lost))
    sizing = report["cluster"].get("sizing")
    if sizing is None:
        return checks
    limit = sizing["pgs_per_osd_limit"]
    crowded = {o["id"]: o["pgs"] for o in report["osds"] if o["pgs"] is not None and o["pgs"] > limit}
    if crowded:
        checks.update(hc.pg_per_osd_limit(limit, report["cluster"]["mon_max_pg_per_osd"], crowded))
    budget = sizing["pg_memory_budget"]
    memory: Dict[int, Tuple[float, float]] = {
        o["id"]: (o.get("pg_memory_now") or 0, o.get("pg_memory_steady") or 0) for o in report["osds"]}
    heavy = {k: v for k, v in memory.items() if max(v) > budget}
    if heavy:
        checks.update(hc.osd_memory(budget, heavy))
    return checks
