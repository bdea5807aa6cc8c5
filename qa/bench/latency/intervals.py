"""The mon's maps read back after a change: the pool's new intervals (as
PastIntervals::is_new_interval counts them, by osdmaptool) and where the change's slow ops
waited, at which kind of map epoch and at which kind of their own PG's new interval."""
import datetime
import re
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

import numpy as np

from pg_advisor_testkit.osdmaptool_output import of_epoch, parse

from ...cluster import Cluster
from ...maps.object_hash import object_ps
from .client import name as object_name

SLOW_MS = 250.0                       # an op this slow counts in the slow ops' breakdowns
PEER_S = 3.0                          # a PG peers this long at most after its new interval
EPOCH_KINDS = ("up", "acting", "up_thru", "other")
PG_KINDS = ("move", "remap", "temp", "drop", "order")
MODIFIED = re.compile(r"^modified (\S+)$", re.M)
UP_THRU = re.compile(r"^osd\.(\d+) .*\bup_thru (\d+)", re.M)
Mapping = Tuple[Tuple[int, ...], int, Tuple[int, ...], int]     # up, up primary, acting, primary
Epoch = Tuple[float, int, int, int]   # when (wall clock), PGs whose up set changed, only their
#                                       acting set, OSDs whose up_thru changed
Change = Tuple[float, str, str]       # when (wall clock), a PG, change_kind() of its new interval


class ChangeSpan(NamedTuple):
    """The change on the clients' (monotonic) clock; `wall_minus_mono` puts the mon's epochs on it."""
    t_change: float
    t_clean: float
    wall_minus_mono: float


def mappings(c: Cluster, epoch: int, pool_id: int) -> Tuple[Dict[str, Mapping], float, Dict[int, int]]:
    """The pool's PGs' mappings at an epoch, when the mon made it (wall clock), each OSD's up_thru."""
    text = of_epoch(c.ceph, epoch, c.dir / f"map.{epoch}", "--print", "--test-map-pgs-dump-all",
                    "--pool", str(pool_id))
    stamp = MODIFIED.search(text)
    when = datetime.datetime.fromisoformat(stamp.group(1)).timestamp() if stamp else float("nan")
    return ({pg: (m.up, m.up_primary, m.acting, m.primary) for pg, m in parse(text).items()}, when,
            {int(m.group(1)): int(m.group(2)) for m in UP_THRU.finditer(text)})


def split_parents(n_old: int, n_new: int) -> Set[int]:
    """The PGs that split when pg_num grows: a child's seed, top bits cleared until below n_old."""
    out: Set[int] = set()
    for child in range(n_old, n_new):
        seed = child
        while seed >= n_old and seed:
            seed &= ~(1 << (seed.bit_length() - 1))
        out.add(seed)
    return out


def intervals(c: Cluster, pool_id: int, first: int,
              last: int) -> Tuple[Dict[str, int], List[Epoch], List[Change]]:
    """Over epochs first+1..last: peerings, acting primary changes, PGs; each Epoch and Change."""
    peerings = primaries = 0
    epochs: List[Epoch] = []
    changes: List[Change] = []
    prev, _, thru0 = mappings(c, first, pool_id)
    for e in range(first + 1, last + 1):
        cur, when, thru = mappings(c, e, pool_id)
        split = split_parents(len(prev), len(cur)) if len(cur) > len(prev) > 0 else set()
        up = acting = 0
        for pg, m in cur.items():
            old, parent = prev.get(pg), int(pg.split(".")[1], 16) in split
            if old is None or old != m or parent:
                peerings += 1            # born (a split child), remapped, or split
                if old is None or old[:2] != m[:2] or parent:
                    up += 1
                else:
                    acting += 1
                changes.append((when, pg, change_kind(old, m, parent)))
            primaries += old is not None and old[3] != m[3]
        epochs.append((when, up, acting, sum(1 for o, v in thru.items() if thru0.get(o) != v)))
        prev, thru0 = cur, thru
    return {"peerings": peerings, "primary_changes": primaries, "pgs": len(prev)}, epochs, changes


