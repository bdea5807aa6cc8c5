"""Read (primary) balance, as far as Pacific shows it: per OSD the primaries it holds
against its fair share, and per replicated pool the read_balance_score Reef's
`ceph osd pool ls detail` prints (OSDMap::calc_read_balance_score, "fair distribution"
as Reef and Squid compute it).

A PG's primary serves its reads. CRUSH makes the first OSD of the up set the primary,
unless primary affinity (below 1) sends the role down the set. The fair share of OSD i in
a pool: pg_num x (w_i x pa_i) / sum_j (w_j x pa_j), w the OSD's weight for the pool's rule
(CRUSH weight x reweight, where the rule reaches), pa its primary affinity.

Reef's score, for a replicated pool (no score for erasure-coded ones), from each PG's up
primary as the PG stats report it, or as CRUSH gives it without stats (primary affinity
and upmaps applied: the "stable" score; Reef's headline "acting" score, from the
acting primaries the PG stats show, differs from it only while a pg_temp holds a PG):
    num_osds = the distinct OSDs of the pool's up sets; avg = pg_num / num_osds
    raw = r2(the most primaries on one OSD / avg)
    optimal = r2(num_osds / the OSDs under the rule's take with primary affinity > 0)
    score = r2(raw / optimal)          1.0 is perfect; 1.5 is 50 % more than even
r2 rounds to two decimals, half away from zero, and Ceph keeps each value as a float (32
bits): the JSON then carries 1.3300000429153442 for 1.33, as Reef's does. Reef refuses a
pool whose OSDs all have primary affinity 0 (ERANGE), or whose weighted mean affinity is
below 1/size (EINVAL); the report says so with no score.
"""
import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..crush.placement import Placer
from ..rules.reach import osds_under, rule_segments, rule_weights
from ..model.snapshot import Pool, Snapshot


def r2(x: float) -> float:
    """Ceph's rbi_round: two decimals, half away from zero, as a 32-bit float."""
    v = math.floor(100 * x + 0.5) / 100 if x > 0 else math.ceil(100 * x - 0.5) / 100
    return float(np.float32(v))


def _take_weights(snap: Snapshot, pool: Pool) -> np.ndarray:
    """Per OSD: its CRUSH weight over the weight under each take of the pool's rule, summed
    over the takes (Ceph's normalised rule weight map); NaN for OSDs under no take. Once
    per rule and snapshot (a cluster of many pools has few rules)."""
    key = ("take_weights", pool.crush_rule)
    kept = snap.memo.get(key)
    if kept is None:
        kept = snap.memo.setdefault(key, _take_weights_of(snap, pool))
    return np.asarray(kept)


def _take_weights_of(snap: Snapshot, pool: Pool) -> np.ndarray:
    w = np.full(snap.osds.count, np.nan)
    rule = snap.rules.get(pool.crush_rule)
    if rule is None:
        return w
    for take, _ in rule_segments(snap, rule):
        under = osds_under(snap, take, members=True) > 0
        cw = np.where(under, snap.osds.crush_weight, 0.0)
        total = cw.sum()
        share = cw / total if total > 0 else cw
        w = np.where(under, np.nan_to_num(w) + share, w)
    return w


def _up(snap: Snapshot, pool: Pool) -> Tuple[np.ndarray, np.ndarray]:
    """(up sets, up primaries) of the pool's PGs: as the PG stats report them (what the
    cluster computed; no CRUSH run, so a status at 300,000 PGs costs a few vector
    operations), or from the map by CRUSH where there are no stats (offline, no pg dump)."""
    if snap.pgs is not None:
        rows = snap.pg_rows(pool.id)
        if rows.size:
            return snap.pgs.up[rows], snap.pgs.up_primary[rows]
    m = Placer.of(snap).map_pool(pool)
    return m.up, m.up_primary


def _acting_primaries(snap: Snapshot, pool: Pool) -> Optional[np.ndarray]:
    """Per PG of the pool, its acting primary as the PG stats show it (None without stats):
    the up primary while the acting set is the up set, else the first OSD acting (a
    pg_temp's primary; Pacific sets no primary_temp of its own)."""
    if snap.pgs is None:
        return None
    rows = snap.pg_rows(pool.id)
    if not rows.size:
        return None
    up, acting = snap.pgs.up[rows], snap.pgs.acting[rows]
    return np.where((up == acting).all(axis=1), snap.pgs.up_primary[rows], acting[:, 0])


