"""How many PGs each pool should have, and why.

Every OSD may hold `target` PG replicas (mon_target_pg_per_osd unless the module's
target_pgs_per_osd is set), shared by the pools that reach it (sizing/budget.py) by what
they ask (sizing/demand.py): their data, targets, or for bulk pools the free space they
will fill. Pools without usage figures keep their PGs and get no recommendation; near-
empty pools get their floor; the rest share what is left. Each ideal is rounded, bounded
by the pool's own pg_num_min/pg_num_max, and changed only when it pays (sizing/policy.py).
Then the caps: the predicted fullest OSD (not the mean) must stay under mon_max_pg_per_osd
less headroom, and its PG memory, steady and at the recovery peak, within its own
osd_memory_target's budgets; pools are halved, the cheapest to merge first, until they
hold. Every step leaves a reason.
"""
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np

from ..crush.placement import Placer
from ..rules.share import pool_share
from ..rules.reach import rule_weights
from ..model.distribution import up_counts
from ..model.options import Options
from ..model.snapshot import Pool, Snapshot
from ..model.units import human_bytes
from .budget import Layout, Overlap, bulk_room, overlaps, split
from .demand import Demand, Kind, Overcommit, demands, opt_num, overcommits, raw_rate
from .memory import SETTINGS, MemoryModel
from .policy import (MGR_POOL, PRESSURE, Reason, Step, autoscaler_would_act, decide, floor_of,
                     round_pow2)

MIB = 1 << 20
EMPTY_OF_CAPACITY = 0.001    # a pool below this share of its OSDs' raw space is near-empty
__all__ = ["Reason", "PoolSizing", "SizingResult", "Sizer", "recommend", "raw_rate",
           "autoscaler_would_act", "memory_model"]


@dataclass
class PoolSizing:
    pool: Pool
    subtree: Tuple[int, ...]
    osds: int
    data_share: float
    ideal: float
    rounded: int
    recommended: int
    reasons: List[Reason] = field(default_factory=list)
    kind: Kind = Kind.DATA
    moved_bytes: Optional[float] = None     # estimate of what the change moves

    @property
    def known(self) -> bool:
        """False for a pool without usage figures: no recommendation."""
        return self.kind is not Kind.UNKNOWN

    @property
    def change(self) -> int:
        """+1 to grow, -1 to shrink, 0 to keep."""
        return (self.recommended > self.pool.pg_num_target) - (self.recommended < self.pool.pg_num_target)

    @property
    def pressed(self) -> bool:
        """A cap (PGs per OSD, memory) or the pool's own bounds made this change."""
        return any(r.code in PRESSURE for r in self.reasons)

    @property
    def automatic(self) -> bool:
        """Mode auto may make this change: growth, or a merge under pressure (never one
        only because the ideal fell)."""
        return self.known and (self.change > 0 or (self.change < 0 and self.pressed))

    @property
    def pressing(self) -> bool:
        """Worth a health warning: pressure made this change, or pg_autoscaler would make
        it by itself (past its threshold, never in the mgr's own pool). Anything milder is
        shown in status and plan, not raised."""
        if self.change == 0 or not self.known:
            return False
        if self.pressed:
            return True
        return (self.change > 0 and self.pool.name != MGR_POOL
                and autoscaler_would_act(self.pool.pg_num_target, self.recommended))

    def sentence(self) -> str:
        p = self.pool
        why = "; ".join(r.text for r in self.reasons if r.code not in ("alternative",))
        if not self.known:
            return f"{p.name}: unknown ({p.pg_num_target} PGs now): {why}"
        verb = {1: "grow to", -1: "shrink to", 0: "keep"}[self.change]
        cost = cost_text(self)
        return (f"{p.name}: {verb} {self.recommended} PGs (now {p.pg_num_target}): {why}"
                + (f"; cost: {cost}" if cost else ""))


