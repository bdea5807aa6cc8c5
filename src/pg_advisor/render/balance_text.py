"""Plain-text rendering of the balance report."""
from typing import Any, Dict, List, Mapping

from .format import printable, table

KEYS = ("osds", "min", "max", "mean", "stdev", "max_deviation")


def balance_text(r: Mapping[str, Any]) -> str:
    # free text that may carry names: escaped (table cells are, by cell())
    out: List[str] = [printable(c) for c in r["commands"]]
    rows = []
    for when in ("before", "after"):
        for p in r[when]["pools"]:
            rows.append([p["pool"], when] + [p[k] for k in KEYS])
        if r[when]["total"] is not None:
            rows.append(["(all pools)", when] + [r[when]["total"][k] for k in KEYS])
    out.append("")
    repairs = f", {r['repairs']} of them undoing items that broke the rule" if r.get("repairs") else ""
    out.append(f"{len(r['commands'])} PGs changed, {r['moves']} replica moves "
               f"(lower bound {r['lower_bound']}{repairs})")
    out.append(table(["pool", "when", "osds", "min", "max", "mean", "stdev", "max_dev"], rows))
    if r.get("fullness"):
        out.extend(fullness_line(f"fullness {when}:", r["fullness"][when]) for when in ("before", "after"))
    out += outcome(r, f"{len(r['items'])} PGs' items")
    return "\n".join(out)


def outcome(r: Mapping[str, Any], of: str) -> List[str]:
    """A round's last lines: what was set of `of` and what failed (or that it was a dry
    run), then its notes."""
    out: List[str] = []
    if "applied" in r:
        out.append(f"set {r['applied']} of {of}" + (f"; checked {r['checked']}" if r.get("checked") else ""))
        out.extend(f"failed: {printable(f)}" for f in r["failed"])
    elif r.get("dry_run"):
        out.append("dry run: nothing was set")
    out.extend(f"note: {printable(n)}" for n in r["notes"])
    return out


def eval_text(r: Mapping[str, Any]) -> str:
    d = r["distribution"]
    rows = [[p["pool"]] + [p[k] for k in KEYS] + [p["rule_limit"]] for p in d["pools"]]
    if d["total"] is not None:
        rows.append(["(all pools)"] + [d["total"][k] for k in KEYS] + [""])
    out = [f"score {r['score']:.2f} (largest deviation from an OSD's share; 1 or less is the "
           f"limit), {r['upmap_items']} PGs with upmap items; rule_gap: how far the rule's "
           f"shares are from shares by weight alone",
           table(["pool", "osds", "min", "max", "mean", "stdev", "max_dev", "rule_gap"], rows)]
    if r.get("fullness"):
        out.append(fullness_line("fullness:", r["fullness"]))
    out.extend(f"note: {printable(n)}" for n in r["notes"])
    return "\n".join(out)


def fullness_line(label: str, f: Dict[str, Any]) -> str:
    if f["max_ratio"] is None:
        return f"{label} no PG bytes yet"
    line = (f"{label} fullest OSD {f['max_ratio']:.3f} x the mean of its root and class, emptiest "
            f"{f['min_ratio']:.3f} x (by {printable(f['basis'])})")
    if f["max_used"] is not None:
        line += f"; {100 * f['max_used']:.2f}% .. {100 * f['min_used']:.2f}% of their size in PG data"
    return line


READ_KEYS = ("pg_num", "fixed", "max_before", "max_after", "floor", "score_before", "score_after",
             "changes", "cleanup")


def read_balance_text(r: Mapping[str, Any]) -> str:
    out: List[str] = [printable(c) for c in r["commands"]]
    rows = [[p["pool"]] + ["-" if p.get(k) is None else p[k] for k in READ_KEYS] for p in r["pools"]]
    out.append("")
    out.append(f"{r['changes']} primaries changed, {r['cleanup']} entries that did nothing removed "
               f"(max: the most primaries on one OSD; floor: the least it can be; score: Reef's "
               f"read_balance_score, 1 is even)")
    out.append(table(["pool", "pg_num", "fixed", "max", "max_after", "floor", "score", "score_after",
                      "changes", "cleanup"], rows))
    out += outcome(r, f"{len(r['commands'])} commands")
    return "\n".join(out)
