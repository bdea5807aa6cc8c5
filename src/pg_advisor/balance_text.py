"""Plain-text rendering of the balance report."""
from typing import Any, Dict, List

from .render import table

KEYS = ("osds", "min", "max", "mean", "stdev", "max_deviation")


def balance_text(r: Dict[str, Any]) -> str:
    out: List[str] = list(r["commands"])
    rows = []
    for when in ("before", "after"):
        for p in r[when]["pools"]:
            rows.append([p["pool"], when] + [p[k] for k in KEYS])
        if r[when]["total"] is not None:
            rows.append(["(all pools)", when] + [r[when]["total"][k] for k in KEYS])
    out.append("")
    out.append(f"{len(r['commands'])} PGs changed, {r['moves']} replica moves "
               f"(lower bound {r['lower_bound']})")
    out.append(table(["pool", "when", "osds", "min", "max", "mean", "stdev", "max_dev"], rows))
    if "applied" in r:
        out.append(f"set {r['applied']} of {len(r['items'])} PGs' items")
        out.extend(f"failed: {f}" for f in r["failed"])
    elif r.get("dry_run"):
        out.append("dry run: nothing was set")
    out.extend(f"note: {n}" for n in r["notes"])
    return "\n".join(out)


def eval_text(r: Dict[str, Any]) -> str:
    d = r["distribution"]
    rows = [[p["pool"]] + [p[k] for k in KEYS] for p in d["pools"]]
    if d["total"] is not None:
        rows.append(["(all pools)"] + [d["total"][k] for k in KEYS])
    out = [f"score {r['score']:.2f} (largest deviation from an OSD's share; 1 or less is the "
           f"limit), {r['upmap_items']} PGs with upmap items",
           table(["pool", "osds", "min", "max", "mean", "stdev", "max_dev"], rows)]
    out.extend(f"note: {n}" for n in r["notes"])
    return "\n".join(out)
