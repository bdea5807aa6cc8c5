"""Upmaps as Ceph applies them, and the one builder of a PG's pg-upmap-items.

The model is OSDMap::_apply_upmap: a pg_upmap replaces the whole set unless it names an
OSD that is marked out (then it, the items and the primary are ignored); the items then
apply in order, each replacing the first slot that holds its source, and a pair is
skipped when its target is already anywhere in the set or is marked out; last, a
pg_upmap_primary swaps its OSD into the first slot. The mon also drops a pair
whose source CRUSH does not give the PG (OSDMap::check_pg_upmaps), so items can only
rewrite CRUSH's own set slot by slot: an OSD cannot pass through a free one.

Every item list pg_advisor sends comes from `build_items`, which orders the pairs so that
this application turns CRUSH's set into the wanted one and checks the result with
`apply_items` itself before anything is sent.
"""
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np

from ..model.constants import CRUSH_ITEM_NONE
from ..model.snapshot import Snapshot

Pair = Tuple[int, int]


class NotExpressible(Exception):
    """The wanted set cannot be written as items on CRUSH's set; the message says why."""


class Cycle(NotExpressible):
    """EC shards that swap OSDs: no order of items writes it, a full pg-upmap can."""


def marked_out(osd: int, osd_weight: np.ndarray) -> bool:
    """Ceph ignores an upmap whose target has osd_weight 0 (out, or no such OSD below
    max_osd); NONE and ids past max_osd are not 'out' to it."""
    return osd != CRUSH_ITEM_NONE and 0 <= osd < osd_weight.size and osd_weight[osd] == 0


def apply_items(row: Sequence[int], pairs: Sequence[Pair], osd_weight: np.ndarray) -> List[int]:
    """`row` (a raw set) with the items applied in order, exactly as Ceph does."""
    out = list(row)
    for frm, to in pairs:
        if to in out or marked_out(to, osd_weight):
            continue
        for i, o in enumerate(out):
            if o == frm:
                out[i] = to
                break
    return out


def apply_upmap(row: Sequence[int], explicit: Optional[Sequence[int]], pairs: Sequence[Pair],
                osd_weight: np.ndarray, primary: Optional[int] = None) -> List[int]:
    """A pg_upmap (if any), then the items, then the pg_upmap_primary (if any): a pg_upmap
    naming an out OSD makes Ceph return before the items and the primary too."""
    if explicit is not None:
        if any(marked_out(o, osd_weight) for o in explicit):
            return list(row)
        row = explicit
    out = apply_items(row, pairs, osd_weight)
    if primary is not None:
        apply_primary(out, primary, osd_weight)
    return out


def apply_primary(row: List[int], primary: int, osd_weight: np.ndarray) -> None:
    """A pg_upmap_primary on the raw set, in place, as Ceph applies it: the OSD, when it is
    in the set past its first slot, trades places with the first; nothing when it is out,
    not an OSD below max_osd, or not in the set."""
    if not (0 <= primary < osd_weight.size and osd_weight[primary] != 0):
        return
    for i in range(1, len(row)):
        if row[i] == primary:
            row[i], row[0] = row[0], primary
            return


def _same(got: Sequence[int], want: Sequence[int], replicated: bool) -> bool:
    return sorted(got) == sorted(want) if replicated else list(got) == list(want)


def build_items(raw: Sequence[int], want: Sequence[int], replicated: bool,
                osd_weight: np.ndarray) -> List[Pair]:
    """The items that turn CRUSH's set `raw` into `want` (replicated: in want's order where
    items can write it, else as a set, padding -1 left out; EC: slot by slot, holes
    CRUSH_ITEM_NONE), in an order Ceph's application keeps; [] when they are equal.
    Raises NotExpressible with the reason otherwise."""
    if replicated:
        raw = [o for o in raw if o >= 0]
        want = [o for o in want if o >= 0]
    real = [o for o in want if o != CRUSH_ITEM_NONE]
    if len(set(real)) != len(real):
        raise NotExpressible(f"the wanted set {list(want)} repeats an OSD")
    if len(raw) != len(want):
        raise NotExpressible(f"CRUSH now gives it {len(raw)} OSDs, not {len(want)}: items "
                             f"only replace OSDs: they cannot add one or take one away")
    out = [o for o in want if o not in raw and marked_out(o, osd_weight)]
    if out:
        raise NotExpressible(f"osd.{out[0]} is out: Ceph ignores an item that points at it")
    if replicated:
        pairs = _replicated(raw, want, osd_weight)
    else:
        pairs = _ordered_slots(raw, want)
    got = apply_items(raw, pairs, osd_weight)
    if not _same(got, want, replicated):
        raise NotExpressible(f"items on CRUSH's set {list(raw)} give {got}, not {list(want)}")
    return pairs


