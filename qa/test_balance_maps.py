"""The balancer on maps Ceph's tools build, and its items through the real mon."""
import dataclasses
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import pytest

from pg_advisor import snapshot
from pg_advisor.balance import Balancer
from pg_advisor.balance_report import balance_report
from pg_advisor.crush.placement import Placer
from pg_advisor.distribution import up_counts
from pg_advisor.tests.upmap_checker import check_up_set

from .cluster import Cluster
from .crushgen import REPLICATED_HOST, GeneratedMap, Layout, generate, rule, synthetic_pg_dump
from .monbuilt import build_case


def run(tmp: Path, layout: Layout, rules: Sequence[str], pg_num: Optional[int] = None,
        **kw: Any) -> Dict[str, Any]:
    gm = generate(tmp, layout, rules, **kw)
    osd_dump, crush = gm.dumps(pg_num)
    return check_balanced(osd_dump, crush)


def check_balanced(osd_dump: Dict[str, Any], crush: Dict[str, Any]) -> Dict[str, Any]:
    snap = snapshot.load(osd_dump, crush)
    res = Balancer(snap).run()
    # every proposal passes the independent checker, and the items give exactly it
    new = dict(snap.pg_upmap_items)
    new.update({k: tuple(v) for k, v in res.items.items() if v})
    after = Placer(dataclasses.replace(snap, pg_upmap_items=new))
    pool_json = {p["pool"]: p for p in osd_dump["pools"]}
    n = snap.osds.count
    total, share = np.zeros(n), np.zeros(n)
    dev = {}
    for st in res.pools:
        m = after.map_pool(st.pool)
        for r in range(m.up.shape[0]):
            up = m.up_list(r)
            bad = check_up_set(osd_dump, crush, pool_json[st.pool.id], up)
            assert not bad, f"{m.pgid(r)}: {bad}"
        c = up_counts(m.up, n)
        dev[st.pool.name] = float(np.abs(c - st.share)[st.share > 0].max())
        total += c
        share += st.share
    dev["(total)"] = float(np.abs(total - share)[share > 0].max())
    print(json.dumps({"dev": dev, "moves": res.moves, "lower_bound": res.lower_bound}))
    # the fewest moves: within 1.1 x the bound on every map
    assert res.moves <= 1.1 * res.lower_bound, (res.moves, res.lower_bound)
    return {"dev": dev, "moves": res.moves, "lower_bound": res.lower_bound, "items": res.items,
            "after": after, "snap": snap}


def test_60_osds_2048_pgs_reaches_the_limit(tmp_path: Path) -> None:
    r = run(tmp_path, Layout(0, 5, 12), [REPLICATED_HOST], pg_num=2048, pg_bits=5)
    assert max(r["dev"].values()) <= 1.0, r["dev"]
    assert r["moves"] <= 1.1 * r["lower_bound"], (r["moves"], r["lower_bound"])


def test_1000_mixed_osds_in_racks(tmp_path: Path) -> None:
    r = run(tmp_path, Layout(10, 10, 10, weight=lambda o: (4.0, 8.0, 16.0)[o % 3]),
            [REPLICATED_HOST], pg_bits=2)
    assert max(r["dev"].values()) <= 1.0, r["dev"]


def test_racks_then_hosts_keeps_two_per_rack(tmp_path: Path) -> None:
    rr = rule(["take default", "choose firstn 2 type rack", "chooseleaf firstn 2 type host", "emit"])
    r = run(tmp_path, Layout(10, 10, 10), [rr], pg_bits=2, size=4)
    assert r["items"]
    # no move leaves its rack, so each rack keeps CRUSH's count; within the rack (equal
    # weights, OSD o in rack o // 100) every OSD ends within one of the rack's mean
    snap = r["snap"]
    counts = up_counts(r["after"].map_pool(snap.pools[0]).up, snap.osds.count).reshape(10, 100)
    mean = counts.sum(axis=1, keepdims=True) / 100.0
    assert np.abs(counts - mean).max() < 1.0, np.abs(counts - mean).max()


def test_indep_ec_like(tmp_path: Path) -> None:
    rr = rule(["take default", "chooseleaf indep 0 type host", "emit"])
    r = run(tmp_path, Layout(10, 10, 10), [rr], pg_bits=2, size=6)
    assert max(r["dev"].values()) <= 1.0, r["dev"]


def test_device_class_rule_stays_in_its_class(tmp_path: Path) -> None:
    rr = rule(["take default class ssd", "chooseleaf firstn 0 type host", "emit"])
    run(tmp_path, Layout(10, 10, 10, device_class=lambda o: "ssd" if o % 5 == 0 else "hdd"),
        [rr], pg_bits=2)


@pytest.fixture
def ec_pool(cluster: Cluster) -> Any:
    c = cluster
    c.ceph("osd", "erasure-code-profile", "set", "bal21", "k=2", "m=1", "crush-failure-domain=host")
    c.ceph("osd", "pool", "create", "balec", "32", "32", "erasure", "bal21")
    c.ceph("osd", "pool", "set", "balec", "pg_autoscale_mode", "off")
    c.wait_clean()
    yield c
    c.ceph("osd", "pool", "rm", "balec", "balec", "--yes-i-really-really-mean-it")
    for pg in [u["pgid"] for u in c.json("osd", "dump")["pg_upmap_items"]]:
        c.ceph("osd", "rm-pg-upmap-items", pg)
    c.wait_clean()


