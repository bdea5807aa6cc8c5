"""Benchmark: the balancer's read (primary) tie-break on and off, on the count benchmark's maps.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.read_balance [--only 60,1000,multi,10000]

When a move must take a PG's primary replica, the balancer sends it to the OSD most short
of its fair share of primaries (balance/balancer.py); it never moves a PG, nor a primary,
for reads alone. Per map (qa/bench/balance.py's), over its replicated pools: the primaries'
largest and stdev of (primaries - fair share) per OSD and the worst pool's
read_balance_score, before balancing and after each run, beside the count figures, which
must be the same or better with the tie-break on (doc/balance.rst).
"""
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from pg_advisor.analysis.read_balance import primaries, primary_share, read_balance_score
from pg_advisor.balance.balancer import Balancer
from pg_advisor.model import snapshot
from pg_advisor_testkit.proposals import applied

from ..maps.monbuilt import build_case
from .balance import advised, measure
from .common import Items, each_map, map_label, parser, table

COLS = [("map", "<32"), ("balancer", "<32"), ("pool_dev", ">8.2f"), ("tot_dev", ">7.2f"), ("moves", ">6"),
        ("prim", ">5"), ("pri_max", ">7.2f"), ("pri_sd", ">6.2f"), ("score", ">6.2f"), ("seconds", ">8.2f")]


def spread(snap: snapshot.Snapshot) -> Dict[str, float]:
    """The replicated pools' primaries against their fair share, per OSD, and the worst
    pool's score (1.0 is perfect)."""
    n = snap.osds.count
    held, share = np.zeros(n), np.zeros(n)
    scores = []
    for p in snap.pools:
        if p.type != "replicated":
            continue
        held += primaries(snap, p)
        share += primary_share(snap, p)
        r = read_balance_score(snap, p)
        if r is not None and r.get("score_stable") is not None:
            scores.append(float(r["score_stable"]))
    dev = (held - share)[share > 0]
    return {"max": float(np.abs(dev).max()) if dev.size else 0.0,
            "stdev": float(dev.std()) if dev.size else 0.0,
            "score": max(scores) if scores else float("nan")}


def rows_for(name: str, tmp: Path) -> List[List[Any]]:
    gm = build_case(tmp, name)
    snap = snapshot.load(*gm.dumps())
    label = map_label(gm.num_osds, snap)

    def row(who: str, items: Items, dt: float) -> List[Any]:
        m, s = measure(snap, items), spread(applied(snap, items))
        return [label, who, m["pool_dev"], m["total_dev"], m["moves"], m["primaries"], s["max"], s["stdev"],
                s["score"], dt]
    out = [row("CRUSH alone", {}, 0.0)]
    for on in (False, True):
        b = Balancer(snap)
        b.primaries.read_ties = on
        out.append(row(f"pg_advisor, read tie-break {'on' if on else 'off'}", *advised(b)))
    return out


def main(argv: Optional[List[str]] = None) -> int:
    args = parser(__doc__, only="60,1000,multi,10000").parse_args(argv)
    rows = each_map(args.only.split(","), "pga-read-", rows_for)
    table(COLS, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
