"""The cluster through the mgr: snapshots read from the mgr's maps (kept while nothing they
depend on changes: model/reuse.py), the maps the mon made after a command, and Ceph's own
mapping of PGs there (the commands themselves go through mon.py).

The same documents the offline CLI reads from files; model/snapshot.py turns either into
a Snapshot. Nothing a read does changes what the mgr's interpreter shares with the other
modules (the collector, logging, signals: doc/contributing.rst); what it does to the
process's heap is handed back (give_back_memory).
"""
import ctypes
import functools
import json
import math
import re
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from mgr_module import MgrModule

from ..crush.placement import Placer
from ..model import mon_commands, snapshot
from ..model.errors import AdvisorError
from ..model.options import Options
from ..model.pg_brief import brief_pg_map, parse_brief
from ..model.reuse import ChangeKey, SnapshotReuse
from ..sizing.ceph_autoscaler import THRESHOLD, Flavour, with_autoscale
from .crush_bin import CrushBinary, getcrushmap
from .epoch import MapEpoch
from .mon import mon_mapping

PARSE_PAUSE = 0.002     # seconds without the GIL between chunks of a big JSON text
# the fields of `pg_status` (PGMapDigest::print_summary) whose change means the PG stats did:
# not the I/O rates, which change every report and decide nothing here
PG_SUMMARY_KEYS = ("pgs_by_state", "num_pgs", "num_pools", "num_objects", "data_bytes",
                   "degraded_objects", "misplaced_objects", "unfound_objects")
# the cluster settings the sizing model reads, as the mgr sees them
NATIVE_OPTIONS = tuple(snapshot.CONFIG_DEFAULTS)
CONFIG_DUMP_AGE = 60.0      # seconds a `config dump` answer serves (its settings change rarely)
LATEST = 20                 # the release whose pg_autoscaler rules apply when the mgr's is unknown


def give_back_memory() -> None:
    """Hand the heap's free pages back to the system (glibc's malloc_trim: the mgr uses
    glibc's allocator, one arena per thread): a read of 320,000 PGs passes through some
    300 MiB that would otherwise stay in the mgr's RSS."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Optional[Callable[[int], int]]:
    """glibc's malloc_trim, looked up once; None where the C library is not glibc."""
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


