"""What the offline CLI takes on before any work: refusals that name their bound and the
flag that lifts it, for inputs Ceph accepts but that would not be answered within the
offline contract (under 10 s and 1 GiB a command).

- Every command maps every PG of every pool with CRUSH, and each PG costs Python objects
  in the views: some 3 us and 450 bytes a PG. MAX_PGS holds the largest pool the loader
  takes (2^20 PGs) and the pools beside it, within 5 s.
- Per-OSD arrays span every OSD id up to the highest one the maps name, so ids that
  hold no OSD cost as much as real ones. Every command keeps such arrays per pool (the
  shares, counts and balancer states: some 30-60 MiB a pool at 2^20 ids), so pools x
  those ids is bounded by MAX_SPARSE_CELLS: the 6-OSD cluster's 3 pools with an OSD at
  id 2^20 are answered, 60 pools there took 3.7 GiB. balance and drain also pass over
  the arrays for every move they weigh, and the moves follow the PG replicas:
  MAX_SPARSE_WORK bounds those ids x the replicas (a few hundred OSDs and one at 2^20
  with 38,400 replicas took 45 s).
"""
from typing import Sequence

from ..model.errors import AdvisorError
from ..model.snapshot import Snapshot

MAX_PGS = 1_200_000
MAX_BALANCE_ITEMS = 1 << 20      # replica moves one balance may propose
MAX_READ_CHANGES = 1 << 20       # primary changes one read-balance may propose
MAX_SPARSE_CELLS = 1 << 22
MAX_SPARSE_WORK = 1 << 31
# the commands whose per-move passes span every OSD id (balance/strategies.py)
SPANNING = ("balance", "drain")


def pgs(snap: Snapshot) -> int:
    """The PGs every command maps: each pool at the larger of pg_num and its target."""
    return sum(max(p.pg_num, p.pg_num_target) for p in snap.pools)


def empty_ids(snap: Snapshot) -> int:
    """OSD ids the per-OSD arrays span that hold no OSD."""
    o = snap.osds
    return o.count - int(o.exists.sum())


def sparse_cells(snap: Snapshot) -> int:
    """Those ids times the pools (each a row of per-OSD arrays)."""
    return empty_ids(snap) * (len(snap.pools) + len(snap.unmapped))


def sparse_work(snap: Snapshot) -> int:
    """Those ids times the PG replicas."""
    return empty_ids(snap) * sum(max(p.pg_num, p.pg_num_target) * p.size for p in snap.pools)


def _sparse(snap: Snapshot, what: str, value: int, bound: int, times: str, flag: str) -> AdvisorError:
    o = snap.osds
    return AdvisorError.invalid(
        f"OSD ids reach {o.count - 1} for {int(o.exists.sum()):,} OSDs: {what} span every id, "
        f"and the ids holding no OSD {times} make {value:,}, more than the bound of {bound:,} "
        f"({flag} {value} lifts it)")


def check(command: str, snap: Snapshot, max_pgs: int, max_sparse_cells: int,
          max_sparse_work: int) -> None:
    """Refuse (EINVAL) before any mapping what the bounds leave out."""
    n = pgs(snap)
    if n > max_pgs:
        raise AdvisorError.invalid(
            f"the pools hold {n:,} PGs, more than the {max_pgs:,} the offline commands map "
            f"within their 10 s and 1 GiB (--max-pgs {n} lifts the bound)")
    cells = sparse_cells(snap)
    if cells > max_sparse_cells:
        raise _sparse(snap, "the per-OSD arrays of each pool", cells, max_sparse_cells,
                      "x the pools", "--max-sparse-cells")
    work = sparse_work(snap)
    if command in SPANNING and work > max_sparse_work:
        raise _sparse(snap, f"{command}'s per-OSD arrays", work, max_sparse_work,
                      "x the PG replicas", "--max-sparse-work")


def check_flags(values: Sequence[int], names: Sequence[str]) -> None:
    for v, name in zip(values, names):
        if v < 1:
            raise AdvisorError.invalid(f"{name} must be at least 1, not {v}")
