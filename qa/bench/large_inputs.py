"""Benchmark: the offline CLI on legal but large inputs, beside osdmaptool on the same maps.

    PYTHONPATH=src:. /usr/bin/python3 -m qa.bench.large_inputs [--only NAME,...]

The offline contract is exit 0 or 2, one stderr line on 2, under 10 s and 1 GiB per
command. The small cases of each class run in the unit corpus (test_cli_fuzz.py's LARGE);
these need crushtool and osdmaptool to build, or take too long for a loaded CI machine
(CASES below): the captured 6-OSD cluster with one pool of 2^20 PGs, with
1,000 pools of 4,096 PGs of size 1 (past ``--max-pgs``), with 60 pools and osd.5 renumbered
2^20 - 2 (past ``--max-sparse-cells``); 384 OSDs (4 racks x 8 hosts x 12) with a 16,384-PG
pool and PG stats at max_osd 2^20, with 50 OSDs just marked out (up sets moved, acting
not), with one pool of 2^20 PGs, with 1,000 pools of 1,024 PGs; 10,000 OSDs (25 racks x
20 hosts x 20) with one pool of 320,000 PGs, with and without PG stats; monbuilt's
``multi384`` plus an OSD of id 2^20 - 1, with PG stats (past ``--max-sparse-work``).
Each command runs in a process of its own as a user runs it, beside ``osdmaptool
--test-map-pgs`` on the same map. By ``--only 20000osd`` alone (SCALE), past the contract:
50 racks x 20 hosts x 20 OSDs of 4, 8 and 16 TB with one pool of 2^20 PGs, where balance,
with no bound on the map's item lists, must reach every share within 1 PG in 120 s.
"""
import copy
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor_testkit.dumps import DUMP_FILES, read

from ..maps.crushgen import REPLICATED_HOST, GeneratedMap, Layout, OsdMapSpec, generate, synthetic_pg_dump
from ..maps.monbuilt import build_case
from .common import cli, line, osdmaptool, parser, table, write_dumps

LIMIT_S, LIMIT_MIB = 10.0, 1024
COMMANDS = [["status"], ["plan"], ["eval"], ["balance"], ["map"], ["drain", "osd.1"],
            ["simulate", "--out-osd", "1"], ["pin-remapped"],
            ["simulate", "--add-host", "hnew", "--osds", "2", "--weight", "0.8"],
            ["crush-reweight", "--osd", "1", "--weight", "1.6"]]
Docs = Dict[str, Any]


def _pg_num(pool: Dict[str, Any], n: int) -> None:
    for k in ("pg_num", "pg_placement_num", "pg_num_target", "pg_placement_num_target"):
        pool[k] = n


def _pools(d: Docs, proto: Dict[str, Any], n: int, pg_num: int, **fields: Any) -> None:
    """The osd dump's pools replaced by `n` of `pg_num` PGs like `proto`, with `fields`."""
    d["osd_dump"]["pools"] = [dict(copy.deepcopy(proto), pool=i + 1, pool_name=f"p{i:04d}", **fields)
                              for i in range(n)]
    for p in d["osd_dump"]["pools"]:
        _pg_num(p, pg_num)


def _no_stats(built: Tuple[GeneratedMap, Docs]) -> Tuple[Optional[GeneratedMap], Docs]:
    built[1]["pg_dump"] = {"pg_map": {"pg_stats": [], "osd_stats": [], "pool_stats": []}}
    return built


def _map(tmp: Path, layout: Layout, pg_bits: int) -> Tuple[GeneratedMap, Docs]:
    gm = generate(tmp / "map", layout, [REPLICATED_HOST], OsdMapSpec(pg_bits=pg_bits))
    osd_dump, crush = gm.dumps()
    return gm, {"osd_dump": osd_dump, "crush": crush}


def _with_stats(d: Docs) -> Docs:
    d["pg_dump"] = {"pg_map": synthetic_pg_dump(snapshot.load(d["osd_dump"], d["crush"]), 0.5)}
    return d


def _six(pools: int = 0, pg_num: int = 1 << 20, **fields: Any) -> Docs:
    """The captured 6-OSD cluster without PG stats, its rbd pool of `pg_num` PGs or, with
    `pools`, that many like it (with `fields`) instead."""
    d = copy.deepcopy({k: read(v) for k, v in DUMP_FILES.items()})
    rbd = next(p for p in d["osd_dump"]["pools"] if p["pool_name"] == "rbd")
    if pools:
        _pools(d, rbd, pools, pg_num, **fields)
    _pg_num(rbd, pg_num)
    d["pg_dump"]["pg_map"]["pg_stats"] = []
    return d