class MgrReader:
    """What the module reads from the mgr. `options` gives the module's options (as last
    read); `wake` asks the background to run now (to take a read a lazy caller left)."""

    def __init__(self, mgr: MgrModule, options: Callable[[], Options], wake: Callable[[], None]) -> None:
        self.mgr = mgr
        self.options = options
        self.wake = wake
        self.snaps = SnapshotReuse()
        self._config_dump_at: Optional[float] = None
        self._config_dump_kept: Optional[List[Dict[str, Any]]] = None
        self.maps = MapEpoch(mgr.get_osdmap)      # told of new maps by the module's notify
        self.crush_bin = CrushBinary(functools.partial(getcrushmap, mgr), mgr.log.warning)

    # -- the snapshot ----------------------------------------------------------------------------

    def take_snapshot(self, fresh: bool = False, lazy: bool = False) -> snapshot.Snapshot:
        """The cluster as a snapshot: the last one while nothing it depends on has changed,
        or while a costly read of a change is not due yet (model/reuse.py), else read anew.
        A command that changes the cluster asks for a `fresh` one: changes read at once. A
        command that only looks is `lazy`: where a read is costly it takes the last one and
        leaves the read to the background, which it wakes."""
        # one read of the PG summary and of the settings serves the key and the snapshot
        pg_status = self._pg_status()
        config = self._native_options()
        snap = self.snaps.get(self._change_key(pg_status, config),
                              functools.partial(self._read_snapshot, pg_status, config),
                              time.monotonic(), fresh, lazy)
        if lazy and self.snaps.due:
            self.wake()
        return snap

    def fresh_read_costly(self) -> bool:
        """Whether a fresh snapshot now would wait for a costly read (model/reuse.py): the
        key is read as take_snapshot reads it (only where reads are costly), the cluster
        is not."""
        if not self.snaps.costly:
            return False
        config = self._native_options()
        return self.snaps.fresh_read_costly(self._change_key(self._pg_status(), config), time.monotonic())

    def _native_options(self) -> Dict[str, Any]:
        """The cluster settings the model reads (snapshot.CONFIG_DEFAULTS), as the mgr has them."""
        return {k: self.mgr.get_ceph_option(k) for k in NATIVE_OPTIONS}

    def _change_key(self, pg: Dict[str, Any], config: Dict[str, Any]) -> Optional[ChangeKey]:
        """What changes when the answers may: the OSDMap epoch, the PG map's summary `pg`
        (PG states, objects, bytes, misplaced: `pg_status` is a few hundred bytes however
        many PGs there are) and the cluster settings the model reads. None if any is
        unreadable."""
        if not pg:
            return None
        try:
            summary = json.dumps({k: pg.get(k) for k in PG_SUMMARY_KEYS}, sort_keys=True, default=str)
            # (the option that says how the PG stats are read changes the snapshot too)
            # (and while the mon gives no binary CRUSH map, a retry every minute: mgr/crush_bin.py)
            settings = (tuple(str(config[k]) for k in NATIVE_OPTIONS), self.options().pg_stats_full_max,
                        self.crush_bin.retry_key(time.monotonic()))
            return ChangeKey(map=self.maps.epoch(), stats=summary, settings=settings)
        except Exception:   # e.g. no PG map yet: read everything, keep nothing
            return None

    def _read_snapshot(self, pg_status: Dict[str, Any], config: Dict[str, Any]) -> snapshot.Snapshot:
        """The same documents the offline CLI reads from files, straight from the mgr;
        `pg_status` (the PG map's summary) and `config` (the settings) were read for the
        change key."""
        self.mgr.log.debug("pg_advisor: reading the cluster (snapshot %d)", self.snaps.loads + 1)
        try:
            return self._read_documents(pg_status, config)
        finally:
            give_back_memory()      # what the read's documents took, once they are gone

    def _read_documents(self, pg_status: Dict[str, Any], config: Dict[str, Any]) -> snapshot.Snapshot:
        took: Dict[str, float] = {}
        get = self.mgr.get

        def timed(what: str, read: Callable[[], Any]) -> Any:
            t0 = time.monotonic()
            out = read()
            took[what] = time.monotonic() - t0
            return out
        osd_map, crush, df = (timed(k, functools.partial(get, k)) for k in ("osd_map", "osd_map_crush", "df"))
        crush_binary = timed("crush_binary", functools.partial(self.crush_bin.for_maps, osd_map, crush))
        # the full PG stats while they are small; the brief ones past pg_stats_full_max
        num_pgs = pg_status.get("num_pgs", 0)
        if not isinstance(num_pgs, int) or num_pgs <= self.options().pg_stats_full_max:
            pg_dump = timed("pg_dump", functools.partial(get, "pg_dump"))
        else:
            pg_dump = timed("pg_stats_brief", lambda: self._brief_pg_map(pg_status, df))
        config_dump = timed("config_dump", self._config_dump)
        snap: snapshot.Snapshot = timed("load", lambda: snapshot.load(
            osd_map, crush, pg_dump, df, settings=snapshot.Settings(
                mon_max_pg_per_osd=int(config["mon_max_pg_per_osd"]), config=config,
                config_dump=config_dump, crush_binary=crush_binary, strict=False)))
        # pg_autoscaler's picks, computed here by its rules (sizing/ceph_autoscaler.py):
        # asking that module costs a CRUSH dump per pool (22 s at 10,000 OSDs on Tentacle)
        snap = timed("pg_autoscaler", lambda: with_autoscale(snap, self._autoscaler_flavour()))
        # the last snapshot's CRUSH sets, where this map changed no CRUSH input (a balance
        # round's items, pg_temp, OSDs down): mapped again, each round cost a full CRUSH run
        before = self.snaps.last
        if before is not None and timed("crush_carry", functools.partial(Placer.carry, before, snap)):
            took["crush_carry (kept the CRUSH sets)"] = took.pop("crush_carry")
        # what a read costs, by part: on a big cluster this is where the mgr's time goes;
        # and the copies of the OSDMap taken for its epoch since the last read
        copies, copy_s = self.maps.spent()
        total = sum(took.values())
        (self.mgr.log.info if total > 1.0 else self.mgr.log.debug)(
            "pg_advisor: read the cluster in %.2f s (%s); %d OSDMap copies for its epoch since "
            "the last read, %.3f s", total, ", ".join(f"{k} {v:.2f} s" for k, v in took.items()),
            copies, copy_s)
        return snap

    def _pg_status(self) -> Dict[str, Any]:
        """The PG map's summary, {} if the mgr has none to give (no PG map yet)."""
        try:
            got = self.mgr.get("pg_status")
        except Exception:
            return {}
        return got if isinstance(got, dict) else {}

    def _brief_pg_map(self, pg_status: Dict[str, Any], df: Any) -> Dict[str, Any]:
        """The PG stats a big cluster is read through (model/pg_brief.py): `pg dump
        pgs_brief`, which the mgr writes without our GIL, and two narrow getters."""
        code, out, err = self.mgr.mon_command(mon_commands.pg_dump_brief())
        if code != 0:
            raise AdvisorError(code, f"pg dump pgs_brief: {err}")
        try:     # a chunk of rows at a time, letting the mgr's other threads run between
            brief = parse_brief(out, functools.partial(time.sleep, PARSE_PAUSE))
        except ValueError as e:
            raise AdvisorError.invalid(f"pg dump pgs_brief: not JSON: {e}") from None
        try:
            return brief_pg_map(brief, self.mgr.get("pg_progress"), self.mgr.get("osd_stats"), pg_status, df)
        except ValueError as e:
            raise AdvisorError.invalid(str(e)) from None

    def _config_dump(self) -> Optional[List[Dict[str, Any]]]:
        """The mon's config database (`config dump`), for each OSD's own memory and PG-log
        settings; None when the mon does not answer (every OSD then has the mgr's values).
        Asked at most once every CONFIG_DUMP_AGE seconds: those settings change rarely, and
        a mon round trip in every read would make reads slower than reuse.COSTLY sooner."""
        now = time.monotonic()
        if self._config_dump_at is not None and now - self._config_dump_at < CONFIG_DUMP_AGE:
            return self._config_dump_kept
        self._config_dump_kept = self._ask_config_dump()
        self._config_dump_at = now
        return self._config_dump_kept

    def _ask_config_dump(self) -> Optional[List[Dict[str, Any]]]:
        try:
            code, out, err = self.mgr.mon_command(mon_commands.config_dump())
        except Exception as e:  # the read goes on without it: the mgr's own values stand
            self.mgr.log.warning("pg_advisor: config dump unavailable: %s", e)
            return None
        if code != 0:
            self.mgr.log.warning("pg_advisor: config dump failed: %s", err)
            return None
        try:
            dump = json.loads(out)
        except ValueError:
            return None
        return dump if isinstance(dump, list) else None

    def _autoscaler_flavour(self) -> Flavour:
        """pg_autoscaler's rules for this mgr's release, with its `threshold` option."""
        found = re.search(r"(\d+)\.\d+", str(getattr(self.mgr, "version", "")))
        major = int(found.group(1)) if found else LATEST
        try:
            threshold = float(self.mgr.get_module_option_ex("pg_autoscaler", "threshold", THRESHOLD))
        except (TypeError, ValueError):
            threshold = THRESHOLD
        return Flavour.of_release(major, threshold if math.isfinite(threshold) and threshold >= 1.0
                                  else THRESHOLD)

    # -- the maps after a command ----------------------------------------------------------------

    def mon_up_sets(self, snap: snapshot.Snapshot, pgids: Sequence[str]) -> Dict[str, List[int]]:
        """pgid -> its up set in the mgr's OSDMap, computed by Ceph itself (EC holes as
        CRUSH_ITEM_NONE): what items are checked against once they are set. `snap` is
        not read: the map is the mgr's newest."""
        osdmap = self.mgr.get_osdmap()
        pools = {p.id for p in snap.pools}
        out: Dict[str, List[int]] = {}
        for pgid in pgids:
            if int(pgid.split(".")[0]) in pools:
                out[pgid] = list(mon_mapping(osdmap, pgid)["up"])
        return out

    def mon_epoch(self) -> Optional[int]:
        """The mon's OSDMap epoch now (None if it does not answer): once the mon has answered
        a command, its epoch holds the change."""
        code, out, _ = self.mgr.mon_command(mon_commands.osd_stat())
        try:
            return int(json.loads(out)["epoch"]) if code == 0 else None
        except (ValueError, KeyError, TypeError):
            return None

    def past_map(self, epoch: int, tree: bool) -> Optional[Dict[str, Any]]:
        """The mon's `osd tree` (tree) or `osd dump` of a past epoch; None if it does not
        answer (an epoch it trimmed)."""
        cmd = mon_commands.osd_tree_at(epoch) if tree else mon_commands.osd_dump_at(epoch)
        code, out, _ = self.mgr.mon_command(cmd)
        if code != 0:
            return None
        got: Dict[str, Any] = json.loads(out)
        return got
