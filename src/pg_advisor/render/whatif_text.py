"""Plain-text renderings of the `map` and `simulate` reports."""
from typing import Any, List, Mapping

from ..model.constants import CRUSH_ITEM_NONE
from ..model.units import human_bytes
from .format import cell, printable, table

SPREAD_KEYS = ("osds", "min", "max", "mean", "stdev", "max_deviation")


def map_text(r: Mapping[str, Any]) -> str:
    pgs: Mapping[str, Any] = r["pgs"]
    rows = [[pgid, "[" + ",".join(str(o) for o in up) + "]"] for pgid, up in pgs.items()]
    out = table(["pgid", "up"], rows)
    nowhere = sum(1 for up in pgs.values() if not any(0 <= o < CRUSH_ITEM_NONE for o in up))
    if nowhere:     # a new cluster's pools before its OSDs, or every OSD of a rule out
        out += (f"\n{nowhere} of {len(pgs)} PGs have nowhere to go: CRUSH finds no OSD for them "
                f"that exists, is up and is in")
    for a in r["not_mapped"]:
        out += f"\npool {printable(a['pool'])} (id {a['pool_id']}) not mapped: {printable(a['reason'])}"
    return out


def simulate_text(r: Mapping[str, Any]) -> str:
    ch = r["change"]
    what = []
    if ch["pool"] is not None:
        # free text that may carry names: escaped (table cells are, by cell())
        what.append(f"pool {printable(ch['pool'])}: pg_num {ch['pg_num'] or '-'}, "
                    f"pgp_num {ch['pgp_num'] or '-'}")
    if ch["out"]:
        what.append("out " + ", ".join(f"osd.{o}" for o in ch["out"]))
    if ch["reweight"]:
        what.append("reweight " + ", ".join(f"osd.{o} {w}" for o, w in ch["reweight"].items()))
    t = r["total"]
    out: List[str] = [f"what if: {'; '.join(what)} (osdmap epoch {r['epoch']})",
                      f"PGs remapped: {t['pgs_remapped']} of {t['pgs']} in the changed pools; "
                      f"shards/replicas to move: {t['shards_moved']}; "
                      f"bytes to move: {human_bytes(t['bytes_moved'])}", ""]
    rows = []
    for p in r["pools"]:
        for label in ("before", "after"):
            s = p[label]
            rows.append([p["pool"], label, p["pg_num"][0 if label == "before" else 1],
                         p["pgp_num"][0 if label == "before" else 1]] + [s[k] for k in SPREAD_KEYS])
    for label in ("before", "after"):
        rows.append(["(all pools)", label, None, None] + [t[label][k] for k in SPREAD_KEYS])
    out.append("PGS PER OSD")
    out.append(table(["pool", "when", "pg_num", "pgp_num", "osds", "min", "max", "mean", "stdev",
                      "max_dev"], rows))
    out.append("")
    out.append("OSDS")
    out.append(table(["id", "pgs_before", "pgs_after", "share_after"],
                     [[o["id"], o["pgs_before"], o["pgs_after"], cell(o["share_after"])]
                      for o in r["osds"]]))
    out.extend(f"note: {printable(n)}" for n in r["notes"])
    return "\n".join(out)


def growth_text(r: Mapping[str, Any]) -> str:
    h, t = r["add_host"], r["total"]
    out: List[str] = [
        f"what if: host {printable(h['name'])} with {len(h['osds'])} OSDs "
        f"(osd.{h['osds'][0]}..osd.{h['osds'][-1]}) of CRUSH weight {h['weight']:g} "
        f"(class {printable(h['device_class'] or '-')}) under {printable(h['root'])} "
        f"(osdmap epoch {r['epoch']})",
        f"PGs remapped: {t['pgs_remapped']}; shards/replicas to move: {t['shards_moved']}; "
        f"bytes to move: {human_bytes(t['bytes_moved'])}; objects: {t['objects_moved']}", ""]
    rows = [[p["pool"], p["pgs"], p["pgs_remapped"], p["shards_moved"], human_bytes(p["bytes_moved"]),
             " ".join(str(x) for x in p["new_osd_pgs"]), p["after"]["max_deviation"]] for p in r["pools"]]
    out.append(table(["pool", "pgs", "remapped", "shards", "bytes", "new_osd_pgs", "max_dev_after"], rows))
    out.append("")
    out.append(f"plainly, Ceph backfills it at once: {100 * r['misplaced_at_once']:.1f}% of object copies "
               f"misplaced together")
    rounds = r["drain_rounds"]
    secs = r["drain_seconds"]
    when = f", about {secs:.0f} s of backfill at the given rate" if secs is not None else \
        " (give a backfill rate for a time)"
    out.append(f"pin-remapped then drain within the budget {100 * r['budget']:.1f}%: {rounds} rounds{when}")
    return "\n".join(out)
