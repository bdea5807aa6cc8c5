"""Throttled execution on the real cluster: `ceph pg-advisor apply` and its controls."""
import os
import re
import signal
import subprocess
import time
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from ..cluster import Cluster, Writer, wait_until

FAST = {"step_interval": 0, "poll_interval": 1}


def history(c: Cluster, plan: str, *events: str) -> List[Dict[str, Any]]:
    """The plan's history (those events only, if named)."""
    return [h for h in c.advisor("history")["history"]
            if h["plan"] == plan and (not events or h["event"] in events)]


def done(c: Cluster) -> bool:
    return c.plan().get("status") == "done"


@pytest.fixture
def pool(cluster: Cluster) -> Iterator[Cluster]:
    c = cluster
    with c.pool("grow", 16), c.options("mgr", FAST):
        c.wait_clean()
        yield c
        c.abort_plan()


def issued_steps(c: Cluster, plan: str) -> List[str]:
    return [h["detail"].split(":")[0] for h in history(c, plan, "issue")]


def sent_steps(c: Cluster, plan: str) -> List[int]:
    """The step numbers the plan sent: "issue" events, and "recovered" ones (the old mgr
    sent the step and died before it logged it; the new one found it in the cluster and
    did not send it again), one each."""
    return [int(h["detail"].split()[1].split("/")[0]) for h in history(c, plan, "issue", "recovered")]


def test_doubling_with_a_client_writing_survives_a_mgr_failover(pool: Cluster) -> None:
    c = pool
    first = int(c.json("osd", "dump")["epoch"])
    with c.options("mgr", {"split_pinning": "false"}), Writer(c, "grow") as w:     # plain steps here
        r = c.advisor("apply", "--pool", "grow", "--pg-num", "32")
        plan = r["plan"]
        steps = len(r["steps"])
        assert steps >= 3 and r["steps"][0]["kind"] == "pg_num"
        # the plan is an event in `ceph -s` while it runs
        seen: List[str] = []

        def event_shown() -> bool:
            evs = c.json("status").get("progress_events", {})
            seen.extend(e["message"] for e in evs.values())
            return any("pg_advisor" in m for m in seen)
        wait_until(event_shown, 60, "the plan's progress event in ceph -s")
        # fail the mgr once a step is in flight: the new one resumes, no step is sent twice
        wait_until(lambda: len(issued_steps(c, plan)) >= 2, 120, "two steps issued")
        c.ceph("mgr", "fail")
        wait_until(lambda: done(c), 600, "the plan to finish", step=3)
        time.sleep(2)
    assert w.failed == [] and w.ok > 100, (w.ok, w.failed[:3])
    sent = sent_steps(c, plan)
    # every step but the last (balance rounds, logged as rounds) sent exactly once; a step
    # the failover caught between its commands and its log line is "recovered", not sent
    # again (counting "issue" events alone would miss it)
    assert r["steps"][-1]["kind"] == "balance"
    assert sorted(sent) == list(range(1, steps)), sent
    c.wait_clean()
    p = c.pool_detail("grow")
    assert (p["pg_num"], p["pg_placement_num"]) == (32, 32)
    assert not any("pg_advisor" in e["message"]
                   for e in c.json("status").get("progress_events", {}).values())
    # prime_pg_temp (on by default): a pgp_num step brings, in its own epoch, a pg_temp for
    # each PG it remaps onto the OSDs with its data, so hardly a PG it remaps changes its
    # acting primary (unprimed: 14 here, each remapped PG's primary going to an OSD without
    # its data and back an epoch later). A step with a split child waits for its stats. Not
    # counted: a PG moved by an earlier step whose backfill ends in the same epoch (its
    # pg_temp goes, its up set stays): seen twice in CI, where backfill is slower
    pgp = {e: next(p["pg_placement_num"] for p in c.json("osd", "dump", str(e))["pools"]
                   if p["pool_name"] == "grow")
           for e in range(first, int(c.json("osd", "dump")["epoch"]) + 1)}
    raised = [e for e in pgp if e - 1 in pgp and pgp[e] > pgp[e - 1]]
    assert raised
    changed = c.primary_changes(c.pool_id("grow"), raised, remapped_only=True)
    print("primary changes in pgp_num epochs:", changed)
    print("all primary changes then:", c.primary_changes(c.pool_id("grow"), raised))
    why = [(e, pg, {x: c.pg_temp(x, pg) for x in (e - 1, e, e + 1)}) for e, pg, _, _ in changed]
    print("their pg_temp in the epochs around:", why)
    print("history:", [(h["event"], h["detail"]) for h in history(c, plan)])
    assert len(changed) <= 1, (changed, why)