def test_live_mon_keeps_every_item(ec_pool: Cluster, tmp_path: Path) -> None:
    """Set the proposed items through the real mon: none is dropped by its verify_upmap,
    and the mon's own mapping (osdmaptool on its map) is what the balancer proposed."""
    c = ec_pool
    osd_dump, crush = c.json("osd", "dump"), c.json("osd", "crush", "dump")
    snap = snapshot.load(osd_dump, crush)
    res = Balancer(snap).run()
    assert res.items
    for pgid, pairs in res.items.items():
        if pairs:
            c.ceph("osd", "pg-upmap-items", pgid, *[str(x) for p in pairs for x in p])
        else:
            c.ceph("osd", "rm-pg-upmap-items", pgid)
    path = tmp_path / "after.bin"
    c.ceph("osd", "getmap", "-o", str(path))
    kept = {u["pgid"]: [(m["from"], m["to"]) for m in u["mappings"]]
            for u in c.json("osd", "dump")["pg_upmap_items"]}
    for pgid, pairs in res.items.items():
        assert kept.get(pgid, []) == [tuple(p) for p in pairs], pgid
    ref = GeneratedMap(path=path, num_osds=6, as_is=True).reference()
    for st in res.pools:
        for r in range(st.up.shape[0]):
            want: List[int] = [o for o in st.up[r].tolist() if o != -1]
            got = ref[f"{st.pool.id}.{r:x}"][0]
            assert (sorted(got) == sorted(want)) if st.pool.type == "replicated" else got == want
    print(json.dumps({"items": len(res.items), "moves": res.moves, "lower_bound": res.lower_bound}))


def test_bytes_mode_evens_fullness_and_keeps_counts(tmp_path: Path) -> None:
    gm = generate(tmp_path, Layout(0, 5, 12), [REPLICATED_HOST], pg_bits=5)
    osd_dump, crush = gm.dumps()
    snap = snapshot.load(osd_dump, crush, synthetic_pg_dump(snapshot.load(osd_dump, crush), 0.5))
    pgs, byt = balance_report(snap, mode="pgs"), balance_report(snap, mode="bytes")
    # counts: the bytes phase keeps every OSD within one of its share, per pool and in total
    for r in (pgs, byt):
        assert r["after"]["pools"][0]["max_deviation"] < 1.0
    # fullness, measured independently from the items and the PG sizes
    sizes = {s["pgid"]: s["stat_sum"]["num_bytes"] for s in synthetic_pg_dump(snap, 0.5)["pg_stats"]}
    ratios = {}
    for name, r in (("pgs", pgs), ("bytes", byt)):
        after = Placer(dataclasses.replace(snap, pg_upmap_items={
            k: tuple(tuple(p) for p in v) for k, v in r["items"].items() if v}))
        m = after.map_pool(snap.pools[0])
        used = np.zeros(snap.osds.count)
        for row in range(m.up.shape[0]):
            assert not check_up_set(osd_dump, crush, osd_dump["pools"][0], m.up_list(row))
            used[m.up_list(row)] += sizes[m.pgid(row)]
        ratios[name] = (used.max() / used.mean(), used.min() / used.mean())
        assert abs(r["fullness"]["after"]["max_ratio"] - ratios[name][0]) < 1e-3
    print(json.dumps({"ratios": ratios, "moves": {"pgs": pgs["moves"], "bytes": byt["moves"]}}))
    # one PG is ~1/100 of an OSD here: bytes mode gets within about a tenth of that
    assert ratios["bytes"][0] < 1.02 and ratios["bytes"][1] > 0.98
    assert ratios["pgs"][0] > 1.05      # counts alone leave the PG size spread


def test_pool_per_rule_and_ec_on_a_mon_built_map(tmp_path: Path) -> None:
    """The benchmark's 1,000-OSD map: replicated pools on host, rack and rack-then-host
    rules and an EC 4+2 pool, made by a real mon (osdmaptool cannot make EC pools)."""
    gm = build_case(tmp_path, "1000")
    osd_dump, crush = gm.dumps()
    assert {p["type"] for p in osd_dump["pools"]} == {1, 3}
    r = check_balanced(osd_dump, crush)
    assert max(r["dev"].values()) <= 1.0, r["dev"]


def test_an_item_that_unbalances_is_removed_not_answered(tmp_path: Path) -> None:
    """Balanced, then one legal item moves a replica from an OSD at its floor to one at
    its ceiling: the fix is to remove that item (one move), not to add another."""
    gm = generate(tmp_path, Layout(0, 5, 12, weight=lambda o: (1.0, 1.5)[o % 2]), [REPLICATED_HOST],
                  pg_bits=4)
    osd_dump, crush = gm.dumps()
    snap = snapshot.load(osd_dump, crush)
    base = dataclasses.replace(snap, pg_upmap_items={
        k: tuple(v) for k, v in Balancer(snap).run().items.items() if v})
    st = Balancer(base).states[0]
    lv = st.level
    found = None
    for r in reversed(range(st.up.shape[0])):   # the last: not the first row met by chance
        pgid = f"{st.pool.id}.{r:x}"
        row = st.up[r].tolist()
        if pgid in base.pg_upmap_items or found:
            continue
        for x in (o for o in row if lv.counts[o] == lv.lo[o]):
            for y in np.flatnonzero((lv.counts == lv.hi) & (lv.hi > lv.lo)).tolist():
                up = [y if o == x else o for o in row]
                if y not in row and not check_up_set(osd_dump, crush, osd_dump["pools"][0], up):
                    found = (pgid, x, y)
                    break
            if found:
                break
    assert found, "no legal unbalancing item on this map"
    pgid, x, y = found
    bad = dataclasses.replace(base, pg_upmap_items={**base.pg_upmap_items, pgid: ((x, y),)})
    res = Balancer(bad).run()
    assert res.items == {pgid: []} and res.moves == 1 == res.lower_bound
