"""Gates scoped to what a step touches, on the real cluster (execute/gates.py): a degraded
pool holds its own split, not a drain of OSDs whose PGs are whole."""
import os
import signal
import subprocess
from contextlib import ExitStack
from typing import Dict, Optional

from ..cluster import Cluster, wait_until


def classes(c: Cluster) -> Dict[int, Optional[str]]:
    return {n["id"]: n.get("device_class") for n in c.json("osd", "tree")["nodes"] if n["id"] >= 0}


def set_class(c: Cluster, osds: Dict[int, Optional[str]]) -> None:
    for osd, cls in osds.items():
        c.ceph("osd", "crush", "rm-device-class", f"osd.{osd}")
        if cls:
            c.ceph("osd", "crush", "set-device-class", cls, f"osd.{osd}")


def states(c: Cluster) -> Dict[str, str]:
    stats = c.json("pg", "dump", "pgs_brief")
    rows = stats.get("pg_stats", stats) if isinstance(stats, dict) else stats
    return {s["pgid"]: s["state"] for s in rows}


def test_a_degraded_pool_holds_its_own_split_and_not_a_drain_elsewhere(cluster: Cluster) -> None:
    """Pool gate-a lives on two OSDs of one host (a class of their own); one of them goes
    down and out, so gate-a's PGs stay degraded while every other pool recovers. A drain of
    an OSD elsewhere runs to the end (Ceph's balancer would wait for the whole cluster);
    a split of gate-a waits, naming one of its PGs."""
    c = cluster
    before = classes(c)
    a0 = c.osd_ids(in_up=True)[0]
    a1 = c.host_mates()[a0][0]
    drained = next(o for o in c.osd_ids(in_up=True) if o not in (a0, a1))
    with ExitStack() as stack:
        stack.callback(c.wait_clean, 300)
        stack.callback(set_class, c, {a0: before[a0], a1: before[a1]})
        set_class(c, {a0: "gatea", a1: "gatea"})
        c.ceph("osd", "crush", "rule", "create-replicated", "gatea", "default", "osd", "gatea")
        stack.callback(c.run, "osd", "crush", "rule", "rm", "gatea")
        stack.enter_context(c.pool("gate-a", 8))
        for key, value in (("crush_rule", "gatea"), ("size", "2"), ("min_size", "1")):
            c.ceph("osd", "pool", "set", "gate-a", key, value)
        subprocess.run(["rados", "-p", "gate-a", "bench", "2", "write", "-t", "4", "-b", "4096",
                        "--no-cleanup"], env=c.env, check=True, capture_output=True, timeout=120)
        c.wait_clean()
        # a1 down and out: gate-a keeps one OSD (degraded for good), the rest recovers
        pid = int((c.dir / "run" / f"osd.{a1}.pid").read_text())
        os.kill(pid, signal.SIGTERM)
        stack.callback(lambda: subprocess.run(["ceph-osd", "-i", str(a1)], env=c.env, check=True,
                                              timeout=60))
        stack.callback(c.ceph, "osd", "in", str(a1))
        wait_until(lambda: not next(o for o in c.json("osd", "dump")["osds"] if o["osd"] == a1)["up"],
                   60, f"osd.{a1} down")
        c.ceph("osd", "out", str(a1))
        pool_a = c.pool_id("gate-a")

        def split_world() -> bool:
            st = states(c)
            mine = [s for pg, s in st.items() if pg.startswith(f"{pool_a}.")]
            rest = [s for pg, s in st.items() if not pg.startswith(f"{pool_a}.")]
            return (all("degraded" in s for s in mine)
                    and all(s.startswith("active+clean") for s in rest))
        wait_until(split_world, 300, "gate-a degraded and every other pool clean", step=2)

        def rm_items() -> None:
            for pg in [u["pgid"] for u in c.json("osd", "dump")["pg_upmap_items"]]:
                c.run("osd", "rm-pg-upmap-items", pg)
        stack.callback(rm_items)
        with c.options("mgr", {"step_interval": 1, "poll_interval": 1}):
            r = c.advisor("drain", f"osd.{drained}")
            assert r["plan"] and "gate-a" not in r["pools"] and r["left"] == 0, r
            try:
                wait_until(lambda: c.plan().get("status") == "done", 300, "the drain to end", step=2)
            finally:
                print("drain:", c.plan(), c.advisor("history")["history"][-5:])
            up = c.json("pg", "dump", "pgs_brief")
            rows = up.get("pg_stats", up) if isinstance(up, dict) else up
            assert not [s["pgid"] for s in rows if drained in s["up"]], "the drained OSD holds PGs"
            # the split of the degraded pool waits, and says for which PG
            r = c.advisor("apply", "--pool", "gate-a", "--pg-num", "16")
            try:
                wait_until(lambda: any(f"PGs of pool gate-a are not active and whole (e.g. {pool_a}."
                                       in b for b in c.plan().get("blockers", [])), 60,
                           "the split to wait for gate-a's PGs")
                assert c.plan()["next"] == 0, c.plan()
            finally:
                c.abort_plan()
