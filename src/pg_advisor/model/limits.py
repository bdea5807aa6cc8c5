"""What Ceph itself accepts for a pool's pg_num, checked before any work is done with it.

Every command that takes a pg_num (simulate, apply, and the plan's recommendations) goes
through here first, so an absurd number is refused in microseconds instead of mapping
10^8 PGs with CRUSH inside the operator's ceph-mgr. The bounds are the mon's own
(OSDMonitor, Pacific): 0 < pg_num <= mon_max_pool_pg_num, and all pools' PG replicas
at most mon_max_pg_per_osd x the OSDs that are in (at least 3).
"""
from .errors import AdvisorError
from .snapshot import Pool, Snapshot

MIN_OSDS = 3      # the mon assumes at least this many OSDs when it checks the PG total


def max_pool_pg_num(snap: Snapshot) -> int:
    return int(snap.config["mon_max_pool_pg_num"])


def check_pg_num(snap: Snapshot, pool: Pool, pg_num: int, what: str = "pg_num") -> None:
    """Refuse (EINVAL, with the mon's reason) a pg_num the mon would refuse for `pool`."""
    most = max_pool_pg_num(snap)
    if not 1 <= pg_num <= most:
        raise AdvisorError.invalid(f"{what} must be between 1 and {most} (mon_max_pool_pg_num), "
                                   f"not {pg_num}")
    o = snap.osds
    osds_in = max(int((o.exists & o.in_).sum()), MIN_OSDS)
    limit = snap.mon_max_pg_per_osd * osds_in
    # a pool already changing counts at the larger of where it is and where it goes
    projected = sum((pg_num if p.id == pool.id else max(p.pg_num, p.pg_num_target)) * p.size
                    for p in snap.pools)
    if projected > limit:
        raise AdvisorError.invalid(
            f"{what} {pg_num} for pool {pool.name} would mean {projected} PG replicas in all, "
            f"over {limit} (mon_max_pg_per_osd {snap.mon_max_pg_per_osd} x {osds_in} OSDs in)")


def check_pgp_num(pgp_num: int, pg_num: int) -> None:
    if not 1 <= pgp_num <= pg_num:
        raise AdvisorError.invalid(f"pgp_num must be between 1 and pg_num {pg_num}, not {pgp_num}")
