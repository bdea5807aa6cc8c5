"""A CRUSH weight change with its pins in the same map epoch: `crush-reweight`.

Pinning after the change (pin-remapped) costs each remapped PG two peerings before any
data moves: one when CRUSH remaps it (the mon primes a pg_temp onto its old OSDs) and one
when the pin maps it back there. If the items reach the mon with the weight change and
land in its map epoch, CRUSH's new sets and the items cancel out: no PG's up set changes,
nothing peers, and the drain then moves each PG once (its pg_temp primed with the move),
as Ceph's own backfill would, but within the budget.

The items cannot go first: the mon drops an item whose source CRUSH does not give the PG
(OSDMap::check_pg_upmaps), and before the change the new OSD is in no PG's set. So the
weight goes first and the items right behind it; the map after the change is computed
here (CRUSH as the mon will compute it, the items it would clean cleaned), and every PG
whose up set it changes is pinned onto the OSDs that hold its data now, as pin-remapped
would pin it one epoch later. An item that misses the epoch costs its PG what
pin-remapped costs, no more.

OSDs added with `osd_crush_initial_weight 0` move no data when they start; this brings
them in. It serves any weight change, up or down.
"""
import dataclasses
import errno
import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np

from ..analysis.growth import placer_after
from ..crush.placement import Placer
from ..model.constants import WEIGHT_ONE
from ..model.errors import AdvisorError
from ..model.checks import MAX_OSD_CRUSH_WEIGHT
from ..model.mon_commands import crush_reweight
from ..model.snapshot import Bucket, Snapshot, add_weight_above, bucket_parents, load_upmaps
from .proposal import unkept
from .remapped import Pins, pin_remapped, pins_report

MAX_OSDS = 1024           # OSDs one crush-reweight changes
EPOCHS_SEARCHED = 8       # map epochs after a burst searched for the weight's own
PastMap = Callable[[int, bool], Optional[Mapping[str, Any]]]   # (epoch, tree?) -> the mon's answer


def crush_units(weight: float) -> int:
    """`weight` in 16.16 fixed point as the mon stores it (CrushWrapper::adjust_item_weightf
    multiplies in single precision and truncates)."""
    return int(np.float32(weight) * np.float32(WEIGHT_ONE))


def check_weights(snap: Snapshot, weights: Mapping[int, float]) -> None:
    """An AdvisorError for a change that cannot be made or modelled: before any work."""
    if not weights:
        raise AdvisorError.invalid("crush-reweight needs at least one OSD")
    if len(weights) > MAX_OSDS:
        raise AdvisorError.invalid(f"at most {MAX_OSDS} OSDs at once, not {len(weights)}")
    o = snap.osds
    for osd, w in weights.items():
        if not 0 <= osd < o.count or not o.exists[osd]:
            raise AdvisorError.not_found(f"osd.{osd} does not exist")
        if not (math.isfinite(w) and 0 <= w <= MAX_OSD_CRUSH_WEIGHT):
            raise AdvisorError.invalid(f"--weight (a CRUSH weight) must be within "
                                       f"0..{MAX_OSD_CRUSH_WEIGHT:g}, not {w}")
        if not any(osd in b.items for b in snap.buckets.values() if not b.is_shadow):
            raise AdvisorError.invalid(f"osd.{osd} is in no CRUSH bucket: `ceph osd crush add` it first")
    if snap.choose_args:
        raise AdvisorError.invalid("the CRUSH map has weight sets (choose_args): a weight change "
                                   "there is not modelled")


def with_crush_weights(snap: Snapshot, weights: Mapping[int, float]) -> Snapshot:
    """The snapshot with each OSD's CRUSH weight set, in every bucket that holds it (its
    host and the device-class shadow host), and each ancestor's weight changed by as much,
    as `ceph osd crush reweight` changes the map."""
    check_weights(snap, weights)
    buckets: Dict[int, Bucket] = dict(snap.buckets)
    up = bucket_parents(buckets, shadow=True)
    crush_weight = snap.osds.crush_weight.copy()
    for osd, w in sorted(weights.items()):
        new = crush_units(w) / WEIGHT_ONE
        for b in [b for b in buckets.values() if osd in b.items]:
            held = buckets[b.id]
            ws = held.weights.copy()
            at = held.items == osd
            delta = float(new - ws[at][0])
            ws[at] = new
            buckets[b.id] = dataclasses.replace(held, weights=ws)
            add_weight_above(buckets, up, b.id, delta)
            if not b.is_shadow:
                crush_weight[osd] = new
    osds = dataclasses.replace(snap.osds, crush_weight=crush_weight)
    return dataclasses.replace(snap, osds=osds, buckets=buckets)


@dataclasses.dataclass
class Reweight:
    after: Snapshot              # the map with the new weights
    weights: Dict[int, float]
    pins: Pins                   # the items that keep each remapped PG where its data is
    changed: int                 # PGs whose up set the change alone would change
    # of those, replicated PGs left on the same OSDs in another order (no item list writes an
    # order): no data moves, but they peer once with the change, as with Ceph's own; some
    # of them pinned (their other OSD kept), the rest only reordered by CRUSH
    reordered: List[str] = dataclasses.field(default_factory=list)


