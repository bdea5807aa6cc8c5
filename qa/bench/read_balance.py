"""Benchmark: the balancer's read (primary) tie-break on and off, on the count benchmark's maps.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.read_balance [--only 60,1000,multi,10000]

When a move must take a PG's primary replica (no other replica of a PG on that OSD does
as well for the counts), the balancer sends it to the OSD most short of its fair share of
primaries, or takes it off the one most over (balance/balancer.py). It never moves a PG,
nor a primary, for reads alone. Per map, over its replicated pools (Reef scores those
only): the primaries' spread, max and stdev of (primaries - fair share) per OSD, and the
worst pool's read_balance_score (analysis/read_balance.py), before balancing and after
each run; beside the count figures of qa/bench/balance.py, which must be the same or better
with the tie-break on. Maps from qa/maps/monbuilt.py (a throw-away mon), as qa/bench/balance.py makes
them.
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from pg_advisor.analysis.read_balance import primaries, primary_share, read_balance_score
from pg_advisor.balance.balancer import Balancer
from pg_advisor.model import snapshot
from pg_advisor_testkit.proposals import applied

from .balance import Items, make_map, measure


def spread(snap: snapshot.Snapshot) -> Dict[str, Any]:
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
    live = share > 0
    dev = (held - share)[live]
    return {"max": float(np.abs(dev).max()) if dev.size else 0.0,
            "stdev": float(dev.std()) if dev.size else 0.0,
            "score": max(scores) if scores else float("nan")}


def rows_for(name: str, tmp: Path) -> List[List[Any]]:
    gm = make_map(name, tmp)
    osd_dump, crush = gm.dumps()
    snap = snapshot.load(osd_dump, crush)
    pgs = sum(p.pg_num for p in snap.pools)
    label = f"{gm.num_osds} OSDs, {len(snap.pools)} pools, {pgs} PGs"
    out: List[List[Any]] = [[label, "CRUSH alone", measure(snap, {}), spread(snap), 0.0]]
    for on in (False, True):
        b = Balancer(snap)
        b.primaries.read_ties = on
        t0 = time.perf_counter()
        res = b.run()
        dt = time.perf_counter() - t0
        items: Items = {k: tuple(v) for k, v in res.items.items() if v}
        out.append([label, f"pg_advisor, read tie-break {'on' if on else 'off'}", measure(snap, items),
                    spread(applied(snap, items)), dt])
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--only", default="60,1000,multi,10000")
    args = ap.parse_args(argv)
    rows: List[List[Any]] = []
    for name in args.only.split(","):
        with tempfile.TemporaryDirectory(prefix="pga-read-") as tmp:
            rows += rows_for(name, Path(tmp))
    print(f"{'map':<32} {'balancer':<32} {'pool_dev':>8} {'tot_dev':>7} {'moves':>6} {'prim':>5} "
          f"{'pri_max':>7} {'pri_sd':>6} {'score':>6} {'seconds':>8}")
    for label, who, m, s, dt in rows:
        print(f"{label:<32} {who:<32} {m['pool_dev']:>8.2f} {m['total_dev']:>7.2f} {m['moves']:>6} "
              f"{m['primaries']:>5} {s['max']:>7.2f} {s['stdev']:>6.2f} {s['score']:>6.2f} {dt:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
