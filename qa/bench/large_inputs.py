"""Benchmark: the offline CLI on legal but large inputs, beside osdmaptool on the same maps.

    PYTHONPATH=src:. /usr/bin/python3 -m qa.bench.large_inputs [--only NAME,...]

The offline contract is exit 0 or 2, one stderr line on 2, under 10 s and 1 GiB per
command. The small cases of each class run in the unit corpus (test_cli_fuzz.py's LARGE);
these need crushtool and osdmaptool to build, or take too long for a loaded CI machine:

- ``6osd-pg2^20``: the captured 6-OSD cluster, one pool of 2^20 PGs (no PG stats).
- ``384osd-maxosd2^20``: 384 OSDs (4 racks x 8 hosts x 12), a 16,384-PG pool with PG
  stats, max_osd 2^20.
- ``384osd-out50``: the same map with 50 OSDs just marked out (up sets moved, acting not).
- ``384osd-pg2^20``: the 384-OSD map with one pool of 2^20 PGs.
- ``384osd-1000pools``: the 384-OSD map with 1,000 pools of 1,024 PGs.
- ``10000osd``: 25 racks x 20 hosts x 20 OSDs, one pool of 320,000 PGs.
- ``10000osd-stats``: the same with PG stats (what ``crush-reweight`` and ``pin-remapped``
  read: each PG's data is where its acting set is).
- ``6osd-1000pools-size1``: the captured 6-OSD cluster with 1,000 pools of 4,096 PGs of
  size 1 (4 million PGs, within the loader's bound of replicas): past ``--max-pgs``.
- ``multi384-osd2^20``: qa/maps/monbuilt.py's ``multi384`` (a throw-away mon's map: 3 rooms,
  device classes, EC 8+3) plus one OSD of id 2^20 - 1 in host0, with PG stats: balance and
  drain past ``--max-sparse-work``.
- ``6osd-60pools-osd2^20``: the captured 6-OSD cluster with 60 pools of 8 PGs and osd.5
  renumbered 2^20 - 2: past ``--max-sparse-cells``.

Each command runs in a child process as a user runs it; its peak RSS comes from the
kernel (wait4). ``osdmaptool --test-map-pgs`` maps the same map in the same run.
"""
import argparse
import copy
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor_testkit.dumps import DUMP_FILES, read

from ..maps.crushgen import REPLICATED_HOST, GeneratedMap, Layout, OsdMapSpec, generate, synthetic_pg_dump
from ..maps.monbuilt import build_case

SRC = Path(__file__).resolve().parents[2] / "src"
LIMIT_S, LIMIT_RSS = 10.0, 1 << 30
COMMANDS = [["status"], ["plan"], ["eval"], ["balance"], ["map"], ["drain", "osd.1"],
            ["simulate", "--out-osd", "1"], ["pin-remapped"],
            ["simulate", "--add-host", "hnew", "--osds", "2", "--weight", "0.8"],
            ["crush-reweight", "--osd", "1", "--weight", "1.6"]]
Docs = Dict[str, Any]


def _pg_num(pool: Dict[str, Any], n: int) -> None:
    for k in ("pg_num", "pg_placement_num", "pg_num_target", "pg_placement_num_target"):
        pool[k] = n


def _no_stats() -> Dict[str, Any]:
    return {"pg_map": {"pg_stats": [], "osd_stats": [], "pool_stats": []}}


def _map(tmp: Path, layout: Layout, pg_bits: int) -> Tuple[GeneratedMap, Docs]:
    gm = generate(tmp / "map", layout, [REPLICATED_HOST], OsdMapSpec(pg_bits=pg_bits))
    osd_dump, crush = gm.dumps()
    return gm, {"osd_dump": osd_dump, "crush": crush}


def _with_stats(d: Docs) -> Docs:
    d["pg_dump"] = {"pg_map": synthetic_pg_dump(snapshot.load(d["osd_dump"], d["crush"]), 0.5)}
    return d


