"""Layer 6: drive a plan of steps against the cluster, tick by tick, and survive faults.

Each tick: if the step in flight is done (the pool's actual pg_num and pgp_num are the
step's), advance; otherwise, if nothing blocks the next step and the pacing allows it,
issue it. The state is saved before a step is sent ("issuing") and after ("issued"), so
a new mgr resumes where the old one stopped: a step found "issuing" is sent again only if
the cluster does not show it yet (the commands set targets, so a resend is harmless, and
the history records each step once). A command that fails is retried with a growing
delay and reported; nothing is given up without the operator (`abort`).
"""
import datetime
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .balance import item_pairs
from .balance_report import balance_report, misplaced_budget, mon_commands
from .crush.placement import Placer
from .distribution import rule_weights
from .errors import AdvisorError
from .gates import MOVE_FLAGS, cluster_blockers, misplaced_ratio
from .snapshot import Pool, Snapshot
from .steps import Step

HISTORY_MAX = 200
RETRY_MAX_DELAY = 300.0
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
Command = Dict[str, Any]
Send = Callable[[Command], Tuple[int, str]]       # (return code, error text)
Burst = Callable[[List[Command]], List[Tuple[int, str]]]   # sent together, answered in order
BALANCE_ROUNDS_MAX = 1000


@dataclass(frozen=True)
class Pacing:
    budget: float              # misplaced fraction allowed in flight
    interval: float            # seconds at least between two steps
    window_begin: str          # "HH:MM"
    window_end: str            # "HH:MM" (before begin: the window spans midnight)
    window_days: str           # "" (every day) or e.g. "mon,tue,sat"
    balancer_active: bool = False   # Ceph's own balancer runs: no upmap items from us
    balance_mode: str = "pgs"       # what balance rounds even out: pgs or bytes
    max_backfills: int = 0          # PGs backfilling into or out of one OSD (0: no limit)


def _minutes(hhmm: str, name: str) -> int:
    try:
        h, m = hhmm.split(":")
        v = int(h) * 60 + int(m)
        if not (0 <= int(m) < 60 and 0 <= v <= 24 * 60):
            raise ValueError
        return v
    except ValueError:
        raise AdvisorError.invalid(f"option {name}: '{hhmm}' is not a time HH:MM") from None


def _days(p: Pacing) -> List[str]:
    return [d for d in p.window_days.replace(" ", "").split(",") if d]


def check_pacing(p: Pacing) -> None:
    """Refuse a malformed window with a sentence (the mon cannot check these strings)."""
    _minutes(p.window_begin, "window_begin")
    _minutes(p.window_end, "window_end")
    bad = [d for d in _days(p) if d not in WEEKDAYS]
    if bad:
        raise AdvisorError.invalid(f"option window_days: '{bad[0]}' is not one of {','.join(WEEKDAYS)}")


def in_window(p: Pacing, now: float) -> bool:
    t = datetime.datetime.fromtimestamp(now)
    days = _days(p)
    if days and WEEKDAYS[t.weekday()] not in days:
        return False
    begin, end = _minutes(p.window_begin, "window_begin"), _minutes(p.window_end, "window_end")
    cur = t.hour * 60 + t.minute
    if begin == end:
        return True
    return begin <= cur < end if begin < end else (cur >= begin or cur < end)


def blockers(snap: Snapshot, pool: Pool, p: Pacing, now: float, upmaps: bool = False) -> List[str]:
    """Conditions under which no step is taken, each as a sentence (health-worthy);
    `upmaps`: the step sets pg-upmap-items."""
    out: List[str] = []
    if upmaps and p.balancer_active:
        out.append("the built-in balancer is active: pg_advisor sets no upmap items beside it "
                   "(`ceph balancer off` hands balancing over, or set split_pinning false)")
    if pool.autoscale_mode == "on":
        out.append(f"pool {pool.name}: pg_autoscaler manages it (pg_autoscale_mode on); "
                   f"pg_advisor does not fight it")
    out.extend(cluster_blockers(snap, MOVE_FLAGS + ("noautoscale",)))
    rule = snap.rules.get(pool.crush_rule)
    if rule is not None:     # the OSDs the pool's rule can use, down but still in
        o = snap.osds
        down = np.flatnonzero((rule_weights(snap, rule) > 0) & ~o.up).tolist()
        if down:
            more = f" (and {len(down) - 1} more)" if len(down) > 1 else ""
            out.append(f"osd.{down[0]} is down and in{more}: pool {pool.name} maps onto it")
    if not in_window(p, now):
        out.append(f"outside the window {p.window_begin}-{p.window_end}"
                   + (f" on {p.window_days}" if p.window_days else ""))
    return out


