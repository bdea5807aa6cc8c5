"""qa/vstart.sh: start is idempotent, status tells what runs, stop ends exactly its daemons."""
import os
from typing import Dict

from .cluster import Cluster


def daemon_pids(cluster: Cluster) -> Dict[str, int]:
    return {f.stem: int(f.read_text()) for f in (cluster.dir / "run").glob("*.pid")}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def ceph_daemons_using(cluster: Cluster) -> int:
    """Processes of ceph-mon/mgr/osd whose command line names this cluster's config."""
    n = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if cmd and os.path.basename(cmd[0]).decode() in ("ceph-mon", "ceph-mgr", "ceph-osd"):
                env = open(f"/proc/{d}/environ", "rb").read()
                n += str(cluster.dir).encode() in env
    return n


def test_start_twice_gives_one_clean_cluster(cluster: Cluster) -> None:
    old = daemon_pids(cluster)
    assert sorted(old) == ["mgr.x", "mon.a"] + [f"osd.{i}" for i in range(6)]
    cluster.vstart("start")
    new = daemon_pids(cluster)
    assert sorted(new) == sorted(old)
    assert not any(alive(p) for p in old.values())
    assert all(alive(p) for p in new.values())
    assert ceph_daemons_using(cluster) == len(new)
    status = cluster.json("status")
    assert status["health"]["status"] == "HEALTH_OK"
    assert [p["pool_name"] for p in cluster.json("osd", "dump")["pools"]] == ["rbd"]
    assert "running" in cluster.vstart("status")


def test_stop_ends_exactly_its_daemons(cluster: Cluster) -> None:
    pids = daemon_pids(cluster)
    cluster.vstart("stop")
    assert not any(alive(p) for p in pids.values())
    assert ceph_daemons_using(cluster) == 0
    cluster.vstart("stop")  # stopping a stopped cluster is fine
    # leave a running cluster for whatever runs after this module
    cluster.vstart("start")
    assert cluster.json("status")["health"]["status"] == "HEALTH_OK"
