"""Dumps of a cluster shaped as sizing questions come: hosts of hdd and ssd OSDs under one
root with its device-class shadow trees, a class-less rule, a rule per class and an EC rule
on hdd; pools given as (name, rule, pg_num, stored bytes or None for no stats, options).

The bank of doc/sizing.rst runs on these (tests/test_sizing_bank.py); the live bank on
Tentacle (qa/live/test_sizing_bank_live.py) builds the same pools on a real cluster.
"""
import copy
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .dumps import read

TIB = 1 << 40
GIB = 1 << 30
MIB = 1 << 20
W = 0x10000                     # CRUSH weight 1.0 in 16.16 fixed point
RULES = {"replicated_rule": 0, "hdd": 1, "ssd": 2, "ec_hdd": 3}


@dataclass(frozen=True)
class PoolSpec:
    name: str
    rule: str = "hdd"                   # one of RULES
    pg_num: int = 32
    stored: Optional[int] = 0           # bytes; None: the pool has no stats yet
    options: Mapping[str, Any] = field(default_factory=dict)
    bulk: bool = False
    mode: str = "off"                   # pg_autoscale_mode


@dataclass(frozen=True)
class ClusterSpec:
    hosts: int = 8
    hdd_per_host: int = 4
    ssd_per_host: int = 2
    osd_tib: float = 10.0               # each OSD's size
    flags: Tuple[str, ...] = ()

    @property
    def osds(self) -> int:
        return self.hosts * (self.hdd_per_host + self.ssd_per_host)


def _crush(c: ClusterSpec) -> Dict[str, Any]:
    base = read("crush_dump.json")
    per = c.hdd_per_host + c.ssd_per_host
    cls = {h * per + i: ("hdd" if i < c.hdd_per_host else "ssd") for h in range(c.hosts) for i in range(per)}
    devices = [{"id": o, "name": f"osd.{o}", "class": k} for o, k in sorted(cls.items())]
    buckets: List[Dict[str, Any]] = []
    ids = iter(range(-2, -10000, -1))

    def bucket(bid: int, name: str, tname: str, items: Sequence[Tuple[int, int]]) -> int:
        buckets.append({"id": bid, "name": name, "type_id": 11 if tname == "root" else 1, "type_name": tname,
                        "weight": sum(w for _, w in items), "alg": "straw2", "hash": "rjenkins1",
                        "items": [{"id": i, "weight": w, "pos": n} for n, (i, w) in enumerate(items)]})
        return sum(w for _, w in items)

    roots: Dict[Optional[str], List[Tuple[int, int]]] = {None: [], "hdd": [], "ssd": []}
    for h in range(c.hosts):
        osds = range(h * per, (h + 1) * per)
        for k in (None, "hdd", "ssd"):
            bid = next(ids)
            items = [(o, W) for o in osds if k is None or cls[o] == k]
            roots[k].append((bid, bucket(bid, f"host{h}" + (f"~{k}" if k else ""), "host", items)))
    bucket(-1, "default", "root", roots[None])
    root_id: Dict[Optional[str], int] = {None: -1}
    for k in ("hdd", "ssd"):
        root_id[k] = next(ids)
        bucket(root_id[k], f"default~{k}", "root", roots[k])

    def rule(rid: int, name: str, take: Optional[str], ec: bool) -> Dict[str, Any]:
        steps = [{"op": "take", "item": root_id[take], "item_name": "default" + (f"~{take}" if take else "")},
                 {"op": "chooseleaf_indep" if ec else "chooseleaf_firstn", "num": 0, "type": "host"},
                 {"op": "emit"}]
        return {"rule_id": rid, "rule_name": name, "ruleset": rid, "type": 3 if ec else 1,
                "min_size": 1, "max_size": 20, "steps": steps}
    rules = [rule(0, "replicated_rule", None, False), rule(1, "hdd", "hdd", False),
             rule(2, "ssd", "ssd", False), rule(3, "ec_hdd", "hdd", True)]
    return dict(base, devices=devices, buckets=buckets, rules=rules, choose_args={})


def dumps(c: ClusterSpec, pools: Sequence[PoolSpec], used_fraction: float = 0.3) -> Dict[str, Any]:
    """osd dump, crush dump, pg dump (OSD space, no PG rows) and df of the cluster."""
    osd_dump = read("osd_dump.json")
    pg_dump = read("pg_dump.json")
    tmpl_pool, tmpl_osd = osd_dump["pools"][0], osd_dump["osds"][0]
    out_pools = []
    for i, p in enumerate(pools, start=1):
        ec = p.rule == "ec_hdd"
        q = copy.deepcopy(tmpl_pool)
        q.update(pool=i, pool_name=p.name, type=3 if ec else 1, size=6 if ec else 3,
                 min_size=5 if ec else 2, crush_rule=RULES[p.rule], pg_num=p.pg_num,
                 pg_placement_num=p.pg_num, pg_num_target=p.pg_num, pg_placement_num_target=p.pg_num,
                 pg_autoscale_mode=p.mode, options=dict(p.options),
                 erasure_code_profile="ec42" if ec else "",
                 flags=1 | ((1 << 21) if p.bulk else 0),
                 flags_names="hashpspool" + (",bulk" if p.bulk else ""))
        out_pools.append(q)
    osds = [dict(copy.deepcopy(tmpl_osd), osd=o, up=1, weight=1, primary_affinity=1)
            for o in range(c.osds)]
    osd_dump.update(pools=out_pools, osds=osds, max_osd=c.osds, pg_upmap=[], pg_upmap_items=[],
                    pg_temp=[], pool_max=len(pools), flags=",".join(("sortbitwise",) + c.flags),
                    erasure_code_profiles={"ec42": {"k": "4", "m": "2", "plugin": "jerasure",
                                                    "crush-failure-domain": "host"}})
    kb = int(c.osd_tib * TIB) >> 10
    pm = pg_dump.get("pg_map", pg_dump)
    pm["osd_stats"] = [dict(copy.deepcopy(pm["osd_stats"][0]), osd=o, num_pgs=0, kb=kb,
                            kb_used=int(kb * used_fraction), kb_avail=kb - int(kb * used_fraction))
                       for o in range(c.osds)]
    pm["pg_stats"], pm["pool_stats"], pm["pool_statfs"] = [], [], []
    df = {"stats": {}, "stats_by_class": {}, "pools": [
        {"name": p.name, "id": i, "stats": {"stored": p.stored, "objects": p.stored // (4 * MIB),
                                            "bytes_used": p.stored, "kb_used": p.stored >> 10}}
        for i, p in enumerate(pools, start=1) if p.stored is not None]}
    return {"osd_dump": osd_dump, "crush": _crush(c), "pg_dump": pg_dump, "df": df}