def reweight_pins(snap: Snapshot, weights: Mapping[int, float]) -> Reweight:
    """The map after the weight change, and the pins for every PG whose up set it changes
    (CRUSH's new set, the upmaps the mon would clean cleaned), onto its acting set now."""
    pgs = snap.pgs
    if pgs is None:
        raise AdvisorError(-errno.EAGAIN, "no PG stats yet: where each PG's data is is read from them")
    after = with_crush_weights(snap, weights)
    before_placer, after_placer = Placer.of(snap), placer_after(after)
    new_up = pgs.up.copy()
    moved: List[str] = []
    for pool in snap.pools:
        sel = np.flatnonzero((pgs.pool == pool.id) & (pgs.ps < pool.pg_num))
        if sel.size == 0:
            continue
        width = min(pool.size, pgs.up.shape[1])
        old = before_placer.map_pool(pool).up[pgs.ps[sel], :width]
        new = after_placer.map_pool(pool).up[pgs.ps[sel], :width]
        differs = (old != new).any(axis=1)
        rows = sel[differs]
        # pin_remapped pins what differs from its acting set: the moved PGs get CRUSH's new
        # set; the rest compare as they are (one remapped already is left out below)
        new_up[rows, :width] = new[differs]
        moved += [f"{pool.id}.{int(ps):x}" for ps in pgs.ps[rows].tolist()]
    pins = pin_remapped(dataclasses.replace(after, pgs=dataclasses.replace(pgs, up=new_up)), after_placer)
    keep = set(moved)
    pins.items = {k: v for k, v in pins.items.items() if k in keep}
    pins.want = {k: v for k, v in pins.want.items() if k in keep}
    pins.full = {k: v for k, v in pins.full.items() if k in keep}
    pins.skipped = {k: v for k, v in pins.skipped.items() if k in keep}
    pins.remapped = len(keep)
    handled = set(pins.items) | set(pins.full) | set(pins.skipped)
    reordered = keep - handled
    # items keep a replicated PG's order where a chain of them writes it (crush/upmap.py);
    # where CRUSH's new set only swaps OSDs of it, the pinned PG moves no data but changes
    # order (its primary, maybe) with the weight, and peers once there too. Compared as the
    # map gives them, primary affinity applied: the order the PG peers on
    items = dict(after.pg_upmap_items)
    items.update({k: tuple(v) for k, v in pins.items.items()})
    pinned = after_placer.with_upmaps(after.pg_upmap, items)
    for pool in snap.pools:
        mine = [k for k in pins.items if pool.type == "replicated" and int(k.split(".")[0]) == pool.id]
        if not mine:
            continue
        seeds = np.array([int(k.split(".")[1], 16) for k in mine], dtype=np.int64)
        old = before_placer.map_pool(pool).up[seeds]
        got = pinned.map_pool(pool).up[seeds]
        reordered.update(k for k, a, b in zip(mine, old.tolist(), got.tolist()) if a != b)
    return Reweight(after, {int(k): float(v) for k, v in weights.items()}, pins, len(keep),
                    sorted(reordered))


def reweight_commands(weights: Mapping[int, float]) -> List[Dict[str, Any]]:
    """The mon commands that set the weights (the items go right behind them)."""
    return [crush_reweight(o, w) for o, w in sorted(weights.items())]


def reweight_report(snap: Snapshot, rw: Reweight) -> Dict[str, Any]:
    """JSON for `crush-reweight`: the weights, and pin-remapped's report of the pins."""
    return dict(pins_report(snap, rw.pins),
                weights={f"osd.{o}": {"from": float(snap.osds.crush_weight[o]),
                                      "to": crush_units(w) / WEIGHT_ONE}
                         for o, w in sorted(rw.weights.items())},
                changed=rw.changed, reordered=len(rw.reordered), reordered_pgs=rw.reordered)


def holds_weights(tree: Mapping[str, Any], weights: Mapping[int, float]) -> bool:
    """Does an `osd tree` answer give every OSD of `weights` its new CRUSH weight (the
    tree prints weight / 0x10000 as a float: equal within half a unit of its print)?"""
    at = {int(n["id"]): float(n.get("crush_weight", -1.0)) for n in tree.get("nodes", [])
          if isinstance(n, dict) and isinstance(n.get("id"), int) and n["id"] >= 0}
    return all(abs(at.get(o, -1.0) - crush_units(w) / WEIGHT_ONE) < 1e-4 for o, w in weights.items())


def pins_missed(osd_dump: Mapping[str, Any], items: Mapping[str, Sequence[Sequence[int]]],
                full: Mapping[str, Sequence[int]]) -> List[str]:
    """The pinned PGs whose pin the map of one epoch (`osd dump EPOCH`) does not hold: in the
    weight's epoch, those PGs peered with the change and again with their pin, as after
    pin-remapped."""
    upmap, kept = load_upmaps(osd_dump)
    return sorted(unkept(items, kept) + [k for k, v in full.items() if list(upmap.get(k, ())) != list(v)])


def weight_landing(past: PastMap, first: int, last: int, weights: Mapping[int, float],
                   report: Mapping[str, Any]) -> Dict[str, Any]:
    """The map epoch after `first` (at most EPOCHS_SEARCHED, up to `last`) in which the
    weights landed, and the pinned PGs of `report` (its items and full pg-upmaps) whose pins
    missed it: the mon makes an epoch some 50 ms (paxos_min_wait) after the first change of a
    quiet second, and a burst that takes longer spills into the next. epoch None: not found
    (or not answered); missed then unknown (None)."""
    for e in range(first + 1, min(last, first + EPOCHS_SEARCHED) + 1):
        tree = past(e, True)
        if tree is None:
            break
        if holds_weights(tree, weights):
            dump = past(e, False)
            if dump is None:
                break
            return {"epoch": e, "missed": pins_missed(dump, report.get("items", {}), report.get("full", {}))}
    return {"epoch": None, "missed": None}
