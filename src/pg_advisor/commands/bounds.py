"""What the offline CLI takes on before any work: refusals that name their bound and the
flag that lifts it, for inputs Ceph accepts but that would not be answered within the
offline contract (under 10 s and 1 GiB a command).

- Every command maps every PG of every pool with CRUSH, and each PG costs Python objects
  in the views: some 3 us and 450 bytes a PG. MAX_PGS holds the largest pool the loader
  takes (2^20 PGs) and the pools beside it, within 5 s.
- balance and drain keep per-OSD arrays that span every OSD id up to the highest one
  the maps name, and pass over them for every move they weigh: ids that hold no OSD
  cost as much as real ones. Their cost grows with those ids x the PG replicas (the
  moves follow the replicas); MAX_SPARSE_WORK leaves a few OSDs at id 2^20 answered
  and refuses a few hundred there with tens of thousands of replicas (45 s).
"""
from typing import Sequence

from ..model.errors import AdvisorError
from ..model.snapshot import Snapshot

MAX_PGS = 1_200_000
MAX_SPARSE_WORK = 1 << 31
# the commands whose per-move passes span every OSD id (balance/strategies.py)
SPANNING = ("balance", "drain")


def pgs(snap: Snapshot) -> int:
    """The PGs every command maps: each pool at the larger of pg_num and its target."""
    return sum(max(p.pg_num, p.pg_num_target) for p in snap.pools)


def sparse_work(snap: Snapshot) -> int:
    """OSD ids the per-OSD arrays span that hold no OSD, times the PG replicas."""
    o = snap.osds
    gap = o.count - int(o.exists.sum())
    return gap * sum(max(p.pg_num, p.pg_num_target) * p.size for p in snap.pools)


def check(command: str, snap: Snapshot, max_pgs: int, max_sparse_work: int) -> None:
    """Refuse (EINVAL) before any mapping what the bounds leave out."""
    n = pgs(snap)
    if n > max_pgs:
        raise AdvisorError.invalid(
            f"the pools hold {n:,} PGs, more than the {max_pgs:,} the offline commands map "
            f"within their 10 s and 1 GiB (--max-pgs {n} lifts the bound)")
    if command in SPANNING:
        work = sparse_work(snap)
        if work > max_sparse_work:
            o = snap.osds
            raise AdvisorError.invalid(
                f"OSD ids reach {o.count - 1} for {int(o.exists.sum()):,} OSDs: {command}'s "
                f"per-OSD arrays span every id, and the ids holding no OSD x the PG replicas "
                f"make {work:,}, more than the bound of {max_sparse_work:,} "
                f"(--max-sparse-work {work} lifts it)")


def check_flags(values: Sequence[int], names: Sequence[str]) -> None:
    for v, name in zip(values, names):
        if v < 1:
            raise AdvisorError.invalid(f"{name} must be at least 1, not {v}")
