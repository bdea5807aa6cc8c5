"""Test layouts: CRUSH trees grown from the 6-OSD fixture, and rules given to its pools."""
import copy
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from pg_advisor.model import snapshot

Layout = Mapping[str, Tuple[str, Sequence[str]]]   # bucket -> (type, children: buckets, "osd.N")

HOSTS: Layout = {"host0": ("host", ["osd.0", "osd.3"]), "host1": ("host", ["osd.4", "osd.1"]),
                 "host2": ("host", ["osd.5", "osd.2"])}
# the fixture's hosts and one more OSD (osd.6) where a host rule cannot reach it
UNDER_ROOT: Layout = {"default": ("root", ["host0", "host1", "host2", "osd.6"]), **HOSTS}
IN_HOSTLESS_RACK: Layout = {"default": ("root", ["host0", "host1", "host2", "rack9"]),
                            "rack9": ("rack", ["osd.6"]), **HOSTS}
# racks over the fixture's hosts; osd.6 in a host outside any rack, in a rack without a
# host, or (reachable) in a host in a rack
RACKED: Layout = {"rack0": ("rack", ["host0"]), "rack1": ("rack", ["host1"]),
                  "rack2": ("rack", ["host2"]), **HOSTS}
HOST_WITHOUT_RACK: Layout = {"default": ("root", ["rack0", "rack1", "rack2", "host3"]),
                             "host3": ("host", ["osd.6"]), **RACKED}
RACK_WITHOUT_HOST: Layout = {"default": ("root", ["rack0", "rack1", "rack2", "rack3"]),
                             "rack3": ("rack", ["osd.6"]), **RACKED}
HOST_IN_RACK: Layout = {"default": ("root", ["rack0", "rack1", "rack2", "rack3"]),
                        "rack3": ("rack", ["host3"]), "host3": ("host", ["osd.6"]), **RACKED}
RACK_THEN_HOST = ["take default", "choose_firstn 0 rack", "chooseleaf_firstn 1 host", "emit"]
OSDS_ANYWHERE = ["take default", "choose_firstn 0 osd", "emit"]


def regrow(dumps: Dict[str, Any], layout: Layout, device_class: str = "ssd") -> int:
    """Add osd.N (N = max_osd; up, in, sized like osd.0) to the dumps and rebuild the CRUSH
    tree as `layout` says, with the weights and device-class shadow trees Ceph would give
    it (existing buckets keep their ids: the rules take them). Returns N."""
    crush, osd_dump = dumps["crush"], dumps["osd_dump"]
    new = int(osd_dump["max_osd"])
    osd_dump["osds"].append(dict(copy.deepcopy(osd_dump["osds"][0]), osd=new))
    osd_dump["max_osd"] = new + 1
    pg_map = dumps["pg_dump"]["pg_map"]
    pg_map["osd_stats"].append(dict(copy.deepcopy(pg_map["osd_stats"][0]), osd=new))
    crush["devices"].append({"id": new, "name": f"osd.{new}", "class": device_class})
    dev_class = {d["id"]: d.get("class") for d in crush["devices"]}
    type_id = {t["name"]: t["type_id"] for t in crush["types"]}
    ids = {b["name"]: b["id"] for b in crush["buckets"]}
    fresh = iter(range(min(ids.values()) - 1, -10**6, -1))
    unit = 65                       # the fixture's devices: 16.16 fixed point
    out: List[Dict[str, Any]] = []

    def build(name: str, cls: Optional[str]) -> int:
        full = name if cls is None else f"{name}~{cls}"
        bid = ids.setdefault(full, next(fresh))
        tname, kids = layout[name]
        items: List[Tuple[int, int]] = []
        for k in kids:
            if k.startswith("osd."):
                if cls is None or dev_class[int(k[4:])] == cls:
                    items.append((int(k[4:]), unit))
            else:
                w = build(k, cls)
                items.append((ids[k if cls is None else f"{k}~{cls}"], w))
        total = sum(w for _, w in items)
        out.append({"id": bid, "name": full, "type_id": type_id[tname], "type_name": tname,
                    "weight": total, "alg": "straw2", "hash": "rjenkins1",
                    "items": [{"id": i, "weight": w, "pos": p} for p, (i, w) in enumerate(items)]})
        return total

    for cls in [None] + sorted({c for c in dev_class.values() if c}):
        build("default", cls)
    crush["buckets"] = sorted(out, key=lambda b: -b["id"])
    return new


def use_rule(dumps: Dict[str, Any], pool_name: str, steps: Sequence[str]) -> None:
    """Give the pool a new rule of `steps` ("take NAME", "OP NUM TYPE", "emit")."""
    crush = dumps["crush"]
    ids = {b["name"]: b["id"] for b in crush["buckets"]}
    parsed: List[Dict[str, Any]] = []
    for s in steps:
        w = s.split()
        if w[0] == "take":
            parsed.append({"op": "take", "item": ids[w[1]], "item_name": w[1]})
        elif w[0] == "emit":
            parsed.append({"op": "emit"})
        else:
            parsed.append({"op": w[0], "num": int(w[1]), "type": w[2]})
    rid = max(r["rule_id"] for r in crush["rules"]) + 1
    crush["rules"].append({"rule_id": rid, "rule_name": f"rule{rid}", "ruleset": rid, "type": 1,
                           "min_size": 1, "max_size": 10, "steps": parsed})
    next(p for p in dumps["osd_dump"]["pools"] if p["pool_name"] == pool_name)["crush_rule"] = rid


def load(dumps: Dict[str, Any]) -> snapshot.Snapshot:
    return snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])