def primaries(snap: Snapshot, pool: Pool) -> np.ndarray:
    """Per OSD: the PGs of the pool whose up primary it is."""
    return primary_counts(snap, _up(snap, pool)[1])


def primary_share(snap: Snapshot, pool: Pool) -> np.ndarray:
    """Per OSD: its fair share of the pool's primaries, pg_num x w x pa / sum(w x pa)."""
    rule = snap.rules.get(pool.crush_rule)
    if rule is None:
        return np.zeros(snap.osds.count)
    key = ("primary_weights", pool.crush_rule)
    wpa = snap.memo.get(key)
    if wpa is None:
        wpa = snap.memo.setdefault(key, rule_weights(snap, rule) * snap.osds.primary_affinity)
    total = wpa.sum()
    return pool.pg_num * wpa / total if total > 0 else np.zeros(snap.osds.count)


def primary_counts(snap: Snapshot, up_primary: np.ndarray) -> np.ndarray:
    """Per OSD, how many of these primaries it holds (holes and unknown ids left out)."""
    n = snap.osds.count
    p = up_primary[(up_primary >= 0) & (up_primary < n)]
    return np.bincount(p, minlength=n)[:n]


def read_balance_score(snap: Snapshot, pool: Pool,
                       up: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> Optional[Dict[str, Any]]:
    """Reef's read_balance block for a replicated pool (None for an erasure-coded one or a
    pool with no PG mapped): the score, its parts, or the error Reef would give. `up`: the
    pool's (up sets, up primaries) when the caller has them."""
    if pool.type != "replicated":
        return None
    sets, prim = up if up is not None else _up(snap, pool)
    sets = sets[(sets >= 0) & (sets < snap.osds.count)]
    num_osds = int(np.unique(sets).size)
    if num_osds == 0 or pool.pg_num == 0:
        return None
    counts = primary_counts(snap, prim)
    w = _take_weights(snap, pool)
    in_rule = ~np.isnan(w)
    pa = snap.osds.primary_affinity
    pa_sum = float(pa[in_rule].sum())
    pa_count = int((pa[in_rule] != 0).sum())
    total_w = float(w[in_rule].sum())
    pa_w = float((w[in_rule] * pa[in_rule]).sum())
    out: Dict[str, Any] = {"score_type": "Fair distribution"}
    if pa_sum == 0 or pa_count == 0:
        return dict(out, score_stable=0.0, error_message="all the rule's OSDs have primary affinity 0")
    if total_w > 0 and pa_w / total_w < 1.0 / pool.size:
        return dict(out, score_stable=0.0, error_message="the weighted average primary affinity is below "
                    f"1/size ({pa_w / total_w:.2f} < {1.0 / pool.size:.2f}): too few OSDs may be primaries")
    avg = pool.pg_num / num_osds
    most = int(counts[in_rule].max()) if in_rule.any() else 0
    raw = r2(most / avg)
    optimal = r2(num_osds / pa_count)
    if optimal <= 0:      # Reef prints inf (not JSON): the pool covers too few OSDs to say
        return dict(out, score_stable=None, error_message=f"the pool's PGs are on {num_osds} of the "
                    f"rule's {pa_count} OSDs: no optimum to score against")
    score = r2(raw / optimal)
    acting = _acting_primaries(snap, pool)
    if acting is not None:
        # Reef's headline ("acting"): where the PG stats say the primaries serve now
        a = primary_counts(snap, acting)
        raw_acting = r2((int(a[in_rule].max()) if in_rule.any() else 0) / avg)
        out.update(score_acting=r2(raw_acting / optimal), raw_score_acting=raw_acting)
    return dict(out, score_stable=score, raw_score_stable=raw, optimal_score=optimal,
                average_primary_affinity=r2(pa_sum / pa_count),
                average_primary_affinity_weighted=r2(pa_w / total_w) if total_w > 0 else 0.0,
                primary_affinity_weighted=pa_w)


def read_balance(snap: Snapshot, pools: List[Pool]) -> Dict[str, Any]:
    """For status: per OSD the primaries and their fair share (all the pools given), per
    pool Reef's score."""
    n = snap.osds.count
    held = np.zeros(n, dtype=np.int64)
    share = np.zeros(n)
    scores: Dict[str, Any] = {}
    for p in pools:
        up = _up(snap, p)           # once a pool: the score reads the same sets
        held += primary_counts(snap, up[1])
        share += primary_share(snap, p)
        scores[str(p.id)] = read_balance_score(snap, p, up)
    return {"primaries": held, "primary_share": share, "pools": scores}
