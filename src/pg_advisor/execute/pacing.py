"""When a plan may take its next step: the window, the interval, the misplaced budget,
the backfills per OSD, and what blocks a step (the cluster, down OSDs, Ceph's own
balancer and pg_autoscaler), as sentences."""
import datetime
import enum
from dataclasses import dataclass
from typing import List, NamedTuple, Tuple

import numpy as np

from ..analysis.backfill import new_slots
from ..balance.budget import Guards
from ..rules.reach import rule_weights
from ..model.backfill_limit import backfill_limit
from ..model.misplaced import misplaced_max
from ..model.options import WEEKDAYS, BalanceMode, Options, check_window, minutes, weekdays
from ..model.snapshot import Pool, Snapshot
from .gates import MOVE_FLAGS, balancer_conflict, cluster_blockers

# Rounds in the background (plans, auto mode) even bytes only while the fullest OSD is at
# least 1 % of its size fuller than the mean (or the emptiest that much emptier): closer,
# no OSD is much nearer nearfull than another, and PG sizes change with client writes
# faster than rounds follow them, so the rounds would move data for ever (doc/testing.rst,
# the thrasher). `balance` on demand evens bytes down to balance_min_gain.
BYTES_SPREAD = 0.01


@dataclass(frozen=True)
class Pacing:
    misplaced_max: float       # misplaced fraction allowed in flight (option misplaced_budget)
    interval: float            # seconds at least between two steps
    window_begin: str          # "HH:MM"
    window_end: str            # "HH:MM" (before begin: the window spans midnight)
    window_days: str           # "" (every day) or e.g. "mon,tue,sat"
    balancer_active: bool = False   # Ceph's own balancer runs: no upmap items from us
    balance_mode: BalanceMode = BalanceMode.PGS     # what balance rounds even out
    max_backfills: int = 0          # PGs backfilling into or out of one OSD (0: no limit)
    prime: bool = False             # pg_temps with items and pgp_num steps (priming.py)
    min_gain: float = 0.005         # option balance_min_gain
    min_spread: float = BYTES_SPREAD    # see BYTES_SPREAD
    guards: Guards = Guards()       # options fill_limit and max_upmap_items


def check_pacing(p: Pacing) -> None:
    """Refuse a malformed window with a sentence (the mon cannot check these strings)."""
    check_window(p.window_begin, p.window_end, p.window_days)


def pacing(opts: Options, cluster_ratio: float, snap: Snapshot, balancer_active: bool = False) -> Pacing:
    """The options' pacing on the cluster `snap` shows (the backfill limit may come from
    its osd_max_backfills), checked: a malformed window is refused here."""
    p = Pacing(misplaced_max=misplaced_max(opts, cluster_ratio), interval=opts.step_interval,
               window_begin=opts.window_begin, window_end=opts.window_end,
               window_days=opts.window_days, balancer_active=balancer_active,
               balance_mode=opts.balance_mode,
               max_backfills=backfill_limit(snap, opts.max_backfills_per_osd),
               prime=opts.prime_pg_temp, min_gain=opts.balance_min_gain,
               guards=Guards.of(opts))
    check_pacing(p)
    return p


def in_window(p: Pacing, now: float) -> bool:
    t = datetime.datetime.fromtimestamp(now)
    days = weekdays(p.window_days)
    if days and WEEKDAYS[t.weekday()] not in days:
        return False
    begin, end = minutes(p.window_begin, "window_begin"), minutes(p.window_end, "window_end")
    cur = t.hour * 60 + t.minute
    if begin == end:
        return True
    return begin <= cur < end if begin < end else (cur >= begin or cur < end)


class BlockerKind(enum.Enum):
    CONFLICT = "conflict"      # Ceph's balancer or pg_autoscaler acts there: named apart in health
    CLUSTER = "cluster"        # flags or PG states
    OSD_DOWN = "osd_down"      # an OSD the pool's rule uses is down
    WINDOW = "window"          # outside the time window


