"""Nothing an operator types, nothing in the mgr store and no change to a pool can take the
real ceph-mgr down or make a plan act on the wrong pool."""
import json
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from ..cluster import Cluster, wait_until

STORE = "mgr/pg_advisor/"          # the module's store, as config-keys
EXTREMES = ("0", "-1", str(2 ** 31), str(10 ** 8), str(10 ** 12))
MIB = 1 << 20


def mgr_pid(c: Cluster) -> int:
    return int((c.dir / "run" / "mgr.x.pid").read_text())


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def health(c: Cluster) -> Dict[str, Any]:
    return dict(c.json("health", "detail").get("checks", {}))


# (the command with N where the extreme goes, the values that are valid there)
NUMBER_ARGS: List[Tuple[List[str], Tuple[str, ...]]] = [
    (["apply", "--pool", "rbd", "--pg-num", "N"], ()),
    (["apply", "--pool", "rbd", "--pg-num", "N", "--dry-run"], ()),
    (["simulate", "rbd", "--pg_num", "N"], ()),
    (["simulate", "rbd", "--pgp_num", "N"], ()),
    (["simulate", "--out-osd", "N"], ("0",)),                      # osd.0 exists
    (["simulate", "--reweight", "N", "--weight", "0.5"], ("0",)),
    (["simulate", "--reweight", "0", "--weight", "N"], ("0",)),    # weight 0 = out
    (["balance", "--max-items", "N", "--dry-run"], ()),
    (["crush-reweight", "--osd", "N", "--weight", "0.01", "--dry-run"], ("0",)),
    (["crush-reweight", "--osd", "0", "--weight", "N", "--dry-run"], ("0",)),
]


def test_extreme_numbers_get_a_clear_error_and_the_mgr_stays_small(
        cluster: Cluster, capsys: pytest.CaptureFixture) -> None:
    c = cluster
    c.wait_clean()
    fp = c.fingerprint()
    pid = mgr_pid(c)
    base = rss(pid)
    rows = []
    for template, valid in NUMBER_ARGS:
        for n in EXTREMES:
            args = [n if a == "N" else a for a in template]
            t = time.monotonic()
            code, out, err = c.run("pg-advisor", *args, timeout=120)
            took = time.monotonic() - t
            grown = rss(mgr_pid(c)) - base
            rows.append((" ".join(args), code, took, grown, err.strip()))
            assert mgr_pid(c) == pid, f"ceph-mgr restarted after {args}"
            assert grown < 200 * MIB, f"ceph-mgr grew by {grown / MIB:.0f} MiB after {args}"
            if n in valid:
                assert code == 0, (args, err)
                continue
            assert code in (22, 2), (args, code, err)     # EINVAL / ENOENT, never EIO
            assert err.startswith("Error E") and "internal error" not in err and len(err.splitlines()) == 1
            assert took < 30, (args, took)
    assert c.fingerprint() == fp                          # and nothing changed
    with capsys.disabled():                               # the figures, for the record
        print(f"\nceph-mgr pid {pid} throughout; RSS {base / MIB:.0f} MiB before")
        for line, code, took, grown, err in rows:
            print(f"  {line:55s} exit {code:3d} {took:5.2f} s  RSS {grown / MIB:+7.1f} MiB  {err[:70]}")
        print(f"  slowest answer {max(r[2] for r in rows):.2f} s, largest RSS growth "
              f"{max(r[3] for r in rows) / MIB:.1f} MiB")


def test_an_option_value_the_mon_lets_through_is_reported_not_fatal(cluster: Cluster) -> None:
    c = cluster
    with c.options("mgr", {"misplaced_budget": "nan"}):    # the mon takes nan
        wait_until(lambda: "PG_ADVISOR_OPTION_INVALID" in health(c), 60, "the option warning")
        assert "misplaced_budget" in json.dumps(health(c)["PG_ADVISOR_OPTION_INVALID"])
        assert c.advisor("status")["pools"]
    wait_until(lambda: "PG_ADVISOR_OPTION_INVALID" not in health(c), 60, "the warning to clear")


@pytest.mark.parametrize("raw", ["{not json", "{}", "[1]", json.dumps({"version": 1, "id": "old"})],
                         ids=["not-json", "empty-object", "list", "older-version"])
def test_unreadable_plan_state_is_reported_and_abort_clears_it(cluster: Cluster, raw: str) -> None:
    c = cluster
    c.ceph("config-key", "set", STORE + "exec_state", raw)
    c.ceph("mgr", "fail")                       # a new mgr reads it from the store
    wait_until(lambda: "PG_ADVISOR_PLAN_ERROR" in health(c), 90, "PG_ADVISOR_PLAN_ERROR")
    assert "unreadable" in json.dumps(health(c)["PG_ADVISOR_PLAN_ERROR"])
    assert c.advisor("status")["pools"]   # it runs on
    fp = c.fingerprint()
    code, _, err = c.run("pg-advisor", "apply", "--pool", "rbd", "--pg-num", "64")
    assert code == 16 and "abort" in err
    assert c.fingerprint() == fp
    out = c.ceph("pg-advisor", "abort")
    assert "cleared" in out
    wait_until(lambda: "PG_ADVISOR_PLAN_ERROR" not in health(c), 60, "the error to clear")
    assert c.run("config-key", "get", STORE + "exec_state")[0] != 0
    assert raw[:20] in c.ceph("config-key", "get", STORE + "exec_corrupt").replace('\\"', '"')


