"""What one tick or one command acts on, read once: the module builds it from the mgr (a
test from a fake), and the Driver's commands and ticks take it whole instead of the same
eight arguments each; the executor's tick takes the part it uses (Tick)."""
from dataclasses import dataclass, field
from typing import Callable, FrozenSet, List, Mapping, Optional, Tuple

import numpy as np

from ..balance.budget import Guards
from ..model.misplaced import MisplacedBudget
from ..model.options import BalanceMode, Options
from ..model.snapshot import Snapshot
from .pacing import Pacing, pacing
from .rounds import Burst, Send


@dataclass(frozen=True)
class Context:
    snap: Snapshot
    opts: Options
    cluster_ratio: float            # the cluster's target_max_misplaced_ratio
    now: float                      # seconds since the epoch
    send: Send                      # one mon command
    burst: Optional[Burst] = None   # commands sent together, for one map epoch
    balanced: bool = False          # size against the balanced ideal (module.balanced)
    balancer_active: bool = False   # Ceph's own balancer runs
    # the mon's OSDMap epoch now (one mon command: None where it does not answer, and
    # offline): asked once a burst is answered, it is the first epoch that holds all of it
    mon_epoch: Optional[Callable[[], Optional[int]]] = None

    def budget(self) -> MisplacedBudget:
        """What one round may misplace: the misplaced budget of the options (or the cluster's
        ratio), as plan rounds take it."""
        return MisplacedBudget.from_options(self.snap, self.opts, self.cluster_ratio)

    def guards(self) -> Guards:
        """What no move may pass: the options' fill limit and bound on item lists."""
        return Guards.of(self.opts)

    def sender(self) -> Burst:
        """The burst, or the commands one after another where there is none."""
        send = self.send
        return self.burst or (lambda cmds: [send(c) for c in cmds])

    def for_tick(self, held: Optional[Mapping[str, str]] = None) -> "Tick":
        """What the executor's tick acts on: the snapshot, the options' pacing, the time
        and the sender; `held`: plans that take no step this tick, and why."""
        return Tick(self.snap, pacing(self.opts, self.cluster_ratio, self.snap, self.balancer_active),
                    self.now, self.sender(), held=dict(held or {}))


@dataclass(frozen=True)
class Others:
    """What the other open plans hold while one plan ticks (executor.py): the object copies
    and per-OSD backfills they set moving that the stats may not show yet (ledger.py), the
    PGs whose items they just set, the OSDs they drain (no destination of any plan), and
    the pools whose pg_num they change (name -> plan: no other plan's round moves them)."""
    copies: float = 0.0
    osd_adds: Optional[np.ndarray] = None
    claimed: FrozenSet[str] = frozenset()
    avoid: Tuple[int, ...] = ()
    busy: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Tick:
    """One tick of the executor: the snapshot, the pacing (from the options), the time, how
    commands go out (together: a burst, or one after another), and what other plans hold."""
    snap: Snapshot
    pacing: Pacing
    now: float
    burst: Burst
    others: Others = Others()
    held: Mapping[str, str] = field(default_factory=dict)   # plan id -> why it takes no step now


@dataclass(frozen=True)
class BalanceRequest:
    """One `balance`: which pools (None: all), at most how many item lists, what to even."""
    pools: Optional[List[str]]
    max_items: int
    mode: BalanceMode
    dry_run: bool
