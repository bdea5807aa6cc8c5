"""pg_advisor in mode auto while the cluster is thrashed, as Ceph's own QA thrashes its
balancer and autoscaler (teuthology's qa/tasks/thrashosds.py): issue 28.

    /usr/bin/python3 -m qa.thrash --minutes 30 --seed N [--dir DIR] [--report FILE]

It starts its own cluster (qa/cluster/vstart.sh: 8 memstore OSDs on 4 hosts) with three pools
(replicated; replicated with target_size_ratio; EC 2+1), a client that writes and reads
them throughout and checks every read (qa/thrash_client.py), and pg_advisor in mode auto
with pin_on_change on (Ceph's balancer off). Every 20-40 s the thrasher takes one action,
picked by a generator seeded with N. The invariants are sampled throughout
(qa/thrash_watch.py) and printed at the end, after the cluster is left to settle; the exit
status is 1 when any fails. doc/testing.rst has the figures of the runs.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Set

from .cluster import Cluster, wait_until
from .thrash_client import Client
from .thrash_watch import WAIT_CLEAN_MAX, Mon, Watcher, commands_to_missing_pools

POOLS = ("rep", "ratio", "ec")
BAD_STATES = ("degraded", "undersized", "down", "incomplete", "peering", "stale", "unknown")
CLEAN_WITHIN = 600          # s: the bound on active+clean after the thrasher stops
SETTLE_WITHIN = 1800        # s: and on pg_advisor's end state (pg_num, eval)
FILL_MIB = 64               # one fill action: 64 objects of 1 MiB
FILL_MAX = 8                # fills in a run at most (memstore OSDs hold 1 GiB each)


@dataclass
class Later:
    at: float
    what: str
    fn: Callable[[], None]


class Thrasher:
    def __init__(self, c: Cluster, mon: Mon, watch: Watcher, client: Client, rng: random.Random) -> None:
        self.c, self.mon, self.watch, self.client, self.rng = c, mon, watch, client, rng
        self.counts: Counter = Counter()
        self.refused: Counter = Counter()
        self.later: List[Later] = []
        self.deck: List[str] = []                # actions still to deal (step)
        self.away: Optional[int] = None          # the OSD this thrasher has down or out
        self.drain_osd: Optional[int] = None
        self.drain_started = 0.0
        self.drained = False
        self.added = False
        self.purged: Set[int] = set()
        self.norebalance = False
        self.paused = False
        self.fails = 0                           # `ceph mgr fail`s
        self.fills = 0
        self.pools_made: Dict[str, int] = {}
        self.removed: Dict[str, int] = {}
        self.fill_threads: List[threading.Thread] = []
        self.t0 = time.monotonic()

    # -- helpers ------------------------------------------------------------------------

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.t0:7.1f}] {text}", flush=True)

    def ceph(self, *args: str) -> int:
        code, out, err = self.c.run(*args, timeout=120)
        self.say(f"  ceph {' '.join(args)} -> {code} {(err or out).strip()[:160]}")
        return code

    def osds(self) -> List[Dict[str, Any]]:
        return list(self.mon.json("osd dump")["osds"])

    def pgs_brief(self) -> List[Dict[str, Any]]:
        """Each PG's state, up and acting set (`pg dump pgs_brief`)."""
        dump = self.mon.json("pg dump", mgr=True, dumpcontents=["pgs_brief"])
        return list(dump["pg_stats"] if isinstance(dump, dict) else dump)

    def pg_states(self) -> List[str]:
        return [r["state"] for r in self.pgs_brief()]

    def calm(self) -> bool:
        """No OSD away and no PG short of a copy: one more OSD may go (EC 2+1 keeps one)."""
        if self.away is not None or any(not (o["up"] and o["in"]) for o in self.osds()
                                        if o["osd"] not in self.purged):
            return False
        return not any(b in s for s in self.pg_states() for b in BAD_STATES)

    def victim(self) -> Optional[int]:
        cands = [o["osd"] for o in self.osds() if o["up"] and o["in"] and o["osd"] != self.drain_osd
                 and o["osd"] not in self.purged]
        return self.rng.choice(cands) if cands else None

    def osd_pid(self, osd: int) -> Optional[int]:
        try:
            return int((self.c.dir / "run" / f"osd.{osd}.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def wait_osd(self, osd: int, up: bool, timeout: float = 90) -> None:
        wait_until(lambda: any(o["osd"] == osd and bool(o["up"]) == up for o in self.osds()),
                   timeout, f"osd.{osd} {'up' if up else 'down'}")

    def charged(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run a map-changing `fn` and charge what it remapped to the thrasher."""
        start = self.watch.before()
        out = fn()
        moved = self.watch.after(start, what)
        self.say(f"  {what}: {moved} PGs remapped")
        return out

    def after(self, lo: float, hi: float, what: str, fn: Callable[[], None]) -> None:
        self.later.append(Later(time.monotonic() + self.rng.uniform(lo, hi), what, fn))

    def run_due(self, everything: bool = False) -> None:
        now = time.monotonic()
        due = [x for x in self.later if everything or x.at <= now]
        self.later = [x for x in self.later if x not in due]
        for x in sorted(due, key=lambda x: x.at):
            self.say(f"later: {x.what}")
            try:
                x.fn()
            except Exception as e:        # reported; the run goes on
                self.say(f"  {x.what} failed: {e!r}")
                self.refused[f"later: {x.what.split(':')[0]}"] += 1

    # -- the actions: each returns False when it cannot be taken now -----------------------

    def act_kill(self) -> bool:
        victim = self.victim() if self.calm() else None
        pid = self.osd_pid(victim) if victim is not None else None
        if victim is None or pid is None:
            return False
        osd: int = victim
        self.away = osd
        self.say(f"kill osd.{osd} (pid {pid})")

        def kill() -> None:
            assert pid is not None
            os.kill(pid, signal.SIGTERM)
            self.wait_osd(osd, False)
        self.charged(f"osd.{osd} down", kill)
        self.after(30, 60, f"revive osd.{osd}", lambda: self.revive(osd))
        return True

    def revive(self, osd: int) -> None:
        def start() -> None:
            subprocess.run(["ceph-osd", "-i", str(osd)], env=self.c.env, check=True, timeout=120,
                           capture_output=True)
            self.wait_osd(osd, True)
        self.charged(f"osd.{osd} up", start)
        self.away = None

    def act_out(self) -> bool:
        victim = self.victim() if self.calm() else None
        if victim is None:
            return False
        osd: int = victim
        self.away = osd
        self.charged(f"osd.{osd} out", lambda: self.ceph("osd", "out", str(osd)))
        self.after(60, 120, f"osd.{osd} in", lambda: self.mark_in(osd))
        return True

    def mark_in(self, osd: int) -> None:
        self.charged(f"osd.{osd} in", lambda: self.ceph("osd", "in", str(osd)))
        self.away = None

    def act_mgr_fail(self) -> bool:
        if self.ceph("mgr", "fail", "x") != 0:
            return False
        self.fails += 1
        wait_until(lambda: self.c.run("pg-advisor", "status", timeout=30)[0] == 0, 120,
                   "pg_advisor answering after the mgr failed over")
        return True

    def act_add_osds(self) -> bool:
        if self.added:
            return False
        self.added = True
        out = self.charged("2 OSDs added on host4", lambda: self.c.vstart("add-osds", "--count", "2",
                                                                          "--host", "host4"))
        self.say(f"  added {out.strip()}")
        return True

    def act_drain(self) -> bool:
        if self.drain_osd is not None or not self.calm():
            return False
        osd = self.victim()
        if osd is None:
            return False
        code = self.ceph("pg-advisor", "drain", f"osd.{osd}")
        if code == -16 or code == 16:     # EBUSY: a plan runs; the operator ends it first
            self.act_abort()
            code = self.ceph("pg-advisor", "drain", f"osd.{osd}")
        if code != 0:
            return False
        self.drain_osd, self.drain_started = osd, time.monotonic()
        self.after(15, 15, f"drain osd.{osd}: check", self.drain_check)
        return True

    def drain_check(self) -> None:
        """Out and purge the drained OSD once no PG is on it; re-ask for the drain when its
        plan ended (an abort) before that; after 15 minutes let Ceph move the rest."""
        osd = self.drain_osd
        assert osd is not None
        left = sum(1 for r in self.pgs_brief() if osd in r["up"] or osd in r["acting"])
        late = time.monotonic() - self.drain_started > 900
        if left and not late:
            plan = json.loads(self.c.run("pg-advisor", "progress", "-f", "json")[1] or "{}").get("plan")
            if not plan or plan.get("status") not in ("running", "paused"):
                self.ceph("pg-advisor", "drain", f"osd.{osd}")
            self.say(f"  osd.{osd}: {left} PGs still on it")
            self.after(15, 15, f"drain osd.{osd}: check", self.drain_check)
            return
        if left:
            self.counts["drain fell back to out"] += 1
        self.charged(f"drained osd.{osd} out", lambda: self.ceph("osd", "out", str(osd)))
        wait_until(lambda: self.c.run("osd", "safe-to-destroy", str(osd))[0] == 0, 900,
                   f"osd.{osd} safe to destroy")
        pid = self.osd_pid(osd)
        if pid:
            os.kill(pid, signal.SIGTERM)
        self.wait_osd(osd, False)
        self.charged(f"osd.{osd} purged",
                     lambda: self.ceph("osd", "purge", str(osd), "--yes-i-really-mean-it"))
        self.purged.add(osd)
        self.drained = True

    def act_norebalance(self) -> bool:
        if self.norebalance:
            return False
        self.norebalance = True
        self.ceph("osd", "set", "norebalance")
        self.after(30, 90, "unset norebalance", self.unset_norebalance)
        return True

    def unset_norebalance(self) -> None:
        self.ceph("osd", "unset", "norebalance")
        self.norebalance = False

    def act_pool(self) -> bool:
        name = f"thrash-{len(self.pools_made)}"
        if self.ceph("osd", "pool", "create", name, "8", "8") != 0:
            return False
        self.ceph("osd", "pool", "application", "enable", name, "rados")
        self.pools_made[name] = self.c.pool_id(name)
        subprocess.run(["rados", "-p", name, "bench", "2", "write", "-b", "4096", "-t", "2",
                        "--no-cleanup"], env=self.c.env, capture_output=True, timeout=120)
        self.after(5, 90, f"remove pool {name}", lambda: self.remove_pool(name))
        return True

    def remove_pool(self, name: str) -> None:
        if self.ceph("osd", "pool", "rm", name, name, "--yes-i-really-really-mean-it") == 0:
            self.removed[name] = self.pools_made[name]

    def act_fill(self) -> bool:
        if self.fills >= FILL_MAX:
            return False
        self.fills += 1
        pool = self.rng.choice(POOLS)
        self.say(f"fill {pool} with {FILL_MIB} MiB")
        t = threading.Thread(target=self.client.fill, args=(pool, FILL_MIB, 1 << 20), daemon=True)
        t.start()
        self.fill_threads.append(t)
        return True

    def act_reweight(self) -> bool:
        osd = self.victim()
        if osd is None:
            return False
        w = self.rng.choice(("0.7", "0.8", "0.9", "1.0"))
        self.charged(f"osd.{osd} reweight {w}", lambda: self.ceph("osd", "reweight", str(osd), w))
        return True

    def act_upmap(self) -> bool:
        items = self.mon.json("osd dump")["pg_upmap_items"]
        if items and self.rng.random() < 0.5:
            pgid = self.rng.choice(items)["pgid"]
            self.charged(f"rm upmap item {pgid}", lambda: self.ceph("osd", "rm-pg-upmap-items", pgid))
            return True
        ids = {self.pools_made.get(p) or self.c.pool_id(p) for p in POOLS}
        rows = [r for r in self.pgs_brief()
                if int(r["pgid"].split(".")[0]) in ids]
        row = self.rng.choice(rows)
        host_of = {o: h for h, mates in self._hosts().items() for o in mates}
        used = {host_of.get(o) for o in row["up"]}
        up_osds = {o["osd"] for o in self.osds() if o["up"] and o["in"]}
        to = [o for o, h in host_of.items() if h not in used and o in up_osds and o != self.drain_osd]
        if not to or not row["up"]:
            return False
        frm, dst = self.rng.choice(row["up"]), self.rng.choice(to)
        self.charged(f"upmap item {row['pgid']} {frm}->{dst}",
                     lambda: self.ceph("osd", "pg-upmap-items", row["pgid"], str(frm), str(dst)))
        return True

    def _hosts(self) -> Dict[str, List[int]]:
        return {n["name"]: [k for k in n.get("children", []) if k >= 0]
                for n in self.mon.json("osd tree")["nodes"] if n["type"] == "host"}

    def act_pause(self) -> bool:
        if self.paused or self.ceph("pg-advisor", "pause") != 0:
            return False
        self.paused = True
        self.after(30, 90, "resume", self.resume)
        return True

    def resume(self) -> None:
        self.ceph("pg-advisor", "resume")
        self.paused = False

    def act_abort(self) -> bool:
        if self.ceph("pg-advisor", "abort") != 0:
            return False
        self.paused = False
        # an operator who aborts and wants auto mode back says so (auto waits an hour else)
        self.after(30, 90, "mode auto again", lambda: (self.ceph("pg-advisor", "mode", "auto"), None)[1])
        return True

    ACTIONS = ("kill", "out", "mgr_fail", "add_osds", "drain", "norebalance", "pool", "fill",
               "reweight", "upmap", "pause", "abort")

    def step(self) -> None:
        """One action, picked at random among those that can be taken now. The picks come
        from a shuffled deck of every action, dealt until empty, then shuffled again: each
        action comes up once in every dozen or so (a first 30-minute run with independent
        picks never created a pool)."""
        for refill in (False, True):
            if refill or not self.deck:
                self.deck = list(self.ACTIONS)
                self.rng.shuffle(self.deck)
            if self._deal():
                return

    def _deal(self) -> bool:
        for name in list(self.deck):
            if (name == "add_osds" and self.added) or (name == "drain" and self.drain_osd is not None):
                self.deck.remove(name)        # once per run
                continue
            self.say(f"action: {name}")
            try:
                took = getattr(self, f"act_{name}")()
            except Exception as e:        # an action that fails is reported, the run goes on
                self.say(f"  {name} failed: {e!r}")
                self.refused[name] += 1
                continue
            if took:
                self.counts[name] += 1
                self.deck.remove(name)
                return True
            self.refused[name] += 1
        return False

    def wind_down(self) -> None:
        """Undo what is pending (revive, in, unset, resume, remove) and finish the drain."""
        self.run_due(everything=True)
        while self.drain_osd is not None and not self.drained and self.later:
            time.sleep(5)
            self.run_due()
        for t in self.fill_threads:
            t.join(600)


# -- the run ---------------------------------------------------------------------------------

def setup(c: Cluster, pg_nums: List[int], options: List[str]) -> None:
    c.vstart("start", "--osds", "8", "--hosts", "4", "--no-pool")
    c.ceph("osd", "pool", "create", "rep", str(pg_nums[0]), str(pg_nums[0]), "replicated")
    c.ceph("osd", "pool", "create", "ratio", str(pg_nums[1]), str(pg_nums[1]), "replicated")
    c.ceph("osd", "pool", "set", "ratio", "target_size_ratio", "0.3")
    c.ceph("osd", "erasure-code-profile", "set", "ec21", "k=2", "m=1", "crush-failure-domain=host")
    c.ceph("osd", "pool", "create", "ec", str(pg_nums[2]), str(pg_nums[2]), "erasure", "ec21")
    # min_size k: one OSD away (the thrasher takes one at a time) leaves the EC PGs active,
    # as the replicated ones; at k+1 their I/O would wait for the OSD to come back
    c.ceph("osd", "pool", "set", "ec", "min_size", "2")
    for p in POOLS:
        c.ceph("osd", "pool", "application", "enable", p, "rados")
    c.ceph("config", "set", "mgr", "mgr/pg_advisor/pin_on_change", "true")
    for kv in options:
        key, _, value = kv.partition("=")
        c.ceph("config", "set", "mgr", f"mgr/pg_advisor/{key}", value)
    c.ceph("config", "set", "mgr", "mgr/pg_advisor/mode", "auto")
    c.wait_clean(300)


def end_state(c: Cluster, th: Thrasher) -> Dict[str, Any]:
    """After the thrasher stops: time to active+clean, then to pg_advisor's end state."""
    t0 = time.monotonic()
    out: Dict[str, Any] = {}

    def caught_up() -> bool:
        """Every PG's stats show the up set the map has now: right after the thrasher's last
        action (an OSD in: 131 PGs remapped) the stats still said active+clean on the old
        OSDs. (Their reported_epoch does not do: an idle PG does not report each map.)"""
        ups = th.mon.up_sets(th.mon.epoch())
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
        status = json.loads(c.ceph("pg-advisor", "status", "-f", "json"))
        plan = json.loads(c.ceph("pg-advisor", "progress", "-f", "json")).get("plan")
        ev = json.loads(c.ceph("pg-advisor", "eval", "-f", "json"))["distribution"]
        off = {p["name"]: [p["pg_num"], p["recommended_pg_num"]] for p in status["pools"]
               if p["pg_num"] != p["recommended_pg_num"] or p["pgp_num"] != p["pg_num"]}
        dev = {d["pool"]: d["max_deviation"] for d in ev["pools"]}
        dev["total"] = ev["total"]["max_deviation"]
        last.update(off=off, deviation=dev, plan=(plan or {}).get("status"))
        th.say(f"  end state: pools off {off}, largest deviation {max(dev.values())}, "
               f"plan {last['plan']}")
        running = plan is not None and plan.get("status") in ("running", "paused")
        return not off and max(dev.values()) <= 1.0 and not running
    try:
        wait_until(settled, SETTLE_WITHIN, "pools at pg_advisor's pg_num and every OSD within "
                   "1 PG of its share", step=30)
        out["settled_s"] = round(time.monotonic() - t0)
    except TimeoutError as e:
        out["settle_error"] = str(e)
    out.update(last)
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m qa.thrash", description=__doc__.split("\n\n")[0])
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
    t_start = time.monotonic()
    setup(c, [int(x) for x in a.pg_nums.split(",")], a.set)
    budget = float(c.ceph("config", "get", "mgr", "target_max_misplaced_ratio").strip())
    mon = Mon(c.env["CEPH_CONF"])
    watch = Watcher(mon, c.dir / "run", budget)
    client = Client(c.env["CEPH_CONF"], list(POOLS), a.objects, a.seed, a.rate)
    th = Thrasher(c, mon, watch, client, random.Random(a.seed))
    report: Dict[str, Any] = {"seed": a.seed, "minutes": a.minutes, "options": a.set,
                              "rate": a.rate}
    # the first Ctrl-C ends the thrashing early and still settles and reports (a
    # KeyboardInterrupt inside a rados call crashed the binding and lost the report)
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
        mon.close()
        report.update(actions=dict(th.counts), refused=dict(th.refused), client=client.figures(),
                      interrupted=interrupted.is_set())
        audit = c.dir / "log" / "ceph.audit.log"
        ours, bad = commands_to_missing_pools(audit, th.removed)
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
            c.vstart("stop")
    ok = all(checks.values())
    print(("PASS" if ok else "FAIL") + ": "
          + "; ".join(f"{k}: {'ok' if v else 'FAILED'}" for k, v in checks.items()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
