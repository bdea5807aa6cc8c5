"""How many PGs each pool should have, and why.

Per CRUSH subtree (the OSDs a rule's take steps reach, device class included) there is a
target of target_pgs_per_osd PG replicas per OSD. Near-empty pools get a floor; the rest
of the target is shared by data share (stored x raw rate, or target_size_bytes /
target_size_ratio when larger, times pg_autoscale_bias). Each ideal is rounded to a power
of two, kept where it is when inside a hysteresis band, and then capped so that the
predicted fullest OSD (not the mean) stays under mon_max_pg_per_osd less headroom and its
PG memory inside its share of osd_memory_target. Every step leaves a reason.
"""
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..crush.placement import Placer
from ..model.distribution import pool_share, rule_weights, up_counts
from ..model.limits import max_pool_pg_num
from ..model.options import Options
from ..model.snapshot import Pool, Snapshot
from .memory import MemoryModel

MIB = 1 << 20
MGR_POOL = ".mgr"            # the mgr's own pool (1 PG, pg_num_max 32): pg_autoscaler leaves it be
AUTOSCALER_THRESHOLD = 3.0   # pg_autoscaler's `threshold` option, its default


def autoscaler_would_act(current: int, target: int, threshold: float = AUTOSCALER_THRESHOLD) -> bool:
    """Whether pg_autoscaler would itself take a pool from `current` to `target` PGs (its
    _get_pool_pg_targets): growth beyond `threshold` times (Tentacle: 1 toward 512 or 1,024
    PGs, 2 toward 2,048), shrinking below 1/`threshold`."""
    if target > current:
        step = {512: 1.0, 1024: 1.0, 2048: 2.0}.get(target, threshold)
        return target > current * step
    return target < current / threshold


@dataclass
class Reason:
    code: str
    text: str
    data: Dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> Dict[str, Any]:
        return {"code": self.code, "text": self.text, **({"data": self.data} if self.data else {})}


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

    @property
    def change(self) -> int:
        """+1 to grow, -1 to shrink, 0 to keep."""
        return (self.recommended > self.pool.pg_num_target) - (self.recommended < self.pool.pg_num_target)

    @property
    def pressing(self) -> bool:
        """Worth a health warning: the PGs-per-OSD limit or the OSDs' memory made this
        change, or pg_autoscaler would make it by itself (past its threshold, never in the
        mgr's own pool). Anything milder is shown in status and plan, not raised."""
        if self.change == 0:
            return False
        if any(r.code in ("cap_pgs", "cap_memory") for r in self.reasons):
            return True
        return self.pool.name != MGR_POOL and autoscaler_would_act(self.pool.pg_num_target, self.recommended)

    def sentence(self) -> str:
        p = self.pool
        verb = {1: "grow to", -1: "shrink to", 0: "keep"}[self.change]
        why = "; ".join(r.text for r in self.reasons if r.code not in ("alternative",))
        return f"{p.name}: {verb} {self.recommended} PGs (now {p.pg_num_target}): {why}"


@dataclass
class SizingResult:
    pools: List[PoolSizing]
    pgs_per_osd_after: np.ndarray      # predicted per-OSD PG count at the recommendations
    memory_after: np.ndarray           # predicted steady-state PG memory per OSD (bytes)
    limit_pgs: int
    memory_budget: float
    balanced: bool
    notes: List[str]

    def by_name(self, name: str) -> PoolSizing:
        return next(s for s in self.pools if s.pool.name == name)


def raw_rate(pool: Pool) -> float:
    """Raw bytes per stored byte: size for replicas, (k+m)/k for erasure coding."""
    return pool.size / pool.data_chunks


def _opt_num(pool: Pool, key: str) -> float:
    try:
        return float(pool.options.get(key, 0) or 0)
    except (TypeError, ValueError):
        return 0.0


def _round_pow2(ideal: float) -> Tuple[int, Reason]:
    lo = 1 << max(int(math.floor(math.log2(max(ideal, 1.0)))), 0)
    hi = lo * 2
    if ideal < 1:       # no capacity behind the pool (every OSD out): the least pg_num there is
        return 1, Reason("round", f"{ideal:.2g} rounds up to 1, the fewest PGs a pool has", {"ideal": ideal})
    if ideal <= lo:
        return lo, Reason("round", f"{ideal:.0f} is a power of two", {"ideal": ideal})
    if math.log2(ideal / lo) > 0.5:
        return hi, Reason("round_up", f"{ideal:.1f} rounded up to the nearest power of two {hi} "
                                      f"(nearer than {lo} by ratio)", {"ideal": ideal, "to": hi})
    return lo, Reason("round_down", f"{ideal:.1f} rounded down to the nearest power of two {lo} "
                                    f"(nearer than {hi} by ratio)", {"ideal": ideal, "to": lo})


