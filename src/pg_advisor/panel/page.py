"""What the HTTP server returns, as pure functions of the reports.

The page is static: its script fetches the JSON API and builds every element with
textContent and SVG nodes, never from markup, so pool and host names cannot inject
anything. /metrics is Prometheus text with escaped label values and exact sample values:
an integer (or an integral float up to 2**53, such as a byte count) in all its digits, any
other float as repr() gives it (the shortest text that reads back as the same float: 0.1,
12.5, 1e+16), NaN and infinities as Prometheus spells them (NaN, +Inf, -Inf). A figure the
report does not have (None: an OSD without stats, no sizing) has no sample at all, rather
than a made-up value or a NaN that would read as "measured, not a number".
"""
import math
import numbers
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

Labels = Tuple[Tuple[str, Any], ...]
Number = Union[int, float]


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


def metrics(status: Dict[str, Any], progress: Dict[str, Any]) -> str:
    """The distribution, sizing and plan figures of `status -f json` and `progress -f json`."""
    lines: List[str] = []
    osds, pools = status["osds"], status["pools"]
    lines += family("pg_advisor_osd_pgs", "PG replicas on the OSD (all pools)", "gauge",
                    [((("osd", o["id"]),), o["pgs"]) for o in osds])
    lines += family("pg_advisor_osd_pg_share", "the OSD's weight-proportional share of PG replicas",
                    "gauge", [((("osd", o["id"]),), o["pg_share"]) for o in osds])
    lines += family("pg_advisor_osd_pool_pgs", "PG replicas of the pool on the OSD", "gauge",
                    [((("osd", o["id"]), ("pool_id", pid)), n)
                     for o in osds for pid, n in (o.get("pgs_by_pool") or {}).items()])
    lines += family("pg_advisor_osd_pool_pg_share", "the OSD's weight-proportional share of the pool's PG "
                    "replicas", "gauge",
                    [((("osd", o["id"]), ("pool_id", pid)), v)
                     for o in osds for pid, v in o["pg_share_by_pool"].items()])
    lines += family("pg_advisor_osd_utilization_percent", "space used on the OSD, %", "gauge",
                    [((("osd", o["id"]),), o["utilization"]) for o in osds])
    lines += family("pg_advisor_osd_pg_memory_bytes", "estimated PG memory on the OSD now", "gauge",
                    [((("osd", o["id"]),), o["pg_memory_now"]) for o in osds])
    lines += family("pg_advisor_osd_pg_memory_steady_bytes", "estimated PG memory on the OSD with every "
                    "PG log full", "gauge", [((("osd", o["id"]),), o["pg_memory_steady"]) for o in osds])
    sizing = status["cluster"].get("sizing")
    lines += family("pg_advisor_pg_memory_budget_bytes", "PG memory allowed per OSD", "gauge",
                    [((), sizing["pg_memory_budget"] if sizing else None)])
    lines += family("pg_advisor_pool_pg_num", "the pool's pg_num", "gauge",
                    [((("pool", p["name"]), ("pool_id", p["id"])), p["pg_num"]) for p in pools])
    lines += family("pg_advisor_pool_recommended_pg_num", "pg_num pg_advisor recommends", "gauge",
                    [((("pool", p["name"]), ("pool_id", p["id"])), p.get("recommended_pg_num"))
                     for p in pools])
    dist = status["distribution"]
    lines += family("pg_advisor_pool_max_deviation", "largest |PGs - share| over the pool's OSDs",
                    "gauge", [((("pool", p["pool"]),), p["max_deviation"]) for p in dist["pools"]])
    if dist.get("total"):
        lines += family("pg_advisor_total_max_deviation", "largest |PGs - share| over all pools",
                        "gauge", [((), dist["total"]["max_deviation"])])
    plan = progress.get("plan")
    steps = progress.get("steps") or []
    running = 1 if plan and plan["status"] == "running" else 0
    lines += family("pg_advisor_plan_running", "1 while a plan runs", "gauge", [((), running)])
    lines += family("pg_advisor_plan_steps", "steps in the current or last plan", "gauge",
                    [((), len(steps))])
    lines += family("pg_advisor_plan_steps_done", "steps done in the current or last plan", "gauge",
                    [((), plan["next"] if plan else 0)])
    lines += family("pg_advisor_plan_blocked", "1 while the running plan is blocked", "gauge",
                    [((), 1 if plan and running and plan["blockers"] else 0)])
    return "\n".join(lines) + "\n"


# the dashboard page: a static file beside this one (installed with the package)
PAGE = (Path(__file__).parent / "panel.html").read_text(encoding="utf-8")
