"""One balance round, as the `balance` command and a plan's balance steps both run it: a
bounded batch of pg-upmap-items from propose(), set with the mon in small bursts
(each PG's pg_temp first when priming), the refusals kept by PG. Pins set their items
the same way (set_items)."""
import hashlib
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..balance.budget import Guards, Limits
from ..balance.proposal import Aim, Proposal, items_json, propose, unseats_primary
from ..model.misplaced import MisplacedBudget
from ..model.options import BalanceMode
from ..model.mon_commands import items_commands, rm_upmap, rm_upmap_primary, upmap, upmap_items
from ..model.snapshot import Snapshot
from .command_checks import CHECK_PGS_MAX, PendingCheck
from .priming import PRIME_BATCH, Command, item_results, primed_commands

Burst = Callable[[List[Command]], List[Tuple[int, str]]]   # sent together, answered in order
Send = Callable[[Command], Tuple[int, str]]                # one command: (return code, error text)
Items = Mapping[str, Sequence[Sequence[int]]]


@dataclass
class ItemsSet:
    failed: Dict[str, str] = field(default_factory=dict)   # pgid: the mon's answer
    primed: int = 0                                         # pg_temps set with the items

    def messages(self) -> List[str]:
        return [f"{pgid}: {why}" for pgid, why in self.failed.items()]


def set_items(snap: Snapshot, items: Items, burst: Burst, prime: bool) -> ItemsSet:
    """Set each PG's items (an empty list removes them), PRIME_BATCH PGs to a burst: burst
    sends a thread a command, so a big round never opens hundreds at once."""
    cmds = drop_stale_primaries(snap, items, items_commands({k: [(int(p[0]), int(p[1])) for p in v]
                                                             for k, v in items.items()}))
    out = ItemsSet()

    def primed(batch: List[Command]) -> List[Command]:
        # each PG's pg_temp and items together, for one map epoch
        batch, n = primed_commands(snap, batch)
        out.primed += n
        return batch
    return _send(cmds, burst, primed if prime else None, out)


def drop_stale_primaries(snap: Snapshot, items: Items, cmds: List[Command]) -> List[Command]:
    """After each PG's item command, the removal of its pg_upmap_primary where the items
    unseat it (balance/proposal.unseats_primary)."""
    out: List[Command] = []
    for c in cmds:
        out.append(c)
        pgid = str(c.get("pgid"))
        if unseats_primary(snap.pg_upmap_primaries, pgid, items.get(pgid, ())):
            out.append(rm_upmap_primary(pgid))
    return out


def set_full(snap: Snapshot, full: Mapping[str, Sequence[int]], burst: Burst) -> ItemsSet:
    """Set a full pg-upmap on each PG (the items it had go first: they would apply on top
    of it), PRIME_BATCH PGs to a burst."""
    return _send(_full_commands(snap, full), burst)


def _full_commands(snap: Snapshot, full: Mapping[str, Sequence[int]]) -> List[Command]:
    cmds: List[Command] = []
    for pgid, osds in sorted(full.items()):
        if pgid in snap.pg_upmap_items:
            cmds.append(upmap_items(pgid, []))
        cmds.append(upmap(pgid, osds))
    return cmds


def set_with(snap: Snapshot, lead: Sequence[Command], items: Items, full: Mapping[str, Sequence[int]],
             burst: Burst) -> Tuple[List[str], ItemsSet, ItemsSet]:
    """`lead` (a weight change), then every PG's items and full pg-upmaps, all in one burst
    for one map epoch: the refusals of the lead, of the items and of the full pg-upmaps."""
    item_cmds = items_commands({k: [(int(p[0]), int(p[1])) for p in v] for k, v in items.items()})
    full_cmds = _full_commands(snap, full)
    cmds = list(lead) + item_cmds + full_cmds
    results = burst(cmds)
    lead_failed = [f"{c.get('name', c['prefix'])}: {err.strip() or f'error {rc}'}"
                   for c, (rc, err) in zip(lead, results) if rc != 0]
    outs = (ItemsSet(), ItemsSet())
    for k, (c, (rc, err)) in enumerate(zip(cmds, results)):
        if k >= len(lead) and rc != 0:
            outs[0 if k < len(lead) + len(item_cmds) else 1].failed[c["pgid"]] = err.strip() or f"error {rc}"
    return lead_failed, outs[0], outs[1]


