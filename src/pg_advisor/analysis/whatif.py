"""What-if: PG counts, spread and data movement after a change, from exact CRUSH mappings.

Changes: a pool's pg_num/pgp_num, OSDs marked out, OSDs reweighted. Before and after
are both computed by the crush layer, so the comparison is like for like.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from ..crush.placement import Placer, PoolMapping, stable_mod
from ..model.constants import CRUSH_ITEM_NONE
from ..rules.share import pool_share
from ..rules.reach import rule_weights
from ..model.distribution import spread, up_counts
from ..model.errors import AdvisorError
from ..model.limits import check_pg_num, check_pgp_num
from ..model.snapshot import Pool, Snapshot
from ..rules.legality import ancestors, breaks, rule_shape


@dataclass(frozen=True)
class Change:
    pool: Optional[str] = None
    pg_num: Optional[int] = None
    pgp_num: Optional[int] = None
    out: Tuple[int, ...] = ()
    reweight: Mapping[int, float] = field(default_factory=dict)

    def describe(self) -> Dict[str, Any]:
        return {"pool": self.pool, "pg_num": self.pg_num, "pgp_num": self.pgp_num,
                "out": list(self.out), "reweight": {str(k): v for k, v in self.reweight.items()}}


def pg_nums(pool: Pool, target: Optional[Pool], ch: Change) -> Tuple[int, int]:
    """The pool's (pg_num, pgp_num) after the change: since Nautilus pgp_num follows pg_num
    unless it is set on its own."""
    if target is None or pool.id != target.id:
        return pool.pg_num, pool.pgp_num
    pg = ch.pg_num if ch.pg_num is not None else pool.pg_num
    return pg, ch.pgp_num if ch.pgp_num is not None else (pg if ch.pg_num is not None else pool.pgp_num)


def validate(snap: Snapshot, ch: Change) -> Optional[Pool]:
    """Refuse impossible changes with a sentence; return the pool the change names."""
    if ch.pool is None and (ch.pg_num is not None or ch.pgp_num is not None):
        raise AdvisorError.invalid("--pg-num/--pgp-num need a pool")
    if ch.pool is None and not ch.out and not ch.reweight:
        raise AdvisorError.invalid("nothing to simulate: give POOL --pg-num N, --out-osd OSD or "
                                   "--reweight OSD --weight W")
    pool = snap.pool_by_name(ch.pool) if ch.pool is not None else None
    if pool is not None and ch.pg_num is None and ch.pgp_num is None:
        raise AdvisorError.invalid(f"pool '{pool.name}': give --pg-num and/or --pgp-num")
    if pool is not None:       # the mon's bounds, before any mapping is done
        pg, pgp = pg_nums(pool, pool, ch)
        if ch.pg_num is not None:
            check_pg_num(snap, pool, pg)
        check_pgp_num(pgp, pg)
    for osd in list(ch.out) + list(ch.reweight):
        if not (0 <= osd < snap.osds.count and snap.osds.exists[osd]):
            raise AdvisorError.not_found(f"osd.{osd} does not exist")
    for osd, w in ch.reweight.items():
        if not 0.0 <= w <= 1.0:
            raise AdvisorError.invalid(f"reweight of osd.{osd} must be within 0..1, not {w}")
    return pool


def _pg_bytes(snap: Snapshot, pool: Pool) -> Tuple[Optional[np.ndarray], str]:
    """Bytes of each PG of the pool (by placement seed) and where the figure comes from."""
    if snap.pgs is not None:
        sel = snap.pgs.pool == pool.id
        b = np.zeros(pool.pg_num, dtype=np.float64)
        ps = snap.pgs.ps[sel]
        keep = ps < pool.pg_num
        b[ps[keep]] = snap.pgs.bytes[sel][keep]
        return b, "pg_stats"
    if pool.stored is not None:
        return np.full(pool.pg_num, pool.stored / max(pool.pg_num, 1)), "df_even"
    return None, "unknown"


def _moved_shards(pool: Pool, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Per row: shards/replicas of `after` that `before` did not already hold there."""
    valid_after = (after >= 0) & (after != CRUSH_ITEM_NONE)
    if pool.type == "replicated":
        held = (after[:, :, None] == before[:, None, :]).any(axis=2)
    else:   # EC shards are positional: shard i must stay on the same OSD
        width = min(before.shape[1], after.shape[1])
        held = np.zeros(after.shape, dtype=bool)
        held[:, :width] = after[:, :width] == before[:, :width]
    return (valid_after & ~held).sum(axis=1)


