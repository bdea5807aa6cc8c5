"""Plain-text rendering of the plan report."""
from typing import Any, List, Mapping, cast

from ..analysis.plan import PlanReport
from ..model.units import human_bytes
from .format import printable, table


def plan_text(doc: Mapping[str, Any]) -> str:
    r = cast(PlanReport, doc)      # (the view table gives each renderer its command's report)
    out: List[str] = [
        f"now: max {r['pgs_per_osd_max_now']} PGs on an OSD (limit {r['pgs_per_osd_limit']}), "
        f"PG memory up to {human_bytes(r['pg_memory_max_now'])} (budget "
        f"{human_bytes(r['pg_memory_budget'])})"
        + ("; sized against the balanced ideal" if r["balanced"] else "")]
    if not r["steps"]:
        out.append("no pg_num change to make")
    else:
        out.append(table(
            ["step", "pool", "pg_num", "pgs_remapped", "moves", "bytes_moved", "max_pgs_after",
             "max_pg_memory_after"],
            [[i + 1, s["pool"], f"{s['pg_num'][0]} -> {s['pg_num'][1]}", s["pgs_remapped"],
              s["shards_moved"], human_bytes(s["bytes_moved"]), s["pgs_per_osd_max_after"],
              human_bytes(s["pg_memory_max_after"])] for i, s in enumerate(r["steps"])]))
        # free text that may carry names: escaped (table cells are, by cell())
        out.extend(f"  {i + 1}. {printable(s['reason'])}" for i, s in enumerate(r["steps"]))
    out.extend(f"note: {printable(n)}" for n in r["notes"])
    return "\n".join(out)
