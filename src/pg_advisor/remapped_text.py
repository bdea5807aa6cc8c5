"""Plain-text rendering of the `pin-remapped` report."""
from typing import Any, Dict, List

from .render import printable


def pins_text(r: Dict[str, Any]) -> str:
    out: List[str] = []
    for pgid, pairs in sorted(r["items"].items()):
        items = " ".join(f"{a}->{b}" for a, b in pairs) or "(items removed)"
        out.append(f"{printable(pgid)}: {items}")
    out.append(f"{r['remapped']} PGs remapped: {r['pinned']} pinned onto the OSDs with their data, "
               f"{r['skipped']} left as they are")
    for why, n in sorted(r["skipped_reasons"].items()):
        out.append(f"  left: {n} PGs: {printable(why)}")
    out.extend(f"failed: {printable(f)}" for f in r.get("failed", []))
    if r.get("dry_run"):
        out.append("dry run: nothing was set")
    elif r.get("plan"):
        out.append(f"plan {r['plan']} drains the pins in balance rounds within the budget "
                   f"(`ceph pg-advisor progress`)")
    return "\n".join(out)
