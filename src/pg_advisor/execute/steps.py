"""A pool's pg_num change as an ordered list of small steps.

Growth: split at most `max_splitting` PGs at a time with pgp_num held (the children stay
with their parents, nothing moves), then raise pgp_num in increments whose predicted
movement fits the misplaced budget and the per-OSD backfill limit; then the next chunk.
The chunk comes from the cluster unless the operator fixed it: Ceph's mgr_max_pg_num_change
(as Ceph's mgr keeps pg_num at most that far ahead of pgp_num), and, unpinned, no more
children than the pgp_num step after it can place at once within those throttles, so a
split is one pg_num step and one pgp_num step a chunk, as large as the cluster allows.
Shrink: lower pgp_num the same way (each PG to be merged moves onto its target), then
pg_num in chunks (the merges themselves move nothing). Movement is predicted with the
crush layer: the up sets before and after each pgp_num step, exactly.

With pinning (growth only), a pgp_num step remaps up to `max_splitting` PGs at once but
pins each moved child to the OSDs that hold its data (pg-upmap-items set in the same
map epoch), so nothing moves then; a last "balance" step runs balance rounds on the pool
under the budget, which move children on only where that evens the pool out. Growth
without pinning ends with the same step: CRUSH alone may leave the pool uneven (one PG
split in two on two OSDs: both halves on one OSD half the time), and a plan is done only
when the pool is even.
"""
import enum
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..rules.legality import ancestors
from ..rules.share import rule_share
from ..balance.balancer import Level
from ..crush.placement import Placer, stable_mod
from ..model.distribution import object_copies, up_counts
from ..rules.reach import rule_weights
from ..model.errors import AdvisorError
from ..model.limits import check_pg_num
from ..model.misplaced import misplaced_fraction
from ..model.snapshot import Pool, Snapshot


@dataclass(frozen=True)
class Throttles:
    misplaced_max: float        # fraction of all object copies one step may misplace
    max_splitting: int          # PGs split or merged by one step
    max_backfills_per_osd: int  # PGs one step may move into or out of one OSD
    pin: bool = False           # pin split children where their data is (see above)
    fit_chunk: bool = False     # a split's chunk no larger than its pgp_num step can place


class StepKind(enum.StrEnum):
    """What a step changes (its value is what a stored plan holds)."""
    PG_NUM = "pg_num"         # pg_num, pgp_num held
    PGP_NUM = "pgp_num"       # pgp_num (pinned or not)
    BALANCE = "balance"       # balance rounds until the pool is even


@dataclass(frozen=True)
class PlanStep:
    kind: StepKind
    pool: str
    pool_id: int
    pg_num: int               # the pool's pg_num and pgp_num once the step is done
    pgp_num: int
    pgs_moving: int = 0       # PGs with a shard changing OSD
    shards_moving: int = 0
    misplaced: float = 0.0    # predicted fraction of all object copies misplaced
    max_osd_backfills: int = 0  # most PGs moving into or out of one OSD
    pin: bool = False         # pgp_num: pin the remapped PGs where they are

    def __post_init__(self) -> None:
        # a stored plan holds the kind's value; ValueError for one no kind has
        object.__setattr__(self, "kind", StepKind(self.kind))

    def describe(self) -> str:
        if self.kind is StepKind.PG_NUM:
            return f"{self.pool}: pg_num -> {self.pg_num} (pgp_num stays {self.pgp_num})"
        if self.kind is StepKind.BALANCE:
            return (f"{self.pool}: balance rounds within the budget until the pool is even "
                    f"(up to ~{self.shards_moving} shard moves, ~{100 * self.misplaced:.2f}% of "
                    f"object copies)")
        if self.pin:
            return (f"{self.pool}: pgp_num -> {self.pgp_num} ({self.pgs_moving} PGs remapped, "
                    f"pinned where their data is)")
        return (f"{self.pool}: pgp_num -> {self.pgp_num} ({self.pgs_moving} PGs move, "
                f"~{100 * self.misplaced:.2f}% of object copies misplaced)")

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "PlanStep":
        return PlanStep(**d)


ROUND_PGS = 16      # PGs a round of a step that names no count of its own moves at most


def balance_step(pool: Pool, pg_num: int, pgp_num: int, shards: int, copies: float) -> PlanStep:
    """Balance rounds on the pool, predicted to move about `shards` shards in all."""
    return PlanStep(StepKind.BALANCE, pool.name, pool.id, pg_num, pgp_num, shards_moving=shards,
                    misplaced=misplaced_fraction(pool, pg_num, shards, copies))


