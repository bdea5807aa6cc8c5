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

The pg_temp primed is the acting set the PG's primary will ask for itself once it peers on
the new up set (PeeringState::choose_acting), not merely the old acting set: a primary
that wants another one asks the mon for it, and that second interval costs the PG a second
wait for its up_thru (behind half the slow ops of a drain's rounds in the latency bench,
doc/expand.rst). For a replicated PG it wants its primary (the new up set's
first OSD if that holds the data, else the primary now), then the up set's OSDs that hold
the data in the up set's order, then the leaving ones. Where the PG's log still reaches
back to its creation, a new OSD recovers from the log instead of backfilling: with more
entries to replay than osd_async_recovery_min_cost it does so left out of the acting set
(the pg_temp is the up set without it), with fewer it joins at once and nothing is
primed. EC PGs keep their shards' positions: their acting set is primed as it is.
"""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..crush.placement import MAX_AFFINITY, Placer
from ..crush.upmap import apply_items
from ..model.checks import parse_pgid
from ..model.constants import CRUSH_ITEM_NONE
from ..model.mon_commands import PG_TEMP, RM_PG_UPMAP_PRIMARY, Command, pg_temp
from ..model.snapshot import Snapshot

PRIME_BATCH = 16     # PGs whose pg-temp and items go out in one burst (a thread each)
PRIME_MAX = 64       # PGs primed with one pgp_num step (a thread each; the rest ask themselves)
# osd_async_recovery_min_cost and osd_force_auth_primary_missing_objects, Ceph's defaults:
# the log entries past which a new OSD recovers asynchronously and is not made primary
ASYNC_MIN_COST = 100


def asked_acting(acting: Sequence[int], new_up: Sequence[int], from_creation: bool, entries: int,
                 min_size: int) -> Optional[List[int]]:
    """The acting set a replicated PG's primary asks for once its up set is `new_up`, every
    OSD of `acting` holding the data and the others none (PeeringState::choose_acting with
    select_replicated_primary, calc_replicated_acting and choose_async_recovery_replicated),
    for a log of `entries` entries that reaches back to the PG's creation or not; None
    where it asks for none (its up set: nothing to prime). Cases it cannot tell (two new
    OSDs recovering from the log, two leaving ones) keep the acting set as it is."""
    holders = set(acting)
    new = [o for o in new_up if o not in holders]
    leaving = [o for o in acting if o not in new_up]
    if not new:
        return None                 # the same OSDs: the primary takes the up set
    primary = new_up[0] if new_up[0] in holders else acting[0]
    kept = [primary] + [o for o in new_up if o in holders and o != primary]
    if from_creation:
        if len(new) > 1:
            return list(acting)
        if entries <= ASYNC_MIN_COST:
            return None             # recovered from the log in the acting set: the up set
        # left out while it recovers, as long as min_size OSDs remain
        return kept if len(kept) >= min_size else None
    if len(leaving) > 1:
        return list(acting)
    return (kept + [o for o in leaving if o != primary])[:len(acting)]


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
    one, set to what its primary will ask for (to be sent together, in order, for one
    epoch); and how many were primed."""
    items = [c for c in item_cmds if c["prefix"] != RM_PG_UPMAP_PRIMARY]
    temps = primes(snap, [c["pgid"] for c in items])
    out: List[Command] = []
    n = 0
    for c in item_cmds:
        t = temps.get(c["pgid"]) if c["prefix"] != RM_PG_UPMAP_PRIMARY else None
        if t is not None:
            t = _asked(snap, c, t)
        if t is not None:
            out.append(pg_temp(c["pgid"], t))
            n += 1
        out.append(c)
    return out, n


def _asked(snap: Snapshot, cmd: Command, acting: List[int]) -> Optional[List[int]]:
    """asked_acting() for the PG of one item command (its whole item list on CRUSH's set);
    the acting set as it is where the stats lack the logs, the pool is EC, or primary
    affinity or a down OSD would change the new up set."""
    pgs = snap.pgs
    pool_id, ps = parse_pgid(cmd["pgid"], "pg-upmap-items")
    pool = next((p for p in snap.pools if p.id == pool_id), None)
    if pgs is None or not pgs.logs or pool is None or pool.type != "replicated" or ps >= pool.pg_num:
        return acting
    placer = Placer.of(snap)
    # this PG's CRUSH run alone: a round's cost follows its PGs, not the pool's size
    raw = [int(o) for o in placer.raw_rows(pool, pool.pgp_num, np.array([ps]))[0].tolist()
           if o >= 0 and o != CRUSH_ITEM_NONE]
    ids = [int(x) for x in cmd.get("id", [])]
    new_up = apply_items(raw, list(zip(ids[0::2], ids[1::2])), placer.weight)
    o = snap.osds
    if any(not (0 <= x < o.count and o.up[x] and o.exists[x]) or placer.affinity[x] != MAX_AFFINITY
           for x in new_up + acting):
        return acting
    row = int(pgs.rows_of([cmd["pgid"]])[0])
    from_creation = not pgs.log_tail[row].any()
    return asked_acting(acting, new_up, from_creation, int(pgs.log_size[row]), pool.min_size)


NOT_ITEMS = (PG_TEMP, RM_PG_UPMAP_PRIMARY)


def item_results(cmds: Sequence[Command],
                 results: Sequence[Tuple[int, str]]) -> List[Tuple[Command, Tuple[int, str]]]:
    """The answers to the item commands alone (a refused pg-temp only loses the priming, a
    refused rm-pg-upmap-primary only leaves an entry that does nothing)."""
    return [(c, r) for c, r in zip(cmds, results) if c["prefix"] not in NOT_ITEMS]
