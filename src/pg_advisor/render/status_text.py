"""The plain-text rendering of the status report."""
from typing import Any, List, Mapping, cast

from ..analysis.status_types import StatusReport
from ..model.units import human_bytes
from .format import cell, printable, table


def status_text(doc: Mapping[str, Any]) -> str:
    r = cast(StatusReport, doc)      # (the view table gives each renderer its command's report)
    c = r["cluster"]
    out: List[str] = []
    out.append(f"osdmap epoch {r['epoch']}: {c['osds']} OSDs ({c['osds_up']} up, {c['osds_in']} in), "
               f"{c['pools']} pools, {c['pgs']} PGs ({c['pg_replicas']} replicas/shards)")
    u = c["upmap_entries"]
    ours = u.get("pg_upmap_items_ours")
    out.append(f"upmap entries in the OSDMap: {u['pg_upmap_items']} pg_upmap_items "
               f"({u['pg_upmap_items_pairs']} pairs"
               + (f", {ours} set by pg_advisor" if ours is not None else "")
               + f"), {u['pg_upmap']} pg_upmap, "
               f"{u['pg_upmap_primaries']} pg_upmap_primaries")
    ratio = c["max_pgs_ratio_of_limit"]
    if c["pgs_per_osd_max"] is not None and ratio is not None:
        out.append(f"PGs per OSD: max {c['pgs_per_osd_max']}, mean {cell(c['pgs_per_osd_mean'])}; "
                   f"mon_max_pg_per_osd {c['mon_max_pg_per_osd']} "
                   f"(max is {100 * ratio:.0f}% of it)")
    out.append("")
    out.append("POOLS")
    out.append(table(
        ["id", "name", "type", "size", "min_size", "crush_rule", "pg_num", "pgp_num",
         "pg_num_target", "stored", "objects", "recommended", "autoscaler"],
        [[p["id"], p["name"], p["type"], p["size"], p["min_size"],
          f"{p['crush_rule']} ({p['crush_rule_name'] or '?'})", p["pg_num"], p["pgp_num"],
          p["pg_num_target"], human_bytes(p["stored"]), p["objects"], p["recommended_pg_num"],
          p["autoscaler_pg_num"]] for p in r["pools"]]))
    # free text that may carry names: escaped (table cells are, by cell())
    out.extend(f"  {printable(p['recommendation'])}" for p in r["pools"] if p["recommendation"])
    out.append("")
    out.append("OSDS")
    pool_names = {str(p["id"]): p["name"] for p in r["pools"]}
    out.append(table(
        ["id", "host", "class", "weight", "reweight", "up", "in", "pgs", "share",
         "pgs_by_pool", "used", "total", "use%", "pg_mem_now", "pg_mem_full"],
        [[o["id"], o["host"], o["device_class"], o["crush_weight"], o["reweight"],
          o["up"], o["in"], o["pgs"], o["pg_share"],
          (" ".join(f"{pool_names.get(k, k)}={v}" for k, v in o["pgs_by_pool"].items())
           if o["pgs_by_pool"] is not None else None),
          human_bytes(o["bytes_used"]), human_bytes(o["bytes_total"]), o["utilization"],
          human_bytes(o["pg_memory_now"]), human_bytes(o["pg_memory_steady"])] for o in r["osds"]]))
    d = r["distribution"]
    keys = ("osds", "min", "max", "mean", "stdev", "max_deviation")
    rows = [[x["pool"]] + [x[k] for k in keys] for x in d["pools"]]
    if d["total"] is not None:
        rows.append(["(all pools)"] + [d["total"][k] for k in keys])
    if rows:
        out.append("")
        out.append("PGS PER OSD (deviation is from each OSD's weight-proportional share)")
        out.append(table(["pool", "osds", "min", "max", "mean", "stdev", "max_dev"], rows))
    ext = d["extremes"]
    if ext["by_pgs"] is not None:
        hi, lo = ext["by_pgs"]["fullest"], ext["by_pgs"]["emptiest"]
        out.append(f"fullest by PGs: osd.{hi['osd']} ({hi['pgs']}, {hi['ratio']:.2f} x its share); "
                   f"emptiest: osd.{lo['osd']} ({lo['pgs']}, {lo['ratio']:.2f} x)")
    if ext["by_utilization"] is not None:
        hi, lo = ext["by_utilization"]["fullest"], ext["by_utilization"]["emptiest"]
        out.append(f"fullest by space used: osd.{hi['osd']} ({hi['utilization']:.2f}%); "
                   f"emptiest: osd.{lo['osd']} ({lo['utilization']:.2f}%)")
    b = r["backfill"]
    if b.get("full_osds"):
        full = ", ".join(f"osd.{o['osd']} ({o['local']} local, {o['remote']} remote)" for o in b["full_osds"])
        more = b.get("full_osds_total", 0) - len(b["full_osds"])
        out.append(f"backfill: {b['waiting_pgs']} PGs wait for a reservation; full at osd_max_backfills "
                   f"{b['osd_max_backfills']}: {full}" + (f" and {more} more" if more > 0 else ""))
    sp = r["space"]
    if sp["osds_total"]:
        full = ", ".join(f"osd.{o['osd']} ({o['used_ratio']:.0%})" for o in sp["osds"])
        more = sp["osds_total"] - len(sp["osds"])
        out.append(f"space: {sp['osds_total']} OSDs take no PG, past {sp['fill_limit']}_ratio "
                   f"{sp['ratio']:.0%} counting what is copied onto them: {full}"
                   + (f" and {more} more" if more > 0 else ""))
    for n in r["notes"]:
        out.append(f"note: {printable(n)}")
    return "\n".join(out)
