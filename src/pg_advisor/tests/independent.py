"""Plain-Python reference computations from raw JSON dumps, independent of the numpy code.

Used by the unit tests and by the integration tests in qa/ to check status numbers.
"""
import statistics
from collections import defaultdict
from typing import Any, Dict, List, Tuple

NONE = 0x7FFFFFFF


def pg_counts(pg_dump: Dict[str, Any]) -> Dict[Tuple[int, int], int]:
    """(pool id, osd) -> number of PGs of the pool whose up set holds the OSD."""
    pg_map = pg_dump.get("pg_map", pg_dump)
    out: Dict[Tuple[int, int], int] = defaultdict(int)
    for s in pg_map["pg_stats"]:
        pool = int(s["pgid"].split(".")[0])
        for o in s["up"]:
            if o != NONE:
                out[(pool, o)] += 1
    return out


def weights_under(crush: Dict[str, Any], item: int) -> Dict[int, float]:
    buckets = {b["id"]: b for b in crush["buckets"]}
    out: Dict[int, float] = {}

    def walk(bid: int) -> None:
        for it in buckets[bid]["items"]:
            if it["id"] >= 0:
                out[it["id"]] = it["weight"] / 65536.0
            else:
                walk(it["id"])
    walk(item)
    return out


def pool_shares(osd_dump: Dict[str, Any], crush: Dict[str, Any]) -> Dict[int, Dict[int, float]]:
    """pool id -> {osd: pg_num * size * effective weight / total effective weight}."""
    reweight = {o["osd"]: o["weight"] for o in osd_dump["osds"]}
    rules = {r["rule_id"]: r for r in crush["rules"]}
    out = {}
    for p in osd_dump["pools"]:
        w: Dict[int, float] = {}
        for step in rules[p["crush_rule"]]["steps"]:
            if step["op"] == "take":
                w.update(weights_under(crush, step["item"]))
        eff = {o: x * reweight.get(o, 0.0) for o, x in w.items()}
        tot = sum(eff.values())
        out[p["pool"]] = {o: p["pg_num"] * p["size"] * x / tot for o, x in eff.items()}
    return out


def spread(counts: Dict[int, int], share: Dict[int, float]) -> Dict[str, float]:
    osds = sorted({o for o, s in share.items() if s > 0} | {o for o, c in counts.items() if c > 0})
    c: List[float] = [counts.get(o, 0) for o in osds]
    dev = [counts.get(o, 0) - share.get(o, 0.0) for o in osds]
    return {"osds": len(osds), "min": min(c), "max": max(c), "mean": statistics.fmean(c),
            "stdev": statistics.pstdev(c), "max_deviation": max(abs(d) for d in dev)}
