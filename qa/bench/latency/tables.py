"""The tables the benchmark prints from its runs' figures, and its goals checked pair by pair."""
from typing import Any, Dict, List

import numpy as np

from .intervals import PG_KINDS


def table(rows: List[Dict[str, Any]]) -> List[str]:
    fmt = (lambda v: "/".join("-" if x is None else f"{x:g}" for x in v))
    out = [f"{'method':<17} {'before ms':>15} {'during ms':>19} {'after ms':>15} {'stall s':>7} "
           f"{'failed':>6} {'bad':>3} {'clean s':>7} {'moved MiB':>9} {'prim':>5} {'peer/PG':>7}"]
    for r in rows:
        out.append(f"{r['method']:<17} {fmt(r['before']):>15} {fmt(r['during']):>19} {fmt(r['after']):>15} "
                   f"{r['stall_s']:>7} {r['failed']:>6} {r['mismatches']:>3} {r['to_clean_s']:>7} "
                   f"{r['bytes_moved'] / (1 << 20):>9.0f} {r['primary_changes']:>5} "
                   f"{r['peerings_per_pg']:>7}")
    return out


def burst_table(rows: List[Dict[str, Any]]) -> List[str]:
    """Per run and epoch kind: the epochs of the change, the median/largest slowest op in
    flight at each, and the ops over SLOW_MS in flight at one (at each whole second: the
    baseline); the ops over SLOW_MS at no epoch; the daemons' CPU seconds."""
    kinds = ("up", "acting", "up_thru", "other")
    out = [f"{'method':<17} " + " ".join(f"{k + ': n, worst ms, slow':>27}" for k in kinds)
           + f" {'each second: worst ms':>22} {'none':>5} {'cpu s mon/mgr/osd':>18}"]
    for r in rows:
        b, cpu = r["bursts"], r["cpu_s"]
        cells = []
        for k in kinds:
            w = b.get(f"{k}_worst_ms")
            cells.append("-" if f"{k}_epochs" not in b else
                         f"{b[k + '_epochs']}, {'-' if not w else f'{w[0]:g}/{w[1]:g}'}, {b[f'slow_at_{k}']}")
        w = b["any_second_worst_ms"]
        out.append(f"{r['method']:<17} " + " ".join(f"{c:>27}" for c in cells)
                   + f" {'-' if not w else f'{w[0]:g}/{w[1]:g}':>22} {b['slow_at_none']:>5} "
                   f"{cpu.get('mon', 0):>8g}/{cpu.get('mgr', 0):g}/{cpu.get('osd', 0):g}")
    return out


def pg_table(rows: List[Dict[str, Any]]) -> List[str]:
    """Per run and kind of a PG's new interval (slow_by_pg): the slow ops laid at one, and
    how many of the change's intervals of that kind held a slow op, of how many."""
    out = [f"{'method':<17} {'slow ops':>8} " + " ".join(f"{k + ': slow, held/n':>19}" for k in PG_KINDS)
           + f" {'none':>5}"]
    for r in rows:
        p = r.get("slow_by_pg")
        if p is None:
            continue
        # rows of runs before a kind was told apart have no entry for it: "-"
        cells = [f"{p[k]}, {p[k + '_with_slow']}/{p[k + '_intervals']}" if k + "_with_slow" in p
                 else str(p.get(k, "-")) for k in PG_KINDS]
        out.append(f"{r['method']:<17} {sum(p.get(k, 0) for k in PG_KINDS) + p['none']:>8} "
                   + " ".join(f"{c:>19}" for c in cells) + f" {p['none']:>5}")
    return out


def goals(rows: List[Dict[str, Any]], methods: List[str]) -> List[str]:
    """The issue's goals, per pg_advisor method against the ceph runs of the same repeat."""
    out = []
    ceph = [r for r in rows if r["method"] == "ceph"]
    for m in methods:
        if m == "ceph":
            continue
        ours = [r for r in rows if r["method"] == m]
        pairs = list(zip(ours, ceph))
        if not pairs:
            continue
        p999 = [(o["during"][2], t["during"][2]) for o, t in pairs]
        each = all(x is not None and y is not None and x <= y for x, y in p999)
        med_o = float(np.median([x for x, _ in p999 if x is not None] or [np.nan]))
        med_c = float(np.median([y for _, y in p999 if y is not None] or [np.nan]))
        stall = max(o["stall_s"] for o in ours)
        slow = max(o["to_clean_s"] / t["to_clean_s"] for o, t in pairs if t["to_clean_s"])
        out.append(f"{m}: p99.9 during <= Ceph's in every pair: {'yes' if each else 'NO'} "
                   f"({', '.join(f'{x}/{y}' for x, y in p999)} ms); median {med_o:g} vs Ceph's {med_c:g} "
                   f"(goal <= half: {'yes' if med_o <= med_c / 2 else 'NO'}); longest stall {stall} s "
                   f"(goal <= 5: {'yes' if stall <= 5 else 'NO'}); time to clean up to {slow:.2f} x "
                   f"Ceph's (goal <= 2: {'yes' if slow <= 2 else 'NO'}); failed ops "
                   f"{sum(o['failed'] for o in ours)}, bad reads {sum(o['mismatches'] for o in ours)}")
    return out