def spanning_steps(pools: Sequence[Pool], shards: int, copies: float) -> List[PlanStep]:
    """A balance step on each of `pools` whose rounds span them all (a drain's): each
    predicts the plan's `shards` in all, one round's worth at least."""
    held = max(ROUND_PGS, shards)
    return [balance_step(p, p.pg_num, p.pgp_num, held, copies) for p in pools]


def reseeder(pg_num: int, a: int) -> Callable[[int], np.ndarray]:
    """For pgp_num `a` -> b, the PGs of `pg_num` whose placement seed changes: only those
    can move, so only those are mapped (a step of 16 PGs of a 320,000-PG pool maps some 32
    PGs). The seeds at `a` are computed once, not per b tried."""
    ps = np.arange(pg_num, dtype=np.int64)
    seeds = stable_mod(ps, a)
    return lambda b: ps[seeds != stable_mod(ps, b)]     # (the seed's hash is 1:1)


def movement(snap: Snapshot, placer: Placer, pool: Pool, a: int, b: int,
             rows: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(shards moving per row, PGs moving into or out of each OSD) for pgp_num a -> b of
    the PGs `rows`."""
    before = placer.up_rows(pool, a, rows)
    after = placer.up_rows(pool, b, rows)
    n = snap.osds.count
    if pool.type == "replicated":
        gone = (before[:, :, None] != after[:, None, :]).all(axis=2) & (before >= 0)
        came = (after[:, :, None] != before[:, None, :]).all(axis=2) & (after >= 0)
    else:
        gone = (before != after) & (before >= 0) & (before < n)
        came = (before != after) & (after >= 0) & (after < n)
    load = np.zeros(n, np.int64)
    for side, mask in ((before, gone), (after, came)):
        ok = mask & (side >= 0) & (side < n)
        np.add.at(load, side[ok], 1)
    return gone.sum(axis=1), load


def step_load(snap: Snapshot, pool: Pool, pgp_num: int) -> np.ndarray:
    """Per OSD, the PGs that moving the pool's pgp_num from where it is to `pgp_num`
    moves into or out of it (the PGs whose placement seed changes alone are mapped)."""
    key = ("step_load", pool.id, pool.pg_num, pool.pgp_num, pgp_num)
    known = snap.memo.get(key)      # a waiting step's gate asks again on every poll
    if known is None:
        rows = reseeder(pool.pg_num, pool.pgp_num)(pgp_num)
        known = movement(snap, Placer.of(snap), pool, pool.pgp_num, pgp_num, rows)[1]
        known.setflags(write=False)
        known = snap.memo.setdefault(key, known)
    out: np.ndarray = known
    return out


class StepPlanner:
    def __init__(self, snap: Snapshot, throttles: Throttles, placer: Optional[Placer] = None) -> None:
        self.snap = snap
        self.t = throttles
        self.placer = placer or Placer.of(snap)
        self.copies = object_copies(snap)

    def _movement(self, pool: Pool, a: int, b: int, rows: np.ndarray) -> Tuple[int, int, int]:
        """(PGs moving, shards moving, most PGs moving in or out of one OSD) for pgp a -> b,
        where `rows` are the PGs whose placement seed differs between a and b (reseeder)."""
        per_pg, load = movement(self.snap, self.placer, pool, a, b, rows)
        return int((per_pg > 0).sum()), int(per_pg.sum()), int(load.max(initial=0))

    def _uneven(self, pool: Pool, pg_num: int, pgp_num: int) -> int:
        """Replica moves that CRUSH's placement at (pg_num, pgp_num) needs at least to
        bring every OSD within one PG of its share."""
        rule = self.snap.rules.get(pool.crush_rule)
        if rule is None:
            return 0
        counts = up_counts(self.placer.map_pool(pool, pg_num, pgp_num).up, self.snap.osds.count)
        share = rule_share(self.snap, pool, rule_weights(self.snap, rule), ancestors(self.snap),
                           pg_num, placed=float(counts.sum()))     # as the balancer's
        return Level(counts, share).bound()

    def _fraction(self, pool: Pool, pg_num: int, shards: int) -> float:
        return misplaced_fraction(pool, pg_num, shards, self.copies)

    def _pgp_step(self, pool: Pool, pg_num: int, cur: int, goal: int, pin: bool = False) -> PlanStep:
        """The farthest pgp_num from `cur` toward `goal` whose movement fits the throttles
        (at least one PG: a step always makes progress). Pinned, nothing moves at once:
        only the number of PGs remapped (peering together) is bounded."""
        reseeded = reseeder(pg_num, cur)

        def fits(p: int) -> Tuple[bool, Tuple[int, int, int]]:
            mv = self._movement(pool, cur, p, reseeded(p))
            if pin:
                return mv[0] <= self.t.max_splitting, mv
            return (self._fraction(pool, pg_num, mv[1]) <= self.t.misplaced_max
                    and mv[2] <= self.t.max_backfills_per_osd), mv
        step = 1 if goal > cur else -1
        best, best_mv = cur + step, fits(cur + step)[1]
        lo, hi = 1, abs(goal - cur)
        while lo < hi:      # the largest distance that fits (movement grows with it)
            mid = (lo + hi + 1) // 2
            ok, mv = fits(cur + step * mid)
            if ok:
                lo = mid
                best, best_mv = cur + step * mid, mv
            else:
                hi = mid - 1
        if pin:
            return PlanStep(StepKind.PGP_NUM, pool.name, pool.id, pg_num, best, best_mv[0], best_mv[1],
                            0.0, 0, pin=True)
        return PlanStep(StepKind.PGP_NUM, pool.name, pool.id, pg_num, best, best_mv[0], best_mv[1],
                        self._fraction(pool, pg_num, best_mv[1]), best_mv[2])

    def _split_end(self, pool: Pool, pg: int, target: int) -> Tuple[int, Optional[PlanStep]]:
        """Where the next pg_num step of a split goes from `pg` (pgp_num caught up with it):
        max_splitting further at most; fitted, no further than the one pgp_num step after
        it can reach (at least one PG: a step always makes progress). With it, that pgp_num
        step where the fitting computed it."""
        end = min(target, pg + self.t.max_splitting)
        if not self.t.fit_chunk or self.t.pin:
            return end, None
        # shrink to the pgp_num step's reach until it reaches the whole chunk (each child
        # holds more of the data the fewer are split, so once may not be enough)
        while end > pg + 1:
            step = self._pgp_step(pool, end, pg, end)
            if step.pgp_num >= end:
                return end, step
            end = step.pgp_num
        return end, None

    def plan(self, pool: Pool, target: int) -> List[PlanStep]:
        """The steps to `target`, checked against the mon's bounds first."""
        check_pg_num(self.snap, pool, target)
        return self.steps(pool, target)

    def steps(self, pool: Pool, target: int) -> List[PlanStep]:
        """The steps to `target`, a pg_num within the mon's bounds (check_pg_num)."""
        if pool.pg_num != pool.pg_num_target or pool.pgp_num != pool.pgp_num_target:
            raise AdvisorError.busy(f"pool {pool.name} is already changing (pg_num {pool.pg_num} -> "
                                    f"{pool.pg_num_target}, pgp_num {pool.pgp_num} -> "
                                    f"{pool.pgp_num_target}): wait for it to finish")
        pg, pgp = pool.pg_num, pool.pgp_num
        steps: List[PlanStep] = []
        if target >= pg:
            while pgp < pg:                 # a pool left half placed: finish it first
                steps.append(self._pgp_step(pool, pg, pgp, pg))
                pgp = steps[-1].pgp_num
            while pg < target:
                pg, fitted = self._split_end(pool, pg, target)
                steps.append(PlanStep(StepKind.PG_NUM, pool.name, pool.id, pg, pgp))
                while pgp < pg:
                    steps.append(fitted or self._pgp_step(pool, pg, pgp, pg, self.t.pin))
                    fitted = None
                    pgp = steps[-1].pgp_num
            if target > pool.pg_num:
                # pinned: at most what the pins held back (the rounds move only what evens
                # the pool); plain: what CRUSH's own placement at the target leaves uneven
                held = (sum(s.shards_moving for s in steps if s.pin) if self.t.pin
                        else self._uneven(pool, pg, pgp))
                steps.append(balance_step(pool, pg, pgp, held, self.copies))
        else:
            while pgp > target:
                steps.append(self._pgp_step(pool, pg, pgp, target))
                pgp = steps[-1].pgp_num
            while pg > target:
                pg = max(target, pg - self.t.max_splitting)
                steps.append(PlanStep(StepKind.PG_NUM, pool.name, pool.id, pg, pgp))
        return steps
