"""The mon commands themselves, through the mgr: one waited for, one sent without waiting,
a burst that the mon takes into one map epoch; Ceph's own mapping of a PG in the mgr's
OSDMap; and which of the map's pg_upmap_items are pg_advisor's (OwnedItems).

Those are the item lists it set, by PG, as the mon acknowledged them (every command goes
out through the module's send and burst, which tell OwnedItems). A PG's list counts as
pg_advisor's while the map holds exactly what pg_advisor set there; another tool's change,
or the mon dropping it, ends that. Kept in the mgr store (a failover keeps the count); a
stored value that cannot be read counts as none kept."""
import errno
import json
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from mgr_module import MgrModule
from mgr_module import CommandResult as MonResult

from ..model.mon_commands import PG_UPMAP_ITEMS as SET, RM_PG_UPMAP_ITEMS as REMOVE

BURST_WAIT = 120.0  # seconds a burst's commands may take to answer, all together


def json_command(cmd: Dict[str, Any]) -> Dict[str, Any]:
    """A mon command as the module sends it: its answer in JSON."""
    return dict(cmd, format="json")


def send(mgr: MgrModule, cmd: Dict[str, Any]) -> Tuple[int, str]:
    """One mon command, waited for: (code, error)."""
    code, _, err = mgr.mon_command(json_command(cmd))
    return code, err


Wait = Callable[[float], Tuple[int, str]]     # waits up to so many seconds for an answer


def send_nowait(mgr: MgrModule, cmd: Dict[str, Any]) -> Wait:
    """Send a mon command without waiting; the function returned waits for its answer."""
    result = MonResult("")
    mgr.send_command(result, "mon", "", json.dumps(json_command(cmd)), "")

    def wait(seconds: float) -> Tuple[int, str]:
        if not result.ev.wait(seconds):
            return -errno.ETIMEDOUT, f"no answer from the mon within {BURST_WAIT:g} s"
        code, _, err = result.wait()
        return code, err
    return wait


def burst(send_one: Callable[[Dict[str, Any]], Wait],
          cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
    """Send commands together, in order, none waiting for the one before (no thread
    each: a weight change and its hundreds of pins go out as one), so that the mon takes
    them into one map epoch; answers in the same order. `send_one` is send_nowait's kind.
    One deadline for the whole burst: a mon that stops answering holds the caller (and
    the plan's lock) BURST_WAIT seconds, not that for each command."""
    waits = [send_one(c) for c in cmds]
    deadline = time.monotonic() + BURST_WAIT
    return [w(max(0.0, deadline - time.monotonic())) for w in waits]


def mon_mapping(osdmap: Any, pgid: str) -> Dict[str, Any]:
    """A PG's mapping ("up", "up_primary", "acting", ...) computed by Ceph itself, in the
    mgr's OSDMap."""
    head, tail = pgid.split(".")
    return dict(osdmap.pg_to_up_acting_osds(int(head), int(tail, 16)))


STORE_PREFIX = "owned_upmap_items/"     # + "<pool>.<ps // SHARD_PGS>": one store entry each
# PGs a store entry holds at most: the mon refuses a value over mon_config_key_max_entry_size
# (64 KiB) and the mgr only logs it; 256 lists of 11 pairs of 5-digit ids stay within it
SHARD_PGS = 256
# entries kept beyond those the map holds: lists just set that a snapshot may not show yet;
# past it the ones the map does not hold go (a kept record never outgrows the map by more)
SLACK = 4096
MOST = SHARD_PGS    # entries a stored value may hold: more is not a record this module wrote
Shard = Dict[str, Tuple[int, ...]]


def shard_of(pgid: str) -> str:
    """The store key of a PG's entry."""
    pool, _, ps = pgid.partition(".")
    try:
        return f"{STORE_PREFIX}{int(pool)}.{int(ps, 16) // SHARD_PGS}"
    except ValueError:
        return f"{STORE_PREFIX}other"


class OwnedItems:
    def __init__(self, get_prefix: Callable[[str], Mapping[str, str]],
                 put: Callable[[str, Optional[str]], None]) -> None:
        self._get_prefix, self._put = get_prefix, put
        self._lock = threading.Lock()
        self._shards: Optional[Dict[str, Shard]] = None     # store key -> its entries; read at first use
        self._dirty: set = set()                            # shards changed since written

    def _read(self) -> Dict[str, Shard]:
        if self._shards is None:
            self._shards = {k: _parse(v) for k, v in self._get_prefix(STORE_PREFIX).items()}
        return self._shards

    def sent(self, cmds: Sequence[Mapping[str, Any]], results: Sequence[Tuple[int, str]]) -> None:
        """Commands sent to the mon and their answers: record the item lists it took, and
        write the store entries that changed."""
        with self._lock:
            shards = self._read()
            for c, (code, _) in zip(cmds, results):
                prefix = c.get("prefix")
                if code != 0 or prefix not in (SET, REMOVE):
                    continue
                pgid = str(c.get("pgid"))
                key = shard_of(pgid)
                ids = tuple(int(x) for x in c.get("id", ())) if prefix == SET else ()
                if ids:
                    shards.setdefault(key, {})[pgid] = ids
                else:
                    shards.get(key, {}).pop(pgid, None)
                self._dirty.add(key)
            for key in sorted(self._dirty):
                entries = shards.get(key) or {}
                self._put(key, json.dumps({k: list(v) for k, v in entries.items()}) if entries else None)
                if not entries:
                    shards.pop(key, None)
            self._dirty.clear()

    def ours(self, in_map: Mapping[str, Sequence[Tuple[int, int]]]) -> int:
        """How many of the map's item lists (`in_map`, a snapshot's) are pg_advisor's; the
        record is trimmed to the map's (and SLACK more) as it is read (written with the
        next change)."""
        with self._lock:
            shards = self._read()
            n = sum(1 for pgid, pairs in in_map.items()
                    if shards.get(shard_of(pgid), {}).get(pgid) == tuple(o for p in pairs for o in p))
            if sum(len(e) for e in shards.values()) > len(in_map) + SLACK:
                for key, entries in shards.items():
                    gone = [k for k in entries if k not in in_map]
                    for pgid in gone:
                        del entries[pgid]
                    if gone:
                        self._dirty.add(key)
            return n


def _parse(raw: Optional[str]) -> Shard:
    """A stored entry, or none if it is not one (never an error: it only counts)."""
    try:
        doc = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    if not isinstance(doc, dict) or len(doc) > MOST:
        return {}
    out: Shard = {}
    for k, v in doc.items():
        if isinstance(v, list) and 0 < len(v) <= 64 and len(v) % 2 == 0 and all(
                isinstance(x, int) and not isinstance(x, bool) for x in v):
            out[str(k)] = tuple(v)
    return out