def _movement(snap: Snapshot, pool: Pool, old: PoolMapping, new: PoolMapping) -> Dict[str, Any]:
    n0, n1 = old.ps.size, new.ps.size
    if n1 >= n0:   # split (or same): each new PG descends from stable_mod(ps, n0)
        src = stable_mod(new.ps, n0) if n0 else np.zeros(n1, dtype=np.int64)
        dst = new.ps
        share = np.bincount(src, minlength=n0)[src]     # a parent's bytes split among children
    else:          # merge: each old PG folds into stable_mod(ps, n1)
        src, dst = old.ps, stable_mod(old.ps, n1)
        share = np.ones(n0, dtype=np.int64)
    moved = _moved_shards(pool, old.up[src], new.up[dst])
    pg_bytes, source = _pg_bytes(snap, pool)
    moved_bytes = None
    if pg_bytes is not None:
        per_shard = pg_bytes[src] / share / pool.data_chunks
        moved_bytes = int(round(float((moved * per_shard).sum())))
    return {"pgs": int(n1), "pgs_remapped": int((moved > 0).sum()) if n1 >= n0 else int(
                np.unique(dst[moved > 0]).size),
            "shards_moved": int(moved.sum()), "bytes_moved": moved_bytes, "bytes_source": source}


def mon_cleaned(snap: Snapshot, placer: Placer, reweight: np.ndarray, target: Optional[Pool],
                ch: Change) -> Placer:
    """The placer once the mon has cleaned the upmaps on the new map, as
    OSDMap::clean_pg_upmaps does after every change: a PG whose upmapped set breaks its
    rule, or holds an OSD the rule gives no weight (out, or off the rule's tree), loses
    all of them; an item whose source CRUSH no longer picks, or whose target is out,
    goes too (it no longer applies, so the placement is the same either way)."""
    cancel = set()
    anc = None
    for pool in snap.pools:
        prefix = f"{pool.id}."
        if not any(k.startswith(prefix) for k in list(snap.pg_upmap) + list(snap.pg_upmap_items)):
            continue
        ps, up = placer.upmapped(pool, *pg_nums(pool, target, ch))
        rule = snap.rules.get(pool.crush_rule)
        weight = rule_weights(snap, rule, reweight) if rule else np.zeros(snap.osds.count)
        valid = (up >= 0) & (up < weight.size)
        bad = (valid & (weight[np.clip(up, 0, weight.size - 1)] <= 0)).any(axis=1)
        try:
            shape = rule_shape(snap, pool)
        except AdvisorError:
            shape = None     # a rule we cannot read the limits of: its items are kept
        if shape is not None:
            anc = anc if anc is not None else ancestors(snap)
            bad |= breaks(shape, anc, np.where(valid, up, -1), as_the_mon=True)
        cancel |= {f"{pool.id}.{int(s):x}" for s in ps[bad].tolist()}
    cancel &= set(snap.pg_upmap) | set(snap.pg_upmap_items)
    if not cancel:
        return placer
    return placer.with_upmaps({k: v for k, v in snap.pg_upmap.items() if k not in cancel},
                              {k: v for k, v in snap.pg_upmap_items.items() if k not in cancel})


