"""What the balancer proposes (propose: a Proposal), the `balance` and `eval` reports of it, and
the checks of its items against the map (unkept)."""
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..crush.placement import Placer
from ..model.distribution import spread, up_counts
from ..model.errors import AdvisorError
from ..model.options import BalanceMode
from ..model.snapshot import Snapshot
from .balancer import BalanceResult, Balancer, PoolState
from .budget import Limits
from .drain_moves import drained_left
from .evener import ByteEvener, byte_spread, fullness, fullness_guard
from .report_types import BalanceRun, EvalReport, PoolSpread, Spreads, pool_spread

MODES = tuple(BalanceMode)


def _spreads(states: List[PoolState], use_start: bool) -> Spreads:
    n = states[0].share.shape[0] if states else 0
    tot, share = np.zeros(n), np.zeros(n)
    pools: List[PoolSpread] = []
    for st in states:
        c = up_counts(st.start if use_start else st.up, n)
        pools.append(pool_spread(st.pool.name, spread(c, st.share).as_dict(), rule_limit(st)[0]))
        tot += c
        share += st.share
    return {"pools": pools, "total": spread(tot, share).as_dict() if states else None}


def rule_limit(st: PoolState) -> Tuple[float, int]:
    """(how far the rule's share is from a weight-proportional one at most: no placement
    the rule allows gets nearer; the OSD where it is)."""
    gap = np.abs(st.share - st.by_weight)
    o = int(np.argmax(gap)) if gap.size else 0
    return (round(float(gap[o]), 2) if gap.size else 0.0), o


def rule_limit_notes(states: List[PoolState]) -> List[str]:
    out = []
    for st in states:
        gap, o = rule_limit(st)
        if gap >= 1:
            out.append(f"pool {st.pool.name}: its rule allows no placement nearer than {gap:.1f} "
                       f"PGs to a share by weight alone (osd.{o}: {st.by_weight[o]:.1f} by weight, "
                       f"{st.share[o]:.1f} under the counts its choose steps allow each bucket): "
                       f"the shares here are what the rule allows")
    return out


def uneven_osd(st: PoolState) -> str:
    """The OSD furthest off the pool's share, as a sentence."""
    dev = st.level.dev()
    o = int(np.argmax(np.abs(dev)))
    return (f"osd.{o} holds {int(st.level.counts[o])} PGs of pool {st.pool.name}, "
            f"its share is {st.share[o]:.2f}")


def unseats_primary(primaries: Mapping[str, int], pgid: str, pairs: Sequence[Sequence[int]]) -> bool:
    """Do a PG's new items take its pg_upmap_primary's OSD out of its set? The entry would
    then do nothing but wait (the mon keeps it while the OSD is in CRUSH's own set) to take
    the primary back should the item ever go: the items' burst removes it, so the
    primaries read-balance set stay where they act."""
    entry = primaries.get(pgid)
    return entry is not None and any(int(p[0]) == entry for p in pairs)


def commands(items: Dict[str, List[Tuple[int, int]]], primaries: Mapping[str, int]) -> List[str]:
    """The `ceph` commands that set the items, as `osdmaptool --upmap` writes them, each PG's
    entry that they unseat removed after them (unseats_primary)."""
    out = []
    for pgid, pairs in sorted(items.items(), key=lambda kv: tuple(int(x, 16) for x in kv[0].split("."))):
        if pairs:
            out.append(f"ceph osd pg-upmap-items {pgid} " + " ".join(f"{a} {b}" for a, b in pairs))
        else:
            out.append(f"ceph osd rm-pg-upmap-items {pgid}")
        if unseats_primary(primaries, pgid, pairs):
            out.append(f"ceph osd rm-pg-upmap-primary {pgid}")
    return out


def items_json(items: Mapping[str, Sequence[Sequence[int]]]) -> Dict[str, List[List[int]]]:
    """Items (pgid -> its (from, to) pairs) as JSON lists, in pgid order: for the reports
    and the plan state."""
    return {k: [list(p) for p in v] for k, v in sorted(items.items())}


def unkept(items: Mapping[str, Sequence[Sequence[int]]],
           kept: Mapping[str, Sequence[Sequence[int]]]) -> List[str]:
    """The PGs whose items the map does not show as set (for [], as removed): the mon
    acknowledges an item that breaks the rule and drops it later, so every setter checks."""
    return [pgid for pgid, pairs in items.items()
            if [tuple(p) for p in kept.get(pgid, ())] != [tuple(p) for p in pairs]]


def eval_report(snap: Snapshot, pools: Optional[List[str]] = None,
                placer: Optional[Placer] = None) -> EvalReport:
    """The distribution now; score: the largest deviation from a share (<= 1 is the limit)."""
    for name in pools or []:
        snap.pool_by_name(name)
    b = Balancer(snap, placer, pools)
    now = _spreads(b.states, True)
    devs = [p["max_deviation"] for p in now["pools"]]
    if now["total"] is not None:
        devs.append(now["total"]["max_deviation"])
    return EvalReport(epoch=snap.epoch, score=max(devs, default=0.0), distribution=now,
                      fullness=fullness(b, start=True) if snap.pgs is not None else None,
                      upmap_items=len(snap.pg_upmap_items), notes=b.notes + rule_limit_notes(b.states))