def _replicated(raw: Sequence[int], want: Sequence[int], osd_weight: np.ndarray) -> List[Pair]:
    """A replicated PG's items: in `want`'s order where a chain writes it, else as a set.

    The order is the PG's: its first OSD is the primary, and an up set that comes out in
    another order is a new interval (the PG peers, its primary may change, and the pg_temp
    that held it is dropped later: a second peering) though no data moves. A chain costs
    an item or two more; a cycle (OSDs of the set only swapping places) has no items, and
    then only the members are kept."""
    try:
        pairs = _ordered_slots(raw, want)
        if apply_items(raw, pairs, osd_weight) == list(want):
            return pairs
    except Cycle:
        pass
    # sources and targets are disjoint from each other, so no order matters
    gone = [o for o in raw if o not in want]
    new = [o for o in want if o not in raw]
    return list(zip(gone, new))


def _ordered_slots(raw: Sequence[int], want: Sequence[int]) -> List[Pair]:
    """EC: one pair per changed slot, each after the pair that moves its target out of the
    slot holding it (a chain); a cycle, such as two shards swapping OSDs, has no order."""
    slots = [i for i in range(len(raw)) if raw[i] != want[i]]
    holder: Dict[int, int] = {raw[i]: i for i in slots}     # OSD -> the changed slot holding it
    after: Dict[int, int] = {}      # slot -> the slot whose pair must go first
    for i in slots:
        k = holder.get(want[i])
        if k is not None:
            after[i] = k
    pairs: List[Pair] = []
    placed: Dict[int, bool] = {}

    def place(i: int, path: Tuple[int, ...]) -> None:
        # chains are at most as long as the set: recursion depth <= pool size
        if placed.get(i):
            return
        if i in path:
            cycle = [raw[j] for j in path[path.index(i):]]
            raise Cycle(
                "its shards would swap OSDs in a cycle (" + " -> ".join(f"osd.{o}" for o in cycle)
                + f" -> osd.{cycle[0]}): Ceph skips an item whose target is still in the set")
        k = after.get(i)
        if k is not None:
            place(k, path + (i,))
        placed[i] = True
        pairs.append((raw[i], want[i]))

    for i in slots:
        place(i, ())
    return pairs


def mismatches(want: Mapping[str, Sequence[int]], got: Mapping[str, Sequence[int]],
               replicated_pools: Set[int], up: np.ndarray) -> Dict[str, str]:
    """pgid -> what differs, for each PG whose up set in the map (`got`) is not the one its
    items were written for (`want`): replicated as sets, EC slot by slot. A PG whose wanted
    set holds an OSD that is down now (`up` is False there) is not compared: the map drops
    a down OSD whatever the items say."""
    out: Dict[str, str] = {}
    for pgid, w in want.items():
        real = [o for o in w if 0 <= o < CRUSH_ITEM_NONE]
        if any(o >= up.size or not up[o] for o in real):
            continue
        g = got.get(pgid)
        if g is None:
            out[pgid] = "not in the map"
            continue
        replicated = int(pgid.split(".")[0]) in replicated_pools
        if not _same([o for o in g if o >= 0] if replicated else g,
                     real if replicated else w, replicated):
            out[pgid] = f"items written for {list(w)}, the map gives {list(g)}"
    return out


def map_mismatches(snap: Snapshot, want: Mapping[str, Sequence[int]],
                   got: Mapping[str, Sequence[int]]) -> Dict[str, str]:
    """mismatches() for the cluster in `snap`: its replicated pools, its OSDs that are up."""
    replicated = {p.id for p in snap.pools if p.type == "replicated"}
    return mismatches(want, got, replicated, snap.osds.up & snap.osds.exists)
