"""From a pool's ideal PG count to the pg_num recommended: rounding, the pool's own bounds,
and when a change is worth making.

- Rounding: to the nearest power of two by ratio, as pg_autoscaler's nearest_power_of_two.
- Bounds: the pool's pg_num_min and pg_num_max are its operator's word, over the module's
  floor for near-empty pools (`.mgr`, created at pg_num 1 with pg_num_min 1, stays at 1).
- Growth waits until the ideal is `hysteresis` octaves past the rounding midpoint (x1.68 at
  0.25): no flapping between two values.
- Merges only when they pay. A merge moves the data of every PG that merges away and
  stalls clients while it does; without PG-count or memory pressure (the caps, in the
  sizer) a pool is merged only once its ideal is below 1/`merge_threshold` of its pg_num
  (pg_autoscaler's own band: 3x), and a bulk pool is never merged for lack of data.
"""
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

from ..model.limits import max_pool_pg_num
from ..model.options import Options
from ..model.snapshot import Pool, Snapshot
from .demand import Kind, opt_num

MGR_POOL = ".mgr"            # the mgr's own pool: pg_num 1, pg_num_min 1, pg_num_max 32
AUTOSCALER_THRESHOLD = 3.0   # pg_autoscaler's `threshold` option, its default
# reasons that come from pressure or the operator's word: mode auto may act on them
PRESSURE = ("cap_pgs", "cap_memory", "cap_peak", "min", "max")


@dataclass
class Reason:
    code: str
    text: str
    data: Dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> Dict[str, Any]:
        # floats to 9 significant digits: the last bits of a sum differ between numpy builds
        data = {k: float(f"{v:.9g}") if isinstance(v, float) else v for k, v in self.data.items()}
        return {"code": self.code, "text": self.text, **({"data": data} if data else {})}


def autoscaler_would_act(current: int, target: int, threshold: float = AUTOSCALER_THRESHOLD) -> bool:
    """Whether pg_autoscaler would itself take a pool from `current` to `target` PGs (its
    _get_pool_pg_targets): growth beyond `threshold` times (Tentacle: 1 toward 512 or 1,024
    PGs, 2 toward 2,048), shrinking below 1/`threshold`."""
    if target > current:
        step = {512: 1.0, 1024: 1.0, 2048: 2.0}.get(target, threshold)
        return target > current * step
    return target < current / threshold


def round_pow2(ideal: float) -> Tuple[int, Reason]:
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


def floor_of(pool: Pool, opts: Options) -> int:
    """The least pg_num the sizer gives the pool: its pg_num_min when set, else the module's
    floor (1 for `.mgr`, which Ceph creates with pg_num_min 1), never above its pg_num_max."""
    pmin, pmax = int(opt_num(pool, "pg_num_min")), int(opt_num(pool, "pg_num_max"))
    floor = pmin or (1 if pool.name == MGR_POOL else opts.min_pgs_per_pool)
    return min(floor, pmax) if pmax else floor


def bounds(snap: Snapshot, pool: Pool, v: int, reasons: List[Reason], floor: int) -> int:
    """`v` within the pool's pg_num_min/pg_num_max and our floor, within the mon's ceiling
    (a stored pg_num_min of 10^9 must not make us map 10^9 PGs)."""
    pmin, pmax = int(opt_num(pool, "pg_num_min")), int(opt_num(pool, "pg_num_max"))
    ceiling = max_pool_pg_num(snap)
    if v < floor:
        why = " (pg_num_min)" if pmin and floor == pmin else ""
        reasons.append(Reason("min" if why else "floor", f"raised to the floor {floor}{why}",
                              {"floor": floor}))
        v = floor
    if pmax and v > pmax:
        reasons.append(Reason("max", f"held at pg_num_max {pmax}", {"pg_num_max": pmax}))
        v = pmax
    if v > ceiling:
        reasons.append(Reason("max", f"held at mon_max_pool_pg_num {ceiling}",
                              {"mon_max_pool_pg_num": ceiling}))
        v = ceiling
    return v


@dataclass(frozen=True)
class Step:
    """What decide() is given for one pool."""
    pool: Pool
    kind: Kind
    ideal: float
    empty: bool
    floor: int


def decide(snap: Snapshot, opts: Options, step: Step, reasons: List[Reason]) -> Tuple[int, int]:
    """(rounded ideal, recommendation) for one pool whose ideal is known; the reasons
    grow by why."""
    pool, ideal = step.pool, step.ideal
    rounded, r = round_pow2(ideal)
    reasons.append(r)
    rec = bounds(snap, pool, rounded, reasons, step.floor)
    cur = pool.pg_num_target
    # (the ideal decides, also where the floor raised the pool: a pool of 16 PGs whose
    # ideal is 11 is not split for the floor's sake, as pg_autoscaler would not past its band)
    if rec > cur and cur & (cur - 1) == 0 and not step.empty and \
            math.log2(max(ideal, 1.0) / cur) < 0.5 + opts.hysteresis:
        reasons.append(Reason("hysteresis", f"{cur} kept: the ideal is within the hysteresis band "
                                            f"around it", {"current": cur, "hysteresis": opts.hysteresis}))
        return rounded, cur
    pmax = int(opt_num(pool, "pg_num_max"))
    if pmax and cur > pmax:     # above its own bound: the operator's word, not a merge to weigh
        if not any(x.code == "max" for x in reasons):
            reasons.append(Reason("max", f"brought down to pg_num_max {pmax}", {"pg_num_max": pmax}))
        return rounded, min(rec, pmax)
    if rec < cur and not any(x.code == "max" for x in reasons):
        if step.kind is Kind.BULK:
            reasons.append(Reason("bulk_kept", f"{cur} kept: a bulk pool is sized as if full and "
                                               "never merged for lack of data"))
            return rounded, cur
        if rec * opts.merge_threshold > cur:
            reasons.append(Reason(
                "merge_avoided", f"{cur} kept: {rec} is within {opts.merge_threshold:g}x of it, and a "
                                 "merge moves data for no gain while no OSD is short of PGs or memory",
                {"current": cur, "would_be": rec, "merge_threshold": opts.merge_threshold}))
            return rounded, cur
        reasons.append(Reason(
            "past_band", f"{rec} is below 1/{opts.merge_threshold:g} of {cur} (pg_autoscaler's band); "
                         "a merge is suggested, not pressed: nothing is short of PGs or memory",
            {"current": cur, "merge_threshold": opts.merge_threshold}))
    return rounded, rec
