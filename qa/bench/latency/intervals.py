"""What the mon's maps say happened to the pool's PGs during a change (new intervals, as
PastIntervals::is_new_interval counts them, by osdmaptool), and where the change's slow ops
waited: at which kind of map epoch, at which kind of their own PG's new interval."""
import datetime
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from pg_advisor_testkit.osdmaptool_output import of_epoch, parse

from ...cluster import Cluster
from ...maps.object_hash import object_ps
from .client import name as object_name

MODIFIED = re.compile(r"^modified (\S+)$", re.M)
UP_THRU = re.compile(r"^osd\.(\d+) .*\bup_thru (\d+)", re.M)
SLOW_MS = 250.0                       # an op this slow counts in the bursts' breakdown

Mapping = Tuple[Tuple[int, ...], int, Tuple[int, ...], int]     # up, up primary, acting, primary
Epoch = Tuple[float, int, int, int]   # when (wall clock), PGs whose up set changed, only their
#                                       acting set, OSDs whose up_thru changed
Change = Tuple[float, str, str]       # when (wall clock), a PG, change_kind() of its new interval
PEER_S = 3.0                          # a PG peers this long at most after its new interval


@dataclass(frozen=True)
class ChangeSpan:
    """The change from `t_change` to clean (`t_clean`) on the clients' clock (monotonic);
    `wall_minus_mono` places the mon's epochs (wall clock) on it."""
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
    """The PGs (seeds) that split when pg_num grows from n_old to n_new: a child's parent is
    its seed with the top bit cleared until it is below n_old."""
    out: Set[int] = set()
    for child in range(n_old, n_new):
        seed = child
        while seed >= n_old and seed:
            seed &= ~(1 << (seed.bit_length() - 1))
        out.add(seed)
    return out


def intervals(c: Cluster, pool_id: int, first: int,
              last: int) -> Tuple[Dict[str, int], List[Epoch], List[Change]]:
    """Over epochs first+1..last: the pool's PGs' new intervals (peerings), acting primary
    changes, PGs at the end; per epoch its time, its PGs whose up set changed (a remap, a
    split) or only their acting set (pg_temp), its OSDs whose up_thru moved; each PG's new
    intervals."""
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
            if old is not None and old[3] != m[3]:
                primaries += 1
        epochs.append((when, up, acting, sum(1 for o, v in thru.items() if thru0.get(o) != v)))
        prev, thru0 = cur, thru
    return {"peerings": peerings, "primary_changes": primaries, "pgs": len(prev)}, epochs, changes


PG_KINDS = ("move", "remap", "temp", "drop", "order")


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


def slow_by_pg(ops: np.ndarray, changes: Sequence[Change], span: ChangeSpan, pool_id: int,
               pg_nums: Tuple[int, int]) -> Dict[str, int]:
    """The change's slow ops laid at their own PG's peering: per kind of the PG's newest
    new interval made while the op waited or up to PEER_S before it started, how many
    ("none": its PG did not peer then); an object's PG at both pg_nums (a split's parent
    and child). Per kind also the change's PG intervals and how many held a slow op."""
    t_change, t_clean, wall_minus_mono = span.t_change, span.t_clean, span.wall_minus_mono
    start, end = ops[:, 0], ops[:, 1]
    slow = np.flatnonzero((start >= t_change) & (start < t_clean) & ((end - start) * 1000.0 > SLOW_MS))
    by_pg: Dict[str, List[Tuple[float, str]]] = {}
    out = {"none": 0, **{k + x: 0 for k in PG_KINDS for x in ("", "_intervals", "_with_slow")}}
    for when, pg, kind in changes:
        by_pg.setdefault(pg, []).append((when - wall_minus_mono, kind))
        if t_change <= when - wall_minus_mono < t_clean:
            out[f"{kind}_intervals"] += 1
    held: Set[Tuple[str, float, str]] = set()
    for row in slow.tolist():
        s, e = float(start[row]), float(end[row])
        name = object_name(int(ops[row, 4]))
        pgs = {f"{pool_id}.{object_ps(name, n):x}" for n in pg_nums}
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
    """Where the change's slow ops come from. An epoch is "up" if some PG's up set changed
    in it, "acting" if only acting sets did (pg_temp), else "up_thru" if an OSD's up_thru
    moved (WaitUpThru), else "other". Per kind: the epochs, the median and largest over them
    of the slowest op in flight at each (and at each whole second: the baseline), and how
    many of the change's ops over SLOW_MS had an epoch of that kind made while they waited."""
    t_change, t_clean, wall_minus_mono = span.t_change, span.t_clean, span.wall_minus_mono
    start, end = ops[:, 0], ops[:, 1]
    slow = (start >= t_change) & (start < t_clean) & ((end - start) * 1000.0 > SLOW_MS)
    out: Dict[str, Any] = {"slow_ops": int(slow.sum())}
    order = np.argsort(start)
    s_sorted, e_by_start = start[order], end[order]

    def worst(t: float) -> float:
        """The slowest op in flight at t (of the last 30 s of starts: none waits longer)."""
        lo, hi = np.searchsorted(s_sorted, [t - 30.0, t])
        inflight = e_by_start[lo:hi] > t
        return float(((e_by_start[lo:hi] - s_sorted[lo:hi]) * 1000.0)[inflight].max(initial=0.0))
    kinds = {"up": [], "acting": [], "up_thru": [], "other": []}     # type: Dict[str, List[float]]
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
    out["slow_at_none"] = int((slow & ~(hit["up"] | hit["acting"] | hit["up_thru"] | hit["other"])).sum())
    return out