def backfills(snap: Snapshot) -> Tuple[int, int]:
    """(the OSD with the most, how many) PGs backfilling or waiting to, into or out of it."""
    pgs = snap.pgs
    if pgs is None:
        return -1, 0
    n = snap.osds.count
    load = np.zeros(n, np.int64)
    for i in np.flatnonzero(["backfill" in s for s in pgs.state]).tolist():
        osds = set(pgs.up[i].tolist()) ^ set(pgs.acting[i].tolist())   # the ends that move
        for o in osds:
            if 0 <= o < n:
                load[o] += 1
    o = int(np.argmax(load)) if n else -1
    return o, int(load[o]) if n else 0


def step_done(pool: Pool, step: Step) -> bool:
    return (pool.pg_num, pool.pgp_num, pool.pg_num_target, pool.pgp_num_target) == \
        (step.pg_num, step.pgp_num, step.pg_num, step.pgp_num)


def step_shown(pool: Pool, step: Step) -> bool:
    """The cluster already has the step's targets (it was sent before a failover)."""
    return (pool.pg_num_target, pool.pgp_num_target) == (step.pg_num, step.pgp_num)


def _set(step: Step, var: str, val: int) -> Command:
    return {"prefix": "osd pool set", "pool": step.pool, "var": var, "val": str(val)}


def commands(step: Step) -> List[Command]:
    """Targets for Ceph's own stepping. Setting pg_num drags pgp_num's target along when
    the two are equal, so pgp_num is set right after it, back to the step's value."""
    if step.kind == "pg_num":
        return [_set(step, "pg_num", step.pg_num), _set(step, "pgp_num", step.pgp_num)]
    return [_set(step, "pgp_num", step.pgp_num)]


def pin_commands(snap: Snapshot, step: Step) -> List[Command]:
    """pgp_num at once (target and actual) and, for each PG it remaps, items that keep the
    PG on the OSDs it is on now. Sent together they land in one map epoch: the mon checks
    the items against the map with the new pgp_num, and no PG sees a new up set."""
    pool = snap.pool_by_name(step.pool)
    placer = Placer(snap)
    now = placer.map_pool(pool)
    raw = placer.map_pool(pool, pool.pg_num, step.pgp_num, upmaps=False)
    items: Dict[str, List[Tuple[int, int]]] = {}
    replicated = pool.type == "replicated"
    for r in range(now.up.shape[0]):
        want, new = now.up_list(r), raw.up_list(r)
        if (set(want) != set(new)) if replicated else want != new:
            items[now.pgid(r)] = item_pairs(new, want, replicated)
    return [_set(step, "pgp_num", step.pgp_num), _set(step, "pgp_num_actual", step.pgp_num)] + \
        mon_commands(items)


