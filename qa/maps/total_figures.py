"""The balance figures of the 384-OSD maps (doc/balance.rst): per pool and in total, the largest
deviation from the share before and after, the moves against the lower bound, wall and CPU time.

    PG_ADVISOR_CEPH=pacific PYTHONPATH=src:. /usr/bin/python3 -m qa.maps.total_figures
"""
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np

from pg_advisor.balance.balancer import Balancer
from pg_advisor.model import snapshot
from pg_advisor.model.distribution import up_counts

from .monbuilt import build_case

# as test_balance_maps sets them in the dumps
REWEIGHTS_384 = {1: 0.7, 100: 0.85, 250: 0.6}
RGW_OUT = (5, 200)
RGW_REWEIGHTS = {1: 0.7, 100: 0.85, 250: 0.6, 40: 0.5, 121: 0.65, 333: 0.9}
PINNED = 24     # the light-room OSD rgw is pinned above its share on


def set_states(osd_dump: Dict[str, Any], reweights: Dict[int, float], out: Tuple[int, ...] = ()) -> None:
    for o in osd_dump["osds"]:
        if o["osd"] in reweights:
            o["weight"] = reweights[o["osd"]]
        if o["osd"] in out:
            o["in"], o["weight"] = 0, 0.0


def pin(osd_dump: Dict[str, Any], crush: Dict[str, Any], x: int = PINNED) -> None:
    """Every rgw PG on `x` pinned by a pg-upmap, and one more than its ceiling there."""
    st = next(s for s in Balancer(snapshot.load(osd_dump, crush)).states if s.pool.name == "rgw")
    extra = int(np.ceil(st.share[x])) + 1 - int(st.counts[x])
    pins = []
    for row in range(st.up.shape[0]):
        up = st.up[row].tolist()
        if x not in up and extra > 0:
            up, extra = [x if o < 128 else o for o in up], extra - 1
        elif x not in up:
            continue
        pins.append({"pgid": f"{st.pool.id}.{row:x}", "osds": up})
    osd_dump["pg_upmap"] = pins


def devs(states: List[Any], n: int, start: bool) -> Dict[str, float]:
    out: Dict[str, float] = {}
    tot, share = np.zeros(n), np.zeros(n)
    for st in states:
        c = up_counts(st.start if start else st.up, n)
        out[st.pool.name] = float(np.abs(c - st.share)[st.share > 0].max())
        tot, share = tot + c, share + st.share
    out["total"] = float(np.abs(tot - share)[share > 0].max())
    return out


def row(label: str, osd_dump: Dict[str, Any], crush: Dict[str, Any]) -> str:
    t0, c0 = time.perf_counter(), time.process_time()
    snap = snapshot.load(osd_dump, crush)
    res = Balancer(snap).run()
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = snap.osds.count
    before, after = devs(res.pools, n, True), devs(res.pools, n, False)
    cells = "  ".join(f"{k} {before[k]:.2f} -> {after[k]:.2f}" for k in before)
    return (f"{label:<12} {cells}  moves {res.moves} lower bound {res.lower_bound} "
            f"({res.moves / max(res.lower_bound, 1):.3f} x)  {took:.2f} s ({cpu:.2f} s CPU)")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="total384-") as d:
        for label, case, reweights, out in (("384", "multi384", REWEIGHTS_384, ()),
                                            ("384rgw", "multi384rgw", RGW_REWEIGHTS, RGW_OUT)):
            osd_dump, crush = build_case(Path(d) / label, case).dumps()
            set_states(osd_dump, reweights, out)
            print(row(label, osd_dump, crush))
        pin(osd_dump, crush)        # the rgw map's
        print(row("384rgw-pin", osd_dump, crush))


if __name__ == "__main__":
    main()
