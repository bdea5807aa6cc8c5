"""The `status` view: pools, OSDs, and how evenly PGs are spread, as plain data.

Pure: a Snapshot in, a JSON-ready dict out. The mgr command and the offline CLI both
print this dict, so their `-f json` outputs are the same for the same cluster state.
"""
import copy
from dataclasses import astuple, dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..model.distribution import osd_cells, pg_counts, spread
from ..rules.share import pool_share
from ..rules.reach import rule_weights, unreachable
from ..model.errors import AdvisorError
from ..model.options import Options, make
from ..model.snapshot import Pool, Snapshot
from ..sizing.memory import MemoryModel, pg_log_lengths
from ..sizing.sizer import SizingResult, memory_model, recommend
from ..sizing.versus import autoscaler_difference, sizing_summary
from ..rules.legality import ancestors
from .backfill import full_reservations
from .space import space_summary
from .read_balance import read_balance
from .status_types import ClusterSummary, Distribution, OsdRow, PoolEntry, StatusReport
from ..rules.share import rule_share


def _opt(v: int) -> Optional[int]:
    return None if v < 0 else int(v)


def _opt_round(v: float, digits: int) -> Optional[float]:
    return None if np.isnan(v) else round(float(v), digits)


def utilization(used: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Percent of each OSD's space in use, as `ceph osd df` reports it (NaN where unknown)."""
    known = (used >= 0) & (total > 0)
    out = np.full(used.shape, np.nan)
    out[known] = 100.0 * used[known] / total[known]
    return out


def extremes(osds: np.ndarray, counts: Optional[np.ndarray], share: np.ndarray,
             util: np.ndarray) -> Dict[str, Any]:
    """The fullest and emptiest of the given (in) OSDs: by PGs against their share, and by
    space used. By PGs, the ratio count / share ranks them, so a bigger OSD holding more PGs
    is not called fuller for it."""
    out: Dict[str, Any] = {"by_pgs": None, "by_utilization": None}
    cand = np.flatnonzero(osds & (share > 0))
    if counts is not None and cand.size:
        ratio = counts[cand] / share[cand]
        hi, lo = int(cand[np.argmax(ratio)]), int(cand[np.argmin(ratio)])
        out["by_pgs"] = {k: {"osd": o, "pgs": int(counts[o]), "pg_share": round(float(share[o]), 6),
                             "ratio": round(float(counts[o] / share[o]), 4)}
                         for k, o in (("fullest", hi), ("emptiest", lo))}
    cand = np.flatnonzero(osds & ~np.isnan(util))
    if cand.size:
        hi, lo = int(cand[np.argmax(util[cand])]), int(cand[np.argmin(util[cand])])
        out["by_utilization"] = {k: {"osd": o, "utilization": round(float(util[o]), 4)}
                                 for k, o in (("fullest", hi), ("emptiest", lo))}
    return out


def _pool_entry(snap: Snapshot, pool: Pool, reported: int, sizing: Optional[SizingResult],
                reads: Optional[Dict[str, Any]], not_mapped: Optional[str] = None) -> PoolEntry:
    rule = snap.rules.get(pool.crush_rule)
    rec = sizing.by_name(pool.name) if sizing is not None else None
    known = rec if rec is not None and rec.known else None
    auto = (snap.autoscale or {}).get(pool.name)
    return {
        "recommended_pg_num": known.recommended if known else None,
        "recommendation": rec.sentence() if rec else None,
        "reasons": [r.as_dict() for r in rec.reasons] if rec else None,
        "pressing": rec.pressing if rec else None,
        "automatic": rec.automatic if rec else None,
        "sizing": rec.kind.value if rec else None,
        "moved_bytes_estimate": (int(known.moved_bytes) if known and known.moved_bytes is not None
                                 else None),
        "data_share": round(known.data_share, 6) if known else None,
        "autoscaler_pg_num": int(auto["pg_num_final"]) if auto and "pg_num_final" in auto else None,
        "autoscaler_would_adjust": bool(auto.get("would_adjust")) if auto else None,
        "autoscaler_mode": snap.autoscaler_mode(pool),
        "autoscaler_difference": autoscaler_difference(rec, auto, sizing) if rec and sizing else None,
        "id": pool.id, "name": pool.name, "type": pool.type,
        "size": pool.size, "min_size": pool.min_size,
        "crush_rule": pool.crush_rule, "crush_rule_name": rule.name if rule else None,
        "pg_num": pool.pg_num, "pgp_num": pool.pgp_num,
        "pg_num_target": pool.pg_num_target, "pgp_num_target": pool.pgp_num_target,
        "pg_autoscale_mode": pool.autoscale_mode,
        "stored": pool.stored, "objects": pool.objects,
        "pgs_reported": reported,
        "not_mapped": not_mapped,
        "read_balance": reads,
    }


def status_of(snap: Snapshot, pool_name: Optional[str] = None,
              opts: Optional[Options] = None, balanced: bool = False) -> StatusReport:
    """status_report, memoized on the snapshot: the mgr reuses a snapshot while the
    cluster is unchanged, so the panel's refresh and `status` then cost a lookup. A copy
    of the top level (nobody changes a report's insides: renderers only read)."""
    key = ("status", pool_name, astuple(opts) if opts is not None else None, balanced)
    doc: Optional[StatusReport] = snap.memo.get(key)
    if doc is None:
        doc = snap.memo.setdefault(key, status_report(snap, pool_name, opts, balanced))
    return copy.copy(doc)


def with_ours(report: StatusReport, ours: Optional[int]) -> StatusReport:
    """The report with the count of the map's item lists pg_advisor set (the mgr's record,
    mgr/mon.OwnedItems): a copy down to where it changes (status_of's stays as memoized)."""
    cluster = copy.copy(report["cluster"])
    cluster["upmap_entries"] = copy.copy(cluster["upmap_entries"])
    cluster["upmap_entries"]["pg_upmap_items_ours"] = ours
    out = copy.copy(report)
    out["cluster"] = cluster
    return out


@dataclass
class Figures:
    """What the status view shows, computed: per pool (rows of snap.pools) and OSD."""
    selected: Sequence[Pool]        # the pools asked for
    sel: np.ndarray                 # their rows
    opts: Options
    sizing: Optional[SizingResult]
    model: MemoryModel
    mem_now: Optional[np.ndarray]
    share: np.ndarray               # weight-proportional share of each pool's replicas
    target: np.ndarray              # the share the balancer aims at
    counts: Optional[np.ndarray]    # PGs each pool has on each OSD (PG stats), or None
    reported: Dict[int, int]        # PGs the stats list, per pool id
    total_counts: Optional[np.ndarray]   # PGs per OSD, unmapped pools' included
    shown: np.ndarray               # the OSDs listed
    util: np.ndarray
    unlisted: Optional[np.ndarray]
    reads: Dict[str, Any]
    notes: List[str]
    sel_share: np.ndarray = field(init=False)     # the pools asked for, summed per OSD
    sel_target: np.ndarray = field(init=False)
    sel_counts: Optional[np.ndarray] = field(init=False)
    steady: Optional[np.ndarray] = field(init=False)     # PG memory per OSD at its PGs now
    peak: Optional[np.ndarray] = field(init=False)
    steady_budget: np.ndarray = field(init=False)
    peak_budget: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        n = self.share.shape[1]
        tc = self.total_counts
        self.steady = self.model.steady_state(tc) + np.zeros(n) if tc is not None else None
        self.peak = self.model.peak(tc) + np.zeros(n) if tc is not None else None
        self.steady_budget = self.model.steady_budget(self.opts.pg_memory_fraction) + np.zeros(n)
        self.peak_budget = self.model.peak_budget() + np.zeros(n)
        self.sel_share = self.share[self.sel].sum(axis=0)
        self.sel_target = self.target[self.sel].sum(axis=0)
        self.sel_counts = self.counts[self.sel].sum(axis=0) if self.counts is not None else None


def status_report(snap: Snapshot, pool_name: Optional[str] = None,
                  opts: Optional[Options] = None, balanced: bool = False) -> StatusReport:
    """Build the status report; `pool_name` narrows it to one pool (ENOENT if unknown)."""
    f = figures(snap, pool_name, opts or make(), balanced)
    return {
        "epoch": snap.epoch,
        "pool_filter": pool_name,
        "pg_source": None if snap.pgs is None else "pg_stats" if snap.pgs.logs else "pg_stats_brief",
        # pg_autoscaler raises nothing itself: its status unknown, or the noautoscale flag set
        "autoscaler_silent": snap.autoscale is None or "noautoscale" in snap.flags,
        "pools": [_pool_entry(snap, p, f.reported[p.id], f.sizing, f.reads["pools"][str(p.id)])
                  for p in f.selected]
        + [_pool_entry(snap, p, int(snap.pg_rows(p.id).size), None, None, not_mapped=why)
           for p, why in (snap.unmapped if pool_name is None else ())],
        "osds": [_osd_row(snap, f, o) for o in np.flatnonzero(f.shown).tolist()],
        "distribution": _distribution(snap, f, whole=pool_name is None),
        "cluster": _cluster(snap, f),
        "backfill": full_reservations(snap),
        "space": space_summary(snap, f.opts.fill_limit, f.util),
        "notes": f.notes,
    }


def figures(snap: Snapshot, pool_name: Optional[str], opts: Options, balanced: bool) -> Figures:
    """The status view's figures for the pools asked for (all when pool_name is None), and
    the notes on what is missing or odd."""
    selected = snap.pools if pool_name is None else (snap.pool_by_name(pool_name),)
    osds = snap.osds
    notes: List[str] = []
    if not (osds.exists & osds.up & osds.in_).any():
        notes.append(f"no OSD is up and in ({int(osds.exists.sum())} exist): the pools' PGs have "
                     f"nowhere to go until OSDs join")
    sizing: Optional[SizingResult] = None
    try:
        sizing = recommend(snap, opts, balanced=balanced)
        notes.extend(sizing.notes)
        notes.extend(f"overlapping roots {' and '.join(x.roots)} share {x.osds} OSDs (pools "
                     f"{', '.join(x.pools)}): their PG budget is split there by data; pg_autoscaler "
                     "(Tentacle) does not scale such pools" for x in sizing.overlaps)
        notes.extend(c.sentence() for c in sizing.overcommits)
        if sizing.pools and not any(s.known for s in sizing.pools):
            notes.append("no pool's usage is known (no PG stats or df): no pg_num recommendation")
    except AdvisorError as e:   # e.g. a CRUSH map we cannot simulate: the rest still stands
        notes.append(f"no sizing recommendation: {e.message}")
    model = memory_model(snap, opts)
    mem_now = _memory_now(snap, model)
    share, weights_by_rule = _shares(snap, notes)
    target = _targets(snap, share, weights_by_rule)
    counts, reported = _counts(snap, selected, notes)
    unmapped_counts = _unmapped_counts(snap, counts, notes) if pool_name is None else None

    wanted = {p.id for p in selected}
    sel = np.array([i for i, p in enumerate(snap.pools) if p.id in wanted], dtype=np.int64)
    total_counts = counts.sum(axis=0) if counts is not None else None
    if total_counts is not None and unmapped_counts is not None:
        total_counts = total_counts + unmapped_counts
    # OSDs shown: all of them, or for one pool those it should or does use
    shown = osds.exists.copy()
    if pool_name is not None:
        sel_counts = counts[sel].sum(axis=0) if counts is not None else None
        shown &= (share[sel].sum(axis=0) > 0) | (sel_counts > 0 if sel_counts is not None else False)
    unlisted = _unlisted_pgs(snap)
    if unlisted is not None:
        over = np.flatnonzero(shown & (unlisted > 0)).tolist()
        if over:
            verb = "holds" if len(over) == 1 else "hold"
            notes.append(", ".join(f"osd.{o}" for o in over[:10]) + (" ..." if len(over) > 10 else "")
                         + f" {verb} {int(unlisted[over].sum())} PGs the PG stats do not list (a "
                         "deleted pool's PGs still being removed, or strays): their PG memory is "
                         "above pg_memory_now")
    return Figures(selected, sel, opts, sizing, model, mem_now, share, target, counts, reported,
                   total_counts, shown, utilization(osds.bytes_used, osds.bytes_total), unlisted,
                   read_balance(snap, list(selected)), notes)


def _shares(snap: Snapshot, notes: List[str]) -> Tuple[np.ndarray, Dict[int, np.ndarray]]:
    """Weight-proportional shares (pool x OSD), one weight vector per rule; a note for each
    rule that is missing or cannot reach some OSDs."""
    n_osd = snap.osds.count
    weights_by_rule: Dict[int, np.ndarray] = {}
    share = np.zeros((len(snap.pools), n_osd), dtype=np.float64)
    for i, pool in enumerate(snap.pools):
        if pool.crush_rule not in weights_by_rule:
            rule = snap.rules.get(pool.crush_rule)
            weights_by_rule[pool.crush_rule] = (rule_weights(snap, rule) if rule is not None
                                                else np.zeros(n_osd))
            if rule is None:
                notes.append(f"pool {pool.name}: crush rule {pool.crush_rule} is not in the CRUSH map")
            else:
                lost = np.flatnonzero(unreachable(snap, rule)).tolist()
                if lost:     # CRUSH skips the replica there: say where the share went
                    notes.append(f"crush rule '{rule.name}' cannot reach osd.{lost[0]}"
                                 + (f" and {len(lost) - 1} more" if len(lost) > 1 else "")
                                 + " (no ancestor of a type its steps choose): they get no share "
                                 "and CRUSH maps no replica there")
        share[i] = pool_share(pool, weights_by_rule[pool.crush_rule])
    return share, weights_by_rule


def _counts(snap: Snapshot, selected: Sequence[Pool],
            notes: List[str]) -> Tuple[Optional[np.ndarray], Dict[int, int]]:
    """(PGs per pool and OSD from the PG stats, or None without them; PGs listed per pool)."""
    reported = {p.id: 0 for p in snap.pools}
    if snap.pgs is None:
        notes.append("no PG stats given: PG counts need --pg-dump")
        return None, reported
    _, counts = pg_counts(snap, snap.pgs)
    ids, n = np.unique(snap.pgs.pool, return_counts=True)
    reported.update({int(a): int(b) for a, b in zip(ids, n) if int(a) in reported})
    for p in selected:
        if reported[p.id] != p.pg_num:
            notes.append(f"pool {p.name}: PG stats report {reported[p.id]} PGs of pg_num "
                         f"{p.pg_num} (stats lag a change until they refresh)")
    return counts, reported


def _unmapped_counts(snap: Snapshot, counts: Optional[np.ndarray],
                     notes: List[str]) -> Optional[np.ndarray]:
    """The PGs per OSD of the pools the model cannot map: they count on their OSDs (which
    hold them), in no pool's distribution and no sizing."""
    if not snap.unmapped:
        return None
    for p, why in snap.unmapped:
        notes.append(f"pool {p.name} is not mapped: {why}; its PGs count in the OSDs' PG totals, "
                     f"not in the distribution, the sizing or the balance")
    if counts is None or snap.pgs is None:
        return None
    return pg_counts(snap, snap.pgs, [p.id for p, _ in snap.unmapped])[1].sum(axis=0)


def _osd_row(snap: Snapshot, f: Figures, o: int) -> OsdRow:
    osds, counts, total, sizing = snap.osds, f.counts, f.total_counts, f.sizing
    rows = f.sel.tolist()
    return {
        "id": o, "host": osds.host[o], "device_class": osds.device_class[o],
        "crush_weight": round(float(osds.crush_weight[o]), 6),
        "reweight": round(float(osds.reweight[o]), 6),
        "up": bool(osds.up[o]), "in": bool(osds.in_[o]),
        "pgs": int(total[o]) if total is not None else None,
        "pgs_by_pool": ({str(snap.pools[i].id): int(counts[i, o]) for i in rows}
                        if counts is not None else None),
        "pg_share": round(float(f.sel_share[o]), 6),
        "pg_share_by_pool": {str(snap.pools[i].id): round(float(f.share[i, o]), 6) for i in rows},
        "pg_target": round(float(f.sel_target[o]), 6),
        "pg_target_by_pool": {str(snap.pools[i].id): round(float(f.target[i, o]), 6) for i in rows},
        "utilization": _opt_round(f.util[o], 4),
        "bytes_used": _opt(int(osds.bytes_used[o])),
        "bytes_total": _opt(int(osds.bytes_total[o])),
        "pg_memory_now": int(f.mem_now[o]) if f.mem_now is not None else None,
        "pgs_unlisted": int(f.unlisted[o]) if f.unlisted is not None and f.unlisted[o] >= 0 else None,
        "pg_memory_steady": int(f.steady[o]) if f.steady is not None else None,
        "pg_memory_peak": int(f.peak[o]) if f.peak is not None else None,
        "pg_memory_budget": int(f.steady_budget[o]),
        "pg_memory_peak_budget": int(f.peak_budget[o]),
        "pgs_recommended": int(sizing.pgs_per_osd_after[o]) if sizing is not None else None,
        "primaries": int(f.reads["primaries"][o]),
        "primary_share": round(float(f.reads["primary_share"][o]), 6),
    }


def _distribution(snap: Snapshot, f: Figures, whole: bool) -> Distribution:
    """How evenly each pool (and, for the whole cluster, all) spreads against its share."""
    out: Distribution = {"pools": [], "total": None, "extremes": {}}
    counts, share, target = f.counts, f.share, f.target
    if counts is not None:
        for i in f.sel.tolist():
            d = spread(counts[i], share[i]).as_dict()
            out["pools"].append({"pool_id": snap.pools[i].id, "pool": snap.pools[i].name, **d,
                                 "target_max_deviation": spread(counts[i], target[i]).max_deviation})
        if whole:
            out["total"] = dict(spread(counts.sum(axis=0), share.sum(axis=0)).as_dict(),
                                target_max_deviation=spread(counts.sum(axis=0),
                                                            target.sum(axis=0)).max_deviation)
    out["extremes"] = extremes(f.shown & snap.osds.in_, f.sel_counts, f.sel_share, f.util)
    return out


def _cluster(snap: Snapshot, f: Figures) -> ClusterSummary:
    osds, total, sizing = snap.osds, f.total_counts, f.sizing
    n_in = int((osds.exists & osds.in_).sum())
    mx = int(total.max()) if total is not None and osds.count else None
    return {
        "osds": int(osds.exists.sum()), "osds_up": int((osds.exists & osds.up).sum()),
        "osds_in": n_in, "pools": len(snap.pools),
        "pgs": int(sum(p.pg_num for p in snap.pools)),
        "pg_replicas": int(sum(p.pg_num * p.size for p in snap.pools)),
        "mon_max_pg_per_osd": snap.mon_max_pg_per_osd,
        "pgs_per_osd_max": mx,
        "pgs_per_osd_mean": (round(float(total.sum()) / n_in, 6)
                             if total is not None and n_in else None),
        "max_pgs_ratio_of_limit": round(mx / snap.mon_max_pg_per_osd, 6) if mx is not None else None,
        "sizing": sizing_summary(sizing) if sizing is not None else None,
        "upmap_entries": {"pg_upmap_items": len(snap.pg_upmap_items),
                          "pg_upmap_items_pairs": sum(len(v) for v in snap.pg_upmap_items.values()),
                          "pg_upmap": len(snap.pg_upmap),
                          "pg_upmap_primaries": len(snap.pg_upmap_primaries),
                          "pg_upmap_items_ours": None},     # (the mgr's record: mgr/mon.OwnedItems)
    }


def _targets(snap: Snapshot, share: np.ndarray, weights_by_rule: Dict[int, np.ndarray]) -> np.ndarray:
    """Per pool and OSD: the share the balancer aims at, weight-proportional as far as the
    rule allows (rules/share.py: with 3 hosts and size 3 every host holds pg_num
    replicas, whatever its weight). The weight share where the rule is not one we read.
    Once per (rule, pg_num, size): a thousand pools of one rule cost one."""
    anc = ancestors(snap)
    out = share.copy()
    done: Dict[Any, np.ndarray] = {}
    for i, pool in enumerate(snap.pools):
        if pool.crush_rule not in snap.rules:
            continue
        key = (pool.crush_rule, pool.pg_num, pool.size, pool.type)
        if key not in done:
            done[key] = rule_share(snap, pool, weights_by_rule[pool.crush_rule], anc)
        out[i] = done[key]
    return out


def _unlisted_pgs(snap: Snapshot) -> Optional[np.ndarray]:
    """Per OSD, the PGs it says it holds (osd_stats num_pgs) beyond those the PG stats put
    on it (up or acting); -1 where the OSD did not say. A removed pool's PGs stay on their
    OSDs, with their logs, until deleted (throttled by osd_delete_sleep), without stats."""
    pgs = snap.pgs
    if pgs is None:
        return None
    n_osd = snap.osds.count
    rows, osd = osd_cells(np.concatenate([pgs.up, pgs.acting], axis=1), n_osd)
    pairs = np.unique(rows.astype(np.int64) * n_osd + osd)   # each PG once per OSD
    listed = np.bincount(pairs % n_osd, minlength=n_osd)
    held = snap.osds.pgs_held
    return np.where(held >= 0, np.maximum(held - listed, 0), -1)


def _memory_now(snap: Snapshot, model: MemoryModel) -> Optional[np.ndarray]:
    """PG memory per OSD from the logs its PGs report (acting sets: where the PGs live)."""
    pgs = snap.pgs
    if pgs is None or not pgs.logs:
        return None
    n_osd = snap.osds.count
    entries_pg, dups = pg_log_lengths(pgs, snap.config["osd_pg_log_dups_tracked"])
    rep, osd = osd_cells(pgs.acting, n_osd)
    entries = np.bincount(osd, weights=entries_pg[rep], minlength=n_osd)
    ndups = np.bincount(osd, weights=dups[rep], minlength=n_osd)
    npg = np.bincount(osd, minlength=n_osd)
    return model.current(entries, ndups, npg)
