"""simulate --out-osd on maps with upmap items, against Ceph's own code: osdmaptool marks the
OSD out and runs OSDMap::clean_pg_upmaps (--upmap-cleanup), as the mon does on every map it
makes, then maps every PG. An item that would put two replicas on one host once CRUSH has
moved the out OSD's replicas is cancelled with all of its PG's items; the prediction must
drop them too, or it places those PGs where the mon never will."""
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from pg_advisor.analysis.whatif import Change, mon_cleaned, simulate
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor.tests.osdmaptool_output import parse_dump_all

from .crushgen import REPLICATED_HOST, GeneratedMap, Layout, generate, run

LAYOUTS = {
    "4 hosts of 2": Layout(0, 4, 2),
    "5 hosts of 3, uneven": Layout(0, 5, 3, weight=lambda o: (1.0, 2.0, 3.0)[o % 3]),
}


def with_items(tmp: Path, layout: Layout) -> GeneratedMap:
    """A map whose PGs Ceph's own balancer (osdmaptool --upmap) has given items."""
    gm = generate(tmp, layout, [REPLICATED_HOST], pg_bits=7)
    run("osdmaptool", str(gm.path), "--mark-up-in", "--upmap", str(tmp / "upmap.txt"),
        "--upmap-deviation", "1", "--upmap-max", "200", "--save")
    return gm


def after_out(gm: GeneratedMap, osd: int) -> Dict[str, Tuple[List[int], int]]:
    """Every PG's up set once the mon has marked `osd` out and cleaned the upmaps."""
    return parse_dump_all(run("osdmaptool", str(gm.path), "--mark-up-in", "--mark-out", str(osd),
                              "--upmap-cleanup", "/dev/null", "--test-map-pgs-dump-all"))


@pytest.mark.parametrize("name", LAYOUTS)
def test_out_prediction_follows_the_mons_upmap_cleaning(name: str, tmp_path: Path) -> None:
    gm = with_items(tmp_path, LAYOUTS[name])
    snap = snapshot.load(*gm.dumps())
    assert len(snap.pg_upmap_items) >= 10, "osdmaptool --upmap set too few items to test on"
    placer = Placer(snap)
    cancelled_somewhere = False
    for osd in range(snap.osds.count):
        ref = after_out(gm, osd)
        reweight = snap.osds.reweight.copy()
        reweight[osd] = 0.0
        out = placer.with_osds({osd: 0.0})
        cleaned = mon_cleaned(snap, out, reweight, None, Change(out=(osd,)))
        wrong, unclean = [], 0
        for pool in snap.pools:
            mine, plain = cleaned.map_pool(pool), out.map_pool(pool)
            for i in range(mine.ps.size):
                pg = mine.pgid(i)
                if mine.up_list(i) != ref[pg][0]:
                    wrong.append((pg, mine.up_list(i), ref[pg][0]))
                unclean += plain.up_list(i) != ref[pg][0]
        assert wrong == [], f"out osd.{osd}: {len(wrong)} PGs placed otherwise than the mon, e.g. {wrong[:3]}"
        cancelled_somewhere |= unclean > 0
        # what simulate reports per OSD is that placement
        counts: Dict[int, int] = {}
        for up, _ in ref.values():
            for o in up:
                counts[o] = counts.get(o, 0) + 1
        got = {o["id"]: o["pgs_after"] for o in simulate(snap, Change(out=(osd,)), placer)["osds"]}
        assert got == {o: counts.get(o, 0) for o in got}, f"out osd.{osd}"
    # without the cleaning some PG would have been mispredicted: the test can fail
    assert cancelled_somewhere, "no out cancelled an item that mattered: the maps test nothing"