@pytest.fixture
def blocked_plan(cluster: Cluster) -> Iterator[Cluster]:
    """A plan on pool `held` (8 -> 32 PGs) that norebalance keeps from its first step."""
    c = cluster
    with c.pool("held", 8), c.options("mgr", {"poll_interval": 1}):
        c.wait_clean()
        c.ceph("osd", "set", "norebalance")
        try:
            c.ceph("pg-advisor", "apply", "--pool", "held", "--pg-num", "32")
            wait_until(lambda: bool(c.plan().get("blockers")), 30, "the plan to be blocked")
            yield c
        finally:
            c.run("osd", "unset", "norebalance")
            c.abort_plan()


def held(c: Cluster) -> Dict[str, Any]:
    return c.pool_detail("held")


def test_a_manual_balance_is_refused_while_a_plan_runs(blocked_plan: Cluster) -> None:
    c = blocked_plan
    fp = c.fingerprint()
    code, _, err = c.run("pg-advisor", "balance")
    assert code == 16 and "owns the pool's upmap items" in err
    assert c.fingerprint() == fp


def test_a_recreated_pool_never_gets_the_old_plan(blocked_plan: Cluster) -> None:
    c = blocked_plan
    old_id = held(c)["pool_id"]
    c.remove_pool("held", wait=False)
    c.create_pool("held", 8)
    c.ceph("osd", "unset", "norebalance")            # nothing holds the plan back now
    # the deleted pool drops out of the plan, whose only pool it was: the plan is done
    wait_until(lambda: c.plan().get("status") == "done", 60, "the plan to end")
    drops = [h["detail"] for h in c.advisor("history")["history"] if h["event"] == "drop"]
    # (a tick between the two commands sees the pool gone, a later one also the new id)
    assert drops and drops[-1].startswith(f"pool held (id {old_id}) was deleted"), drops
    assert held(c)["pool_id"] != old_id
    steps = c.advisor("progress")["steps"]
    assert {s["state"] for s in steps} == {"pool deleted"}
    time.sleep(5)                                     # several ticks: still nothing sent
    p = held(c)
    assert (p["pg_num_target"], p["pg_placement_num_target"]) == (8, 8)
    assert "PG_ADVISOR_PLAN_STOPPED" not in health(c)


def test_an_operators_pg_num_change_stops_the_plan_and_stands(blocked_plan: Cluster) -> None:
    c = blocked_plan
    c.ceph("osd", "pool", "set", "held", "pg_num", "16")
    c.ceph("osd", "unset", "norebalance")
    wait_until(lambda: c.plan().get("status") == "stopped", 60, "the plan to stop")
    assert "changed outside the plan to 16/16" in c.plan()["stopped_why"]
    c.ceph("pg-advisor", "abort")
    c.wait_clean()
    p = held(c)
    assert (p["pg_num"], p["pg_placement_num"]) == (16, 16)        # the operator's, not ours


def up_sets(c: Cluster, pool: str) -> Dict[str, List[int]]:
    return {pg: sorted(up) for pg, up in c.up_sets(pool).items()}