def simulate(snap: Snapshot, ch: Change, placer: Optional[Placer] = None) -> Dict[str, Any]:
    target = validate(snap, ch)
    placer = placer or Placer.of(snap)
    n_osd = snap.osds.count
    reweight = snap.osds.reweight.copy()
    overrides = {**{o: 0.0 for o in ch.out}, **dict(ch.reweight)}
    for o, w in overrides.items():
        reweight[o] = w
    after_placer = placer.with_osds(overrides) if overrides else placer
    if overrides or target is not None:
        # the mon checks every upmap on the map it makes and drops those it no longer takes
        after_placer = mon_cleaned(snap, after_placer, reweight, target, ch)
    notes: List[str] = []
    pools_out = []
    tot_before = np.zeros(n_osd)
    tot_after = np.zeros(n_osd)
    share_before = np.zeros(n_osd)
    share_after = np.zeros(n_osd)
    moves = {"pgs": 0, "pgs_remapped": 0, "shards_moved": 0, "bytes_moved": 0}
    bytes_known = True
    for pool in snap.pools:
        old = placer.map_pool(pool)
        pg, pgp = pg_nums(pool, target, ch)
        changed = (pg, pgp) != (pool.pg_num, pool.pgp_num) or bool(overrides)
        new = after_placer.map_pool(pool, pg_num=pg, pgp_num=pgp) if changed else old
        rule = snap.rules.get(pool.crush_rule)
        w_before = rule_weights(snap, rule) if rule else np.zeros(n_osd)
        w_after = rule_weights(snap, rule, reweight) if rule else np.zeros(n_osd)
        c0, c1 = up_counts(old.up, n_osd), up_counts(new.up, n_osd)
        s0, s1 = pool_share(pool, w_before), pool_share(pool, w_after, pg)
        tot_before += c0
        tot_after += c1
        share_before += s0
        share_after += s1
        if not changed:
            continue
        mv = _movement(snap, pool, old, new)
        for k in ("pgs", "pgs_remapped", "shards_moved"):
            moves[k] += mv[k]
        if mv["bytes_moved"] is None:
            bytes_known = False
        else:
            moves["bytes_moved"] += mv["bytes_moved"]
        if mv["bytes_source"] == "df_even":
            notes.append(f"pool {pool.name}: PG sizes assumed even (stored / pg_num): no PG stats")
        pools_out.append({
            "pool_id": pool.id, "pool": pool.name,
            "pg_num": [pool.pg_num, pg], "pgp_num": [pool.pgp_num, pgp],
            "before": spread(c0, s0).as_dict(), "after": spread(c1, s1).as_dict(), **mv})
    osds = [{"id": o, "pgs_before": int(tot_before[o]), "pgs_after": int(tot_after[o]),
             "share_after": round(float(share_after[o]), 6)}
            for o in np.flatnonzero(snap.osds.exists).tolist()]
    return {
        "epoch": snap.epoch,
        "change": ch.describe(),
        "pools": pools_out,
        "total": {"before": spread(tot_before, share_before).as_dict(),
                  "after": spread(tot_after, share_after).as_dict(),
                  **moves, "bytes_moved": moves["bytes_moved"] if bytes_known else None},
        "osds": osds,
        "notes": notes,
    }


def pg_map(snap: Snapshot, pool_name: Optional[str] = None,
           placer: Optional[Placer] = None) -> Dict[str, Any]:
    """{"1.0": [3, 7, 11], ...}: every PG's up set, as the mgr's map_pool_pgs_up gives it."""
    pools = snap.pools if pool_name is None else (snap.pool_by_name(pool_name),)
    placer = placer or Placer.of(snap)
    out: Dict[str, Any] = {}
    for pool in pools:
        m = placer.map_pool(pool)
        rows = m.up.tolist()      # whole arrays to lists at C speed: a pool may hold 2^20 PGs
        if pool.type == "replicated":
            rows = [[o for o in r if o != -1] for r in rows]
        out.update(zip((f"{pool.id}.{ps:x}" for ps in m.ps.tolist()), rows))
    return out
