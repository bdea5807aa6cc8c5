"""The misplaced budget, the one rule for how much data a round may set moving: plan rounds,
the removal of full pg-upmaps, and `balance` live and offline all take it from here.

A round may misplace `ROUND_FILL` of the budget's share of all object copies, less what is
misplaced already; when nothing is misplaced, its first payment is made even if it alone
passes that (as Ceph's balancer and pgp_num stepping do): otherwise a pool of few big PGs
(one PG split in two) would never move at all. A first payment is one PG's moves, or a
chain's two PGs paid at once (balance/budget.py's payable). A plan's pg_num or pgp_num
step goes by the same rule on the whole budget (step_fits): its misplaced share is an
estimate from the pool's objects, made before the step, not a round's plan of moves.
"""
from dataclasses import dataclass
from typing import Optional

from .distribution import object_copies
from .options import Options
from .snapshot import Pool, Snapshot

# a round plans moves for this share of the budget: its PGs grow while they backfill (client
# writes) and the stats lag, so what it misplaces exceeds the plan (doc/expand.rst)
ROUND_FILL = 0.8


def misplaced_max(opts: Options, cluster_ratio: float) -> float:
    """The share of all object copies that may be misplaced at once: option misplaced_budget,
    or the cluster's target_max_misplaced_ratio when it is 0."""
    return opts.misplaced_budget or cluster_ratio


def shard_objects(pool: Pool, pg_num: int, shards: int) -> float:
    """Object copies that moving `shards` PG shards of the pool misplaces (objects spread
    evenly over its pg_num PGs)."""
    return shards * (pool.objects or 0) / max(pg_num, 1)


def misplaced_fraction(pool: Pool, pg_num: int, shards: int, copies: float) -> float:
    """shard_objects() as a share of all `copies` object copies."""
    if copies <= 0:
        return 0.0
    return shard_objects(pool, pg_num, shards) / copies


def misplaced_ratio(snap: Snapshot) -> float:
    """The share of all object copies misplaced now."""
    copies = object_copies(snap)
    return snap.misplaced_objects / copies if copies > 0 else 0.0


def step_fits(misplaced_now: float, step: float, most: float) -> bool:
    """May a plan's step that misplaces `step` of all object copies go, `misplaced_now`
    misplaced already and `most` allowed (shares of all copies)? The round's rule on the
    whole budget: always when nothing is misplaced."""
    return affordable(most, True, misplaced_now, step)


def affordable(copies: Optional[float], first_free: bool, spent: float, cost: float) -> bool:
    """May moves that misplace `cost` more object copies be made, `spent` spent already, in a
    budget of `copies` (None: no limit)?"""
    return copies is None or spent + cost <= copies or (first_free and spent == 0)


@dataclass(frozen=True)
class MisplacedBudget:
    """What one round may misplace."""
    copies: Optional[float]     # object copies (None: no PG stats, so no limit)
    first_free: bool            # nothing is misplaced: the first move may pass `copies`

    @classmethod
    def of(cls, snap: Snapshot, ratio: float, others: float = 0.0) -> "MisplacedBudget":
        """A round's budget where `ratio` of all object copies may be misplaced at once,
        `others` copies set misplacing by other plans that the stats may not show yet
        (execute/ledger.py)."""
        if snap.pgs is None:
            return cls(None, False)
        return cls(max(ratio * ROUND_FILL * object_copies(snap) - snap.misplaced_objects - others, 0.0),
                   snap.misplaced_objects == 0 and others <= 0)

    @classmethod
    def from_options(cls, snap: Snapshot, opts: Options, cluster_ratio: float) -> "MisplacedBudget":
        """The budget the options give (misplaced_max)."""
        return cls.of(snap, misplaced_max(opts, cluster_ratio))

    def affordable(self, spent: float, cost: float) -> bool:
        return affordable(self.copies, self.first_free, spent, cost)
