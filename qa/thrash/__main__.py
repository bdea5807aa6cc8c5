"""pg_advisor in mode auto on a cluster of its own (8 memstore OSDs on 4 hosts, three pools, a
checking client) while a seeded thrasher disturbs it, as teuthology's thrashosds.py does
Ceph's balancer; every invariant checked, exit 1 when one fails (doc/testing.rst)."""
import argparse
import json
import random
import signal
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..cluster import REPO, Cluster, wait_until
from ..cluster.rados_client import Rados
from .thrasher import POOLS, Thrasher
from .watch import OP_TIMEOUT, WAIT_CLEAN_MAX, Client, Watcher, commands_to_missing_pools

CLEAN_WITHIN = 600          # s: the bound on active+clean after the thrasher stops
SETTLE_WITHIN = 1800        # s: and on pg_advisor's end state (pg_num, eval)


def setup(c: Cluster, pg_nums: List[int], options: List[str], stack: ExitStack) -> None:
    c.vstart("start", "--osds", "8", "--hosts", "4", "--no-pool")
    c.ceph("osd", "erasure-code-profile", "set", "ec21", "k=2", "m=1", "crush-failure-domain=host")
    for name, pg_num, kind in zip(POOLS, pg_nums, (["replicated"], ["replicated"], ["erasure", "ec21"])):
        c.create_pool(name, pg_num, *kind, autoscale=True, application="rados")
    c.ceph("osd", "pool", "set", "ratio", "target_size_ratio", "0.3")
    # min_size k: one OSD away (the thrasher takes one at a time) leaves the EC PGs active,
    # as the replicated ones; at k+1 their I/O would wait for the OSD to come back
    c.ceph("osd", "pool", "set", "ec", "min_size", "2")
    sets = {k: v for k, _, v in (kv.partition("=") for kv in options)}
    stack.enter_context(c.options("mgr", {"pin_on_change": "true", **sets, "mode": "auto"}))
    c.wait_clean(300)


