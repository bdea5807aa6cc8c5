"""The thrasher: one action at a time on the running cluster (an OSD killed or out, a mgr
failed, OSDs added, a drain, norebalance, a pool made and removed, a fill, a reweight, an
upmap, pg_advisor paused or its plan aborted), each undone later, dealt from a seeded deck."""
import json
import os
import random
import signal
import subprocess
import threading
import time
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ..cluster import Cluster, wait_until
from ..cluster.rados_client import Rados
from .watch import Client, Watcher, read_pid

POOLS = ("rep", "ratio", "ec")
BAD_STATES = ("degraded", "undersized", "down", "incomplete", "peering", "stale", "unknown")
FILL_MIB = 64               # one fill action: 64 objects of 1 MiB
FILL_MAX = 8                # fills in a run at most (memstore OSDs hold 1 GiB each)


class Thrasher:
    def __init__(self, c: Cluster, mon: Rados, watch: Watcher, client: Client, rng: random.Random) -> None:
        self.c, self.mon, self.watch, self.client, self.rng = c, mon, watch, client, rng
        self.counts: Counter = Counter()
        self.refused: Counter = Counter()
        self.later: List[Tuple[float, str, Callable[[], Any]]] = []    # (when, what, undo)
        self.deck: List[str] = []                # actions still to deal (step)
        self.away: Optional[int] = None          # the OSD this thrasher has down or out
        self.drain_osd: Optional[int] = None
        self.drain_started = 0.0
        self.drain_plan: Optional[str] = None     # the drain's plan id
        self.added = False
        self.purged: Set[int] = set()
        self.fails = 0                           # `ceph mgr fail`s
        self.pools_made: Dict[str, int] = {}
        self.removed: Dict[str, int] = {}
        self.fill_threads: List[threading.Thread] = []
        self.t0 = time.monotonic()

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.t0:7.1f}] {text}", flush=True)

    def ceph(self, *args: str) -> int:
        code, out, err = self.c.run(*args, timeout=120)
        self.say(f"  ceph {' '.join(args)} -> {code} {(err or out).strip()[:160]}")
        return code

    def osds(self) -> List[Dict[str, Any]]:
        return list(self.mon.json("mon", "osd dump")["osds"])

    def pgs_brief(self) -> List[Dict[str, Any]]:
        """Each PG's state, up and acting set (`pg dump pgs_brief`)."""
        dump = self.mon.json("mgr", "pg dump", dumpcontents=["pgs_brief"])
        return list(dump["pg_stats"] if isinstance(dump, dict) else dump)

    def calm(self) -> bool:
        """No OSD away and no PG short of a copy: one more OSD may go (EC 2+1 keeps one)."""
        if self.away is not None or any(not (o["up"] and o["in"]) for o in self.osds()
                                        if o["osd"] not in self.purged):
            return False
        return not any(b in r["state"] for r in self.pgs_brief() for b in BAD_STATES)

    def victim(self) -> Optional[int]:
        cands = [o["osd"] for o in self.osds() if o["up"] and o["in"] and o["osd"] != self.drain_osd
                 and o["osd"] not in self.purged]
        return self.rng.choice(cands) if cands else None

    def osd_pid(self, osd: int) -> Optional[int]:
        pid = read_pid(self.c.dir / "run" / f"osd.{osd}.pid")
        return pid if pid > 0 else None

    def wait_osd(self, osd: int, up: bool, timeout: float = 90) -> None:
        wait_until(lambda: any(o["osd"] == osd and bool(o["up"]) == up for o in self.osds()),
                   timeout, f"osd.{osd} {'up' if up else 'down'}")

    def stop_osd(self, osd: int) -> None:
        pid = self.osd_pid(osd)
        if pid:
            os.kill(pid, signal.SIGTERM)
        self.wait_osd(osd, False)

    def charged(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run a map-changing `fn` and charge what it remapped to the thrasher."""
        start = self.watch.mapped()
        out = fn()
        self.say(f"  {what}: {self.watch.after(start)} PGs remapped")
        return out

    def after(self, lo: float, hi: float, what: str, fn: Callable[[], Any]) -> None:
        self.later.append((time.monotonic() + self.rng.uniform(lo, hi), what, fn))

    def run_due(self, everything: bool = False) -> None:
        now = time.monotonic()
        due = [x for x in self.later if everything or x[0] <= now]
        self.later = [x for x in self.later if x not in due]
        for _, what, fn in sorted(due, key=lambda x: x[0]):
            self.say(f"later: {what}")
            try:
                fn()
            except Exception as e:        # reported; the run goes on
                self.say(f"  {what} failed: {e!r}")
                self.refused[f"later: {what.split(':')[0]}"] += 1

    # -- the actions: each returns False when it cannot be taken now -----------------------

    def act_kill(self) -> bool:
        victim = self.victim() if self.calm() else None
        if victim is None or self.osd_pid(victim) is None:
            return False
        osd: int = victim
        self.away = osd
        self.say(f"kill osd.{osd} (pid {self.osd_pid(osd)})")
        self.charged(f"osd.{osd} down", lambda: self.stop_osd(osd))
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
        osd = self.victim() if self.drain_osd is None and self.calm() else None
        if osd is None:
            return False
        # beside the plans that run (side by side; EBUSY only when 4 are open: end one first)
        code = self.ceph("pg-advisor", "drain", f"osd.{osd}")
        if code == -16 or code == 16:
            self.act_abort()
            code = self.ceph("pg-advisor", "drain", f"osd.{osd}")
        if code != 0:
            return False
        self.drain_osd, self.drain_started = osd, time.monotonic()
        self.drain_plan = next((p["id"] for p in reversed(self.plans()) if p["drain"] == [osd]), None)
        self.after(15, 15, f"drain osd.{osd}: check", self.drain_check)
        return True

    def drain_check(self) -> None:
        """Out and purge the drained OSD once no PG is on it (after 15 minutes Ceph moves the
        rest); ask for the drain again if its plan ended (an abort) before."""
        osd = self.drain_osd
        assert osd is not None
        left = sum(1 for r in self.pgs_brief() if osd in r["up"] or osd in r["acting"])
        if left and time.monotonic() - self.drain_started <= 900:
            mine = next((p for p in self.plans() if p["id"] == self.drain_plan), None)
            if (mine or {}).get("status") not in ("running", "paused"):
                self.ceph("pg-advisor", "drain", f"osd.{osd}")
                self.drain_plan = next((p["id"] for p in reversed(self.plans()) if p["drain"] == [osd]),
                                       None)
            self.say(f"  osd.{osd}: {left} PGs still on it")
            self.after(15, 15, f"drain osd.{osd}: check", self.drain_check)
            return
        if left:
            self.counts["drain fell back to out"] += 1
        self.charged(f"drained osd.{osd} out", lambda: self.ceph("osd", "out", str(osd)))
        wait_until(lambda: self.c.run("osd", "safe-to-destroy", str(osd))[0] == 0, 900,
                   f"osd.{osd} safe to destroy")
        self.stop_osd(osd)
        self.charged(f"osd.{osd} purged",
                     lambda: self.ceph("osd", "purge", str(osd), "--yes-i-really-mean-it"))
        self.purged.add(osd)

    def act_norebalance(self) -> bool:
        if "norebalance" in self.mon.json("mon", "osd dump")["flags"]:
            return False
        self.ceph("osd", "set", "norebalance")
        self.after(30, 90, "unset norebalance", lambda: self.ceph("osd", "unset", "norebalance"))
        return True

    def act_pool(self) -> bool:
        name = f"thrash-{len(self.pools_made)}"
        self.c.create_pool(name, 8, autoscale=True, application="rados")
        self.pools_made[name] = self.c.pool_id(name)
        subprocess.run(["rados", "-p", name, "bench", "2", "write", "-b", "4096", "-t", "2",
                        "--no-cleanup"], env=self.c.env, capture_output=True, timeout=120)
        self.after(5, 90, f"remove pool {name}", lambda: self.remove_pool(name))
        return True

    def remove_pool(self, name: str) -> None:
        if self.ceph("osd", "pool", "rm", name, name, "--yes-i-really-really-mean-it") == 0:
            self.removed[name] = self.pools_made[name]

    def act_fill(self) -> bool:
        if len(self.fill_threads) >= FILL_MAX:
            return False
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
        items = self.mon.json("mon", "osd dump")["pg_upmap_items"]
        if items and self.rng.random() < 0.5:
            pgid = self.rng.choice(items)["pgid"]
            self.charged(f"rm upmap item {pgid}", lambda: self.ceph("osd", "rm-pg-upmap-items", pgid))
            return True
        ids = {self.c.pool_id(p) for p in POOLS}
        row = self.rng.choice([r for r in self.pgs_brief() if int(r["pgid"].split(".")[0]) in ids])
        mates = self.c.host_mates()           # to an OSD of a host the PG does not use
        used = set(row["up"]) | {m for o in row["up"] for m in mates.get(o, [])}
        up_osds = {o["osd"] for o in self.osds() if o["up"] and o["in"]}
        to = [o for o in mates if o not in used and o in up_osds and o != self.drain_osd]
        if not to or not row["up"]:
            return False
        frm, dst = self.rng.choice(row["up"]), self.rng.choice(to)
        self.charged(f"upmap item {row['pgid']} {frm}->{dst}",
                     lambda: self.ceph("osd", "pg-upmap-items", row["pgid"], str(frm), str(dst)))
        return True

    def plans(self) -> List[Dict[str, Any]]:
        """The plans `progress` lists (side by side: the open ones and the last ended)."""
        out = self.c.run("pg-advisor", "progress", "-f", "json")[1]
        return list(json.loads(out or "{}").get("plans") or [])

    def one_plan(self, *statuses: str) -> Optional[str]:
        """The id of one plan in `statuses`, picked at random (None: there is none)."""
        ids = [p["id"] for p in self.plans() if p["status"] in statuses]
        return self.rng.choice(ids) if ids else None

    def act_pause(self) -> bool:
        plan = self.one_plan("running")
        if plan is None or self.ceph("pg-advisor", "pause", "--plan", plan) != 0:
            return False
        paused: str = plan
        self.after(30, 90, f"resume {paused}", lambda: self.ceph("pg-advisor", "resume", "--plan", paused))
        return True

    def act_abort(self) -> bool:
        plan = self.one_plan("running", "paused", "stopped")
        if plan is None or self.ceph("pg-advisor", "abort", "--plan", plan) != 0:
            return False
        # an operator who aborts and wants auto mode back says so (auto waits an hour else)
        self.after(30, 90, "mode auto again", lambda: self.ceph("pg-advisor", "mode", "auto"))
        return True

    ACTIONS = ("kill", "out", "mgr_fail", "add_osds", "drain", "norebalance", "pool", "fill",
               "reweight", "upmap", "pause", "abort")

    def step(self) -> None:
        """One action that can be taken now, from a shuffled deck dealt until empty (independent
        picks may never pick one)."""
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
        while self.drain_osd is not None and self.drain_osd not in self.purged and self.later:
            time.sleep(5)
            self.run_due()
        for t in self.fill_threads:
            t.join(600)
