"""Pins for what an OSDMap change remapped: for each PG whose up set differs from the OSDs
that hold its data (its acting set), the pg-upmap-items that map it back onto them.

When hosts are added, an OSD is marked out or weights change, CRUSH remaps many PGs at
once and every one of them backfills together. Pinned, the cluster is clean again within
seconds (nothing is misplaced: each PG maps where its data is), and the drain (balance
rounds within the budget) moves the data on at the operator's pace. This is what
upmap-remapped.py and `pgremapper cancel-backfill` do from outside; here it is one pass
over the PG stats.

Left alone, each with its reason: PGs that are degraded or undersized (their backfill is
recovery, not a move), PGs whose acting set has a hole or an OSD that is down, out or of
weight 0 (Ceph ignores an item that points at an out OSD), PGs with a full pg-upmap, and
PGs whose acting set breaks the rule's limits (the mon would drop the items, or they would
pin a placement the rule does not allow). An EC PG whose shards CRUSH swapped between
OSDs (a cycle no item list writes) is pinned with a full pg-upmap of its acting set
instead; the drain removes those first.
"""
import errno
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..rules.legality import ancestors, breaks, rule_shape
from ..crush.placement import Placer
from ..crush.upmap import Cycle, NotExpressible, build_items
from ..model.constants import CRUSH_ITEM_NONE
from ..model.errors import AdvisorError
from ..model.snapshot import Pool, Snapshot
from .proposal import items_json

SKIP_SHOWN = 20       # skipped PGs listed by name in a report (the count is always given)
FULL_MAX = 256        # PGs one pin-remapped pins with a full pg-upmap (the plan keeps them in its state)


@dataclass
class Pins:
    items: Dict[str, List[Tuple[int, int]]] = field(default_factory=dict)   # pgid -> its whole item list
    skipped: Dict[str, str] = field(default_factory=dict)                  # pgid -> why not pinned
    want: Dict[str, List[int]] = field(default_factory=dict)               # pgid -> the set it pins
    # pgid -> a full pg-upmap (the acting set): EC shards CRUSH swapped, which no item list
    # writes; the drain takes these out first
    full: Dict[str, List[int]] = field(default_factory=dict)
    remapped: int = 0                     # PGs whose up set differs from their acting set
    objects: Dict[int, float] = field(default_factory=dict)   # pool id -> object copies pinned


def _differs(pool: Pool, up: np.ndarray, acting: np.ndarray) -> np.ndarray:
    """Per row: is the up set not the acting set (as sets for replicated pools, shard by
    shard for EC)?"""
    if pool.type != "replicated":
        return (up != acting).any(axis=1)
    a = np.sort(np.where(acting >= 0, acting, np.iinfo(np.int64).max), axis=1)
    u = np.sort(np.where(up >= 0, up, np.iinfo(np.int64).max), axis=1)
    return (a != u).any(axis=1)


def pin_remapped(snap: Snapshot, placer: Optional[Placer] = None) -> Pins:
    pgs = snap.pgs
    if pgs is None:
        raise AdvisorError(-errno.EAGAIN, "no PG stats yet: which PGs are remapped is read from them")
    placer = placer or Placer.of(snap)
    anc = ancestors(snap)
    o = snap.osds
    # Ceph ignores an item that points at an out OSD, and the mon cancels a PG's items when
    # an OSD of its up set has weight 0 (crush weight x reweight: check_pg_upmaps)
    usable = o.exists & o.up & o.in_ & (o.reweight > 0) & (o.crush_weight > 0)
    out = Pins()
    for pool in snap.pools:
        sel = np.flatnonzero((pgs.pool == pool.id) & (pgs.ps < pool.pg_num))
        if sel.size == 0:
            continue
        width = min(pool.size, pgs.up.shape[1])
        up = pgs.up[sel, :width].astype(np.int64)
        acting = pgs.acting[sel, :width].astype(np.int64)
        moving = np.flatnonzero(_differs(pool, up, acting))
        if moving.size == 0:
            continue
        out.remapped += int(moving.size)
        sel, acting = sel[moving], acting[moving]
        _, raw = placer.crush_sets(pool)
        holes = (acting < 0) | (acting == CRUSH_ITEM_NONE) | (acting >= o.count)
        whole = ~holes.any(axis=1) & (acting.shape[1] == pool.size)
        on_usable = np.where(holes, False, usable[np.clip(acting, 0, o.count - 1)]).all(axis=1)
        bad_rule = breaks(rule_shape(snap, pool), anc, np.where(holes, -1, acting))
        for i, row in enumerate(sel.tolist()):
            pgid = f"{pool.id}.{int(pgs.ps[row]):x}"
            state = pgs.state[row].split("+")
            if "degraded" in state or "undersized" in state:
                out.skipped[pgid] = f"{pgs.state[row]}: recovery, not a move"
            elif not whole[i]:
                out.skipped[pgid] = "its acting set has a hole"
            elif not on_usable[i]:
                gone = [x for x in acting[i].tolist() if not usable[x]]
                out.skipped[pgid] = f"osd.{gone[0]} of its acting set is down, out or of weight 0"
            elif pgid in snap.pg_upmap:
                out.skipped[pgid] = "it has a pg-upmap (a full mapping): left to its owner"
            elif bad_rule[i]:
                out.skipped[pgid] = "its acting set breaks the limits of its CRUSH rule"
            else:
                try:
                    out.items[pgid] = build_items(raw[int(pgs.ps[row])].tolist(), acting[i].tolist(),
                                                  pool.type == "replicated", placer.weight)
                    out.want[pgid] = acting[i].tolist()
                except Cycle as e:
                    if len(out.full) >= FULL_MAX:
                        out.skipped[pgid] = f"{e} (and {FULL_MAX} such PGs have a pg-upmap pin already)"
                        continue
                    out.full[pgid] = out.want[pgid] = acting[i].tolist()
                except NotExpressible as e:
                    out.skipped[pgid] = str(e)
                    continue
                out.objects[pool.id] = out.objects.get(pool.id, 0.0) + \
                    float(pgs.objects[row]) * pool.size
    return out


def pins_report(snap: Snapshot, pins: Pins) -> Dict[str, Any]:
    """JSON for `pin-remapped`: what is pinned, and what is left and why."""
    reasons: Dict[str, int] = {}
    for why in pins.skipped.values():
        reasons[why] = reasons.get(why, 0) + 1
    return {"epoch": snap.epoch, "remapped": pins.remapped, "pinned": len(pins.items) + len(pins.full),
            "items": items_json(pins.items), "full": dict(sorted(pins.full.items())),
            "skipped": len(pins.skipped),
            "skipped_pgs": dict(sorted(pins.skipped.items())[:SKIP_SHOWN]),
            "skipped_reasons": reasons}
