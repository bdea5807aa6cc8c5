"""The status report: its numbers against an independent count, its rows, one pool, and
what it says without PG stats or with stats that lag."""
from typing import Any, Dict

import pytest

from pg_advisor.model import snapshot
from pg_advisor.model.errors import AdvisorError
from pg_advisor_testkit.loose import status_report

from . import independent
from pg_advisor_testkit.dumps import read


def test_status_numbers_match_independent_computation(snap: snapshot.Snapshot,
                                                      dumps: Dict[str, Any]) -> None:
    r = status_report(snap)
    counts = independent.pg_counts(dumps["pg_dump"])
    shares = independent.pool_shares(dumps["osd_dump"], dumps["crush"])
    pools = {p["pool"]: p for p in dumps["osd_dump"]["pools"]}
    for o in r["osds"]:
        for pid, n in o["pgs_by_pool"].items():
            assert n == counts.get((int(pid), o["id"]), 0)
        assert o["pgs"] == sum(counts.get((p, o["id"]), 0) for p in pools)
        assert o["pg_share"] == pytest.approx(sum(s.get(o["id"], 0) for s in shares.values()),
                                              abs=1e-5)
        for pid, x in o["pg_share_by_pool"].items():
            assert x == pytest.approx(shares[int(pid)].get(o["id"], 0), abs=1e-5)
    for d in r["distribution"]["pools"]:
        c = {osd: n for (p, osd), n in counts.items() if p == d["pool_id"]}
        want = independent.spread(c, shares[d["pool_id"]])
        for k, v in want.items():
            assert d[k] == pytest.approx(v, abs=1e-5), (d["pool"], k)
    total_c: Dict[int, int] = {}
    total_s: Dict[int, float] = {}
    for (p, osd), n in counts.items():
        total_c[osd] = total_c.get(osd, 0) + n
    for s in shares.values():
        for osd, x in s.items():
            total_s[osd] = total_s.get(osd, 0.0) + x
    for k, v in independent.spread(total_c, total_s).items():
        assert r["distribution"]["total"][k] == pytest.approx(v, abs=1e-5), k
    cl = r["cluster"]
    assert cl["pgs_per_osd_max"] == max(total_c.values())
    assert cl["pgs_per_osd_mean"] == pytest.approx(sum(total_c.values()) / 6)
    assert cl["mon_max_pg_per_osd"] == 250
    assert cl["max_pgs_ratio_of_limit"] == pytest.approx(max(total_c.values()) / 250)


def test_status_counts_agree_with_what_the_osds_report(
        snap: snapshot.Snapshot, dumps: Dict[str, Any]) -> None:
    # `ceph osd df` (captured with the fixture) gives the PG instances each OSD itself
    # reports: those of its up sets plus, for remapped PGs, those it still serves as acting.
    osd_df = {n["id"]: n["pgs"] for n in read("osd_df.json")["nodes"]}
    extra = {o: 0 for o in osd_df}
    for s in dumps["pg_dump"]["pg_map"]["pg_stats"]:
        for o in set(s["acting"]) - set(s["up"]) - {0x7FFFFFFF}:
            extra[o] += 1
    assert any(extra.values())  # the fixture has a remapped PG, so this check has teeth
    got = {o["id"]: o["pgs"] for o in status_report(snap)["osds"]}
    assert {o: got[o] + extra[o] for o in got} == osd_df


def test_pool_rows(snap: snapshot.Snapshot, dumps: Dict[str, Any]) -> None:
    r = status_report(snap)
    for row, raw in zip(r["pools"], sorted(dumps["osd_dump"]["pools"], key=lambda p: p["pool"])):
        assert row["id"] == raw["pool"] and row["name"] == raw["pool_name"]
        assert (row["pg_num"], row["pgp_num"], row["pg_num_target"]) == (
            raw["pg_num"], raw["pg_placement_num"], raw["pg_num_target"])
        assert row["pgs_reported"] == raw["pg_num"]
    # the fixture was captured while osd.1 and osd.5 still deleted PGs moved off them (by
    # the upmap item and the reweight): that note, and no other
    # and that the class-less root spans the ssd OSDs the `fast` pool's root takes
    assert [n for n in r["notes"] if "the PG stats do not list" not in n] == [
        "overlapping roots default~ssd and default share 2 OSDs (pools ecpool, fast, rbd): their PG "
        "budget is split there by data; pg_autoscaler (Tentacle) does not scale such pools"]