def test_a_failover_between_pgp_num_and_its_pins_resends_the_pins(cluster: Cluster) -> None:
    """The old mgr set pgp_num (target and actual) and died before the pins: the new one
    must send them, so the remapped PGs stay where their data is."""
    c = cluster
    # backfill slow enough that the PGs are still where their data is when the pins come
    with c.pool("burst", 8), c.config("osd", "osd_recovery_sleep", "2"), \
            c.options("mgr", {"split_pinning": "true", "poll_interval": 1, "step_interval": 3600}):
        subprocess.run(["rados", "-p", "burst", "bench", "3", "write", "-t", "8", "-b", "4096",
                        "--no-cleanup"], env=c.env, check=True, capture_output=True, timeout=120)
        c.wait_clean()
        try:
            r = c.advisor("apply", "--pool", "burst", "--pg-num", "16")
            k = next(i for i, s in enumerate(r["steps"]) if s["pin"])
            step = r["steps"][k]
            # the split goes out at once; the pinned pgp_num step waits for step_interval
            wait_until(lambda: c.plan().get("next") == k and c.plan().get("phase") == "idle", 120,
                       "the plan to reach its pinned step")
            before = up_sets(c, "burst")
            assert sorted(map(len, before.values())) == [3] * 16, before
            c.ceph("mgr", "module", "disable", "pg_advisor")
            wait_until(lambda: c.run("pg-advisor", "progress")[0] != 0, 60, "the module to stop")
            # what the old mgr did: saved the step as issuing, sent pgp_num, and no pins
            # (exec_state is the index of the plans; each plan's state is exec_plan.<id>)
            key = STORE + "exec_plan." + r["plan"]
            state = json.loads(c.ceph("config-key", "get", key))
            state.update(status="running", phase="issuing")
            c.ceph("config-key", "set", key, json.dumps(state))
            c.ceph("osd", "pool", "set", "burst", "pgp_num", str(step["pgp_num"]))

            def placed() -> bool:
                # Ceph's own mgr, on a map from before the target changed, may set
                # pgp_num_actual one PG past the old value right after this (seen: 9 of 16,
                # its one child's set the same as its parent's): set it until it holds
                c.ceph("osd", "pool", "set", "burst", "pgp_num_actual", str(step["pgp_num"]))
                time.sleep(3)       # past the mgr's next tick (2 s)
                return c.pool_detail("burst")["pg_placement_num"] == step["pgp_num"]
            wait_until(placed, 60, "pgp_num_actual to hold")
            moved = {k for k, v in up_sets(c, "burst").items() if v != before[k]}
            assert moved, "the pgp_num change remapped nothing: the test shows nothing"
            # step_interval stays an hour: it holds the next step (the balance rounds that
            # would move PGs again), not the rest of this one
            c.ceph("mgr", "module", "enable", "pg_advisor")
            try:
                wait_until(lambda: c.run("pg-advisor", "progress")[0] == 0 and
                           (c.plan().get("next", 0) > k or c.plan().get("phase") == "issued"), 90,
                           "the new mgr to take the step")
            except TimeoutError as e:
                raise AssertionError(f"{e}: {c.run('pg-advisor', 'progress', '-f', 'json')}") from None
            # the new mgr pinned every remapped PG back onto the OSDs that hold its data
            try:
                wait_until(lambda: up_sets(c, "burst") == before, 60, "the PGs back where their data is")
            except TimeoutError as e:
                raise AssertionError(f"{e}: before {before}, moved {moved}, now {up_sets(c, 'burst')}, "
                                     f"items {c.json('osd', 'dump')['pg_upmap_items']}, "
                                     f"history {c.ceph('pg-advisor', 'history')}") from None
            pool_id = c.pool_id("burst")
            pinned = {u["pgid"] for u in c.json("osd", "dump")["pg_upmap_items"]
                      if u["pgid"].startswith(f"{pool_id}.")}
            assert moved <= pinned, (moved, pinned)
            events = [h for h in c.advisor("history")["history"] if h["plan"] == r["plan"]]
            assert any(h["event"] == "issue" and h["detail"].startswith(f"step {k + 1}/")
                       for h in events), events
        finally:
            c.run("mgr", "module", "enable", "pg_advisor")
            wait_until(lambda: c.run("pg-advisor", "progress")[0] == 0, 60, "the module")
            c.abort_plan()


def command_events(c: Cluster, intent: str) -> List[str]:
    return [h["detail"] for h in c.advisor("history")["history"]
            if h["event"] == "command" and f"(queued as {intent})" in h["detail"]]


def test_a_command_past_command_wait_is_queued_and_the_serve_thread_does_it(cluster: Cluster) -> None:
    # the handler records the command and answers at once; the serve thread reads the
    # cluster and acts, and the history gives what it did (mgr/intents.py)
    c = cluster
    with c.pool("queued", 8), c.options("mgr", {"command_wait": 0}):
        c.wait_clean()
        fp = c.fingerprint()
        bad = c.advisor("apply", "--pool", "no-such-pool", "--pg-num", "16")
        assert bad["queued"] is True and bad["command"] == "apply", bad
        wait_until(lambda: bool(command_events(c, bad["intent"])), 60, "the bad command's outcome")
        said = command_events(c, bad["intent"])[0]
        assert "refused" in said and "no-such-pool" in said, said
        assert c.fingerprint() == fp, "a refused command changed something"
        code, out, err = c.run("pg-advisor", "apply", "--pool", "queued", "--pg-num", "16")
        assert code == 0 and "queued as" in out, (out, err)      # the plain text says so too
        intent = out.split("queued as ")[1].split(";")[0]
        wait_until(lambda: bool(command_events(c, intent)), 60, "the apply's outcome")
        said = command_events(c, intent)[0]
        assert " done: plan " in said, said
        plan = said.split(" done: plan ")[1]
        assert c.advisor("progress", "--plan", plan)["plan"]["id"] == plan
        stop = c.advisor("abort", "--plan", plan)
        assert stop["queued"] is True
        wait_until(lambda: bool(command_events(c, stop["intent"])), 60, "the abort's outcome")
        assert c.advisor("progress", "--plan", plan)["plan"]["status"] == "aborted"