def _bounds(pool: Pool, v: int, reasons: List[Reason], floor: int, ceiling: int) -> int:
    """The pool's pg_num_min/pg_num_max and our floor, within the mon's ceiling (a stored
    pg_num_min of 10^9 must not make us map 10^9 PGs)."""
    pmin, pmax = int(_opt_num(pool, "pg_num_min")), int(_opt_num(pool, "pg_num_max"))
    lo = max(floor, pmin)
    if v < lo:
        reasons.append(Reason("min", f"raised to the floor {lo}" + (" (pg_num_min)" if pmin >= floor else ""),
                              {"floor": lo}))
        v = lo
    if pmax and v > pmax:
        reasons.append(Reason("max", f"held at pg_num_max {pmax}", {"pg_num_max": pmax}))
        v = pmax
    if v > ceiling:
        reasons.append(Reason("max", f"held at mon_max_pool_pg_num {ceiling}",
                              {"mon_max_pool_pg_num": ceiling}))
        v = ceiling
    return v


class Sizer:
    def __init__(self, snap: Snapshot, opts: Options, placer: Optional[Placer] = None,
                 balanced: bool = False) -> None:
        self.snap = snap
        self.opts = opts
        self.placer = placer or Placer.of(snap)
        self.balanced = balanced
        self.model = MemoryModel.from_config(snap.config, opts.bytes_per_log_entry,
                                             opts.bytes_per_log_dup, opts.bytes_per_pg)
        self.n_osd = snap.osds.count
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

    def recommend(self) -> SizingResult:
        snap, o = self.snap, self.opts
        notes: List[str] = []
        groups: Dict[Tuple[int, ...], List[Pool]] = {}
        for pool in snap.pools:
            rule = snap.rules.get(pool.crush_rule)
            key = tuple(sorted(rule.take_items())) if rule else ()
            groups.setdefault(key, []).append(pool)
        sizings: List[PoolSizing] = []
        for key, pools in groups.items():
            sizings.extend(self._size_group(key, pools, notes))
        limit = int(math.floor(snap.config["mon_max_pg_per_osd"] * (1 - o.pg_per_osd_headroom)))
        memory_budget = o.pg_memory_fraction * snap.config["osd_memory_target"]
        pg = {s.pool.id: s.recommended for s in sizings}
        totals = self._apply_caps(sizings, pg, limit, memory_budget, notes)
        for s in sizings:
            self._alternative(s, pg)
        return SizingResult(pools=sorted(sizings, key=lambda s: s.pool.id),
                            pgs_per_osd_after=totals,
                            memory_after=self.model.steady_state(totals),
                            limit_pgs=limit, memory_budget=memory_budget, balanced=self.balanced,
                            notes=notes)

    def _size_group(self, key: Tuple[int, ...], pools: List[Pool], notes: List[str]) -> List[PoolSizing]:
        snap, o = self.snap, self.opts
        rule = snap.rules.get(pools[0].crush_rule)
        w = rule_weights(snap, rule) if rule else np.zeros(self.n_osd)
        members = w > 0
        n_osds = int(members.sum())
        totals = snap.osds.bytes_total
        capacity = float(totals[members & (totals > 0)].sum())
        replica_target = o.target_pgs_per_osd * n_osds     # PG replicas the group's OSDs share
        # target ratios are shares of capacity; normalised when they add up past 1
        ratio_sum = sum(_opt_num(p, "target_size_ratio") for p in pools)
        demand = {}
        for p in pools:
            ratio = _opt_num(p, "target_size_ratio") / max(ratio_sum, 1.0)
            used = (p.stored or 0) * raw_rate(p)
            tbytes = _opt_num(p, "target_size_bytes") * raw_rate(p)
            bias = _opt_num(p, "pg_autoscale_bias") or 1.0
            demand[p.id] = max(used, tbytes, ratio * capacity) * bias
        total_demand = sum(demand.values())
        out = []
        floor = o.min_pgs_per_pool
        empty = {p.id for p in pools
                 if total_demand <= 0 or demand[p.id] < o.empty_pool_share * total_demand}
        floor_replicas = sum(floor * p.size for p in pools if p.id in empty)
        left = max(replica_target - floor_replicas, 0)
        data_demand = sum(demand[p.id] for p in pools if p.id not in empty)
        for p in pools:
            share = demand[p.id] / total_demand if total_demand > 0 else 0.0
            reasons = []
            roots = ", ".join(snap.buckets[i].name if i in snap.buckets else str(i) for i in key)
            where = f"{n_osds} OSDs under {roots}" if key else "no OSD (the rule maps nowhere)"
            if p.id in empty:
                ideal = float(floor)
                reasons.append(Reason("near_empty", f"near-empty ({share:.1%} of the subtree's data): "
                                                    f"floor {floor}", {"share": share}))
            else:
                ideal = left * demand[p.id] / data_demand / p.size
                reasons.append(Reason(
                    "share", f"{share:.1%} of the data on {where}; {o.target_pgs_per_osd} PGs per "
                             f"OSD gives {ideal:.1f}",
                    {"share": share, "osds": n_osds, "target_pgs_per_osd": o.target_pgs_per_osd,
                     "ideal": ideal}))
            rounded, r = _round_pow2(ideal)
            reasons.append(r)
            rec = _bounds(p, rounded, reasons, floor, max_pool_pg_num(snap))
            cur = p.pg_num_target
            if (rec != cur and cur > 0 and cur & (cur - 1) == 0 and p.id not in empty
                    and abs(math.log2(max(ideal, 1) / cur)) < 0.5 + o.hysteresis):
                reasons.append(Reason("hysteresis", f"{cur} kept: the ideal is within the "
                                                    f"hysteresis band around it",
                                      {"current": cur, "hysteresis": o.hysteresis}))
                rec = cur
            if p.autoscale_mode == "on":
                reasons.append(Reason("autoscaler", "pg_autoscaler manages this pool "
                                                    "(pg_autoscale_mode on)"))
            out.append(PoolSizing(pool=p, subtree=key, osds=n_osds, data_share=share, ideal=ideal,
                                  rounded=rounded, recommended=rec, reasons=reasons))
        return out

    def _apply_caps(self, sizings: List[PoolSizing], pg: Dict[int, int], limit: int,
                    memory_budget: float, notes: List[str]) -> np.ndarray:
        """Halve the biggest contributor on the fullest OSD until both caps hold."""
        floor = self.opts.min_pgs_per_pool
        by_id = {s.pool.id: s for s in sizings}
        while True:
            totals = self.totals(pg)
            mem = self.model.steady_state(totals)
            over_pg = totals > limit
            over_mem = mem > memory_budget
            if not (over_pg.any() or over_mem.any()):
                return totals
            osd = int(np.argmax(np.where(over_pg, totals, 0) if over_pg.any() else mem))
            cands = [s for s in sizings
                     if pg[s.pool.id] > max(floor, int(_opt_num(s.pool, "pg_num_min")), 1)]
            if not cands:
                notes.append(f"osd.{osd} stays over its limits even with every pool at its floor")
                return totals
            worst = max(cands, key=lambda s: int(self.pool_counts(s.pool, pg[s.pool.id])[osd]))
            before = pg[worst.pool.id]
            pg[worst.pool.id] = before // 2
            if over_pg.any():
                text = (f"{before} would put {int(totals[osd])} PGs on osd.{osd}, over {limit} "
                        f"(mon_max_pg_per_osd {self.snap.config['mon_max_pg_per_osd']} less "
                        f"{self.opts.pg_per_osd_headroom:.0%} headroom): halved to {before // 2}")
                worst.reasons.append(Reason("cap_pgs", text,
                                            {"osd": osd, "pgs": int(totals[osd]), "limit": limit}))
            else:
                text = (f"{before} would need {mem[osd] / MIB:.0f} MiB of PG memory on osd.{osd}, "
                        f"over {memory_budget / MIB:.0f} MiB ({self.opts.pg_memory_fraction:.0%} of "
                        f"osd_memory_target): halved to {before // 2}")
                worst.reasons.append(Reason("cap_memory", text,
                                            {"osd": osd, "bytes": float(mem[osd]), "budget": memory_budget}))
            by_id[worst.pool.id].recommended = pg[worst.pool.id]

    def _alternative(self, s: PoolSizing, pg: Dict[int, int]) -> None:
        """What a higher PG target would buy (and cost) for this pool."""
        alt_target = 200 if self.opts.target_pgs_per_osd < 200 else 2 * self.opts.target_pgs_per_osd
        if "share" not in {r.code for r in s.reasons}:
            return
        ideal = s.ideal * alt_target / self.opts.target_pgs_per_osd
        alt = min(_round_pow2(ideal)[0], max_pool_pg_num(self.snap))
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


def recommend(snap: Snapshot, opts: Options, placer: Optional[Placer] = None,
              balanced: bool = False) -> SizingResult:
    return Sizer(snap, opts, placer, balanced).recommend()