@dataclass
class Proposal:
    """What one run of the balancer proposes, as the executor and the driver read it;
    balance_report turns it into the command's JSON."""
    snap: Snapshot
    mode: BalanceMode
    balancer: Balancer
    result: BalanceResult
    copies_max: Optional[float]

    @property
    def items(self) -> Dict[str, List[Tuple[int, int]]]:
        return self.result.items

    @property
    def moves(self) -> int:
        return self.result.moves

    def wanted(self, pgids: Iterable[str]) -> Dict[str, List[int]]:
        """pgid -> the up set its new items are meant to give (replicated: no padding)."""
        states = {st.pool.id: st for st in self.result.pools}
        out: Dict[str, List[int]] = {}
        for pgid in pgids:
            pid, ps = pgid.split(".")
            st = states[int(pid)]
            row = st.up[int(ps, 16)].tolist()
            out[pgid] = [o for o in row if o >= 0] if st.pool.type == "replicated" else row
        return out

    @property
    def uneven(self) -> Dict[str, str]:
        """Pools with an OSD more than a PG off its share even after these items."""
        return {st.pool.name: uneven_osd(st) + self._space()
                for st in self.result.pools if not st.level.clear()}

    @property
    def undrained(self) -> Dict[str, str]:
        """Pools with replicas still on the drained OSDs after these items."""
        return {name: (f"{n} replicas of pool {name} are still on the drained OSDs: no legal "
                       f"move takes them off{self._space()}")
                for name, n in drained_left(self.balancer).items()}

    def _space(self) -> str:
        """Why fewer moves were legal: OSDs at their fill limit, the bound on item lists."""
        b, why = self.balancer, []
        if b.full:
            why.append(f"{len(b.full)} OSDs take no PG: at fill_limit {b.fill.value}, osd.{b.full[0]} first")
        if b.at_upmap_max():
            why.append(f"the map holds upmap_max ({b.upmap_max:,}) PGs with items")
        return f" ({'; '.join(why)})" if why else ""

    @property
    def throttled(self) -> bool:
        """The misplaced budget or an OSD's backfill room, not the lack of a useful move,
        ended the proposal."""
        return self.balancer.budget.throttled

    @property
    def notes(self) -> List[str]:
        return self.result.notes + rule_limit_notes(self.result.pools)


@dataclass(frozen=True)
class Aim:
    """What a run evens: its pools (None: all), in counts alone or then in bytes (`mode`),
    each byte move gaining at least `min_gain` of the mean; `min_spread`: bytes mode evens
    fullness only where, with the counts even, the fullest OSD is at least this fraction of
    its size fuller than the mean (or the emptiest that much emptier); OSD sizes unknown,
    not at all (evener.byte_spread). The OSDs in `drain` are emptied; with them, `even` (the
    drain's --and-balance) evens the pools too, else only the drain's own moves are made."""
    pools: Optional[List[str]] = None
    mode: BalanceMode = BalanceMode.BYTES
    min_gain: float = 0.005
    min_spread: float = 0.0
    drain: Sequence[int] = ()
    even: bool = True


def propose(snap: Snapshot, aim: Aim = Aim(), limits: Limits = Limits(), *,
            placer: Optional[Placer] = None, balancer: Optional[Balancer] = None) -> Proposal:
    """Balance PG counts (per pool, then in total), then in bytes mode how full the OSDs
    are, within `limits` (Aim and Limits say what each field does).
    `balancer`: one built already for these pools and OSDs, not yet run."""
    # the command table and the options give a BalanceMode; a str from past the types is checked
    if aim.mode not in MODES:
        raise AdvisorError.invalid(f"mode '{aim.mode}' is not one of {', '.join(MODES)}")
    mode = BalanceMode(aim.mode)
    if limits.max_items < 1:
        raise AdvisorError.invalid(f"--max-items must be at least 1, not {limits.max_items}")
    for name in aim.pools or []:
        snap.pool_by_name(name)
    b = balancer or Balancer(snap, placer, aim.pools, limits, aim.drain)

    def bytes_after_counts() -> None:
        if mode is not BalanceMode.BYTES:
            return
        if snap.pgs is None:
            b.notes.append("bytes mode needs PG stats (offline: --pg-dump): PG counts balanced only")
        elif aim.min_spread > 0 and byte_spread(b) < aim.min_spread:
            b.notes.append(f"fullness within {aim.min_spread:.1%} of the OSDs' size of the mean of "
                           f"their root and class: bytes left as they are")
        else:
            ByteEvener(b, aim.min_gain).run()
    even = aim.even or not b.drain.size
    guard = fullness_guard(b, aim.min_gain) if mode is BalanceMode.BYTES and snap.pgs is not None else None
    return Proposal(snap, mode, b, b.run(limits.max_items, bytes_after_counts, even, fullness=guard),
                    limits.misplaced.copies if limits.misplaced is not None else None)


def balance_report(snap: Snapshot, aim: Aim = Aim(), limits: Limits = Limits(), *,
                   placer: Optional[Placer] = None) -> BalanceRun:
    """propose()'s proposal as the `balance` command's JSON."""
    return proposal_json(propose(snap, aim, limits, placer=placer))


def proposal_json(p: Proposal) -> BalanceRun:
    res, b, snap = p.result, p.balancer, p.snap
    return BalanceRun(
        epoch=snap.epoch, mode=p.mode,
        commands=commands(res.items, snap.pg_upmap_primaries),
        items=items_json(res.items),
        before=_spreads(res.pools, True), after=_spreads(res.pools, False),
        fullness=({"before": fullness(b, start=True), "after": fullness(b)}
                  if snap.pgs is not None else None),
        moves=res.moves, lower_bound=res.lower_bound, repairs=res.repairs,
        notes=p.notes, uneven=p.uneven,
        objects_misplaced=int(b.budget.misplaced) if p.copies_max is not None else None,
        throttled=p.throttled,
    )
