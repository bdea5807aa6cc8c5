"""Health checks from a status report: which of them fire for pg_advisor's sizing, the
PG limit, OSD memory and unmapped pools (each built in model/health_checks.py; render/
only shows them). Beside the status: whether a check fires is a rule, not a view.

Pure: the module hands the result to set_health_checks, so checks appear and clear as the
report changes.
"""
from typing import Any, Dict, List, Tuple

from ..model import health_checks as hc
from ..model.cluster import AUTOSCALER_SILENT, AUTOSCALER_SPEAKS
from .status_types import StatusReport


def health_checks(report: StatusReport) -> hc.Checks:
    checks: hc.Checks = {}
    # a pg_num change only where it presses (sizer.PoolSizing.pressing): a fresh cluster's
    # near-empty pools, which pg_autoscaler would leave, raise nothing; and never on a pool
    # pg_autoscaler acts or warns on (one voice a pool: status says where they differ)
    few: List[str] = []
    many: List[str] = []
    for p in report["pools"]:
        rec, why = p.get("recommended_pg_num"), p.get("recommendation")
        if (rec is None or why is None or not p.get("pressing")
                or p.get("autoscaler_mode", p.get("pg_autoscale_mode")) != AUTOSCALER_SILENT):
            continue
        if rec > p["pg_num_target"]:
            few.append(why)
        elif rec < p["pg_num_target"]:
            many.append(why)
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
    heavy: Dict[int, Tuple[float, float, float, float, float]] = {}
    for o in report["osds"]:
        now, steady = o.get("pg_memory_now") or 0, o.get("pg_memory_steady") or 0
        peak = o.get("pg_memory_peak") or 0
        budget = o.get("pg_memory_budget", sizing["pg_memory_budget"])
        room = o.get("pg_memory_peak_budget")
        if max(now, steady) > budget or (room is not None and peak > room):
            heavy[o["id"]] = (now, steady, peak, budget, room if room is not None else peak)
    if heavy:
        checks.update(hc.osd_memory(heavy))
    checks.update(_targets_and_roots(report, sizing))
    return checks


def _targets_and_roots(report: StatusReport, sizing: Dict[str, Any]) -> hc.Checks:
    """Overcommitted targets where pg_autoscaler does not say it itself (its status unknown,
    the noautoscale flag set: it then evaluates nothing, or the root overlaps: it skips
    it); overlapping roots where pools on them expect pg_autoscaler."""
    out: hc.Checks = {}
    overlapped = {r for x in sizing.get("overlapping_roots", ()) for r in x["roots"]}
    silent = report.get("autoscaler_silent", True)
    lines = [c["text"] for c in sizing.get("overcommitted", ()) if silent or c["root"] in overlapped]
    if lines:
        out.update(hc.target_overcommitted(lines))
    # pools pg_autoscaler is meant to size (on, warn) but skips, where a change is due: an
    # overlap alone (`.mgr` on the class-less root beside class rules) is common and raises
    # nothing
    stuck = {p["name"]: f"{p['name']} {p['pg_num_target']} -> {p['recommended_pg_num']}"
             for p in report["pools"] if p.get("autoscaler_mode") in AUTOSCALER_SPEAKS
             and p.get("recommended_pg_num") not in (None, p["pg_num_target"])}
    roots = [f"{' and '.join(x['roots'])} share {x['osds']} OSDs: pg_autoscaler skips their pools; "
             f"pg_advisor would take {', '.join(stuck[n] for n in x['pools'] if n in stuck)}"
             for x in sizing.get("overlapping_roots", ()) if any(n in stuck for n in x["pools"])]
    if roots:
        out.update(hc.overlapping_roots(roots))
    return out