def test_a_refused_command_is_retried_and_an_osd_down_blocks(pool: Cluster) -> None:
    c = pool
    c.ceph("osd", "pool", "set", "grow", "nopgchange", "true")
    plan = c.advisor("apply", "--pool", "grow", "--pg-num", "32")["plan"]

    def failing() -> bool:
        health = c.json("health", "detail")["checks"]
        return "PG_ADVISOR_STEP_FAILED" in health and (c.plan()["attempts"] or 0) >= 1
    wait_until(failing, 60, "the refused step to be reported")
    assert "nopgchange" in c.plan()["last_error"]
    c.ceph("osd", "pool", "set", "grow", "nopgchange", "false")
    wait_until(lambda: len(issued_steps(c, plan)) >= 1, 120, "the step to go through on retry")
    assert history(c, plan, "retry")
    # an OSD the pool's PGs are on goes down mid-plan: no new step until it is back
    c.ceph("pg-advisor", "pause")
    osd = c.json("pg", "map", f"{c.pool_id('grow')}.0")["up"][-1]
    pid = int((c.dir / "run" / f"osd.{osd}.pid").read_text())
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: any(o["osd"] == osd and not o["up"] for o in c.json("osd", "dump")["osds"]),
               60, f"osd.{osd} to be marked down")
    c.ceph("pg-advisor", "resume")

    def blocked() -> bool:
        checks = c.json("health", "detail")["checks"]
        return "PG_ADVISOR_BLOCKED" in checks and bool(c.plan()["blockers"])
    wait_until(blocked, 60, "the plan to say it is blocked")
    before = len(issued_steps(c, plan))
    time.sleep(5)
    assert len(issued_steps(c, plan)) == before
    subprocess.run(["ceph-osd", "-i", str(osd)], env=c.env, check=True, timeout=60)
    wait_until(lambda: done(c), 600, f"the plan to finish after osd.{osd} returns", step=3)
    # the mon shows the mgr's checks a report later
    wait_until(lambda: "PG_ADVISOR_BLOCKED" not in c.json("health", "detail")["checks"], 60,
               "the blocked check to clear")


def test_pinned_split_keeps_children_where_their_data_is(pool: Cluster) -> None:
    c = pool
    subprocess.run(["rados", "-p", "grow", "bench", "3", "write", "-t", "8", "-b", "4096", "--no-cleanup"],
                   env=c.env, check=True, capture_output=True, timeout=120)
    pool_id = c.pool_id("grow")
    first = int(c.json("osd", "dump")["epoch"])
    with c.options("mgr", {"split_pinning": "true"}), Writer(c, "grow") as w:
        r = c.advisor("apply", "--pool", "grow", "--pg-num", "32")
        pinned = [s for s in r["steps"] if s["pin"]]
        assert pinned and r["steps"][-1]["kind"] == "balance"
        wait_until(lambda: done(c), 600, "the pinned plan to finish", step=1)
    assert w.failed == [] and w.ok > 100
    # how many of the pool's PGs the mon kept pinned at once: every map epoch of the plan
    # read back (polling once a second can miss one: the rounds release pins that fast)
    last = int(c.json("osd", "dump")["epoch"])
    maps = c.mon_commands([{"prefix": "osd dump", "epoch": e} for e in range(first, last + 1)])
    most = max(sum(1 for u in m["pg_upmap_items"] if u["pgid"].startswith(f"{pool_id}.")) for m in maps)
    # the mon kept the pins of (at least) the first pinned step: it checked them against
    # the map with the new pgp_num, not the old one. The pins are computed when the step
    # goes out, from where the PGs are then: compare with what it sent, not with the plan's
    # guess at apply time (the two can differ: 15 sent against 16 predicted)
    issues = [h["detail"] for h in history(c, r["plan"], "issue")]
    sent = [int(m.group(1)) for m in map(re.compile(r", (\d+) pinned$").search, issues) if m]
    print("pins predicted:", [s["pgs_moving"] for s in pinned], "sent:", sent, "most kept at once:", most)
    assert len(sent) == len(pinned) and most >= sent[0] > 0, (most, sent, issues)
    assert history(c, r["plan"], "round")
    c.wait_clean()
    p = c.pool_detail("grow")
    assert (p["pg_num"], p["pg_placement_num"]) == (32, 32)