def test_one_pool(snap: snapshot.Snapshot) -> None:
    r = status_report(snap, "fast")
    assert [p["name"] for p in r["pools"]] == ["fast"]
    assert [o["id"] for o in r["osds"]] == [4, 5]           # the ssd OSDs only
    assert all(list(o["pgs_by_pool"]) == ["3"] for o in r["osds"])
    assert r["distribution"]["total"] is None
    assert [d["pool"] for d in r["distribution"]["pools"]] == ["fast"]


def test_unknown_pool(snap: snapshot.Snapshot) -> None:
    with pytest.raises(AdvisorError) as e:
        status_report(snap, "no-such-pool")
    assert e.value.code == -2 and "'no-such-pool' does not exist" in e.value.message


def test_without_pg_stats_the_counts_are_absent_and_it_says_why(dumps: Dict[str, Any]) -> None:
    s = snapshot.load(dumps["osd_dump"], dumps["crush"])
    r = status_report(s)
    assert r["pg_source"] is None and r["distribution"]["pools"] == []
    assert all(o["pgs"] is None for o in r["osds"])
    assert any("--pg-dump" in n for n in r["notes"])


def test_lagging_stats_are_noted(dumps: Dict[str, Any]) -> None:
    dumps["osd_dump"]["pools"][0]["pg_num"] *= 2
    s = snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"])
    assert any("stats lag" in n for n in status_report(s)["notes"])


