"""PG-related OSD memory: PG log entries, their dups, and the fixed cost of each PG.

Two uses. Now: from each PG's log versions, what the OSD's osd_pglog and osd mempools
should hold (checked against `ceph tell osd.N dump_mempools`). Ahead: the steady state
of a busy OSD with n PGs, where each PG log holds clamp(osd_target_pg_log_entries_per_osd
/ n, osd_min_pg_log_entries, osd_max_pg_log_entries) entries and osd_pg_log_dups_tracked
dups (Tentacle keeps trimmed entries as dups until there are that many, whatever the
log's length), and the recovery peak, when an OSD that comes back also holds the set of
objects it missed, up to one log of them per PG (log-based recovery; more is backfill).
The per-item sizes were calibrated on BlueStore on Tentacle (qa/bench/pg_memory.py,
doc/sizing.rst).
"""
from dataclasses import dataclass
from typing import Mapping, Tuple, Union

import numpy as np

from ..model.snapshot import Pgs


# The settings the model reads, each a scalar or a vector over OSD ids (per-OSD values
# from the mon's config database: `ceph config set osd.N ...`, per host, cephadm's autotune).
SETTINGS = ("osd_min_pg_log_entries", "osd_max_pg_log_entries", "osd_target_pg_log_entries_per_osd",
            "osd_pg_log_dups_tracked", "osd_memory_target", "osd_memory_base", "osd_memory_cache_min")
Setting = Union[int, np.ndarray]


@dataclass(frozen=True)
class MemoryModel:
    bytes_per_log_entry: int
    bytes_per_log_dup: int
    bytes_per_pg: int
    min_log: Setting
    max_log: Setting
    target_log_per_osd: Setting
    dups_tracked: Setting
    memory_target: Setting = 4 << 30
    memory_base: Setting = 768 << 20
    cache_min: Setting = 128 << 20

    @classmethod
    def from_config(cls, config: Mapping[str, Setting], bytes_per_log_entry: int,
                    bytes_per_log_dup: int, bytes_per_pg: int) -> "MemoryModel":
        """`config`: each of SETTINGS, a scalar or a vector over OSD ids."""
        return cls(bytes_per_log_entry, bytes_per_log_dup, bytes_per_pg,
                   min_log=config["osd_min_pg_log_entries"],
                   max_log=config["osd_max_pg_log_entries"],
                   target_log_per_osd=config["osd_target_pg_log_entries_per_osd"],
                   dups_tracked=config["osd_pg_log_dups_tracked"],
                   memory_target=config.get("osd_memory_target", 4 << 30),
                   memory_base=config.get("osd_memory_base", 768 << 20),
                   cache_min=config.get("osd_memory_cache_min", 128 << 20))

    def log_entries_per_pg(self, n_pgs: np.ndarray) -> np.ndarray:
        n = np.maximum(np.asarray(n_pgs, dtype=np.float64), 1.0)
        return np.clip(self.target_log_per_osd / n, self.min_log, self.max_log)

    def _per_pg(self, entries: np.ndarray, missing: np.ndarray) -> np.ndarray:
        # dups: measured on Tentacle, a busy PG keeps osd_pg_log_dups_tracked of them beside
        # its log whatever the log's length (PGLog::IndexedLog::trim drops dups only past
        # that many); a missing object costs about a log entry (qa/bench/pg_memory.py)
        return ((entries + missing) * self.bytes_per_log_entry
                + np.asarray(self.dups_tracked, dtype=np.float64) * self.bytes_per_log_dup
                + self.bytes_per_pg)

    def steady_state(self, n_pgs: np.ndarray) -> np.ndarray:
        """Bytes of PG memory on an OSD holding n_pgs PGs, once every log is full."""
        n = np.asarray(n_pgs, dtype=np.float64)
        entries = self.log_entries_per_pg(n)
        return n * self._per_pg(entries, 0.0 * entries)

    def peak(self, n_pgs: np.ndarray) -> np.ndarray:
        """Bytes of PG memory on an OSD that comes back and recovers from the logs: its
        steady state and, per PG, a missing set of up to one log of objects. With
        pglog_hardlimit (every cluster since Nautilus) a recovering PG's log is trimmed to
        the same target as a clean one's (calc_trim_to_aggressive): measured on Tentacle,
        the surviving OSDs stayed within 3 % of their steady state and the returning one
        rose by 45 % at 100 PGs (doc/sizing.rst). Logs reach osd_max_pg_log_entries only
        where osd_min_pg_log_entries is raised to it."""
        n = np.asarray(n_pgs, dtype=np.float64)
        entries = self.log_entries_per_pg(n)
        return n * self._per_pg(entries, entries)

    def steady_budget(self, fraction: float) -> np.ndarray:
        """PG memory an OSD may use in steady state: `fraction` of its osd_memory_target
        (the rest is BlueStore's caches, which the OSD sizes around it)."""
        return np.asarray(fraction * np.asarray(self.memory_target, dtype=np.float64))

    def peak_budget(self) -> np.ndarray:
        """PG memory an OSD may reach at the peak before it passes osd_memory_target: the
        target less osd_memory_base and the least cache (osd_memory_cache_min), to which
        the OSD shrinks its caches when other memory grows."""
        room = (np.asarray(self.memory_target, dtype=np.float64) - self.memory_base - self.cache_min)
        return np.maximum(room, 0.0)

    def pgs_memory_allows(self, fraction: float, most: int = 1 << 16) -> np.ndarray:
        """Per OSD, the most PGs (up to `most`) whose steady state fits `fraction` of its
        target and whose peak fits its peak budget: both grow with the PGs, so a search by
        halves over the count, vectorized over the OSDs."""
        steady, room = self.steady_budget(fraction), self.peak_budget()
        lo = np.zeros(np.broadcast(steady, room).shape)
        hi = np.full(lo.shape, float(most))
        for _ in range(int(most).bit_length() + 1):
            mid = np.floor((lo + hi + 1) / 2)
            fits = (self.steady_state(mid) <= steady) & (self.peak(mid) <= room)
            lo, hi = np.where(fits, mid, lo), np.where(fits, hi, mid - 1)
        return lo

    def current(self, log_entries: np.ndarray, log_dups: np.ndarray, n_pgs: np.ndarray) -> np.ndarray:
        """Bytes of PG memory for the entries, dups and PGs an OSD reports now."""
        return (np.asarray(log_entries, dtype=np.float64) * self.bytes_per_log_entry
                + np.asarray(log_dups, dtype=np.float64) * self.bytes_per_log_dup
                + np.asarray(n_pgs, dtype=np.float64) * self.bytes_per_pg)