@dataclass
class SizingResult:
    pools: List[PoolSizing]
    pgs_per_osd_after: np.ndarray      # predicted per-OSD PG count at the recommendations
    memory_after: np.ndarray           # predicted steady-state PG memory per OSD (bytes)
    peak_after: np.ndarray             # predicted PG memory at the recovery peak per OSD
    limit_pgs: int
    memory_budget: float               # the least steady PG memory budget of an OSD in use
    balanced: bool
    notes: List[str]
    target_pgs: int = 100              # PG replicas per OSD aimed at, and where it comes from
    target_source: str = "mon_target_pg_per_osd"
    binding: str = "target"            # what holds the recommendations: target, pg_limit, memory
    memory_allows: Optional[int] = None   # PGs per OSD the tightest OSD's memory allows
    memory_allows_osd: Optional[int] = None
    overlaps: List[Overlap] = field(default_factory=list)
    overcommits: List[Overcommit] = field(default_factory=list)

    def by_name(self, name: str) -> PoolSizing:
        return next(s for s in self.pools if s.pool.name == name)


def memory_model(snap: Snapshot, opts: Options) -> MemoryModel:
    """The memory model with each OSD's own settings where the cluster has them."""
    config = {k: snap.osd_config.get(k, snap.config[k]) for k in SETTINGS}
    return MemoryModel.from_config(config, opts.bytes_per_log_entry, opts.bytes_per_log_dup,
                                   opts.bytes_per_pg)


def moved_estimate(pool: Pool, to: int) -> Optional[float]:
    """Raw bytes a pg_num change moves at most: the data of the PGs that split off (or
    merge away), each of their copies re-placed (CRUSH keeps some where they are)."""
    if pool.stored is None or to == pool.pg_num_target:
        return None
    a, b = sorted((pool.pg_num_target, to))
    return float(pool.stored) * raw_rate(pool) * (1.0 - a / b)


