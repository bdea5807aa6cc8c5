"""What `drain` empties, and whether the pools' rules can do without it.

`ceph pg-advisor drain osd.N` (or a CRUSH bucket, such as a host) moves every replica off
those OSDs through pg-upmap-items in throttled balance rounds, before they are marked out:
the balancer gives them no share and never picks them as a destination (balancer.py), and
each replica there goes to the best legal destination for its PG (drain_moves.py), so the
drain moves what it drains (and what the rule forces with it) and leaves no other OSD
further from its share than before or than a PG. `--and-balance` evens the pools too,
as `balance` does. Refused first, with nothing changed: an OSD or bucket that does not exist, one that holds
no PG, and a drain that would leave a pool's rule too few OSDs or failure domains to place
all of its replicas (the last host of three for a size-3 pool across hosts).
"""
import re
from dataclasses import dataclass
from typing import Any, Dict, List

import numpy as np

from ..rules.legality import ancestors
from ..crush.placement import Placer
from ..model.errors import AdvisorError
from ..model.options import BalanceMode
from ..model.distribution import up_counts
from ..model.snapshot import Snapshot
from .balancer import Balancer, PoolState
from .drain_moves import drained_left
from .budget import Guards, Limits
from .proposal import Aim, Proposal, items_json, propose

OSD_NAME = re.compile(r"(?:osd\.)?([0-9]{1,9})")


def drain_osds(snap: Snapshot, target: str) -> List[int]:
    """The OSD ids `target` names: osd.N (or N), or every OSD under a CRUSH bucket."""
    name = target.strip()
    m = OSD_NAME.fullmatch(name)
    o = snap.osds
    if m:
        osd = int(m.group(1))
        if osd >= o.count or not o.exists[osd]:
            raise AdvisorError.not_found(f"osd.{osd} does not exist")
        return [osd]
    bucket = next((b for b in snap.buckets.values() if b.name == name and not b.is_shadow), None)
    if bucket is None:
        raise AdvisorError.not_found(f"'{name[:80]}' is neither an OSD (osd.N) nor a CRUSH bucket")
    under = ancestors(snap).get(bucket.type_id)
    osds = np.flatnonzero((under == bucket.id) & o.exists).tolist() if under is not None else []
    if not osds:
        raise AdvisorError.invalid(f"bucket {name} holds no OSD")
    return [int(x) for x in osds]


def describe(osds: List[int]) -> str:
    if len(osds) == 1:
        return f"osd.{osds[0]}"
    names = ", ".join(f"osd.{x}" for x in osds[:8])
    return f"{len(osds)} OSDs ({names}{', ...' if len(osds) > 8 else ''})"


def touched_pools(b: Balancer, osds: List[int]) -> List[PoolState]:
    """The pools with replicas on `osds`, each checked to have room for all its replicas
    without them; AdvisorError (EINVAL) otherwise."""
    what = describe(osds)
    touched = [st for st in b.states if int(st.level.counts[osds].sum()) > 0]
    if not touched and b.left_out:      # pools we cannot map may well hold PGs there
        name, why = sorted(b.left_out.items())[0]
        more = f" (and {len(b.left_out) - 1} more pools)" if len(b.left_out) > 1 else ""
        raise AdvisorError.invalid(f"{what} holds no PG of a pool pg_advisor can balance; pool "
                                   f"{name}{more} is left out: {why}")
    if not touched:
        raise AdvisorError.invalid(f"{what} holds no PG: nothing to drain")
    for st in touched:
        placed = int(st.level.counts.sum())
        room = float(st.share.sum())
        if room < placed - 0.5:
            rule = b.snap.rules[st.pool.crush_rule].name
            raise AdvisorError.invalid(
                f"not draining {what}: without it pool {st.pool.name}'s rule '{rule}' can place "
                f"{room:.0f} of the pool's {placed} replicas (too few OSDs or failure domains "
                f"would be left for size {st.pool.size})")
    return touched


@dataclass
class DrainPlan:
    osds: List[int]
    touched: List[PoolState]     # the pools with a replica on them
    replicas: int                # replicas on them, all to move
    proposal: Proposal           # every round of it at once
    and_balance: bool = False    # the pools evened too


def drain_plan(snap: Snapshot, target: str, and_balance: bool = False,
               guards: Guards = Guards()) -> DrainPlan:
    """What draining `target` would move (with `and_balance`, and evening the pools it
    touches), checked first, within the `guards`."""
    osds = drain_osds(snap, target)
    # every pool's state once: to find the pools with a replica there, then to move them
    b = Balancer(snap, Placer.of(snap), limits=Limits(guards=guards), drain=osds)
    touched = touched_pools(b, osds)
    names = [st.pool.name for st in touched]
    replicas = int(sum(st.level.counts[osds].sum() for st in touched))    # before the moves
    r = propose(snap, Aim(names, BalanceMode.PGS, drain=osds, even=and_balance), balancer=b.only(names))
    return DrainPlan(osds, touched, replicas, r, and_balance)


def deviations(states: List[PoolState], osds: List[int]) -> Dict[str, Any]:
    """The largest deviation from its share (the share without the drained OSDs) of any
    other OSD, before and after the moves: per pool, and of the OSDs' totals."""
    n = states[0].share.size if states else 0
    keep = np.ones(n, dtype=bool)
    keep[[o for o in osds if o < n]] = False

    def worst(counts: np.ndarray, share: np.ndarray) -> float:
        on = keep & ((share > 0) | (counts > 0))
        return round(float(np.abs(counts - share)[on].max(initial=0.0)), 2)
    pools: Dict[str, List[float]] = {}
    tot = [np.zeros(n), np.zeros(n)]
    share = np.zeros(n)
    for st in states:
        c = [up_counts(st.start, n), st.level.counts]
        pools[st.pool.name] = [worst(c[0], st.share), worst(c[1], st.share)]
        tot = [tot[0] + c[0], tot[1] + c[1]]
        share += st.share
    return {"pools": pools, "total": [worst(tot[0], share), worst(tot[1], share)]}


def drain_json(plan: DrainPlan) -> Dict[str, Any]:
    r = plan.proposal
    uneven = r.uneven if plan.and_balance else r.undrained
    left = sum(drained_left(r.balancer).values())
    # the moves of replicas not on the drained OSDs (with --and-balance, the evening's too);
    # of them, chained: the second moves of chains, which keep the deviation bound
    forced = r.moves - (plan.replicas - left)
    return {"osds": plan.osds, "pools": [st.pool.name for st in plan.touched], "replicas": plan.replicas,
            "moves": r.moves, "forced": forced, "chained": r.balancer.drain_chained, "left": left,
            "and_balance": plan.and_balance, "deviation": deviations(r.result.pools, plan.osds),
            "items": items_json(r.items),
            "notes": r.notes, "uneven": uneven, "dry_run": True}


def drain_report(snap: Snapshot, target: str, and_balance: bool = False,
                 guards: Guards = Guards()) -> Dict[str, Any]:
    return drain_json(drain_plan(snap, target, and_balance, guards))
