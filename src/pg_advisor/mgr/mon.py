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
import zlib
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

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
# (64 KiB) and the mgr only logs it. An entry keeps each PG as "ps=crc;" (the list's CRC-32,
# not the list: 18 bytes at most), so 3,000 stay within it, and a burst of a pool's lists
# (a split's pins, thousands) writes a few entries, not one per 256 PGs
SHARD_PGS = 3000
# entries kept beyond those the map holds: lists just set that a snapshot may not show yet;
# past it the ones the map does not hold, recorded over TRIM_AGE seconds ago, go
SLACK = 4096
TRIM_AGE = 600.0
Shard = Dict[str, Tuple[int, float]]        # pgid -> (its list's CRC-32, when recorded)


def shard_of(pgid: str) -> str:
    """The store key of a PG's entry."""
    pool, _, ps = pgid.partition(".")
    try:
        return f"{STORE_PREFIX}{int(pool)}.{int(ps, 16) // SHARD_PGS}"
    except ValueError:
        return f"{STORE_PREFIX}other"


def list_crc(ids: Sequence[int]) -> int:
    return zlib.crc32(",".join(str(int(x)) for x in ids).encode())


class OwnedItems:
    def __init__(self, get_prefix: Callable[[str], Mapping[str, str]],
                 put: Callable[[str, Optional[str]], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._get_prefix, self._put, self._clock = get_prefix, put, clock
        self._lock = threading.Lock()           # the record
        self._writing = threading.Lock()        # the store's writes, in order (not the record's lock)
        self._shards: Optional[Dict[str, Shard]] = None     # store key -> its PGs; read at first use
        self._dirty: Set[str] = set()                       # shards changed since written
        self._version = 0                                   # changes of the record so far
        # the last count: (the map's lists it was of, the record's version, the count). The
        # panel's refresh, /metrics and `status` ask for it over one snapshot again and again,
        # and it takes a CRC of every list in the map (tens of thousands at 10,000 OSDs)
        self._counted: Optional[Tuple[Mapping[str, Sequence[Tuple[int, int]]], int, int]] = None

    def _read(self) -> Dict[str, Shard]:
        if self._shards is None:
            now = self._clock()
            self._shards = {k: _parse(k, v, now) for k, v in self._get_prefix(STORE_PREFIX).items()}
        return self._shards

    def sent(self, cmds: Sequence[Mapping[str, Any]], results: Sequence[Tuple[int, str]]) -> None:
        """Commands sent to the mon and their answers: record the item lists it took, and
        write the store entries that changed (outside the record's lock: status reads on)."""
        with self._lock:
            shards, now = self._read(), self._clock()
            for c, (code, _) in zip(cmds, results):
                prefix = c.get("prefix")
                if code != 0 or prefix not in (SET, REMOVE):
                    continue
                pgid = str(c.get("pgid"))
                key = shard_of(pgid)
                ids = [int(x) for x in c.get("id", ())] if prefix == SET else []
                if ids:
                    shards.setdefault(key, {})[pgid] = (list_crc(ids), now)
                else:
                    shards.get(key, {}).pop(pgid, None)
                self._dirty.add(key)
                self._version += 1
        self.flush()

    def flush(self) -> None:
        """Write the store entries changed since the last write."""
        with self._writing:
            with self._lock:
                shards = self._read()
                values = {k: _encode(shards.get(k, {})) for k in sorted(self._dirty)}
                self._dirty.clear()
            for key, value in values.items():
                self._put(key, value)

    def ours(self, in_map: Mapping[str, Sequence[Tuple[int, int]]]) -> int:
        """How many of the map's item lists (`in_map`, a snapshot's) are pg_advisor's; the
        record is trimmed to the map's (module doc) as it is read, written with the next change."""
        with self._lock:
            known = self._counted
            if known is not None and known[0] is in_map and known[1] == self._version:
                return known[2]
            shards, now = self._read(), self._clock()
            n = 0
            for pgid, pairs in in_map.items():
                got = shards.get(shard_of(pgid), {}).get(pgid)
                n += got is not None and got[0] == list_crc([o for p in pairs for o in p])
            if sum(len(e) for e in shards.values()) > len(in_map) + SLACK:
                for key, entries in shards.items():
                    old = [k for k, (_, t) in entries.items() if k not in in_map and now - t > TRIM_AGE]
                    for pgid in old:
                        del entries[pgid]
                    if old:
                        self._dirty.add(key)
                        self._version += 1
            self._counted = (in_map, self._version, n)
            return n


def _encode(entries: Shard) -> Optional[str]:
    """A store entry's value ("ps=crc;" each; None: remove the entry)."""
    if not entries:
        return None
    return "".join(f"{pgid.partition('.')[2]}={crc:08x};" for pgid, (crc, _) in sorted(entries.items()))


def _parse(key: str, raw: Optional[str], now: float) -> Shard:
    """A stored entry, or what of it can be read (never an error: it only counts)."""
    out: Shard = {}
    pool = key[len(STORE_PREFIX):].partition(".")[0]
    if not raw or not pool.isdigit() or len(raw) > 1 << 16:
        return out
    for part in raw.split(";"):
        ps, eq, crc = part.partition("=")
        try:
            if eq and len(ps) <= 8 and len(crc) == 8:
                out[f"{int(pool)}.{int(ps, 16):x}"] = (int(crc, 16), now)
        except ValueError:
            continue
    return out
