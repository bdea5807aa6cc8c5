"""The tables the benchmark prints from its runs' figures, and its goals checked pair by pair."""
from typing import Any, Dict, List

import numpy as np

from ..split import ms3 as fmt
from .intervals import PG_KINDS


def table(rows: List[Dict[str, Any]]) -> List[str]:
    out = [f"{'method':<17} {'before ms':>15} {'during ms':>19} {'after ms':>15} {'stall s':>7} "
           f"{'failed':>6} {'bad':>3} {'clean s':>7} {'moved MiB':>9} {'prim':>5} {'peer/PG':>7}"]
    for r in rows:
        out.append(f"{r['method']:<17} {fmt(r['before']):>15} {fmt(r['during']):>19} {fmt(r['after']):>15} "
                   f"{r['stall_s']:>7} {r['failed']:>6} {r['mismatches']:>3} {r['to_clean_s']:>7} "
                   f"{r['bytes_moved'] / (1 << 20):>9.0f} {r['primary_changes']:>5} "
                   f"{r['peerings_per_pg']:>7}")
    return out


def burst_table(rows: List[Dict[str, Any]]) -> List[str]:
    """Per run and epoch kind (bursts()): the epochs, the median/largest slowest op in flight
    at each, the slow ops at one; at each second; at no epoch; the daemons' CPU seconds."""
    kinds = ("up", "acting", "up_thru", "other")
    out = [f"{'method':<17} " + " ".join(f"{k + ': n, worst ms, slow':>27}" for k in kinds)
           + f" {'each second: worst ms':>22} {'none':>5} {'cpu s mon/mgr/osd':>18}"]
    for r in rows:
        b, cpu = r["bursts"], r["cpu_s"]
        cells = [f"{b[k + '_epochs']}, {fmt(b[k + '_worst_ms'] or [None])}, {b['slow_at_' + k]}"
                 for k in kinds]
        out.append(f"{r['method']:<17} " + " ".join(f"{c:>27}" for c in cells)
                   + f" {fmt(b['any_second_worst_ms'] or [None]):>22} {b['slow_at_none']:>5} "
                   f"{cpu.get('mon', 0):>8g}/{cpu.get('mgr', 0):g}/{cpu.get('osd', 0):g}")
    return out


def pg_table(rows: List[Dict[str, Any]]) -> List[str]:
    """Per run and kind of a PG's new interval (slow_by_pg): the slow ops laid at one, and
    how many of the change's intervals of that kind held one, of how many."""
    out = [f"{'method':<17} {'slow ops':>8} " + " ".join(f"{k + ': slow, held/n':>19}" for k in PG_KINDS)
           + f" {'none':>5}"]
    for r in rows:
        p = r["slow_by_pg"]
        cells = [f"{p[k]}, {p[k + '_with_slow']}/{p[k + '_intervals']}" for k in PG_KINDS]
        out.append(f"{r['method']:<17} {sum(p[k] for k in PG_KINDS) + p['none']:>8} "
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
