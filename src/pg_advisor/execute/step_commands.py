"""The mon commands of a step, and whether the cluster shows them: pg_num and pgp_num
targets, pgp_num at once with its pins (upmap items that keep split PGs on their data)
or with pg_temps that prime the PGs it remaps. Each command goes with its role in the step,
which is how its answer is read."""
import enum
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..balance.proposal import unkept
from ..crush.placement import Placer
from ..crush.upmap import build_items, NotExpressible
from ..model.mon_commands import items_commands, pg_temp, pool_set
from ..model.snapshot import Pool, Snapshot
from .priming import PRIME_MAX, Command, primes
from .steps import PlanStep, StepKind


class Role(enum.Enum):
    TARGET = "target"     # pg_num or pgp_num: refused, the step is not taken
    PIN = "pin"           # a PG's items: refused, that PG just moves
    PRIME = "prime"       # a PG's pg_temp: refused, only the priming is lost


@dataclass(frozen=True)
class StepCommand:
    role: Role
    cmd: Command


def _as(role: Role, cmds: Sequence[Command]) -> List[StepCommand]:
    return [StepCommand(role, c) for c in cmds]


def step_done(pool: Pool, step: PlanStep) -> bool:
    return (pool.pg_num, pool.pgp_num, pool.pg_num_target, pool.pgp_num_target) == \
        (step.pg_num, step.pgp_num, step.pg_num, step.pgp_num)


def targets_shown(pool: Pool, step: PlanStep) -> bool:
    """The cluster already has the step's targets (it was sent before a failover)."""
    return (pool.pg_num_target, pool.pgp_num_target) == (step.pg_num, step.pgp_num)


def _set(step: PlanStep, var: str, val: int) -> Command:
    return pool_set(step.pool, var, val)


def pgp_at_once(step: PlanStep) -> List[Command]:
    """pgp_num's target and actual together: the mon takes the whole step in one epoch
    instead of stepping it itself, so what goes with it (pins, pg_temps) lands with it."""
    return [_set(step, "pgp_num", step.pgp_num), _set(step, "pgp_num_actual", step.pgp_num)]


def target_commands(step: PlanStep) -> List[StepCommand]:
    """Targets for Ceph's own stepping. Setting pg_num drags pgp_num's target along when
    the two are equal, so pgp_num is set right after it, back to the step's value."""
    if step.kind is StepKind.PG_NUM:
        return _as(Role.TARGET, [_set(step, "pg_num", step.pg_num), _set(step, "pgp_num", step.pgp_num)])
    return _as(Role.TARGET, [_set(step, "pgp_num", step.pgp_num)])


def _acting(snap: Snapshot, pool: Pool) -> Dict[int, List[int]]:
    """Placement seed -> the OSDs that hold the PG's data now (complete sets only)."""
    pgs = snap.pgs
    if pgs is None:
        return {}
    sel = np.flatnonzero(pgs.pool == pool.id)
    rows = pgs.acting[sel][:, :pool.size]
    whole = (rows >= 0).sum(axis=1) == pool.size
    return {int(ps): row for ps, row, ok in zip(pgs.ps[sel].tolist(), rows.tolist(), whole.tolist()) if ok}


def split_pins(snap: Snapshot, step: PlanStep, from_pgp: int) -> Dict[str, List[Tuple[int, int]]]:
    """For each PG that pgp_num from_pgp -> step.pgp_num remaps, the items that keep it on
    the OSDs that hold its data: the acting set where the PG stats have it, else where
    the PG maps at from_pgp. The same answer before the pgp_num change and after it (a
    failover between the two resends exactly these)."""
    pool = snap.pool_by_name(step.pool)
    placer = Placer.of(snap)
    was = placer.map_pool(pool, pool.pg_num, from_pgp)
    _, raw = placer.crush_sets(pool, pool.pg_num, step.pgp_num)
    acting = _acting(snap, pool)
    items: Dict[str, List[Tuple[int, int]]] = {}
    replicated = pool.type == "replicated"
    for r in range(was.up.shape[0]):
        want = acting.get(int(was.ps[r]), was.up_list(r))
        try:
            pairs = build_items(raw[r].tolist(), want, replicated, placer.weight)
        except NotExpressible:
            continue     # it moves, within the step's budget like an unpinned step's PGs
        if pairs:
            items[was.pgid(r)] = pairs
    return items


def pin_commands(snap: Snapshot, step: PlanStep, from_pgp: int) -> List[StepCommand]:
    """pgp_num at once (target and actual) and the pins. Sent together they land in one
    map epoch: the mon checks the items against the map with the new pgp_num, and no PG
    sees a new up set."""
    pins = items_commands(split_pins(snap, step, from_pgp))
    return _as(Role.TARGET, pgp_at_once(step)) + _as(Role.PIN, pins)


def remapped(snap: Snapshot, step: PlanStep, from_pgp: int) -> List[str]:
    """The PGs whose up set pgp_num from_pgp -> step.pgp_num changes (items applied)."""
    pool = snap.pool_by_name(step.pool)
    placer = Placer.of(snap)
    was = placer.map_pool(pool, pool.pg_num, from_pgp)
    new = placer.map_pool(pool, pool.pg_num, step.pgp_num)
    return [was.pgid(int(r)) for r in np.flatnonzero((was.up != new.up).any(axis=1))]


def primed_pgp_commands(snap: Snapshot, step: PlanStep, from_pgp: int) -> List[StepCommand]:
    """pgp_num at once (target and actual), with a pg_temp for each PG it remaps onto the
    OSDs that hold its data (at most PRIME_MAX), sent together for one map epoch. The mon
    primes pg_temp for OSD and CRUSH changes, not for pgp_num: unprimed, a remapped PG's
    primary moves to an OSD without its data and back an epoch later, and an OSD that stops
    being a PG's primary drops the client ops in flight there without telling the client,
    which waits objecter_timeout (10 s) to ask for a newer map."""
    temps = list(primes(snap, remapped(snap, step, from_pgp)).items())[:PRIME_MAX]
    return _as(Role.PRIME, [pg_temp(k, v) for k, v in temps]) + _as(Role.TARGET, pgp_at_once(step))


def pins_shown(snap: Snapshot, pool: Pool, step: PlanStep, from_pgp: int) -> bool:
    """A pinned step is in the cluster only when its pgp_num (target and actual) and every
    one of its pins are: a failover between the pgp_num change and the pins must resend
    the pins, or those PGs move outside the budget."""
    if not targets_shown(pool, step) or pool.pgp_num != step.pgp_num:
        return False
    return not unkept(split_pins(snap, step, from_pgp), snap.pg_upmap_items)


def pgs_bytes(snap: Snapshot, pgids: Sequence[str]) -> Optional[int]:
    """Bytes the PG stats give those PGs (None without stats): what a round sets moving."""
    pgs = snap.pgs
    if pgs is None:
        return None
    return int(pgs.bytes[pgs.rows_of(pgids)].sum())
