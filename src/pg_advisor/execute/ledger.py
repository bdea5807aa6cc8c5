"""One misplaced budget and one backfill limit per OSD for every plan that runs: what each
plan sent in the last seconds, which the next plan's step counts on top of the cluster's
own figures.

The PG stats (misplaced objects, PGs backfilling) show a step or a round some seconds
after its map: osd_mon_report_interval and mgr_stats_period are 5 s each by default. Two
plans ticking one after another on one snapshot would each see the whole budget free, and
together pass it. So a plan's spend counts for the others for HOLD seconds; counted twice
at worst for those seconds (once here, once in the stats), which only slows the others,
never lets them pass the budget. A plan's own spends are not counted for itself: its own
pacing (the interval, the wait for the map with its round) already covers them, as when
it ran alone.
"""
from dataclasses import dataclass, field
from typing import FrozenSet, List, Mapping, Optional, Sequence, Set

import numpy as np

HOLD = 15.0        # seconds a spend counts for the other plans: the stats' 5 + 5 s, and margin


@dataclass(frozen=True)
class Spend:
    plan: str
    at: float
    copies: float                       # object copies it misplaces
    osd_adds: Optional[np.ndarray]      # per OSD: PGs it sets backfilling into or out of it
    pgids: FrozenSet[str]               # the PGs its items changed


@dataclass
class Ledger:
    spends: List[Spend] = field(default_factory=list)

    def record(self, spend: Spend) -> None:
        if spend.copies > 0 or spend.pgids or (spend.osd_adds is not None and spend.osd_adds.any()):
            self.spends.append(spend)

    def expire(self, now: float) -> None:
        self.spends = [s for s in self.spends if now - s.at < HOLD]

    def _others(self, plan: str, now: float) -> List[Spend]:
        return [s for s in self.spends if s.plan != plan and now - s.at < HOLD]

    def copies(self, plan: str, now: float) -> float:
        """Object copies the other plans set misplacing within HOLD."""
        return sum(s.copies for s in self._others(plan, now))

    def osd_adds(self, plan: str, now: float, osds: int) -> np.ndarray:
        """Per OSD, PGs the other plans set backfilling within HOLD."""
        out = np.zeros(osds, np.int64)
        for s in self._others(plan, now):
            if s.osd_adds is not None:
                n = min(osds, s.osd_adds.size)
                out[:n] += s.osd_adds[:n]
        return out

    def claimed(self, plan: str, now: float) -> Set[str]:
        """PGs whose items another plan set within HOLD: left to it (a round on the same
        snapshot would overwrite them)."""
        out: Set[str] = set()
        for s in self._others(plan, now):
            out |= s.pgids
        return out


def item_load(old: Mapping[str, Sequence[Sequence[int]]], items: Mapping[str, Sequence[Sequence[int]]],
              osds: int) -> np.ndarray:
    """Per OSD, the PGs a round's `items` move into or out of it: both ends of each pair
    they add to or take from the PG's `old` items (a chain counts twice: more, not less)."""
    out = np.zeros(osds, np.int64)
    ends = []
    for pgid, pairs in items.items():
        was = {(int(a), int(b)) for a, b in old.get(pgid, ())}
        now = {(int(a), int(b)) for a, b in pairs}
        ends += [o for pair in was ^ now for o in pair]
    if ends:
        arr = np.array(ends, np.int64)
        np.add.at(out, arr[(arr >= 0) & (arr < osds)], 1)
    return out
