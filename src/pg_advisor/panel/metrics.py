"""/metrics: pg_advisor's figures as Prometheus text, named as Ceph's prometheus module
names its own so that the series join with Ceph's: an OSD is ``ceph_daemon="osd.N"``, a
pool ``pool_id="N"`` (its name in ``pg_advisor_pool_metadata``, as in Ceph's
``ceph_pool_metadata``), values in base units (bytes, ratios 0..1, seconds since the epoch).
The prefix ``pg_advisor_`` keeps them apart from Ceph's ``ceph_`` series and dashboards.

Label values are escaped; sample values exact: an integer (or an integral float up to
2**53, such as a byte count) in all its digits, any other float as repr() gives it (the
shortest text that reads back as the same float: 0.1, 12.5, 1e+16), NaN and infinities as
Prometheus spells them. A figure the report does not have (None: an OSD without stats, no
sizing) has no sample at all, rather than a made-up value.

A state that is a word (the plan's status, the mode) is one series per possible word, 1
for the current one and 0 for the others (as kube-state-metrics does), so a series keeps
its identity when the state changes and an alert's `for` counts across it.
"""
import math
import numbers
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from ..analysis.status_types import StatusReport

Labels = Tuple[Tuple[str, Any], ...]
Number = Union[int, float]

PLAN_STATES = ("none", "running", "paused", "stopped", "done", "aborted")
MODES = ("off", "advise", "auto")


def _label(v: Any) -> str:
    """A Prometheus label value: backslash, double quote and newline escaped."""
    return str(v).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def sample_value(v: Number) -> str:
    """A sample's value in Prometheus text, exact (see the module doc)."""
    if isinstance(v, numbers.Integral):      # bool and numpy's integers included
        return str(int(v))
    f = float(v)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    # its digits, not 1.07374e+09; past 2**53 (1e300...) repr is as exact and stays short
    if f.is_integer() and abs(f) <= 2 ** 53:
        return str(int(f))
    return repr(f)