# how many one-PG splits the next test makes: a plan that said done before its data moved
# did so in 3 of 5 such splits on Pacific (issue 58); 10 for the closing figure
SPLITS = int(os.environ.get("PG_ADVISOR_SPLIT_REPEATS", "2"))


def settled_apart(c: Cluster, pool: str) -> Tuple[bool, str]:
    """The pool's two PGs active+clean (the PG stats), each on one OSD of its own with
    acting = up (the mon's map: no pg_temp left), and why not."""
    stats = c.json("pg", "ls-by-pool", pool)
    stats = stats.get("pg_stats", stats) if isinstance(stats, dict) else stats
    states = {s["pgid"]: s["state"] for s in stats}
    pool_id = c.pool_id(pool)
    maps = c.mon_commands([{"prefix": "pg map", "pgid": f"{pool_id}.{i}"} for i in range(2)])
    ups = [m["up"] for m in maps]
    ok = (len(states) == 2 and all(st.startswith("active+clean") for st in states.values())
          and all(m["up"] == m["acting"] for m in maps) and len(ups[0]) == len(ups[1]) == 1
          and ups[0] != ups[1])
    return ok, f"states {states}, up/acting {[(m['up'], m['acting']) for m in maps]}"


def test_a_split_of_one_pg_is_done_only_once_its_two_pgs_are_clean_on_two_osds(cluster: Cluster) -> None:
    """The experiment of "The latency of Ceph placement group splitting", small: one PG of
    size 1 split in two, a client writing. The child is half the pool's data, far over the
    misplaced budget; with nothing else misplaced the balance round still moves it, and the
    plan is done only once the pool is even: the two PGs clean on two OSDs when `progress`
    first says done, not some seconds later."""
    c = cluster
    left: List[int] = []          # the backfill's bytes left, as progress showed them

    def finished() -> bool:
        r = c.advisor("progress")
        left.extend([r["backfill"]["bytes_left"]] if r.get("backfill") else [])
        return (r.get("plan") or {}).get("status") == "done"
    with c.config("mon", "mon_allow_pool_size_one", "true"), \
            c.options("mgr", {**FAST, "split_pinning": "true"}):
        for n in range(SPLITS):
            with c.pool("one", 1):
                c.ceph("osd", "pool", "set", "one", "size", "1", "--yes-i-really-mean-it")
                try:
                    subprocess.run(["rados", "-p", "one", "bench", "3", "write", "-t", "8", "-b", "4096",
                                    "--no-cleanup"], env=c.env, check=True, capture_output=True,
                                   timeout=120)
                    c.wait_clean()
                    with Writer(c, "one") as w:
                        r = c.advisor("apply", "--pool", "one", "--pg-num", "2")
                        assert [s["kind"] for s in r["steps"]] == ["pg_num", "pgp_num", "balance"], r
                        wait_until(finished, 300, f"split {n + 1}/{SPLITS} to finish", step=0.5)
                        ok, why = settled_apart(c, "one")
                    assert ok, f"split {n + 1}/{SPLITS}: done while {why}; {history(c, r['plan'])}"
                    assert w.failed == [] and w.ok > 0, (w.ok, w.failed[:3])
                    assert history(c, r["plan"], "round"), c.advisor("history")
                finally:
                    c.abort_plan()
    # the child's move copied half the pool, which progress showed while it was left
    assert left and max(left) > 0, left


@pytest.mark.parametrize("args, code, message", [
    (["apply", "--pool", "nope", "--pg-num", "64"], 2, "does not exist"),
    (["apply", "--pg-num", "64"], 22, "needs --pool"),
    (["apply", "--pool", "rbd", "--pg-num", "0"], 22, "between 1 and"),
    (["pause"], 2, "no plan"),
    (["abort"], 2, "no plan"),
    (["mode", "sideways"], 22, "sideways"),
])
def test_bad_arguments_change_nothing(cluster: Cluster, args: List[str], code: int, message: str) -> None:
    fp = cluster.fingerprint()
    got, _, err = cluster.run("pg-advisor", *args)
    assert got == code and message in err, (got, err)
    assert cluster.fingerprint() == fp