def test_pgs_an_osd_holds_beyond_the_stats_are_counted_and_noted(dumps: Dict[str, Any]) -> None:
    stats = {o["osd"]: o for o in dumps["pg_dump"]["pg_map"]["osd_stats"]}
    for o in stats.values():      # every OSD holds what the stats list (up or acting)...
        o["num_pgs"] = 0
    pgs = snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"]).pgs
    assert pgs is not None
    listed = {o: int(((pgs.up == o) | (pgs.acting == o)).any(axis=1).sum()) for o in stats}
    for o, st in stats.items():
        st["num_pgs"] = listed[o]
    r = status_report(snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"]))
    assert [o["pgs_unlisted"] for o in r["osds"]] == [0] * len(r["osds"])
    assert not any("do not list" in n for n in r["notes"])
    stats[2]["num_pgs"] += 3                    # ...but osd.2: a removed pool's PGs, being deleted
    stats[4].pop("num_pgs")                     # and osd.4 does not say
    r = status_report(snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"]))
    row = {o["id"]: o["pgs_unlisted"] for o in r["osds"]}
    assert row[2] == 3 and row[4] is None and all(row[o] == 0 for o in row if o not in (2, 4))
    assert any(n.startswith("osd.2 holds 3 PGs the PG stats do not list") for n in r["notes"]), r["notes"]


def test_utilization_is_what_ceph_osd_df_says(snap: snapshot.Snapshot) -> None:
    # osd_df.json: `ceph osd df -f json` taken with the other dumps
    df = {n["id"]: n["utilization"] for n in read("osd_df.json")["nodes"]}
    r = status_report(snap)
    assert {o["id"]: o["utilization"] for o in r["osds"]} == pytest.approx(df, abs=1e-4)


def test_fullest_and_emptiest(snap: snapshot.Snapshot, dumps: Dict[str, Any]) -> None:
    r = status_report(snap)
    counts = independent.pg_counts(dumps["pg_dump"])
    shares = independent.pool_shares(dumps["osd_dump"], dumps["crush"])
    ratio = {o: sum(n for (_, osd), n in counts.items() if osd == o) /
             sum(s.get(o, 0) for s in shares.values()) for o in {osd for _, osd in counts}}
    ext = r["distribution"]["extremes"]
    assert ext["by_pgs"]["fullest"]["osd"] == max(ratio, key=ratio.__getitem__)
    assert ext["by_pgs"]["emptiest"]["osd"] == min(ratio, key=ratio.__getitem__)
    assert ext["by_pgs"]["fullest"]["ratio"] == pytest.approx(max(ratio.values()), abs=1e-4)
    df = {n["id"]: n["utilization"] for n in read("osd_df.json")["nodes"]}
    assert ext["by_utilization"]["fullest"]["osd"] == max(df, key=df.__getitem__)
    assert ext["by_utilization"]["emptiest"]["osd"] == min(df, key=df.__getitem__)
    # unknown sizes: no utilization, and no extremes by it
    bare = status_report(snapshot.load(dumps["osd_dump"], dumps["crush"]))
    assert all(o["utilization"] is None for o in bare["osds"])
    assert bare["distribution"]["extremes"] == {"by_pgs": None, "by_utilization": None}


def test_the_target_is_the_balancers_share_and_holds_where_the_weight_share_cannot(
        dumps: Dict[str, Any]) -> None:
    # 3 hosts and size 3: every host holds one replica of each PG whatever its weight. With
    # osd.0 reweighted to 0.4 its host mate osd.3 must take the rest of host0's replicas,
    # far above its weight's share; the target says so (and the alert reads it)
    import numpy as np
    from pg_advisor.balance.balancer import Balancer
    for o in dumps["osd_dump"]["osds"]:
        if o["osd"] == 0:
            o["weight"] = 0.4
    snap = snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])
    r = status_report(snap)
    rbd = snap.pool_by_name("rbd")
    rows = {o["id"]: o for o in r["osds"]}
    hosts = {"host0": (0, 3), "host1": (1, 4), "host2": (2, 5)}
    for osds in hosts.values():        # each host: one replica of every PG
        assert sum(rows[o]["pg_target_by_pool"][str(rbd.id)] for o in osds) == pytest.approx(rbd.pg_num)
    st = next(s for s in Balancer(snap).states if s.pool.id == rbd.id)
    placed = float((st.up >= 0).sum())
    for o in range(6):                 # the balancer's own share (of the replicas placed)
        assert rows[o]["pg_target_by_pool"][str(rbd.id)] * placed / (rbd.pg_num * rbd.size) == \
            pytest.approx(float(st.share[o]), abs=1e-5)
    by_weight = rows[3]["pg_share_by_pool"][str(rbd.id)]
    target = rows[3]["pg_target_by_pool"][str(rbd.id)]
    assert target - by_weight > 1.5
    # the totals and the distribution read the target too
    assert rows[3]["pg_target"] == pytest.approx(sum(rows[3]["pg_target_by_pool"].values()), abs=1e-5)
    d = next(p for p in r["distribution"]["pools"] if p["pool_id"] == rbd.id)
    counts = np.array([rows[o]["pgs_by_pool"][str(rbd.id)] for o in range(6)])
    want = np.abs(counts - np.array([rows[o]["pg_target_by_pool"][str(rbd.id)] for o in range(6)])).max()
    assert d["target_max_deviation"] == pytest.approx(want, abs=1e-5)


def test_the_report_has_exactly_the_keys_its_types_say(snap: snapshot.Snapshot) -> None:
    # the typed report (analysis/status_types.py) is what readers are checked against: it
    # must be the report the code builds, key for key, at every level it types
    from pg_advisor.analysis import status_types as st
    from pg_advisor.analysis.status import status_report as typed_report
    r = typed_report(snap)
    assert set(r) == set(st.StatusReport.__annotations__)
    assert r["pools"] and all(set(p) == set(st.PoolEntry.__annotations__) for p in r["pools"])
    assert r["osds"] and all(set(o) == set(st.OsdRow.__annotations__) for o in r["osds"])
    assert set(r["distribution"]) == set(st.Distribution.__annotations__)
    assert set(r["cluster"]) == set(st.ClusterSummary.__annotations__)