def family(name: str, help_: str, kind: str,
           samples: Iterable[Tuple[Labels, Optional[Number]]]) -> List[str]:
    out = [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
    for labels, value in samples:
        if value is None:          # not known: no sample (Prometheus then has none for it)
            continue
        lab = ",".join(f'{k}="{_label(v)}"' for k, v in labels)
        out.append(f"{name}{{{lab}}} {sample_value(value)}" if lab else f"{name} {sample_value(value)}")
    return out


def _osd(o: Mapping[str, Any]) -> Tuple[str, str]:
    return ("ceph_daemon", f"osd.{o['id']}")


def _minus(a: Optional[Number], b: Optional[Number]) -> Optional[float]:
    return None if a is None or b is None else float(a) - float(b)


def _ratio(percent: Optional[Number]) -> Optional[float]:
    return None if percent is None else float(percent) / 100.0


# every family: (name, type, help); the doc (doc/panel.rst) lists these, and a test checks
# that the text has each and nothing else
FAMILIES: Dict[str, str] = {
    "pg_advisor_osd_pgs": "PG replicas on the OSD, all pools",
    "pg_advisor_osd_pg_share": "the OSD's weight-proportional share of PG replicas, all pools",
    "pg_advisor_osd_pg_target": "the OSD's share of PG replicas as far as the rules allow (the "
                                "balancer's aim), all pools",
    "pg_advisor_osd_pg_deviation": "PG replicas on the OSD minus its target, all pools",
    "pg_advisor_osd_pool_pgs": "PG replicas of the pool on the OSD",
    "pg_advisor_osd_pool_pg_share": "the OSD's weight-proportional share of the pool's PG replicas",
    "pg_advisor_osd_pool_pg_target": "the OSD's share of the pool's PG replicas as far as its rule "
                                     "allows (the balancer's aim)",
    "pg_advisor_osd_pool_pg_deviation": "PG replicas of the pool on the OSD minus its target",
    "pg_advisor_osd_utilization_ratio": "space used on the OSD, 0..1",
    "pg_advisor_osd_pg_memory_bytes": "estimated PG memory on the OSD now",
    "pg_advisor_osd_pg_memory_steady_bytes": "estimated PG memory on the OSD with every PG log full",
    "pg_advisor_osd_primaries": "PGs whose up primary the OSD is (it serves their reads)",
    "pg_advisor_osd_primary_share": "the OSD's fair share of primaries (weight x primary affinity)",
    "pg_advisor_pg_memory_budget_bytes": "PG memory allowed per OSD (pg_memory_fraction of "
                                         "osd_memory_target)",
    "pg_advisor_pool_metadata": "the pool's name (1 per pool, as ceph_pool_metadata)",
    "pg_advisor_pool_pg_num": "the pool's pg_num",
    "pg_advisor_pool_recommended_pg_num": "pg_num pg_advisor recommends for the pool",
    "pg_advisor_pool_autoscaler_pg_num": "pg_num Ceph's pg_autoscaler would pick for the pool",
    "pg_advisor_pool_max_deviation": "largest |PG replicas - target| over the pool's OSDs",
    "pg_advisor_pool_read_balance_score": "Reef's read_balance_score of the replicated pool (1: "
                                          "primaries even; from the up primaries)",
    "pg_advisor_total_max_deviation": "largest |PG replicas - target| over the OSDs, all pools",
    "pg_advisor_mode": "pg_advisor's mode: 1 for the current one",
    "pg_advisor_plans": "plans kept side by side, by status (the open ones and the last ended ones)",
    "pg_advisor_plan_state": "the current or last plan's status: 1 for the current one (none: no plan)",
    "pg_advisor_plan_steps": "steps of the current or last plan",
    "pg_advisor_plan_steps_done": "steps of the current or last plan done",
    "pg_advisor_plan_blocked": "1 while the running plan is blocked",
    "pg_advisor_plan_blocked_reason": "why the running plan is blocked (1 per reason)",
    "pg_advisor_pins_waiting": "PGs pinned onto their old OSDs (pin-remapped) still holding their items",
    "pg_advisor_plan_backfill_bytes_left": "bytes the running plan's backfill has left to copy (at most)",
    "pg_advisor_plan_backfill_rate_bytes": "bytes per second the running plan's backfill copies, over "
                                           "the last minutes",
    "pg_advisor_backfill_waiting_pgs": "PGs waiting for a backfill reservation (backfill_wait)",
    "pg_advisor_backfill_full_osds": "OSDs whose backfill reservations are full while PGs wait",
    "pg_advisor_osds_past_fill_limit": "OSDs that take no PG: past the fill limit (nearfull_ratio or "
                                       "backfillfull_ratio), counting what is copied onto them",
    "pg_advisor_upmap_entries": "upmap entries the OSDMap holds, by kind (pg_upmap_items counts "
                                "PGs, pg_upmap_items_pairs their pairs, pg_upmap_items_ours the "
                                "PGs whose items pg_advisor set)",
    "pg_advisor_misplaced_ratio": "object copies misplaced, 0..1",
    "pg_advisor_misplaced_budget_ratio": "misplaced ratio a plan may reach (misplaced_budget or "
                                         "target_max_misplaced_ratio)",
    "pg_advisor_status_timestamp_seconds": "when the status these figures come from was computed",
}


def metrics(status: StatusReport, progress: Dict[str, Any], served: Optional[Dict[str, Any]] = None) -> str:
    """The figures of `status -f json` and `progress -f json`; `served`: what the module
    adds (mode, misplaced_ratio, misplaced_budget, at: when the status was computed)."""
    served = served or {}
    out: Dict[str, List[Tuple[Labels, Optional[Number]]]] = {k: [] for k in FAMILIES}
    for o in status["osds"]:
        d = _osd(o)
        out["pg_advisor_osd_pgs"].append(((d,), o["pgs"]))
        out["pg_advisor_osd_pg_share"].append(((d,), o["pg_share"]))
        out["pg_advisor_osd_pg_target"].append(((d,), o["pg_target"]))
        out["pg_advisor_osd_pg_deviation"].append(((d,), _minus(o["pgs"], o["pg_target"])))
        by_pool = o.get("pgs_by_pool") or {}
        targets = o["pg_target_by_pool"]
        for pid, share in sorted(o["pg_share_by_pool"].items(), key=lambda kv: int(kv[0])):
            labels = (d, ("pool_id", pid))
            out["pg_advisor_osd_pool_pgs"].append((labels, by_pool.get(pid)))
            out["pg_advisor_osd_pool_pg_share"].append((labels, share))
            out["pg_advisor_osd_pool_pg_target"].append((labels, targets.get(pid)))
            out["pg_advisor_osd_pool_pg_deviation"].append((labels, _minus(by_pool.get(pid),
                                                                           targets.get(pid))))
        out["pg_advisor_osd_utilization_ratio"].append(((d,), _ratio(o["utilization"])))
        out["pg_advisor_osd_pg_memory_bytes"].append(((d,), o["pg_memory_now"]))
        out["pg_advisor_osd_pg_memory_steady_bytes"].append(((d,), o["pg_memory_steady"]))
        out["pg_advisor_osd_primaries"].append(((d,), o.get("primaries")))
        out["pg_advisor_osd_primary_share"].append(((d,), o.get("primary_share")))
    sizing = status["cluster"].get("sizing")
    out["pg_advisor_pg_memory_budget_bytes"].append(((), sizing["pg_memory_budget"] if sizing else None))
    for p in status["pools"]:
        pool = ("pool_id", p["id"])
        out["pg_advisor_pool_metadata"].append(((pool, ("name", p["name"])), 1))
        out["pg_advisor_pool_pg_num"].append(((pool,), p["pg_num"]))
        out["pg_advisor_pool_recommended_pg_num"].append(((pool,), p.get("recommended_pg_num")))
        out["pg_advisor_pool_autoscaler_pg_num"].append(((pool,), p.get("autoscaler_pg_num")))
        out["pg_advisor_pool_read_balance_score"].append(((pool,), (p.get("read_balance") or {}).get(
            "score_stable")))
    dist = status["distribution"]
    for q in dist["pools"]:
        out["pg_advisor_pool_max_deviation"].append(((("pool_id", q["pool_id"]),), q["target_max_deviation"]))
    out["pg_advisor_total_max_deviation"].append(((), (dist.get("total") or {}).get("target_max_deviation")))
    mode = served.get("mode")
    for m in MODES:
        out["pg_advisor_mode"].append(((("mode", m),), None if mode is None else int(m == mode)))
    plan = progress.get("plan")
    steps = progress.get("steps") or []
    now = plan["status"] if plan else "none"
    kept = [p["status"] for p in progress.get("plans") or ()]
    for s in PLAN_STATES[1:]:
        out["pg_advisor_plans"].append(((("status", s),), kept.count(s)))
    for s in PLAN_STATES:
        out["pg_advisor_plan_state"].append(((("state", s),), int(s == now)))
    out["pg_advisor_plan_steps"].append(((), len(steps)))
    out["pg_advisor_plan_steps_done"].append(((), plan["next"] if plan else 0))
    blockers = list(plan["blockers"]) if plan and now == "running" else []
    out["pg_advisor_plan_blocked"].append(((), int(bool(blockers))))
    for why in blockers:
        out["pg_advisor_plan_blocked_reason"].append(((("reason", why),), 1))
    out["pg_advisor_pins_waiting"].append(((), (plan or {}).get("pins_left", 0) if now in (
        "running", "paused", "stopped") else 0))
    running = progress.get("backfill") if now == "running" else None
    out["pg_advisor_plan_backfill_bytes_left"].append(((), (running or {}).get("bytes_left")))
    out["pg_advisor_plan_backfill_rate_bytes"].append(((), (running or {}).get("rate")))
    waits = status["backfill"]
    out["pg_advisor_backfill_waiting_pgs"].append(((), waits["waiting_pgs"]))
    out["pg_advisor_backfill_full_osds"].append(((), waits.get("full_osds_total", 0)))
    out["pg_advisor_osds_past_fill_limit"].append(((), status["space"]["osds_total"]))
    e = status["cluster"]["upmap_entries"]
    for kind, n in (("pg_upmap_items", e["pg_upmap_items"]),
                    ("pg_upmap_items_pairs", e["pg_upmap_items_pairs"]),
                    ("pg_upmap", e["pg_upmap"]), ("pg_upmap_primaries", e["pg_upmap_primaries"])):
        out["pg_advisor_upmap_entries"].append(((("kind", kind),), n))
    if e.get("pg_upmap_items_ours") is not None:
        out["pg_advisor_upmap_entries"].append(((("kind", "pg_upmap_items_ours"),), e["pg_upmap_items_ours"]))
    out["pg_advisor_misplaced_ratio"].append(((), served.get("misplaced_ratio")))
    out["pg_advisor_misplaced_budget_ratio"].append(((), served.get("misplaced_budget")))
    out["pg_advisor_status_timestamp_seconds"].append(((), served.get("at")))
    lines: List[str] = []
    for name, help_ in FAMILIES.items():
        lines += family(name, help_, "gauge", out[name])
    return "\n".join(lines) + "\n"