class Executor:
    """One plan at a time. `state` is what the mgr store keeps (JSON-able)."""

    def __init__(self, state: Optional[Dict[str, Any]], history: List[Dict[str, Any]],
                 save: Callable[[Optional[Dict[str, Any]], List[Dict[str, Any]]], None]) -> None:
        self.state = state
        self.history = history
        self._save = save

    # -- plan lifecycle -------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.state is not None and self.state["status"] in ("running", "paused")

    def start(self, steps: List[Step], start: Dict[str, int], source: str,
              now: float) -> Dict[str, Any]:
        """Run `steps`; `start` is each pool's pg_num before them."""
        if self.active:
            raise AdvisorError.busy(f"plan {self.state['id']} is {self.state['status']}: "   # type: ignore
                                    f"abort it or let it finish first")
        if not steps:
            raise AdvisorError.invalid("nothing to apply: no step is needed")
        self.state = {"id": uuid.uuid4().hex[:8], "source": source, "created": now,
                      "steps": [s.to_json() for s in steps], "next": 0, "phase": "idle",
                      # pool -> (pg_num before, pg_num at the end)
                      "pools": {p: (start[p], [s.pg_num for s in steps if s.pool == p][-1])
                                for p in start},
                      "status": "running", "issued_at": None, "last_step_at": None,
                      "attempts": 0, "retry_at": None, "last_error": None, "blockers": [],
                      "waiting": None}
        self._log(now, "start", f"{len(steps)} steps: " + "; ".join(
            f"{p} pg_num {a} -> {b}" for p, (a, b) in sorted(self.state["pools"].items())))
        self.save()
        return self.state

    def pause(self, now: float) -> None:
        st = self._need_active()
        if st["status"] == "paused":
            raise AdvisorError.invalid(f"plan {st['id']} is already paused")
        st["status"] = "paused"
        self._log(now, "pause", "no new step until resume; a step in flight finishes in Ceph")
        self.save()

    def resume(self, now: float) -> None:
        st = self._need_active()
        if st["status"] != "paused":
            raise AdvisorError.invalid(f"plan {st['id']} is not paused")
        st["status"] = "running"
        self._log(now, "resume", "")
        self.save()

    def abort(self, snap: Snapshot, send: Send, now: float) -> str:
        """Stop, leaving each pool with equal pg_num and pgp_num targets: the PGs that
        exist are placed when growing, the PGs already moved together are merged when
        shrinking (Ceph completes that at its own pace); no further step is taken."""
        st = self._need_active()
        notes: List[str] = []
        for name, (start_pg, goal) in sorted(st["pools"].items()):
            try:
                pool = snap.pool_by_name(name)
            except AdvisorError:
                notes.append(f"{name}: gone")
                continue
            want = pool.pg_num if goal >= start_pg else pool.pgp_num
            for var, cur in (("pg_num", pool.pg_num_target), ("pgp_num", pool.pgp_num_target)):
                if cur != want:
                    rc, err = send({"prefix": "osd pool set", "pool": name, "var": var, "val": str(want)})
                    if rc != 0:
                        notes.append(f"{name}: setting {var} {want} failed: {err.strip()}")
            notes.append(f"{name}: left at pg_num {want} and pgp_num {want}; {abs(goal - want)} PGs "
                         f"short of the plan's {goal}")
        st["status"] = "aborted"
        st["blockers"], st["waiting"] = [], None     # nothing waits any more
        summary = "; ".join(notes)
        self._log(now, "abort", summary)
        self.save()
        return summary

    # -- the tick -------------------------------------------------------------------------------

    def tick(self, snap: Snapshot, pacing: Pacing, send: Send, now: float,
             burst: Optional[Burst] = None) -> None:
        """`burst` sends commands together (pinned steps); by default one after another."""
        burst = burst or (lambda cmds: [send(c) for c in cmds])
        st = self.state
        if st is None or st["status"] != "running":
            return
        while st["next"] < len(st["steps"]):
            step = Step.from_json(st["steps"][st["next"]])
            try:
                pool = snap.pool_by_name(step.pool)
            except AdvisorError:
                st["status"] = "failed"
                st["last_error"] = f"pool {step.pool} no longer exists"
                self._log(now, "fail", st["last_error"])
                break
            if st["phase"] == "issuing" and step_shown(pool, step):
                st["phase"] = "issued"       # sent before a failover: do not send it again
                self._log(now, "recovered", f"step {st['next'] + 1} was already sent")
            if st["phase"] == "issued":
                if not step_done(pool, step):
                    st["waiting"] = (f"Ceph is at pg_num {pool.pg_num}, pgp_num {pool.pgp_num} "
                                     f"(step {st['next'] + 1} wants {step.pg_num}, {step.pgp_num})")
                    break
                self._log(now, "done", f"step {st['next'] + 1}/{len(st['steps'])}: {step.describe()}")
                st.update(next=st["next"] + 1, phase="idle", last_step_at=now, attempts=0,
                          retry_at=None, last_error=None)
                continue
            if not self._may_issue(st, snap, pool, step, pacing, now):
                break
            if step.kind == "balance":
                if self._balance_round(st, snap, step, pacing, send, now):
                    break
                continue
            self._issue(st, snap, step, burst, now)
            break
        else:
            st["status"] = "done"
            st["waiting"] = None
            self._log(now, "finish", f"all {len(st['steps'])} steps done")
        self.save()

    def _may_issue(self, st: Dict[str, Any], snap: Snapshot, pool: Pool, step: Step,
                   pacing: Pacing, now: float) -> bool:
        st["blockers"] = blockers(snap, pool, pacing, now, step.pin or step.kind == "balance")
        if st["blockers"]:
            st["waiting"] = None
            return False
        waits = []
        if st["retry_at"] is not None and now < st["retry_at"]:
            waits.append(f"retrying in {st['retry_at'] - now:.0f} s after: {st['last_error']}")
        if st["last_step_at"] is not None and now - st["last_step_at"] < pacing.interval:
            waits.append(f"{pacing.interval - (now - st['last_step_at']):.0f} s to the next step")
        ratio = misplaced_ratio(snap)
        if ratio > 0 and ratio + step.misplaced > pacing.budget:
            waits.append(f"misplaced {100 * ratio:.2f}% + this step's {100 * step.misplaced:.2f}% "
                         f"would pass the budget {100 * pacing.budget:.2f}%")
        if pacing.max_backfills and step.max_osd_backfills:
            osd, busy = backfills(snap)
            if busy and busy + step.max_osd_backfills > pacing.max_backfills:
                waits.append(f"osd.{osd} has {busy} PGs backfilling; this step adds up to "
                             f"{step.max_osd_backfills} (limit {pacing.max_backfills})")
        st["waiting"] = "; ".join(waits) or None
        return not waits

    def _balance_round(self, st: Dict[str, Any], snap: Snapshot, step: Step, pacing: Pacing,
                       send: Send, now: float) -> bool:
        """One balance round on the pool: True if it set items (more rounds follow), False
        when the pool needs none (the step is done)."""
        st["rounds"] = st.get("rounds", 0) + 1
        r = balance_report(snap, [step.pool], max(1, step.pgs_moving or 16), pacing.balance_mode,
                           object_budget=misplaced_budget(snap, pacing.budget))
        if not r["items"] or st["rounds"] > BALANCE_ROUNDS_MAX:
            self._log(now, "done", f"step {st['next'] + 1}/{len(st['steps'])}: {step.describe()} "
                                   f"({st['rounds'] - 1} rounds)")
            st.update(next=st["next"] + 1, phase="idle", last_step_at=now, rounds=0)
            return False
        cmds = mon_commands({k: [(a, b) for a, b in v] for k, v in r["items"].items()})
        failed = [err for rc, err in (send(c) for c in cmds) if rc != 0]
        st["last_step_at"] = now
        self._log(now, "round", f"step {st['next'] + 1}: {len(r['items'])} PGs, {r['moves']} moves"
                                + (f"; {len(failed)} failed: {failed[0]}" if failed else ""))
        return True

    def _issue(self, st: Dict[str, Any], snap: Snapshot, step: Step, burst: Burst, now: float) -> None:
        st["phase"] = "issuing"
        self.save()                      # a failover from here resends only if not shown
        cmds = pin_commands(snap, step) if step.pin else commands(step)
        unpinned = []
        for cmd, (rc, err) in zip(cmds, burst(cmds)):
            if rc != 0 and "pgid" in cmd:     # a pin that did not take: that PG just moves
                unpinned.append(f"{cmd['pgid']}: {err.strip()}")
            elif rc != 0:
                st["attempts"] += 1
                st["last_error"] = f"{cmd['var']} {cmd['val']}: {err.strip() or f'error {rc}'}"
                st["retry_at"] = now + min(RETRY_MAX_DELAY, 5.0 * 2 ** (st["attempts"] - 1))
                st["phase"] = "idle"
                self._log(now, "retry", f"step {st['next'] + 1} attempt {st['attempts']} failed: "
                                        f"{st['last_error']}")
                return
        if unpinned:
            self._log(now, "unpinned", f"{len(unpinned)} pins refused, e.g. {unpinned[0]}")
        st["phase"] = "issued"
        st["issued_at"] = now
        st["waiting"] = None
        self._log(now, "issue", f"step {st['next'] + 1}/{len(st['steps'])}: {step.describe()}")

    # -- reporting ------------------------------------------------------------------------------

    def progress(self) -> Tuple[float, str]:
        """(fraction done, one line) for the progress event."""
        st = self.state
        if st is None:
            return 0.0, ""
        steps = st["steps"]
        last = steps[-1]
        pools = sorted({s["pool"] for s in steps})
        what = ("balancing " + ", ".join(pools) if all(s["kind"] == "balance" for s in steps)
                else f"{', '.join(pools)} to pg_num {last['pg_num']}")
        line = f"pg_advisor: {what} (step {min(st['next'] + 1, len(steps))}/{len(steps)})"
        if st["status"] == "paused":
            line += ", paused"
        return st["next"] / len(steps), line

    def report(self) -> Dict[str, Any]:
        st = self.state
        if st is None:
            return {"plan": None}
        steps = [dict(s, description=Step.from_json(s).describe(),
                      state=("done" if i < st["next"] else
                             st["phase"] if i == st["next"] and st["status"] == "running" else "pending"))
                 for i, s in enumerate(st["steps"])]
        return {"plan": {k: v for k, v in st.items() if k != "steps"}, "steps": steps}

    # -- persistence ----------------------------------------------------------------------------

    def _need_active(self) -> Dict[str, Any]:
        if self.state is None or not self.active:
            raise AdvisorError.not_found("no plan is running or paused")
        return self.state

    def _log(self, now: float, event: str, detail: str) -> None:
        plan = self.state["id"] if self.state else None
        self.history.append({"time": now, "plan": plan, "event": event, "detail": detail})
        del self.history[:-HISTORY_MAX]

    def save(self) -> None:
        self._save(self.state, self.history)
