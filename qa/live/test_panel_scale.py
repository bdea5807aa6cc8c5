"""The panel at 1,000 OSDs, in headless Chromium: histograms and the OSDs furthest from their
share instead of a bar per OSD, every figure the JSON's, in human units. A screenshot is kept.

The status is built from a map a real mon made (qa/maps/monbuilt.py: 1,000 OSDs of three sizes in
10 racks of 10 hosts, four pools, 5,120 PGs) with PG stats made up on CRUSH's own placement
and OSD fill, and served through the panel's own code path (panel/server.py, the page
panel.html); no cluster is needed.
"""
import copy
import json
import os
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List

import numpy as np
import pytest

from pg_advisor.model import snapshot
from pg_advisor.panel.server import Server
from pg_advisor.model.options import make
from pg_advisor.analysis.status import status_report

from ..cluster import free_port
from ..maps.crushgen import synthetic_pg_dump
from ..maps.monbuilt import build_case
from .browser import Tables, chromium, dom, histogram_counts, num, pct, size, text

MANY = 200      # the page's threshold (panel.html)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, Any]]:
    gm = build_case(tmp_path_factory.mktemp("map1000"), "1000")
    osd_dump, crush = gm.dumps()
    pg_map = synthetic_pg_dump(snapshot.load(osd_dump, crush), 1.0)
    # each OSD as full as its PGs make it, on disks of its CRUSH weight (TiB)
    bytes_on = np.zeros(gm.num_osds)
    for s in pg_map["pg_stats"]:
        for o in s["up"]:
            bytes_on[o] += s["stat_sum"]["num_bytes"]
    weight = {i["id"]: i["weight"] / 0x10000 for b in crush["buckets"] for i in b["items"] if i["id"] >= 0}
    pg_map["osd_stats"] = [{"osd": o, "kb": int(weight[o] * 2 ** 30), "kb_used": int(bytes_on[o] // 1024)}
                           for o in range(gm.num_osds)]
    snap = snapshot.load(osd_dump, crush, {"pg_map": pg_map})
    st = json.loads(json.dumps(status_report(snap, None, make({}), False)))   # as the API sends it
    server = Server(lambda: copy.deepcopy(st), lambda: {"plan": None, "steps": []}, lambda: {"history": []})
    url = server.start("127.0.0.1", free_port())
    try:
        yield {"status": st, "url": url}
    finally:
        server.stop()


def histogram_shown(page: Tables, svg: str, values: List[float], fmt: Any, what: str) -> None:
    """The chart is the histogram of `values`: its bars (as the titles say) count them."""
    attrs = page.attrs[svg]
    width, first = float(attrs["data-width"]), int(attrs["data-first"])
    counts = histogram_counts(values, width, first)
    lo = [(first + i) * width for i in range(len(counts))]
    want = [("rect", f"{c} OSDs with {what} from {fmt(a)} to {fmt(a + width)}") for a, c in zip(lo, counts)]
    assert page.titles[svg] == want
    assert sum(counts) == len(values) and len(counts) < len(values) / 5     # bins, not OSDs


def test_a_thousand_osds_read_as_histograms_with_the_jsons_figures(
        served: Dict[str, Any], tmp_path: Path) -> None:
    st, url = served["status"], served["url"]
    with urllib.request.urlopen(url + "api/status", timeout=30) as r:
        assert json.loads(r.read()) == st                   # the page reads what we check against
    page = dom(url)
    osds = [o for o in st["osds"] if o["pgs"] is not None]
    assert len(osds) == 1000 > MANY
    assert page.texts["view"].startswith("1000 OSDs: histograms")
    # all pools, and each pool over its own OSDs: PGs - share
    histogram_shown(page, "chart", [o["pgs"] - o["pg_share"] for o in osds], num, "PGs - share (all pools)")
    for p in st["pools"]:
        k = str(p["id"])
        on = [o for o in osds if o["pgs_by_pool"][k] > 0 or o["pg_share_by_pool"][k] > 0]
        histogram_shown(page, f"chart-pool-{k}", [o["pgs_by_pool"][k] - o["pg_share_by_pool"][k] for o in on],
                        num, f"PGs - share (pool {p['name']})")
    histogram_shown(page, "util", [o["utilization"] for o in st["osds"] if o["utilization"] is not None],
                    pct, "space used")
    histogram_shown(page, "memory", [o["pg_memory_steady"] for o in st["osds"]
                                     if o["pg_memory_now"] is not None], size, "PG memory")
    # the 10 furthest over their share and the 10 furthest under
    order = sorted(osds, key=lambda o: (-(o["pgs"] - o["pg_share"]), o["id"]))
    pick = [("over", o) for o in order[:10]] + [("under", o) for o in reversed(order[-10:])]
    assert page.tables["top"][1:] == [
        [k, f"osd.{o['id']}", text(o["host"]), text(o["pgs"]), num(o["pg_share"]),
         num(o["pgs"] - o["pg_share"]), pct(o["utilization"])] for k, o in pick]
    # every OSD in the table, in human units
    assert page.tables["osds"][1:] == [
        [f"osd.{o['id']}", text(o["host"]), text(o["pgs"]), num(o["pg_share"]), pct(o["utilization"]),
         size(o["bytes_used"]), size(o["pg_memory_now"]), size(o["pg_memory_steady"])] for o in osds]
    assert page.tables["pools"][1:] == [
        [p["name"], text(p["pg_num"]), text(p["recommended_pg_num"]), text(p["autoscaler_pg_num"]),
         size(p["stored"]), text(p["recommendation"])] for p in st["pools"]]
    assert any(" GiB" in row[5] or " TiB" in row[5] for row in page.tables["osds"][1:])   # units, not digits
    # a pool's name links to its chart
    assert page.links == [("pools", f"#pool-{p['id']}") for p in st["pools"]]
    assert all(f"pool-{p['id']}" in page.attrs for p in st["pools"])
    shot = Path(os.environ.get("PG_ADVISOR_ARTIFACTS", tmp_path)) / "panel-1000.png"
    chromium("--window-size=1200,3000", f"--screenshot={shot}", url)
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
