"""PG-related OSD memory: PG log entries, their dups, and the fixed cost of each PG.

Two uses. Now: from each PG's reported log length, what the OSD's osd_pglog and osd
mempools should hold (checked against `ceph tell osd.N dump_mempools`). Ahead: the
steady state of a busy OSD with n PGs, where each PG log holds
clamp(osd_target_pg_log_entries_per_osd / n, osd_min_pg_log_entries,
osd_max_pg_log_entries) entries plus osd_pg_log_dups_tracked dups.
The per-item sizes were calibrated on this project's test cluster (doc/sizing.rst).
"""
from dataclasses import dataclass
from typing import Mapping

import numpy as np


@dataclass(frozen=True)
class MemoryModel:
    bytes_per_log_entry: int
    bytes_per_log_dup: int
    bytes_per_pg: int
    min_log: int
    max_log: int
    target_log_per_osd: int
    dups_tracked: int

    @classmethod
    def from_config(cls, config: Mapping[str, int], bytes_per_log_entry: int,
                    bytes_per_log_dup: int, bytes_per_pg: int) -> "MemoryModel":
        return cls(bytes_per_log_entry, bytes_per_log_dup, bytes_per_pg,
                   min_log=config["osd_min_pg_log_entries"],
                   max_log=config["osd_max_pg_log_entries"],
                   target_log_per_osd=config["osd_target_pg_log_entries_per_osd"],
                   dups_tracked=config["osd_pg_log_dups_tracked"])

    def log_entries_per_pg(self, n_pgs: np.ndarray) -> np.ndarray:
        n = np.maximum(np.asarray(n_pgs, dtype=np.float64), 1.0)
        return np.clip(self.target_log_per_osd / n, self.min_log, self.max_log)

    def steady_state(self, n_pgs: np.ndarray) -> np.ndarray:
        """Bytes of PG memory on an OSD holding n_pgs PGs, once every log is full."""
        n = np.asarray(n_pgs, dtype=np.float64)
        per_pg = (self.log_entries_per_pg(n) * self.bytes_per_log_entry
                  + self.dups_tracked * self.bytes_per_log_dup + self.bytes_per_pg)
        return n * per_pg

    def current(self, log_entries: np.ndarray, log_dups: np.ndarray, n_pgs: np.ndarray) -> np.ndarray:
        """Bytes of PG memory for the entries, dups and PGs an OSD reports now."""
        return (np.asarray(log_entries, dtype=np.float64) * self.bytes_per_log_entry
                + np.asarray(log_dups, dtype=np.float64) * self.bytes_per_log_dup
                + np.asarray(n_pgs, dtype=np.float64) * self.bytes_per_pg)
