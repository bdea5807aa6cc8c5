"""Plans side by side on the real cluster (execute/side_by_side.py): a drain and a split run
at once, each paused and aborted on its own, both kept across a mgr failover, and the OSD
the drain empties left empty by the split."""
import subprocess
import time
from contextlib import ExitStack
from typing import Any, Dict, List

from ..cluster import Cluster, wait_until


def events(c: Cluster, plan: str, *kinds: str) -> List[Dict[str, Any]]:
    return [h for h in c.advisor("history")["history"] if h["plan"] == plan and h["event"] in kinds]


def plans(c: Cluster) -> Dict[str, Dict[str, Any]]:
    return {p["id"]: p for p in c.advisor("progress")["plans"]}


def test_a_drain_and_a_split_run_at_once_each_on_its_own_and_survive_a_failover(cluster: Cluster) -> None:
    c = cluster
    drained = c.osd_ids(in_up=True)[-1]
    with ExitStack() as stack:
        stack.callback(c.wait_clean, 300)

        def rm_items() -> None:
            for pg in [u["pgid"] for u in c.json("osd", "dump")["pg_upmap_items"]]:
                c.run("osd", "rm-pg-upmap-items", pg)
        stack.callback(rm_items)
        # sbs is split; sbs-load only drained: while the split holds sbs's pg_num (paused
        # too), the drain's rounds move the other pools' PGs alone
        for name, pg_num in (("sbs", 8), ("sbs-load", 16)):
            stack.enter_context(c.pool(name, pg_num))
            subprocess.run(["rados", "-p", name, "bench", "3", "write", "-t", "4", "-b", "65536",
                            "--no-cleanup"], env=c.env, check=True, capture_output=True, timeout=120)
        c.wait_clean()
        stack.enter_context(c.options("mgr", {"step_interval": 1, "poll_interval": 1}))
        stack.callback(c.abort_plan)
        drain = c.advisor("drain", f"osd.{drained}")["plan"]
        split = c.advisor("apply", "--pool", "sbs", "--pg-num", "16")["plan"]
        # the split paused alone at once: the drain goes on meanwhile
        c.advisor("pause", "--plan", split)
        paused_at = time.time()
        try:
            opened = plans(c)
            assert opened[drain]["drain"] == [drained] and opened[split]["pools"] == ["sbs"], opened
            assert opened[split]["status"] == "paused" and opened[drain]["status"] in ("running", "done")
            # with two open, abort names none by itself: EINVAL, and both go on
            code, _, err = c.run("pg-advisor", "abort")
            assert code == 22 and "--plan" in err and drain in err and split in err, (code, err)
            # each is an event of its own in `ceph -s`
            seen: List[str] = []

            def both_shown() -> bool:
                seen.extend(e["message"] for e in c.json("status").get("progress_events", {}).values())
                return any("sbs to pg_num 16" in m for m in seen) and (
                    any("draining 1 OSDs" in m for m in seen) or plans(c)[drain]["status"] == "done")
            wait_until(both_shown, 60, "an event for each plan in ceph -s")
            try:
                wait_until(lambda: any(e["time"] > paused_at + 1 for e in events(c, drain, "round"))
                           or plans(c)[drain]["status"] == "done", 120,
                           "a drain round while the split is paused")
            finally:
                print("plans:", plans(c))
                print("history:", [(h["plan"], h["event"], h["detail"])
                                   for h in c.advisor("history")["history"][-20:]])
            assert plans(c)[split]["status"] == "paused"
            assert not [e for e in events(c, split, "issue", "round") if e["time"] > paused_at + 1]
        finally:
            c.advisor("resume", "--plan", split)
        # a failover keeps both: the new mgr lists them and runs them to the end
        c.ceph("mgr", "fail")
        wait_until(lambda: c.run("pg-advisor", "progress")[0] == 0, 120, "pg_advisor back after the failover")
        assert {drain, split} <= set(plans(c))
        try:
            wait_until(lambda: {plans(c)[p]["status"] for p in (drain, split)} == {"done"}, 600,
                       "both plans to finish", step=3)
        finally:
            print("plans:", plans(c))
            print("history:", [(h["plan"], h["event"], h["detail"])
                               for h in c.advisor("history")["history"][-30:]])
        # they ran at once: a round of the drain while the split was open
        start = next(h["time"] for h in events(c, split, "start"))
        end = next(h["time"] for h in events(c, split, "finish"))
        assert [e for e in events(c, drain, "round") if start <= e["time"] <= end], \
            "the drain waited for the split"
        c.wait_clean(pool="sbs")
        assert c.pool_detail("sbs")["pg_num"] == 16
        rows = c.json("pg", "dump", "pgs_brief")
        rows = rows.get("pg_stats", rows) if isinstance(rows, dict) else rows
        assert not [s["pgid"] for s in rows if drained in s["up"]], "the drained OSD holds PGs"