def map384(tmp: Path, pg_num: int = 16384, pools: int = 0) -> Tuple[GeneratedMap, Docs]:
    """8 and 16 TiB hosts alternating, --createsimple's pool set to `pg_num` PGs or, with
    `pools`, that many of 1,024 instead (1,000 of 4,096 pass the loader's bound of 4,194,304
    PG replicas and are refused before any work)."""
    gm, d = _map(tmp, Layout(4, 8, 12, weight=lambda o: (0.8, 1.6)[(o // 12) % 2]), 3)
    _pg_num(d["osd_dump"]["pools"][0], pg_num)
    if pools:
        _pools(d, d["osd_dump"]["pools"][0], pools, 1024)
    return gm, d


def max_osd_2p20(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    gm, d = map384(tmp)
    d = _with_stats(d)
    d["osd_dump"]["max_osd"] = 1 << 20
    return gm, d


def out50(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    """50 OSDs just marked out: up sets as CRUSH now gives them, acting still the old."""
    gm, before = map384(tmp)
    d = copy.deepcopy(before)
    gone = set(random.Random(8).sample(range(2, 384), 50))
    for o in d["osd_dump"]["osds"]:
        if o["osd"] in gone:
            o["in"], o["weight"] = 0, 0
    stats = synthetic_pg_dump(snapshot.load(before["osd_dump"], before["crush"]), 0.5)
    snap = snapshot.load(d["osd_dump"], d["crush"])
    m = Placer(snap).map_pool(snap.pools[0])
    now = {m.pgid(i): m.up_list(i) for i in range(m.ps.size)}
    for s in stats["pg_stats"]:
        s["up"], s["up_primary"] = now[s["pgid"]], now[s["pgid"]][0]
        if s["up"] != s["acting"]:
            s["state"] = "active+remapped+backfill_wait"
    d["pg_dump"] = {"pg_map": stats}
    return gm, d


def ten_thousand(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    # 4, 8 and 16 TB drives (scaled: crushtool's bucket weights are 16.16 fixed point)
    return _no_stats(_map(tmp, Layout(25, 20, 20, weight=lambda o: (0.4, 0.8, 1.6)[o % 3]), 5))


def ten_thousand_stats(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    gm, d = ten_thousand(tmp)
    return gm, _with_stats(d)


def add_osd(d: Docs, new: int, host: str, cls: Optional[str], weight: int = 0x10000) -> None:
    """osd.`new` (up, in, like osd.0) in `host` and its `cls` shadow (None: no device
    classes), the buckets above weighed again as Ceph weighs them (sums of their items)."""
    osd_dump, crush = d["osd_dump"], d["crush"]
    osd_dump["osds"].append(dict(copy.deepcopy(osd_dump["osds"][0]), osd=new))
    if osd_dump.get("osd_xinfo"):
        osd_dump["osd_xinfo"].append(dict(copy.deepcopy(osd_dump["osd_xinfo"][0]), osd=new))
    osd_dump["max_osd"] = max(osd_dump["max_osd"], new + 1)
    crush["devices"].append(dict({"id": new, "name": f"osd.{new}"}, **({"class": cls} if cls else {})))
    by_name = {b["name"]: b for b in crush["buckets"]}
    parent = {it["id"]: b for b in crush["buckets"] for it in b["items"]}
    for name in [host] + ([f"{host}~{cls}"] if cls else []):
        b = by_name[name]
        b["items"].append({"id": new, "weight": weight, "pos": len(b["items"])})
        while b is not None:
            b["weight"] += weight
            up = parent.get(b["id"])
            if up is not None:
                next(it for it in up["items"] if it["id"] == b["id"])["weight"] += weight
            b = up


def six_60_pools_2p20(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    d = _six(60, 8)
    high = (1 << 20) - 2
    d["osd_dump"]["max_osd"] = high + 1
    od = d["osd_dump"]
    for e in od["osds"] + od.get("osd_xinfo", []) + d["pg_dump"]["pg_map"]["osd_stats"]:
        e["osd"] = high if e["osd"] == 5 else e["osd"]
    for dev in d["crush"]["devices"]:
        if dev["id"] == 5:
            dev.update(id=high, name=f"osd.{high}")
    for b in d["crush"]["buckets"]:
        for it in b["items"]:
            it["id"] = high if it["id"] == 5 else it["id"]
    return None, d


def multi384_2p20(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    gm = build_case(tmp / "map", "multi384")
    osd_dump, crush = gm.dumps()
    d: Docs = {"osd_dump": osd_dump, "crush": crush}
    add_osd(d, (1 << 20) - 1, "host0", "hdd")
    # osdmaptool's map has not the OSD: it runs on the dumps alone here
    return None, _with_stats(d)


def twenty_thousand(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    """50 racks x 20 hosts x 20 OSDs of 4, 8 and 16 TB, one pool of 2^20 PGs."""
    gm, d = _map(tmp, Layout(50, 20, 20, weight=lambda o: (0.4, 0.8, 1.6)[o % 3]), 5)
    _pg_num(d["osd_dump"]["pools"][0], 1 << 20)
    return _no_stats((gm, d))


CASES: Dict[str, Callable[[Path], Tuple[Optional[GeneratedMap], Docs]]] = {
    "6osd-pg2^20": lambda tmp: (None, _six()), "384osd-maxosd2^20": max_osd_2p20, "384osd-out50": out50,
    "384osd-pg2^20": lambda tmp: _no_stats(map384(tmp, 1 << 20)),
    "384osd-1000pools": lambda tmp: _no_stats(map384(tmp, pools=1000)), "10000osd": ten_thousand,
    "10000osd-stats": ten_thousand_stats,
    "6osd-1000pools-size1": lambda tmp: (None, _six(1000, 4096, size=1, min_size=1)),
    "multi384-osd2^20": multi384_2p20, "6osd-60pools-osd2^20": six_60_pools_2p20,
}
# Past the offline contract, by --only alone: the scale of doc/balance.rst, where balance
# must end within 1 PG of every share (no bound on the map's item lists) in SCALE_S
SCALE: Dict[str, Callable[[Path], Tuple[Optional[GeneratedMap], Docs]]] = {"20000osd": twenty_thousand}
SCALE_S = 120.0
# more commands for a case, beside COMMANDS
EXTRA: Dict[str, List[List[str]]] = {"multi384-osd2^20": [["drain", "host0"]],
                                     "20000osd": [["--max-upmap-items", "0", "balance"]]}


COLS = [("case", "<20"), ("command", "<22"), ("exit", ">4"), ("seconds", ">8.2f"), ("peak MiB", ">9.0f"),
        ("within", "<4"), ("", "")]


def _balanced(cmd: List[str], out: str) -> str:
    """balance's figures: its moves against the lower bound, the largest deviation after."""
    if "balance" not in cmd or not out:
        return ""
    r = json.loads(out)
    return (f"{r['moves']:,} moves, lower bound {r['lower_bound']:,}, max deviation "
            f"{r['after']['total']['max_deviation']:.2f}" + (f"; {r['notes'][0][:60]}" if r["notes"] else ""))


def main() -> int:
    args = parser(__doc__, only="").parse_args()
    cases = {**CASES, **SCALE}
    names = [n for n in cases if n in args.only.split(",")] if args.only else list(CASES)
    table(COLS, [])
    bad = 0
    for name in names:
        limit = SCALE_S if name in SCALE else LIMIT_S
        with tempfile.TemporaryDirectory() as d:
            gm, docs = cases[name](Path(d))
            flags = write_dumps(Path(d), docs)
            if gm is not None:
                # the competitor on the same map: Ceph's own CRUSH over every PG
                r = osdmaptool(gm, "--test-map-pgs", "--pg_num", str(docs["osd_dump"]["pools"][0]["pg_num"]))
                line(COLS, [name, "osdmaptool map-pgs", r.code, r.seconds, r.peak_mib])
            for cmd in COMMANDS + EXTRA.get(name, []):
                r = cli(flags, *cmd, "-f", "json")
                ok = r.code in (0, 2) and r.seconds < limit and r.peak_mib < LIMIT_MIB
                bad += not ok
                line(COLS, [name, " ".join(cmd), r.code, r.seconds, r.peak_mib, "yes" if ok else "NO",
                            _balanced(cmd, r.out) or (r.err.splitlines() or [""])[0][:90]])
    print(f"\n{bad} commands outside the contract (exit 0/2, < {LIMIT_S:g} s ({SCALE_S:g} s for "
          f"{', '.join(SCALE)}), < {LIMIT_MIB} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