class Sizer:
    def __init__(self, snap: Snapshot, opts: Options, placer: Optional[Placer] = None,
                 balanced: bool = False) -> None:
        self.snap = snap
        self.opts = opts
        self.placer = placer or Placer.of(snap)
        self.balanced = balanced
        self.model = memory_model(snap, opts)
        self.n_osd = snap.osds.count
        self.target = int(opts.target_pgs_per_osd or snap.config["mon_target_pg_per_osd"])
        self._count_cache: Dict[Tuple[int, int], np.ndarray] = {}

    # -- per-OSD predictions ---------------------------------------------------------------------

    def pool_counts(self, pool: Pool, pg_num: int) -> np.ndarray:
        """PGs of the pool per OSD at pg_num: CRUSH as it falls, or the balanced ideal."""
        key = (pool.id, pg_num)
        if key not in self._count_cache:
            if self.balanced:
                rule = self.snap.rules.get(pool.crush_rule)
                w = rule_weights(self.snap, rule) if rule else np.zeros(self.n_osd)
                c = np.ceil(pool_share(pool, w, pg_num) - 1e-9)
            else:
                c = up_counts(self.placer.map_pool(pool, pg_num=pg_num, pgp_num=pg_num).up, self.n_osd)
            self._count_cache[key] = c.astype(np.int64)
        return self._count_cache[key]

    def totals(self, pg: Dict[int, int]) -> np.ndarray:
        t = np.zeros(self.n_osd, dtype=np.int64)
        if not self.balanced:     # the pools not counted yet, in as few CRUSH runs as can be
            self.placer.prefetch([(p, pg[p.id], pg[p.id]) for p in self.snap.pools
                                  if (p.id, pg[p.id]) not in self._count_cache])
        for pool in self.snap.pools:
            t += self.pool_counts(pool, pg[pool.id])
        return t

    # -- the recommendation ----------------------------------------------------------------------

    def _layout(self) -> Tuple[Layout, Dict[int, Tuple[int, ...]], Dict[Tuple[int, ...], str]]:
        snap = self.snap
        weights: List[np.ndarray] = []
        row_by_rule: Dict[int, int] = {}
        row_of: Dict[int, int] = {}
        root_of: Dict[int, Tuple[int, ...]] = {}
        names: Dict[Tuple[int, ...], str] = {}
        for pool in snap.pools:
            rule = snap.rules.get(pool.crush_rule)
            key = tuple(sorted(rule.take_items())) if rule else ()
            root_of[pool.id] = key
            names[key] = (", ".join(snap.buckets[i].name if i in snap.buckets else str(i) for i in key)
                          or "no root")
            if pool.crush_rule not in row_by_rule:
                row_by_rule[pool.crush_rule] = len(weights)
                weights.append(rule_weights(snap, rule) if rule else np.zeros(self.n_osd))
            row_of[pool.id] = row_by_rule[pool.crush_rule]
        return Layout.of(weights, row_of, self.n_osd), root_of, names

    def recommend(self) -> SizingResult:
        snap, o = self.snap, self.opts
        notes: List[str] = []
        layout, root_of, names = self._layout()
        total = snap.osds.bytes_total.astype(np.float64)
        capacity = {p.id: float(total[layout.members[layout.row_of[p.id]] & (total > 0)].sum())
                    for p in snap.pools}
        dem = demands(snap.pools, root_of, capacity)
        weighted = layout.members.any(axis=0)
        budget = np.where(weighted, float(self.target), 0.0)
        demand_of = self._demand(layout, dem, notes)
        kinds = {pid: d.kind for pid, d in dem.items()}
        kinds.update({pid: Kind.UNKNOWN for pid, d in dem.items()
                      if d.kind is Kind.BULK and pid not in demand_of})
        full = split(layout, demand_of, budget)
        share = {pid: r / max(self.target * layout.osds(pid), 1e-12) for pid, r in full.items()}
        pools = {p.id: p for p in snap.pools}
        # near-empty: a small share of the data on its OSDs, or of their space (a 10 MiB pool
        # alone on some OSDs would otherwise take their whole budget)
        empty = {pid for pid, s in share.items() if kinds[pid] is Kind.DATA
                 and (s < o.empty_pool_share or demand_of[pid] <= 0
                      or demand_of[pid] < EMPTY_OF_CAPACITY * capacity[pid])}
        keep = {pid: float(pools[pid].pg_num_target * pools[pid].size) for pid, k in kinds.items()
                if k is Kind.UNKNOWN}
        # (a near-empty pool's floor is not taken off the others' budget, as pg_autoscaler
        # does not: on a small cluster of many pools the floors alone would fill it, and a
        # pool declared big (bulk, a target) would get nothing)
        sizings = self._size(layout, (demand_of, keep, budget), (kinds, empty, share), root_of, names)
        # pools kept above their ideal (a merge avoided, bulk) hold those PGs: the others
        # share what is left, once
        held = {s.pool.id: float(s.recommended * s.pool.size) for s in sizings
                if s.known and s.pool.id not in empty and s.recommended > s.rounded}
        if held:
            sizings = self._size(layout, (demand_of, {**keep, **held}, budget), (kinds, empty, share),
                                 root_of, names, prior={s.pool.id: s for s in sizings if s.pool.id in held})
        for d in dem.values():
            if d.notes:
                next(s for s in sizings if s.pool.id == d.pool.id).reasons.extend(
                    Reason("target", n) for n in d.notes)
        ov = overlaps(layout, root_of, names, {p.id: p.name for p in snap.pools})
        self._name_overlaps(sizings, ov, root_of, names)
        limit = int(np.floor(snap.config["mon_max_pg_per_osd"] * (1 - o.pg_per_osd_headroom)))
        # a merge past the band is only suggested: the caps look at the pool where it is, so
        # that pressure (the PGs or memory an OSD has now) is found and its merges pressed
        suggested = {s.pool.id: s.recommended for s in sizings
                     if any(r.code == "past_band" for r in s.reasons)}
        for s in sizings:
            if s.pool.id in suggested:
                s.recommended = s.pool.pg_num_target
        pg = {s.pool.id: s.recommended for s in sizings}
        totals = self._apply_caps(sizings, pg, limit, notes)
        if suggested:
            for s in sizings:
                if s.pool.id in suggested:
                    s.recommended = pg[s.pool.id] = min(s.recommended, suggested[s.pool.id])
            totals = self.totals(pg)
        for s in sizings:
            s.moved_bytes = moved_estimate(s.pool, s.recommended) if s.known else None
            self._alternative(s, pg)
        in_use = totals > 0
        steady_budget = self.model.steady_budget(o.pg_memory_fraction) + np.zeros(self.n_osd)
        allows = self.model.pgs_memory_allows(o.pg_memory_fraction) + np.zeros(self.n_osd)
        tight = int(np.argmin(np.where(weighted, allows, np.inf))) if weighted.any() else None
        caps = {r.code for s in sizings for r in s.reasons} & {"cap_pgs", "cap_memory", "cap_peak"}
        binding = "pg_limit" if "cap_pgs" in caps else "memory" if caps else "target"
        return SizingResult(
            pools=sorted(sizings, key=lambda s: s.pool.id), pgs_per_osd_after=totals,
            memory_after=self.model.steady_state(totals) + np.zeros(self.n_osd),
            peak_after=self.model.peak(totals) + np.zeros(self.n_osd),
            limit_pgs=limit,
            memory_budget=float(steady_budget[in_use | weighted].min(initial=np.inf))
            if (in_use | weighted).any() else float(steady_budget.max(initial=0.0)),
            balanced=self.balanced, notes=notes, target_pgs=self.target,
            target_source="target_pgs_per_osd" if o.target_pgs_per_osd else "mon_target_pg_per_osd",
            binding=binding,
            memory_allows=int(allows[tight]) if tight is not None else None, memory_allows_osd=tight,
            overlaps=ov, overcommits=overcommits(snap.pools, root_of, capacity, names))

    def _demand(self, layout: Layout, dem: Mapping[int, Demand], notes: List[str]) -> Dict[int, float]:
        """Raw bytes each pool with a known demand is counted at; a bulk pool at the free
        space of its OSDs it will fill, when larger than its data. A bulk pool with neither
        usage figures nor the OSDs' space is left out (unknown)."""
        osds = self.snap.osds
        known_space = (osds.bytes_total > 0) & (osds.bytes_used >= 0)
        free = np.where(known_space, osds.bytes_total - osds.bytes_used, 0).astype(np.float64)
        bulk = [pid for pid, d in dem.items() if d.kind is Kind.BULK]
        room = bulk_room(layout, bulk, free) if known_space.any() else {}
        out = {pid: d.raw for pid, d in dem.items() if d.kind is Kind.DATA}
        for pid in bulk:
            r = max(dem[pid].raw, room.get(pid, 0.0))
            if r > 0:
                out[pid] = r
            else:
                notes.append(f"pool {dem[pid].pool.name} is bulk, but neither its usage nor its OSDs' "
                             "free space is known: not sized")
        return out

    def _size(self, layout: Layout, budget_in: Tuple[Dict[int, float], Dict[int, float], np.ndarray],
              pools_in: Tuple[Dict[int, Kind], set, Dict[int, float]],
              root_of: Mapping[int, Tuple[int, ...]], names: Mapping[Tuple[int, ...], str],
              prior: Optional[Dict[int, PoolSizing]] = None) -> List[PoolSizing]:
        """One sizing pass: `budget_in` (demand per pool, replicas kept per pool, budget
        per OSD), `pools_in` (kinds, near-empty pools, data shares); pools in `prior` keep
        the sizing they had."""
        snap, o = self.snap, self.opts
        demand_of, keep, budget = budget_in
        kinds, empty, share = pools_in
        base = np.maximum(budget - layout.reserved(keep), 0.0)
        sharing = {pid: d for pid, d in demand_of.items() if pid not in keep}
        replicas = split(layout, sharing, base)
        out: List[PoolSizing] = []
        for p in snap.pools:
            if prior and p.id in prior:
                out.append(prior[p.id])
                continue
            n = layout.osds(p.id)
            key = root_of[p.id]
            where = f"{n} OSDs under {names[key]}" if n else "no OSD (the rule maps nowhere)"
            kind = kinds[p.id]
            s = PoolSizing(pool=p, subtree=key, osds=n, data_share=share.get(p.id, 0.0), ideal=0.0,
                           rounded=p.pg_num_target, recommended=p.pg_num_target, kind=kind)
            if kind is Kind.UNKNOWN:
                s.reasons.append(Reason("unknown", "no usage figures for the pool yet (PG stats or df): "
                                                   "no recommendation; its PGs count where they are"))
                out.append(s)
                continue
            floor = floor_of(p, o)
            if p.id in empty:
                s.ideal = float(floor)
                s.reasons.append(Reason("near_empty", f"near-empty ({s.data_share:.1%} of the PG budget "
                                                      f"of its OSDs by data): floor {floor}",
                                        {"share": s.data_share, "floor": floor}))
            else:
                bias = _bias(p)
                s.ideal = replicas.get(p.id, 0.0) / p.size * bias
                basis = ("as if full: the free space of its OSDs it will fill (bulk)" if kind is Kind.BULK
                         else f"{s.data_share:.1%} of the data on {where}")
                biased = f" (x{bias:g} pg_autoscale_bias)" if bias != 1.0 else ""
                s.reasons.append(Reason(
                    "share", f"{basis}; {self.target} PGs per OSD gives {s.ideal:.1f}{biased}",
                    {"share": s.data_share, "osds": n, "target_pgs_per_osd": self.target,
                     "ideal": s.ideal, "bulk": kind is Kind.BULK}))
            step = Step(p, kind, s.ideal, p.id in empty, floor)
            s.rounded, s.recommended = decide(snap, o, step, s.reasons)
            if snap.autoscaler_speaks(p):
                mode = snap.autoscaler_mode(p)
                verb = "manages" if snap.autoscaler_acts(p) else "warns on"
                s.reasons.append(Reason("autoscaler", f"pg_autoscaler {verb} this pool (pg_autoscale_mode "
                                                      f"{mode})"))
            out.append(s)
        return out

    @staticmethod
    def _name_overlaps(sizings: List[PoolSizing], ov: List[Overlap], root_of: Mapping[int, Tuple[int, ...]],
                       names: Mapping[Tuple[int, ...], str]) -> None:
        for s in sizings:
            mine = names[root_of[s.pool.id]]
            shared = [x for x in ov if mine in x.roots]
            if shared:
                others = sorted({r for x in shared for r in x.roots if r != mine})
                s.reasons.append(Reason(
                    "overlap", f"its OSDs are also under {', '.join(others)} (overlapping roots): each "
                               "shared OSD's PG budget is split among the pools there by data, not "
                               "counted once per root", {"roots": others}))

    def _apply_caps(self, sizings: List[PoolSizing], pg: Dict[int, int], limit: int,
                    notes: List[str]) -> np.ndarray:
        """Halve a pool on the worst OSD until every OSD is within the PG limit and its
        memory budgets: of the known pools with PGs there, the one whose merge moves the
        fewest bytes per PG it frees there (an empty pool first)."""
        o = self.opts
        steady_budget = self.model.steady_budget(o.pg_memory_fraction)
        peak_budget = self.model.peak_budget()
        while True:
            totals = self.totals(pg)
            steady, peak = self.model.steady_state(totals), self.model.peak(totals)
            over_pg, over_mem, over_peak = totals > limit, steady > steady_budget, peak > peak_budget
            over = over_pg if over_pg.any() else over_peak if over_peak.any() else over_mem
            if not over.any():
                return totals
            osd = int(np.argmax(np.where(over, totals, -1)))
            cands = [s for s in sizings if s.known and pg[s.pool.id] > floor_of(s.pool, o)
                     and self.pool_counts(s.pool, pg[s.pool.id])[osd] > 0]
            if not cands:
                notes.append(f"osd.{osd} stays over its limits even with every pool it holds at its "
                             "floor (or of unknown size)")
                return totals

            def cost(s: PoolSizing) -> Tuple[float, int]:
                here = int(self.pool_counts(s.pool, pg[s.pool.id])[osd])
                return (float(s.pool.stored or 0) * raw_rate(s.pool) / here, -here)
            worst = min(cands, key=cost)
            before = pg[worst.pool.id]
            pg[worst.pool.id] = before // 2
            if over_pg.any():
                worst.reasons.append(Reason(
                    "cap_pgs", f"{before} would put {int(totals[osd])} PGs on osd.{osd}, over {limit} "
                               f"(mon_max_pg_per_osd {self.snap.config['mon_max_pg_per_osd']} less "
                               f"{o.pg_per_osd_headroom:.0%} headroom): halved to {before // 2}",
                    {"osd": osd, "pgs": int(totals[osd]), "limit": limit}))
            elif over_peak.any():
                pb = float(np.broadcast_to(peak_budget, totals.shape)[osd])
                worst.reasons.append(Reason(
                    "cap_peak", f"{before} would need up to {peak[osd] / MIB:.0f} MiB of PG memory on "
                                f"osd.{osd} when it recovers (its logs and a log of missing objects "
                                f"per PG), over "
                                f"{pb / MIB:.0f} MiB (its osd_memory_target less osd_memory_base and the "
                                f"least cache): memory binds before the PG limit; halved to {before // 2}",
                    {"osd": osd, "bytes": float(peak[osd]), "budget": pb}))
            else:
                sb = float(np.broadcast_to(steady_budget, totals.shape)[osd])
                worst.reasons.append(Reason(
                    "cap_memory", f"{before} would need {steady[osd] / MIB:.0f} MiB of PG memory on "
                                  f"osd.{osd}, over {sb / MIB:.0f} MiB ({o.pg_memory_fraction:.0%} of its "
                                  f"osd_memory_target): halved to {before // 2}",
                    {"osd": osd, "bytes": float(steady[osd]), "budget": sb}))
            worst.recommended = pg[worst.pool.id]

    def _alternative(self, s: PoolSizing, pg: Dict[int, int]) -> None:
        """What a higher PG target would buy (and cost) for this pool."""
        alt_target = 200 if self.target < 200 else 2 * self.target
        if "share" not in {r.code for r in s.reasons} or s.ideal <= 0:
            return
        ideal = s.ideal * alt_target / self.target
        alt = min(round_pow2(ideal)[0], int(self.snap.config["mon_max_pool_pg_num"]))
        if alt <= s.recommended:
            return
        trial = dict(pg)
        trial[s.pool.id] = alt
        totals = self.totals(trial)
        s.reasons.append(Reason(
            "alternative",
            f"at {alt_target} PGs per OSD this pool would get {alt} PGs: more parallelism (one "
            f"measured cluster gained substantial bandwidth between ~60 and ~200 PGs per OSD) "
            f"for up to {int(totals.max())} PGs and {self.model.steady_state(totals).max() / MIB:.0f}"
            f" MiB of PG memory on the fullest OSD",
            {"target_pgs_per_osd": alt_target, "pg_num": alt, "max_pgs": int(totals.max()),
             "max_memory": float(self.model.steady_state(totals).max())}))


def _bias(pool: Pool) -> float:
    """pg_autoscale_bias: a multiplier on the pool's ideal, as pg_autoscaler applies it."""
    return opt_num(pool, "pg_autoscale_bias") or 1.0


def cost_text(s: PoolSizing) -> Optional[str]:
    """The change's cost beside its gain, in words."""
    if s.moved_bytes is None or s.change == 0:
        return None
    per_osd = (s.recommended - s.pool.pg_num_target) * s.pool.size / max(s.osds, 1)
    return (f"moves up to {human_bytes(int(s.moved_bytes))} (every copy of the PGs that split off "
            f"or merge away; `plan` gives CRUSH's exact bytes), for {per_osd:+.1f} of its PGs per OSD "
            f"over {s.osds} OSDs")


def recommend(snap: Snapshot, opts: Options, placer: Optional[Placer] = None,
              balanced: bool = False) -> SizingResult:
    return Sizer(snap, opts, placer, balanced).recommend()