def pg_log_lengths(pgs: Pgs, dups_tracked: int) -> Tuple[np.ndarray, np.ndarray]:
    """Log entries and dups each PG holds, from its log's version span and tail.

    A PG's log_size is the span head - tail of its log's versions, one version per
    entry. A split gives each child a copy of its parent's span (tail and head) but only
    the entries of its own objects, and a copy of all of the parent's dups
    (pg_log_t::split_out_child); the child's num_write is 0 after the scrub that follows
    the split, so it cannot bound them. A family is a PG born in a split (split_bits > 0)
    linked to its parent (its seed without the top bit) while both keep the same tail:
    the span they all still share (the family's shortest) is divided among them, and what
    each logged since is its own.

    Dups are the stats' log_dups_size where they give it (Tentacle; Pacific since
    16.2.11), else the entries trimmed so far (the tail's version) up to
    osd_pg_log_dups_tracked: measured on Tentacle, a busy PG keeps that many whatever its
    log's length, not dups_tracked less its entries.
    """
    n = pgs.count
    span = pgs.log_size.astype(np.float64)
    tail = pgs.log_tail
    key = (pgs.pool.astype(np.int64) << 32) | pgs.ps.astype(np.int64)
    ps = pgs.ps.astype(np.int64)
    top = np.zeros(n, dtype=np.int64)
    nz = ps > 0
    top[nz] = np.int64(1) << np.floor(np.log2(ps[nz])).astype(np.int64)
    parent_key = (pgs.pool.astype(np.int64) << 32) | (ps - top)
    # rows are in (pool, ps) order (model/load_pgs.py), so a sorted search finds parents
    at = np.clip(np.searchsorted(key, parent_key), 0, max(n - 1, 0))
    linked = (pgs.split_bits > 0) & nz & (key[at] == parent_key) & (tail[at] == tail).all(axis=1)
    root = np.where(linked, at, np.arange(n))
    while True:     # pointer jumping: a parent's seed is smaller, chains end within 32 hops
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    size = np.bincount(root, minlength=n).astype(np.float64)[root]
    shared = np.full(n, np.inf)
    np.minimum.at(shared, root, span)
    shared = shared[root]
    entries = shared / size + (span - shared)
    # the dups: as the stats say (log_dups_size), else every trimmed entry up to
    # dups_tracked of them (PGLog::IndexedLog::trim drops dups only past that many, since
    # tracker 53729's fix: 16.2.11, 17.2.4); a child copied its parent's dups and tail
    trimmed = np.minimum(tail[:, 1].astype(np.float64), float(dups_tracked))
    told = pgs.log_dups if pgs.log_dups is not None else np.full(n, -1)
    dups = np.where(told >= 0, told.astype(np.float64), np.maximum(trimmed, 0.0))
    return entries, dups
