"""The sizing bank on a map a real mon made (issue 56): the 384-OSD "multi384" layout (3 rooms
of 4 racks of 4 hosts of 8 OSDs, one ssd a host; rooms of weight 1 : 2 : 3), its EC 8+3 and
replicated rules, the class-less replicated rule beside them (overlapping roots), and pools
as real clusters have them. Usage figures (df, the OSDs' space) are given as the mgr would
read them; the pool flags and options (bulk, pg_num_min) set in the mon's dump as `ceph osd
pool set` writes them. pg_advisor's status and plan are checked for the bank's kinds of
advice, on Ceph's own map rather than on the unit tests' hand-made one."""
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from pg_advisor.analysis.plan import plan_report
from pg_advisor_testkit.loose import health_checks, status_report
from pg_advisor.model import options, snapshot

from .crushgen import rule
from .monbuilt import MULTI384, MULTI_RULES, PoolSpec, build

TIB, GIB, MIB = 1 << 40, 1 << 30, 1 << 20
CLASSLESS = rule(["take default", "chooseleaf firstn 0 type host", "emit"], "replicated_rule", 5)
POOLS = [PoolSpec("mgrpool", 1, "replicated_rule"), PoolSpec("rbd", 2048, "two_racks", size=4),
         PoolSpec("ec83", 2048, "ec83_racks", ec=(8, 3)), PoolSpec("rgw.index", 128, "ssd_host"),
         PoolSpec("tiny", 64, "replicated_rule"), PoolSpec("images", 1024, "three_rooms", size=6),
         PoolSpec("fresh", 512, "two_racks", size=4)]
# stored bytes; None: no stats yet (the pool is not in df)
STORED: Dict[str, Optional[int]] = {".mgr": 2 * MIB, "rbd": 150 * TIB, "ec83": 600 * TIB,
                                    "rgw.index": 20 * GIB, "tiny": 10 * MIB, "images": 0, "fresh": None}


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    gm = build(tmp_path_factory.mktemp("bank"), MULTI384, MULTI_RULES + [CLASSLESS], POOLS)
    osd_dump, crush = gm.dumps()
    for p in osd_dump["pools"]:
        if p["pool_name"] == "rgw.index":      # `ceph osd pool set rgw.index bulk true`
            p["flags_names"] = p["flags_names"] + ",bulk"
        if p["pool_name"] == "mgrpool":        # as Tentacle's mgr creates .mgr (a mon
            p["pool_name"] = ".mgr"            # client may not name a pool so)
            p["options"] = {"pg_num_min": 1, "pg_num_max": 32}
    return osd_dump, crush


def usage(osd_dump: Dict[str, Any], stored: Dict[str, Optional[int]]) -> Tuple[Dict, Dict]:
    """`ceph df` and the OSDs' space of the PG dump: 10 TiB an OSD, 40 % used."""
    kb = (10 * TIB) >> 10
    pg_dump = {"pg_map": {"pg_stats": [], "pool_stats": [], "pg_stats_sum": {"stat_sum": {}},
                          "osd_stats": [{"osd": o["osd"], "kb": kb, "kb_used": int(kb * 0.4),
                                         "kb_avail": kb - int(kb * 0.4), "num_pgs": 0}
                                        for o in osd_dump["osds"]]}}
    df = {"stats": {}, "pools": [{"name": p["pool_name"], "id": p["pool"],
                                  "stats": {"stored": stored[p["pool_name"]], "objects": 1}}
                                 for p in osd_dump["pools"] if stored[p["pool_name"]] is not None]}
    return pg_dump, df


def snap_of(dumps: Tuple[Dict[str, Any], Dict[str, Any]],
            stored: Dict[str, Optional[int]]) -> snapshot.Snapshot:
    osd_dump, crush = dumps
    pg_dump, df = usage(osd_dump, stored)
    return snapshot.load(osd_dump, crush, pg_dump, df)


def by_name(report: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {p["name"]: p for p in report["pools"]}


def codes(p: Dict[str, Any]) -> List[str]:
    return [r["code"] for r in p["reasons"]]


def test_the_bank_on_a_mon_built_map(dumps: Tuple[Dict[str, Any], Dict[str, Any]]) -> None:
    r = status_report(snap_of(dumps, STORED), opts=options.make(), balanced=True)
    p = by_name(r)
    # unknown is not empty: no recommendation, not pressing
    assert p["fresh"]["recommended_pg_num"] is None and p["fresh"]["sizing"] == "unknown"
    assert not p["fresh"]["pressing"]
    # .mgr keeps its 1 PG (its own pg_num_min, not the module's floor)
    assert p[".mgr"]["recommended_pg_num"] == 1
    # the 10 MiB pool on the class-less root: never thousands, the overlap named
    assert p["tiny"]["recommended_pg_num"] <= 64 and "overlap" in codes(p["tiny"])
    assert any(n.startswith("overlapping roots ") for n in r["notes"])
    # bulk: grown for the ssd space it will fill, never shrunk
    assert p["rgw.index"]["recommended_pg_num"] > 128
    # the pre-sized empty pool: a merge at most suggested, never pressed
    assert not p["images"]["pressing"] and not p["images"]["automatic"] or \
        {"cap_pgs", "cap_memory", "cap_peak"} & set(codes(p["images"]))
    # every recommendation has its reasons; no pool above the limit after the advice
    sizing = r["cluster"]["sizing"]
    assert sizing["pgs_per_osd_max_recommended"] <= sizing["pgs_per_osd_limit"]
    assert all(x["reasons"] for x in r["pools"])


def test_a_big_pool_is_not_merged_because_another_grew(dumps: Tuple[Dict[str, Any], Dict[str, Any]]) -> None:
    # rbd holds 150 TiB at 2048 PGs; ec83 grows from 600 TiB to 2.4 PiB: rbd's ideal falls,
    # but nothing is short of PGs, so rbd keeps its 2048 (pg_autoscaler's 3x band at least)
    before = by_name(status_report(snap_of(dumps, STORED), opts=options.make(), balanced=True))
    grown = dict(STORED, ec83=2400 * TIB)
    snap = snap_of(dumps, grown)
    after = by_name(status_report(snap, opts=options.make(), balanced=True))
    assert after["rbd"]["data_share"] < before["rbd"]["data_share"]
    assert after["rbd"]["recommended_pg_num"] >= 2048 or "past_band" in codes(after["rbd"])
    plan = plan_report(snap, options.make(), balanced=True)
    # a merge mode auto makes is one a cap pressed (the empty pool first: it moves nothing)
    merges = [s for s in plan["steps"] if s["pg_num"][1] < s["pg_num"][0]]
    assert all(not s["automatic"] or "halved" in s["reason"] for s in merges), merges
    assert "rbd" not in {s["pool"] for s in merges if s["automatic"]}
    many = health_checks(status_report(snap, opts=options.make(), balanced=True)).get(
        "PG_ADVISOR_TOO_MANY_PGS", {"detail": []})["detail"]
    assert not any(d.startswith("rbd:") for d in many), many


def test_without_usage_nothing_is_sized(dumps: Tuple[Dict[str, Any], Dict[str, Any]], tmp_path: Path) -> None:
    osd_dump, crush = dumps
    r = status_report(snapshot.load(osd_dump, crush), opts=options.make())
    assert {p["sizing"] for p in r["pools"]} == {"unknown"}
    assert not {"PG_ADVISOR_TOO_FEW_PGS", "PG_ADVISOR_TOO_MANY_PGS"} & set(health_checks(r))
    assert plan_report(snapshot.load(osd_dump, crush), options.make())["steps"] == []