def change_kind(old: Optional[Mapping], new: Mapping, split: bool) -> str:
    """A PG's new interval: "move" (its up set's OSDs changed, not its acting set's: primed;
    or it split or was born), "remap" (both: unprimed), "temp" (only its acting set's, away
    from its up set: a pg_temp set), "drop" (only its acting set's, to its up set: the
    pg_temp dropped) or "order" (the same OSDs, in another order or primary)."""
    if old is None or split:
        return "move"
    if set(old[0]) != set(new[0]):
        return "move" if set(old[2]) == set(new[2]) else "remap"
    if set(old[2]) == set(new[2]):
        return "order"
    return "drop" if set(new[2]) == set(new[0]) else "temp"


def slow_ops(ops: np.ndarray, span: ChangeSpan) -> np.ndarray:
    """Which ops started during the change took over SLOW_MS."""
    start, end = ops[:, 0], ops[:, 1]
    return (start >= span.t_change) & (start < span.t_clean) & ((end - start) * 1000.0 > SLOW_MS)


def slow_by_pg(ops: np.ndarray, changes: Sequence[Change], span: ChangeSpan, pool_id: int,
               pg_nums: Tuple[int, int]) -> Dict[str, int]:
    """The change's slow ops per kind of their PG's newest new interval (at both pg_nums) made
    while they waited or up to PEER_S before ("none": none); per kind the change's intervals
    and how many held a slow op."""
    t_change, t_clean, wall_minus_mono = span
    by_pg: Dict[str, List[Tuple[float, str]]] = {}
    out = {"none": 0, **{k + x: 0 for k in PG_KINDS for x in ("", "_intervals", "_with_slow")}}
    for when, pg, kind in changes:
        by_pg.setdefault(pg, []).append((when - wall_minus_mono, kind))
        if t_change <= when - wall_minus_mono < t_clean:
            out[f"{kind}_intervals"] += 1
    held: Set[Tuple[str, float, str]] = set()
    for s, e, obj in ops[slow_ops(ops, span)][:, [0, 1, 4]].tolist():
        pgs = {f"{pool_id}.{object_ps(object_name(int(obj)), n):x}" for n in pg_nums}
        near = [(t, kind, pg) for pg in pgs for t, kind in by_pg.get(pg, ()) if s - PEER_S <= t <= e]
        if not near:
            out["none"] += 1
            continue
        t, kind, pg = max(near)
        out[kind] += 1
        held.add((pg, t, kind))
    for _, _, kind in held:
        out[f"{kind}_with_slow"] += 1
    return out


def bursts(ops: np.ndarray, epochs: Sequence[Epoch], span: ChangeSpan) -> Dict[str, Any]:
    """Where the change's slow ops come from, per kind of epoch (a PG's up set changed, else
    only acting sets: pg_temp, else an OSD's up_thru: WaitUpThru, else other): the epochs,
    the median and largest slowest op in flight at one (and at each second: the baseline),
    the slow ops in flight at one."""
    t_change, t_clean, wall_minus_mono = span
    start, end = ops[:, 0], ops[:, 1]
    slow = slow_ops(ops, span)
    out: Dict[str, Any] = {"slow_ops": int(slow.sum())}
    order = np.argsort(start)
    s_sorted, e_by_start = start[order], end[order]

    def worst(t: float) -> float:
        """The slowest op in flight at t (of the last 30 s of starts: none waits longer)."""
        lo, hi = np.searchsorted(s_sorted, [t - 30.0, t])
        inflight = e_by_start[lo:hi] > t
        return float(((e_by_start[lo:hi] - s_sorted[lo:hi]) * 1000.0)[inflight].max(initial=0.0))
    kinds: Dict[str, List[float]] = {k: [] for k in EPOCH_KINDS}
    hit = {k: np.zeros(len(ops), dtype=bool) for k in kinds}
    for when, up, acting, thru in epochs:
        t = when - wall_minus_mono
        if not (t_change <= t < t_clean) or t != t:
            continue
        kind = "up" if up else "acting" if acting else "up_thru" if thru else "other"
        kinds[kind].append(worst(t))
        hit[kind] |= (start <= t) & (end > t)
    # the same at every whole second of the change, epoch or not: what "worst" is anyway
    kinds["any_second"] = [worst(t) for t in np.arange(t_change + 0.5, t_clean, 1.0)]
    for k, v in kinds.items():
        out[f"{k}_epochs"] = len(v)
        out[f"{k}_worst_ms"] = [round(float(np.median(v)), 1), round(max(v), 1)] if v else None
        if k in hit:
            out[f"slow_at_{k}"] = int((slow & hit[k]).sum())
    out["slow_at_none"] = int((slow & ~np.logical_or.reduce(list(hit.values()))).sum())
    return out