class Blocker(NamedTuple):
    kind: BlockerKind
    text: str      # a sentence, health-worthy


@dataclass(frozen=True)
class StepTraits:
    """What in a step the blockers look at."""
    upmaps: bool = False     # it sets pg-upmap-items
    half_sent: bool = False  # the rest of a step a failover interrupted: PGs made unwell by its
    #                          first half must not hold it back
    pg_num: bool = True      # it changes pg_num or pgp_num (pg_autoscaler's business; items are not)
    pools: Tuple[int, ...] = ()  # the pools it acts on (ids; none: the blocked pool's alone)


def blockers(snap: Snapshot, pool: Pool, p: Pacing, now: float,
             step: StepTraits = StepTraits()) -> List[Blocker]:
    """Conditions under which no step is taken. PG states count in the pools the step acts on
    alone (gates.py): a pg_num or pgp_num step waits for every PG of its pool to be active
    and whole (it may move any of them) and for the OSDs its rule uses to be up; a balance
    round waits only for its pools' PGs to be active, as it moves no PG that is not whole
    (balance/pool_state.py: healthy) and loads no OSD that is down."""
    upmaps, half_sent, pg_num = step.upmaps, step.half_sent, step.pg_num
    out: List[Blocker] = []
    conflict = balancer_conflict(upmaps and p.balancer_active,
                                 "no upmap items from this step (or set split_pinning false)")
    if conflict:
        out.append(Blocker(BlockerKind.CONFLICT, conflict))
    if pg_num and snap.autoscaler_acts(pool):
        out.append(Blocker(BlockerKind.CONFLICT, f"pool {pool.name}: pg_autoscaler manages it "
                                                 f"(pg_autoscale_mode on); pg_advisor does not fight it"))
    out.extend(Blocker(BlockerKind.CLUSTER, b) for b in
               cluster_blockers(snap, MOVE_FLAGS + ("noautoscale",), pg_states=not half_sent,
                                pools=step.pools or (pool.id,), degraded=pg_num))
    rule = snap.rules.get(pool.crush_rule)
    if rule is not None and pg_num:     # the OSDs the pool's rule can use, down but still in
        o = snap.osds
        down = np.flatnonzero((rule_weights(snap, rule) > 0) & ~o.up).tolist()
        if down:
            more = f" (and {len(down) - 1} more)" if len(down) > 1 else ""
            out.append(Blocker(BlockerKind.OSD_DOWN,
                               f"osd.{down[0]} is down and in{more}: pool {pool.name} maps onto it"))
    if not in_window(p, now):
        out.append(Blocker(BlockerKind.WINDOW, f"outside the window {p.window_begin}-{p.window_end}"
                           + (f" on {p.window_days}" if p.window_days else "")))
    return out


def backfill_load(snap: Snapshot) -> np.ndarray:
    """Per OSD: PGs backfilling or waiting to, into or out of it (the OSDs of the up set
    not acting, and of the acting set not up: the ends that move). Once a snapshot: a
    plan's gate asks on every poll, and the mgr keeps an unchanged snapshot (read-only)."""
    known = snap.memo.get("backfill_load")
    if known is not None:
        out: np.ndarray = known
        return out
    n = snap.osds.count
    load = np.zeros(n, np.int64)
    pgs = snap.pgs
    if pgs is not None:
        moving = {s: "backfill" in s for s in set(pgs.state)}      # one verdict per state
        rows = np.fromiter(map(moving.__getitem__, pgs.state), bool, pgs.count)
        up, acting = pgs.up[rows], pgs.acting[rows]
        for side, other in ((up, acting), (acting, up)):
            ends = side[new_slots(side, other)]
            np.add.at(load, ends[(ends >= 0) & (ends < n)], 1)
    load.setflags(write=False)
    kept: np.ndarray = snap.memo.setdefault("backfill_load", load)
    return kept
