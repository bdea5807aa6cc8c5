"""pg_temp set with a round's upmap items (and with a pgp_num step, executor.py), so that a
moved PG stays served where its data is.

When an item changes a PG's up set, the PG's new primary (an OSD without the data) first
peers, finds the data elsewhere and asks the mon for a pg_temp back onto the old OSDs; the
PG serves no I/O until the next map epoch brings it. The mon spares a PG that second epoch
when an OSD goes down or out or CRUSH changes (mon_osd_prime_pg_temp: it sets the pg_temp
in the same epoch), but not for upmap items. So each round sends, just before each PG's
items, `osd pg-temp PGID <its acting set>` for the same epoch: the PG peers once, on the
OSDs that hold its data, and backfills to the new ones while it serves. If the two land in
different epochs nothing is lost: a pg_temp equal to the up set is dropped by the mon, and
one that comes after the items equals what the PG asks for itself.

Each primary change also costs a client with ops in flight: the OSD that stops being the
primary drops them without an answer and without a newer map, and the client finds out only
when its Objecter calls the op laggy (objecter_timeout, 10 s, checked every 5 s). Priming
leaves a moved PG one primary change, at the end of its backfill, instead of three.

Only PGs whose stats show them clean on a whole acting set (the OSDs that hold the data) are
primed; a PG already remapped has its pg_temp.
"""
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from ..model.constants import CRUSH_ITEM_NONE
from ..model.snapshot import Snapshot

Command = Dict[str, Any]

PRIME_BATCH = 16     # PGs whose pg-temp and items go out in one burst (a thread each)
PRIME_MAX = 64       # PGs primed with one pgp_num step (a thread each; the rest ask themselves)


def primes(snap: Snapshot, pgids: Sequence[str]) -> Dict[str, List[int]]:
    """pgid -> the acting set to hold as pg_temp while the PG moves, for those of `pgids`
    that are active+clean (not remapped) on a whole acting set."""
    pgs = snap.pgs
    if pgs is None or not pgids:
        return {}
    rows = pgs.rows_of(pgids)
    size = {p.id: p.size for p in snap.pools}
    out: Dict[str, List[int]] = {}
    for i in rows.tolist():
        state = pgs.state[i].split("+")
        if "active" not in state or "clean" not in state or "remapped" in state:
            continue
        acting = pgs.acting[i][:size.get(int(pgs.pool[i]), 0)]
        whole = acting.size and bool(((acting >= 0) & (acting != CRUSH_ITEM_NONE)).all())
        if whole and np.array_equal(acting, pgs.up[i][:acting.size]):
            out[f"{int(pgs.pool[i])}.{int(pgs.ps[i]):x}"] = [int(o) for o in acting.tolist()]
    return out


def primed_commands(snap: Snapshot, item_cmds: Sequence[Command]) -> Tuple[List[Command], int]:
    """The round's item commands, each PG's preceded by its pg-temp where primes() gives
    one (to be sent together, in order, for one epoch); and how many were primed."""
    temps = primes(snap, [c["pgid"] for c in item_cmds])
    out: List[Command] = []
    for c in item_cmds:
        t = temps.get(c["pgid"])
        if t is not None:
            out.append({"prefix": "osd pg-temp", "pgid": c["pgid"], "id": t})
        out.append(c)
    return out, len(temps)


def item_results(cmds: Sequence[Command],
                 results: Sequence[Tuple[int, str]]) -> List[Tuple[Command, Tuple[int, str]]]:
    """The answers to the item commands alone (a refused pg-temp only loses the priming)."""
    return [(c, r) for c, r in zip(cmds, results) if c["prefix"] != "osd pg-temp"]