def set_primaries(cmds: List[Command], burst: Burst) -> ItemsSet:
    """Send a read balance's pg-upmap-primary and rm-pg-upmap-primary commands,
    PRIME_BATCH to a burst, keeping each PG's refusal."""
    return _send(cmds, burst)


def unset_full(pgids: Sequence[str], burst: Burst) -> ItemsSet:
    return _send([rm_upmap(k) for k in pgids], burst)


def _send(cmds: List[Command], burst: Burst,
          before: Optional[Callable[[List[Command]], List[Command]]] = None,
          out: Optional[ItemsSet] = None) -> ItemsSet:
    """Send `cmds` PRIME_BATCH PGs to a burst (`before` may add commands to each batch),
    keeping each PG's refusal."""
    out = out if out is not None else ItemsSet()
    for i in range(0, len(cmds), PRIME_BATCH):
        batch = cmds[i:i + PRIME_BATCH]
        if before is not None:
            batch = before(batch)
        for c, (rc, err) in item_results(batch, burst(batch)):
            if rc != 0:
                out.failed[c["pgid"]] = err.strip() or f"error {rc}"
    return out


@dataclass
class Round:
    proposal: Proposal
    outcome: Optional[ItemsSet] = None

    @property
    def snap(self) -> Snapshot:
        return self.proposal.snap

    @property
    def items(self) -> Dict[str, List[Tuple[int, int]]]:
        return self.proposal.items

    def apply(self, burst: Burst, prime: bool) -> ItemsSet:
        self.outcome = set_items(self.snap, self.items, burst, prime)
        return self.outcome

    def taken(self) -> Dict[str, List[List[int]]]:
        """The items the mon did not refuse: the ones a later map must show (as JSON, for
        the plan state)."""
        failed = self.outcome.failed if self.outcome else {}
        return items_json({k: v for k, v in self.items.items() if k not in failed})

    def to_check(self, most: int) -> Tuple[Dict[str, List[List[int]]], Dict[str, List[int]]]:
        """What a check of the round on a later map reads, on its first `most` PGs (so what
        keeps it stays bounded): their taken items and the up sets those are meant to give."""
        taken = dict(sorted(self.taken().items())[:most])
        return taken, self.proposal.wanted(taken)

    def pending_check(self, now: float) -> PendingCheck:
        """What the background checks of this round once the next map is in (an operator's
        `balance`: command_checks.py)."""
        taken, want = self.to_check(CHECK_PGS_MAX)
        return PendingCheck("balance", self.snap.epoch, now, topology_key(self.snap),
                            items={k: [(int(a), int(b)) for a, b in v] for k, v in taken.items()},
                            want=want)


def topology_key(snap: Snapshot) -> str:
    """What CRUSH's sets depend on besides the items, per OSD: exists, up, in, reweight and
    CRUSH weight (a few bytes an OSD, hashed once a round)."""
    o = snap.osds
    h = hashlib.blake2b(digest_size=8)
    for a in (o.exists, o.up, o.in_, o.reweight, o.crush_weight):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class RoundSpec:
    """What one round is asked for: its pools (None: all), at most `max_items` moves within
    the misplaced `budget`, what it evens (propose() says what min_gain and min_spread do),
    the OSDs it empties (with `even` off, making only the drain's moves), and the PGs each
    OSD may still take in or give off (None: any); the PGs `fixed` are not moved."""
    pools: Optional[List[str]]
    max_items: int
    mode: BalanceMode
    budget: MisplacedBudget
    min_gain: float = 0.005
    min_spread: float = 0.0
    drain: Sequence[int] = ()
    osd_room: Optional[np.ndarray] = None
    even: bool = True
    guards: Guards = Guards()
    fixed: FrozenSet[str] = frozenset()


def balance_round(snap: Snapshot, spec: RoundSpec) -> Round:
    """Propose one round."""
    aim = Aim(spec.pools, spec.mode, spec.min_gain, spec.min_spread, spec.drain, spec.even)
    return Round(propose(snap, aim,
                         Limits(spec.max_items, spec.budget, spec.osd_room, spec.guards, spec.fixed)))