def six_pg2p20(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    d = copy.deepcopy({k: read(v) for k, v in DUMP_FILES.items()})
    _pg_num(next(p for p in d["osd_dump"]["pools"] if p["pool_name"] == "rbd"), 1 << 20)
    d["pg_dump"]["pg_map"]["pg_stats"] = []
    return None, d


def map384(tmp: Path) -> Tuple[GeneratedMap, Docs]:
    # 8 and 16 TiB hosts alternating; --createsimple's pool: 384 << 3 PGs, set to 16,384
    gm, d = _map(tmp, Layout(4, 8, 12, weight=lambda o: (0.8, 1.6)[(o // 12) % 2]), 3)
    _pg_num(d["osd_dump"]["pools"][0], 16384)
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


def pg2p20_384(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    gm, d = map384(tmp)
    _pg_num(d["osd_dump"]["pools"][0], 1 << 20)
    d["pg_dump"] = _no_stats()
    return gm, d


def pools_1000(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    """1,000 pools of 1,024 PGs on the 384-OSD map (1,000 of 4,096 pass the loader's bound
    of 4,194,304 PG replicas and are refused before any work)."""
    gm, d = map384(tmp)
    proto = d["osd_dump"]["pools"][0]
    d["osd_dump"]["pools"] = [dict(copy.deepcopy(proto), pool=i + 1, pool_name=f"p{i:04d}")
                              for i in range(1000)]
    for p in d["osd_dump"]["pools"]:
        _pg_num(p, 1024)
    d["pg_dump"] = _no_stats()
    return gm, d


def ten_thousand(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    # 4, 8 and 16 TB drives (scaled: crushtool's bucket weights are 16.16 fixed point)
    gm, d = _map(tmp, Layout(25, 20, 20, weight=lambda o: (0.4, 0.8, 1.6)[o % 3]), 5)
    d["pg_dump"] = _no_stats()
    return gm, d


def ten_thousand_stats(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    gm, d = ten_thousand(tmp)
    return gm, _with_stats(d)


def six_1000_pools_size1(tmp: Path) -> Tuple[Optional[GeneratedMap], Docs]:
    _, d = six_pg2p20(tmp)
    proto = next(p for p in d["osd_dump"]["pools"] if p["pool_name"] == "rbd")
    d["osd_dump"]["pools"] = [dict(copy.deepcopy(proto), pool=i + 1, pool_name=f"p{i:04d}", size=1,
                                   min_size=1) for i in range(1000)]
    for p in d["osd_dump"]["pools"]:
        _pg_num(p, 4096)
    return None, d


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
    _, d = six_pg2p20(tmp)
    proto = next(p for p in d["osd_dump"]["pools"] if p["pool_name"] == "rbd")
    d["osd_dump"]["pools"] = [dict(copy.deepcopy(proto), pool=i + 1, pool_name=f"p{i:04d}")
                              for i in range(60)]
    for p in d["osd_dump"]["pools"]:
        _pg_num(p, 8)
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


CASES: Dict[str, Callable[[Path], Tuple[Optional[GeneratedMap], Docs]]] = {
    "6osd-pg2^20": six_pg2p20, "384osd-maxosd2^20": max_osd_2p20, "384osd-out50": out50,
    "384osd-pg2^20": pg2p20_384, "384osd-1000pools": pools_1000, "10000osd": ten_thousand,
    "10000osd-stats": ten_thousand_stats, "6osd-1000pools-size1": six_1000_pools_size1,
    "multi384-osd2^20": multi384_2p20, "6osd-60pools-osd2^20": six_60_pools_2p20,
}
# more commands for a case, beside COMMANDS
EXTRA: Dict[str, List[List[str]]] = {"multi384-osd2^20": [["drain", "host0"]]}


# Linux keeps a process's peak RSS across exec, so a child forked from this (big) process
# would report this one's: a small python forks the command and reports its usage instead
_WRAP = ("import os, sys\n"
         "pid = os.fork()\n"
         "if pid == 0:\n"
         "    os.execvp(sys.argv[2], sys.argv[2:])\n"
         "_, status, usage = os.wait4(pid, 0)\n"
         "os.write(int(sys.argv[1]), b'%d %d' % (os.waitstatus_to_exitcode(status), usage.ru_maxrss))\n")


def run(argv: List[str]) -> Tuple[int, str, float, int]:
    """(exit code, first stderr line, seconds, peak RSS bytes) of one child process."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as res:
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-c", _WRAP, str(res.fileno()), *argv], cwd=SRC,
                       stdout=subprocess.DEVNULL, stderr=err, pass_fds=(res.fileno(),))
        seconds = time.monotonic() - t0
        err.seek(0)
        res.seek(0)
        code, kib = (int(v) for v in res.read().split())
        line = (err.read().decode(errors="replace").splitlines() or [""])[0]
    return code, line, seconds, kib * 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated case names")
    args = ap.parse_args()
    names = [n for n in CASES if not args.only or n in args.only.split(",")]
    print(f"{'case':<20} {'command':<22} {'exit':>4} {'seconds':>8} {'peak MiB':>9}  within")
    bad = 0
    for name in names:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            gm, docs = CASES[name](tmp)
            flags = []
            for key, flag in (("osd_dump", "--osdmap"), ("crush", "--crush"), ("pg_dump", "--pg-dump")):
                if key in docs:
                    (tmp / f"{key}.json").write_text(json.dumps(docs[key]))
                    flags += [flag, str(tmp / f"{key}.json")]
            if gm is not None:
                # the competitor on the same map: Ceph's own CRUSH over every PG
                code, line, s, rss = run(["osdmaptool", str(gm.path), *gm.state_args(), "--test-map-pgs",
                                          "--pg_num", str(docs["osd_dump"]["pools"][0]["pg_num"])])
                print(f"{name:<20} {'osdmaptool map-pgs':<22} {code:>4} {s:>8.2f} {rss / 2**20:>9.0f}")
            for cmd in COMMANDS + EXTRA.get(name, []):
                code, line, s, rss = run([sys.executable, "-m", "pg_advisor", *flags, *cmd, "-f", "json"])
                ok = code in (0, 2) and s < LIMIT_S and rss < LIMIT_RSS
                bad += not ok
                print(f"{name:<20} {' '.join(cmd):<22} {code:>4} {s:>8.2f} {rss / 2**20:>9.0f}  "
                      f"{'yes' if ok else 'NO'}  {line[:90]}", flush=True)
    print(f"\n{bad} commands outside the contract (exit 0/2, < {LIMIT_S:g} s, < {LIMIT_RSS >> 20} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