def end_state(c: Cluster, th: Thrasher) -> Dict[str, Any]:
    """After the thrasher stops: time to active+clean, then to pg_advisor's end state."""
    t0 = time.monotonic()
    out: Dict[str, Any] = {}

    def caught_up() -> bool:
        """Every PG's stats show the map's up set (an idle PG does not report each map)."""
        ups = th.watch.mapped()[1]
        return all(ups.get(r["pgid"]) == r["up"] for r in th.pgs_brief())
    try:
        wait_until(caught_up, CLEAN_WITHIN, "every PG's stats to show the map's up set", step=2)
        c.wait_clean(max(1.0, CLEAN_WITHIN - (time.monotonic() - t0)))
        out["clean_s"] = round(time.monotonic() - t0)
        th.say(f"active+clean {out['clean_s']} s after the thrasher stopped")
    except TimeoutError as e:
        out["clean_error"] = str(e)
        return out
    last: Dict[str, Any] = {}

    def settled() -> bool:
        status, plan, ev = c.advisor("status"), c.plan(), c.advisor("eval")["distribution"]
        off = {p["name"]: [p["pg_num"], p["recommended_pg_num"]] for p in status["pools"]
               if p["pg_num"] != p["recommended_pg_num"] or p["pgp_num"] != p["pg_num"]}
        dev = {d["pool"]: d["max_deviation"] for d in ev["pools"]}
        dev["total"] = ev["total"]["max_deviation"]
        last.update(off=off, deviation=dev, plan=plan.get("status"))
        th.say(f"  end state: pools off {off}, largest deviation {max(dev.values())}, "
               f"plan {last['plan']}")
        return not off and max(dev.values()) <= 1.0 and last["plan"] not in ("running", "paused")
    try:
        wait_until(settled, SETTLE_WITHIN, "pools at pg_advisor's pg_num and every OSD within "
                   "1 PG of its share", step=30)
        out["settled_s"] = round(time.monotonic() - t0)
    except TimeoutError as e:
        out["settle_error"] = str(e)
    out.update(last)
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m qa.thrash", description=__doc__)
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", default="/tmp/pg-advisor-thrash")
    ap.add_argument("--pg-nums", default="16,64,16", help="the pools' pg_num at start: rep,ratio,ec")
    ap.add_argument("--objects", type=int, default=300, help="objects the client keeps per pool")
    ap.add_argument("--rate", type=float, default=40.0, help="client ops a second per pool at most")
    ap.add_argument("--set", action="append", default=[], metavar="OPTION=VALUE",
                    help="a pg_advisor option for the run (the smoke run shortens step_interval)")
    ap.add_argument("--report", help="write the figures as JSON here")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    a = ap.parse_args(argv)
    c = Cluster(Path(a.dir))
    sys.path.insert(0, str(REPO / "src"))      # the testkit's osdmaptool parser (Watcher.mapped)
    t_start = time.monotonic()
    stack = ExitStack()        # unless --keep, on the way out: the options set back, the cluster stopped
    stack.callback(c.vstart, "stop")
    setup(c, [int(x) for x in a.pg_nums.split(",")], a.set, stack)
    budget = float(c.ceph("config", "get", "mgr", "target_max_misplaced_ratio").strip())
    mon = Rados(c.env["CEPH_CONF"], op_timeout=OP_TIMEOUT)      # the watcher's, thrasher's, client's
    watch = Watcher(mon, c.dir / "run", budget)
    client = Client(mon, list(POOLS), a.objects, a.seed, a.rate)
    th = Thrasher(c, mon, watch, client, random.Random(a.seed))
    report: Dict[str, Any] = {"seed": a.seed, "minutes": a.minutes, "options": a.set, "rate": a.rate}
    # the first Ctrl-C ends the thrashing early and still reports (a KeyboardInterrupt in a
    # rados call crashed the binding)
    interrupted = threading.Event()

    def on_sigint(signum: int, frame: Any) -> None:
        interrupted.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGINT, on_sigint)
    try:
        client.start()
        watch.start()
        th.say(f"setup took {time.monotonic() - t_start:.0f} s; thrashing for {a.minutes} min, "
               f"seed {a.seed}, from {time.strftime('%H:%M:%S', time.gmtime())} UTC")
        end = time.monotonic() + a.minutes * 60
        while time.monotonic() < end and not interrupted.is_set():
            th.step()
            pause = time.monotonic() + th.rng.uniform(20, 40)
            while time.monotonic() < min(pause, end) and not interrupted.is_set():
                th.run_due()
                time.sleep(1)
        th.say("thrasher stops; undoing what is pending")
        th.wind_down()
        report["end"] = end_state(c, th)
    finally:
        fig = watch.finish()
        problems = client.finish()
        mon.shutdown()
        report.update(actions=dict(th.counts), refused=dict(th.refused), client=client.figures(),
                      interrupted=interrupted.is_set())
        ours, bad = commands_to_missing_pools(c.dir / "log" / "ceph.audit.log", th.removed)
        cluster_log = (c.dir / "log" / "ceph.log").read_text(errors="replace")
        failures = client.failures()
        gids = len(fig.mgr_gids) - 1
        pids = len({p for p in fig.mgr_pids if p > 0}) - 1
        alive = bool(fig.mgr_pids) and Path(f"/proc/{fig.mgr_pids[-1]}").exists()
        checks = {
            # not pg_advisor's: the run proves nothing if the machine ran out of memory
            "the machine kept 1 GiB available": fig.mem_available_min_mib >= 1024,
            "mgr failovers equal the thrasher's": gids == th.fails and pids == th.fails and alive,
            "no PG_ADVISOR_PLAN_ERROR": not fig.plan_errors and "PG_ADVISOR_PLAN_ERROR" not in cluster_log,
            "no command to a removed pool": not bad,
            "misplaced within the allowance": not fig.over,
            f"no plan waited {WAIT_CLEAN_MAX:.0f} s on backfill with all PGs clean":
                fig.wait_clean_longest_s < WAIT_CLEAN_MAX,
            "no client op failed, every object intact": not failures and not problems,
            "active+clean within 10 min": "clean_s" in report.get("end", {}),
            "pools at pg_advisor's pg_num, OSDs within 1 PG": "settled_s" in report.get("end", {}),
        }
        report.update(
            mgr={"failovers": gids, "pids": pids, "thrasher_fails": th.fails,
                 "rss_peak_mib": round(fig.mgr_rss_peak_mib)},
            memory={"available_min_mib": round(fig.mem_available_min_mib),
                    "osds_rss_peak_mib": round(fig.osds_rss_peak_mib)},
            plan_errors=fig.plan_errors[:10],
            wait_clean={"longest_s": round(fig.wait_clean_longest_s), "at": fig.wait_clean_at},
            commands_ours=ours, commands_to_removed=bad[:10],
            misplaced={"budget": budget, "peak_ours_of_budget": round(fig.peak_ours, 3),
                       "peak_ours_at": fig.peak_ours_at, "peak_total": fig.peak_total,
                       "allowance_at_peak": fig.peak_total_allowance, "over": fig.over[:10]},
            client_failures=failures[:10], read_problems=problems[:10], health_checks=fig.checks_seen,
            sample_errors=fig.errors[-5:], samples=fig.samples, checks=checks,
            pools_removed=th.removed, purged=sorted(th.purged))
        print(json.dumps(report, indent=1, default=str))
        if a.report:
            Path(a.report).write_text(json.dumps(report, indent=1, default=str))
        if not a.keep:
            stack.close()
    ok = all(checks.values())
    print(("PASS" if ok else "FAIL") + ": "
          + "; ".join(f"{k}: {'ok' if v else 'FAILED'}" for k, v in checks.items()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
