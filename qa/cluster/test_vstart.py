"""qa/cluster/vstart.sh: start is idempotent, status tells what runs, stop ends exactly its daemons."""
import os
from pathlib import Path
from typing import Dict, Optional, Tuple

from . import Cluster


def daemon_pids(cluster: Cluster) -> Dict[str, int]:
    return {f.stem: int(f.read_text()) for f in (cluster.dir / "run").glob("*.pid")}


Identity = Tuple[int, int]


def identity(pid: int) -> Optional[Identity]:
    """(pid, start time) of a running process (not a thread, not a zombie), else None. A
    pid alone is not a process: pids wrap at pid_max (32768 here) and threads take ids from
    the same space, so within a long test run an old daemon's pid names another task."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    if fields.get("Tgid", "").strip() != str(pid) or fields.get("State", "").startswith("Z"):
        return None
    # starttime is field 22; the command name (field 2) may hold spaces, so count after it
    return pid, int(stat.rsplit(")", 1)[1].split()[19])


def identities(cluster: Cluster) -> Dict[str, Optional[Identity]]:
    return {name: identity(pid) for name, pid in daemon_pids(cluster).items()}


def running(ident: Optional[Identity]) -> bool:
    return ident is not None and identity(ident[0]) == ident


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
    old = identities(cluster)
    assert sorted(old) == ["mgr.x", "mon.a"] + [f"osd.{i}" for i in range(6)]
    assert all(running(i) for i in old.values())
    cluster.vstart("start")
    new = identities(cluster)
    assert sorted(new) == sorted(old)
    assert not any(running(i) for i in old.values())
    assert all(running(i) for i in new.values())
    assert ceph_daemons_using(cluster) == len(new)
    status = cluster.json("status")
    assert status["health"]["status"] == "HEALTH_OK"
    # (since Quincy the mgr makes its own pool, .mgr, on its first start)
    assert sorted(p["pool_name"] for p in cluster.json("osd", "dump")["pools"]) == \
        ([".mgr", "rbd"] if cluster.release() != "pacific" else ["rbd"])
    assert "running" in cluster.vstart("status")


def test_stop_ends_exactly_its_daemons(cluster: Cluster) -> None:
    daemons = identities(cluster)
    cluster.vstart("stop")
    assert not any(running(i) for i in daemons.values())
    assert ceph_daemons_using(cluster) == 0
    cluster.vstart("stop")  # stopping a stopped cluster is fine
    # leave a running cluster for whatever runs after this module
    cluster.vstart("start")
    assert cluster.json("status")["health"]["status"] == "HEALTH_OK"
