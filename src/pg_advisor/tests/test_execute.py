"""The step planner and the executor, against a small simulation of the mon's pool targets:
plans split and merge in chunks within the throttles, paced, blocked and resumed, and a
report that shares nothing with the running plan."""
import copy
import dataclasses
import datetime
from typing import Any, Dict

import numpy as np
import pytest

from pg_advisor.model import snapshot
from pg_advisor.crush.placement import Placer
from pg_advisor.model.errors import AdvisorError
from pg_advisor.execute.executor import Executor
from pg_advisor.execute.pacing import backfill_load, check_pacing, in_window
from pg_advisor.execute.planning import throttles
from pg_advisor.execute.steps import StepKind, StepPlanner, balance_step, step_load
from pg_advisor.model import options
from pg_advisor.model.distribution import object_copies
from pg_advisor.analysis.whatif import Change, simulate
from pg_advisor.execute.plan_state import Source

from .fakes import OPEN, T, FakeCeph, Store, acting_sets, crush_runs, run, start, tick_of


def test_growth_plan_splits_in_chunks_then_places_within_the_throttles(snap: snapshot.Snapshot) -> None:
    rbd = snap.pool_by_name("rbd")
    steps = StepPlanner(snap, T).plan(rbd, 64)
    assert (steps[-1].pg_num, steps[-1].pgp_num) == (64, 64)
    # a plan ends with balance rounds: done means even, not only placed as CRUSH likes
    assert steps[-1].kind == "balance" and steps[-1].shards_moving > 0
    pg, pgp = rbd.pg_num, rbd.pgp_num
    for s in steps[:-1]:
        if s.kind == "pg_num":      # splits move nothing and never more than max_splitting
            assert s.pgp_num == pgp and 0 < s.pg_num - pg <= T.max_splitting
        else:
            assert s.pg_num == pg and s.pgp_num > pgp
            assert s.misplaced <= T.misplaced_max and s.max_osd_backfills <= T.max_backfills_per_osd
            # the movement is what the what-if layer predicts for the same change
            at = dataclasses.replace(snap, pools=tuple(
                dataclasses.replace(p, pg_num=pg, pgp_num=pgp, pg_num_target=pg, pgp_num_target=pgp)
                if p.id == rbd.id else p for p in snap.pools))
            sim = simulate(at, Change(pool="rbd", pg_num=pg, pgp_num=s.pgp_num))
            assert sim["total"]["shards_moved"] == s.shards_moving
        pg, pgp = s.pg_num, s.pgp_num


def test_a_splits_chunk_is_the_clusters_fitted_to_what_its_pgp_num_step_can_place(
        snap: snapshot.Snapshot) -> None:
    rbd = snap.pool_by_name("rbd")
    # by default the chunk is mgr_max_pg_num_change, fitted; an operator's smaller chunk is
    # fixed; a larger one is capped (Ceph's mgr would hold pg_num there with pgp_num held)
    t = throttles(snap, options.make({"split_pinning": False}), 0.05)
    assert (t.max_splitting, t.fit_chunk) == (snap.config["mgr_max_pg_num_change"], True) == (128, True)
    assert throttles(snap, options.make({"max_pgs_splitting": 16}), 0.05).max_splitting == 16
    assert throttles(snap, options.make({"max_pgs_splitting": 4096}), 0.05).max_splitting == 128
    few = dataclasses.replace(snap, config={**snap.config, "mgr_max_pg_num_change": 32})
    assert throttles(few, options.make(), 0.05).max_splitting == 32

    def growth(t: Any) -> list:
        steps = StepPlanner(snap, t).plan(rbd, rbd.pg_num + 256)
        return [(s.kind, s.pg_num, s.pgp_num) for s in steps]
    # nothing binds: two chunks of 128, each one pg_num step and one pgp_num step
    loose = dataclasses.replace(t, misplaced_max=1.0, max_backfills_per_osd=1024)
    assert growth(loose) == [("pg_num", 160, 32), ("pgp_num", 160, 160), ("pg_num", 288, 160),
                             ("pgp_num", 288, 288), ("balance", 288, 288)]
    # the backfill limit binds on 6 OSDs: each chunk is what its pgp_num step places at once,
    # so pg_num is never split further than the data can follow (a fixed chunk of 128 splits
    # 128 and then places them over dozens of pgp_num steps)
    fitted = growth(t)
    fixed = growth(dataclasses.replace(t, fit_chunk=False))
    assert fixed[0] == ("pg_num", 160, 32) and fixed[2][0] == "pgp_num"
    chunks = [i for i, s in enumerate(fitted) if s[0] == "pg_num"]
    assert len(chunks) > 2 and all(fitted[i + 1] == ("pgp_num", fitted[i][1], fitted[i][1])
                                   for i in chunks)
    pg = rbd.pg_num
    for i in chunks:
        assert 0 < fitted[i][1] - pg < 128
        pg = fitted[i][1]


def test_shrink_plan_places_first_then_merges(snap: snapshot.Snapshot) -> None:
    steps = StepPlanner(snap, T).plan(snap.pool_by_name("rbd"), 16)
    kinds = [s.kind for s in steps]
    assert kinds == sorted(kinds, key=lambda k: k == "pg_num")     # all pgp steps first
    assert (steps[-1].pg_num, steps[-1].pgp_num) == (16, 16)


@pytest.mark.parametrize("target, code", [(0, -22), (1 << 20, -22)])
def test_bad_targets(snap: snapshot.Snapshot, target: int, code: int) -> None:
    with pytest.raises(AdvisorError) as e:
        StepPlanner(snap, T).plan(snap.pool_by_name("rbd"), target)
    assert e.value.code == code


def test_runs_to_the_end_each_step_issued_once(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    run(ex, ceph)
    assert store.state is not None and store.state["status"] == "done"
    rbd = ceph.pool("rbd")
    assert (rbd["pg_num"], rbd["pg_placement_num"]) == (64, 64)
    issued = [h["detail"].split(":")[0] for h in store.history if h["event"] == "issue"]
    # every step but the last (balance rounds, logged as rounds) issued exactly once
    assert len(issued) == len(set(issued)) == len(store.state["steps"]) - 1
    assert store.state["steps"][-1]["kind"] == "balance"
    # pgp_num never ran ahead of the step: each pg_num step was followed by its pgp_num
    pgp_vals = [int(c["val"]) for c in ceph.sent if c.get("var") == "pgp_num"]
    assert pgp_vals == sorted(pgp_vals)


def test_a_new_mgr_resumes_without_resending(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))            # step 1 sent...
    crashed = next(s for s in store.saves if s.get("phase") == "issuing")   # ...saved before
    sent = len(ceph.sent)
    ex2 = Executor([copy.deepcopy(crashed)], list(store.history), store.save)
    ex2.tick(tick_of(ceph.snap(), OPEN, ceph.send, 1.0))
    assert len(ceph.sent) == sent                          # not sent again
    assert any(h["event"] == "recovered" for h in store.history)
    run(ex2, ceph)
    assert store.state is not None and store.state["status"] == "done"


def test_a_failing_command_is_retried_later_and_reported(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    ceph.fail = "Error EPERM: pool has nopgchange set"
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))
    st = store.state
    assert st is not None and st["attempts"] == 1 and "nopgchange" in st["last_error"]
    n = len(ceph.sent)
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 1.0))             # too early: waits for the retry
    assert len(ceph.sent) == n and "retrying" in (store.state or {})["waiting"]
    ceph.fail = None
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 10.0))
    assert (store.state or {})["phase"] == "issued"
    assert any(h["event"] == "retry" for h in store.history)


def test_blockers_stop_it_and_say_why(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    ceph.dumps["osd_dump"]["flags"] += ",noautoscale"
    ceph.pool("rbd")["pg_autoscale_mode"] = "on"
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))
    assert ceph.sent == []
    why = " | ".join((store.state or {})["blockers"])
    # the flag turns pg_autoscaler off for every pool (as it reads it), and holds pg_num
    assert "noautoscale" in why and "pg_autoscaler manages it" not in why
    ceph.dumps["osd_dump"]["flags"] = ceph.dumps["osd_dump"]["flags"].replace(",noautoscale", "")
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.5))
    assert ceph.sent == [] and "pg_autoscaler manages it" in " | ".join((store.state or {})["blockers"])
    ceph.pool("rbd")["pg_autoscale_mode"] = "off"
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 1.0))
    assert ceph.sent and not (store.state or {})["blockers"]


def test_an_osd_down_blocks(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    ceph.dumps["osd_dump"]["osds"][2]["up"] = 0
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))
    assert ceph.sent == [] and "osd.2 is down" in " ".join((store.state or {})["blockers"])

    # an aborted plan is no longer blocked by anything: the report says so
    ex.abort(ceph.snap(), ceph.send, 1.0)
    plan = ex.report()["plan"]
    assert plan["status"] == "aborted" and plan["blockers"] == [] and plan["waiting"] is None


def test_interval_and_budget_pace_the_steps(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    slow = dataclasses.replace(OPEN, interval=30.0)
    ex.tick(tick_of(ceph.snap(), slow, ceph.send, 0.0))
    ceph.settle()
    ex.tick(tick_of(ceph.snap(), slow, ceph.send, 1.0))             # step 1 done, step 2 must wait
    assert "next step after" in (store.state or {})["waiting"]
    n = len(ceph.sent)
    ceph.dumps["pg_dump"]["pg_map"]["pg_stats_sum"]["stat_sum"]["num_objects_misplaced"] = 10 ** 9
    ex.tick(tick_of(ceph.snap(), slow, ceph.send, 100.0))
    assert len(ceph.sent) == n and "budget" in (store.state or {})["waiting"]


def test_backfills_in_flight_hold_the_next_step(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    limited = dataclasses.replace(OPEN, max_backfills=2)
    ex.tick(tick_of(ceph.snap(), limited, ceph.send, 0.0))            # the split (moves nothing)
    ceph.settle()
    stats = ceph.dumps["pg_dump"]["pg_map"]["pg_stats"]
    for s in stats[:3]:                                       # three PGs moving onto osd.5
        s["state"] = "active+remapped+backfilling"
        s["up"] = [o for o in s["up"] if o != 5][:2] + [5]
        s["acting"] = [o for o in s["acting"] if o != 5]
        s["acting"] = (s["acting"] + [x for x in range(6) if x not in s["acting"] + [5]])[:3]
    n = len(ceph.sent)
    ex.tick(tick_of(ceph.snap(), limited, ceph.send, 1.0))
    assert len(ceph.sent) == n and "backfilling" in (store.state or {})["waiting"]
    for s in stats[:3]:
        s["state"] = "active+clean"
    ex.tick(tick_of(ceph.snap(), limited, ceph.send, 2.0))
    assert len(ceph.sent) > n


@pytest.mark.parametrize("touched", [False, True])
def test_backfills_hold_a_step_only_on_the_osds_it_moves_pgs_into_or_out_of(
        dumps: Dict[str, Any], touched: bool) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 33)       # one child: its pgp_num step loads some OSDs, not all
    limited = dataclasses.replace(OPEN, max_backfills=2)
    ex.tick(tick_of(ceph.snap(), limited, ceph.send, 0.0))            # the split (moves nothing)
    ceph.settle()
    snap = ceph.snap()
    step = (store.state or {})["steps"][1]       # the pgp_num step after the split
    assert step["kind"] == "pgp_num" and step["max_osd_backfills"] > 0
    adds = step_load(snap, snap.pool_by_name("rbd"), step["pgp_num"])
    free = np.flatnonzero(adds == 0)
    assert free.size and adds.max() <= 2       # the fixture has an OSD the step leaves alone
    busy = int(np.argmax(adds) if touched else free[0])
    # three PGs of the other pool backfill into `busy`: over the limit of 2 there
    stats = [s for s in ceph.dumps["pg_dump"]["pg_map"]["pg_stats"] if s["pgid"].startswith("2.")]
    moving = [s for s in stats if busy not in s["up"] and busy not in s["acting"]][:3]
    assert len(moving) == 3
    for s in moving:
        s["state"] = "active+remapped+backfilling"
        s["up"] = s["up"][:-1] + [busy]
    n = len(ceph.sent)
    ex.tick(tick_of(ceph.snap(), limited, ceph.send, 1.0))
    waiting = (store.state or {})["waiting"]
    if touched:
        assert len(ceph.sent) == n and f"osd.{busy} has 3 PGs backfilling" in waiting
    else:
        assert len(ceph.sent) > n, waiting


def test_backfill_load_counts_the_ends_of_each_backfilling_pg_once_a_snapshot(dumps: Dict[str, Any]) -> None:
    ceph = FakeCeph(dumps)
    stats = ceph.dumps["pg_dump"]["pg_map"]["pg_stats"]
    for i, s in enumerate(stats[:12]):     # backfilling, waiting, and one only remapped
        s["state"] = ("active+remapped+backfilling", "active+remapped+backfill_wait",
                      "active+remapped")[i % 3]
        s["up"] = s["up"][:-1] + [next(o for o in range(6) if o not in s["up"])]
    snap = ceph.snap()
    want = np.zeros(snap.osds.count, np.int64)      # the ends, by sets, row by row
    for s in stats:
        if "backfill" in s["state"]:
            for o in set(s["up"]) ^ set(s["acting"]):
                want[o] += 1
    got = backfill_load(snap)
    assert want.sum() == 16 and got.tolist() == want.tolist()
    assert backfill_load(snap) is got and not got.flags.writeable     # kept on the snapshot


def test_pause_resume_abort(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    run(ex, ceph, ticks=3)
    ex.pause(5.0)
    n = len(ceph.sent)
    run(ex, ceph, ticks=5)
    assert len(ceph.sent) == n
    with pytest.raises(AdvisorError):
        ex.pause(6.0)
    ex.resume(7.0)
    snap = ceph.snap()
    pool = snap.pool_by_name("rbd")
    with pytest.raises(AdvisorError) as busy:      # one plan a pool's pg_num
        ex.start(StepPlanner(snap, T).plan(pool, 128), [pool], Source.APPLY, 8.0)
    assert busy.value.code == -16 and "changing pool rbd's pg_num" in busy.value.message
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 8.0))             # a step in flight...
    summary = ex.abort(ceph.snap(), ceph.send, 9.0)        # ...then abort
    rbd = ceph.pool("rbd")
    assert rbd["pg_num_target"] == rbd["pg_placement_num_target"], rbd
    assert "short of the plan's 64" in summary and not ex.active
    with pytest.raises(AdvisorError) as none:
        ex.abort(ceph.snap(), ceph.send, 10.0)
    assert none.value.code == -2


def test_pinned_steps_move_nothing_and_release_rounds_follow(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    snap = ceph.snap()
    rbd = snap.pool_by_name("rbd")
    steps = StepPlanner(snap, dataclasses.replace(T, pin=True)).plan(rbd, 64)
    assert steps[-1].kind == "balance" and all(s.pin for s in steps if s.kind == "pgp_num")
    assert all(s.pgs_moving <= T.max_splitting for s in steps if s.kind == "pgp_num")
    ex = Executor([], [], store.save)
    ex.start(steps, [rbd], Source.APPLY, 0.0)
    pinned = 0
    for i in range(400):
        held = acting_sets(ceph.snap())          # where each PG's data is (a child: its parent's)
        sent = len(ceph.sent)
        ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, float(i)))
        ceph.settle()
        after = Placer(ceph.snap()).map_pool(ceph.snap().pool_by_name("rbd"))
        if any(c.get("var") == "pgp_num_actual" for c in ceph.sent[sent:]):
            # a pinned pgp_num step went out in this tick: every PG maps onto its data
            pinned += 1
            assert all(set(held[after.pgid(r)]) == set(after.up_list(r)) for r in range(after.up.shape[0]))
            # its history line says how many pins went with it (what the qa test checks the
            # mon kept)
            n_items = sum(c["prefix"] == "osd pg-upmap-items" for c in ceph.sent[sent:])
            issue = [h for h in store.history if h["event"] == "issue"][-1]
            assert n_items > 0 and issue["detail"].endswith(f", {n_items} pinned"), (n_items, issue)
        if not ex.active:
            break
    assert pinned == sum(1 for s in steps if s.pin)
    assert store.state is not None and store.state["status"] == "done"
    rbd_after = ceph.pool("rbd")
    assert (rbd_after["pg_num"], rbd_after["pg_placement_num"]) == (64, 64)
    assert any(h["event"] == "round" for h in store.history)


def test_no_pins_beside_the_builtin_balancer(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    snap = ceph.snap()
    rbd = snap.pool_by_name("rbd")
    ex = Executor([], [], store.save)
    ex.start(StepPlanner(snap, dataclasses.replace(T, pin=True)).plan(rbd, 64), [rbd], Source.APPLY, 0.0)
    busy = dataclasses.replace(OPEN, balancer_active=True)
    run(ex, ceph, busy, ticks=10)
    st = store.state or {}
    assert st["next"] == 1 and any("built-in balancer" in b for b in st["blockers"])
    assert not any(c.get("var") == "pgp_num_actual" or "pgid" in c for c in ceph.sent)


def test_window() -> None:
    p = dataclasses.replace(OPEN, window_begin="22:00", window_end="06:00", window_days="sat,sun")
    sat_23 = datetime.datetime(2026, 11, 21, 23, 0).timestamp()     # a Saturday
    sat_12 = datetime.datetime(2026, 11, 21, 12, 0).timestamp()
    mon_23 = datetime.datetime(2026, 11, 23, 23, 0).timestamp()
    assert in_window(p, sat_23) and not in_window(p, sat_12) and not in_window(p, mon_23)
    for bad in (dict(window_begin="25:00"), dict(window_end="7"), dict(window_days="monday")):
        with pytest.raises(AdvisorError):
            check_pacing(dataclasses.replace(OPEN, **bad))


def test_with_the_builtin_balancer_active_the_balance_step_is_left_to_it(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)                     # plain steps: no pins to hold back
    run(ex, ceph, dataclasses.replace(OPEN, balancer_active=True))
    st = store.state or {}
    assert st["status"] == "done", st
    assert not any("pgid" in c for c in ceph.sent)          # no item beside Ceph's balancer
    assert "left to Ceph's balancer" in store.history[-2]["detail"], store.history[-2:]


def test_a_report_shares_nothing_with_the_running_plan(dumps: Dict[str, Any]) -> None:
    # the module renders and serves it after letting go of the lock: no copy is made there
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))
    assert ex.state is not None
    before = ex.state.to_json()
    r = ex.report()
    assert "steps" not in r["plan"] and "pins" not in r["plan"]
    for p in r["plan"]["pools"].values():
        p["expect"].append(999)
        p["goal"] = -1
    r["plan"]["drain"].append(7)
    for s in r["steps"]:
        s["pg_num"] = -1
    assert ex.state.to_json() == before


def test_a_split_plan_maps_the_pgs_each_step_moves_not_the_pool(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # at 320,000 PGs a plan of 128 splits that mapped the whole pool for each (2.7 s a map,
    # some 700 of them) would hold the mgr's command thread for over 10 minutes: a step's
    # movement comes from the PGs whose placement seed it changes
    for p in dumps["osd_dump"]["pools"]:
        if p["pool_name"] == "rbd":
            for k in ("pg_num", "pg_placement_num", "pg_num_target", "pg_placement_num_target"):
                p[k] = 4096
    snap = snapshot.load(dumps["osd_dump"], dumps["crush"], None, dumps["df"],
                         settings=snapshot.Settings(mon_max_pg_per_osd=10000))
    rbd = snap.pool_by_name("rbd")
    mapped = crush_runs(monkeypatch)
    steps = StepPlanner(snap, T).plan(rbd, 4096 + 4 * T.max_splitting)
    assert [s.kind for s in steps].count(StepKind.PG_NUM) == 4
    # one map of the pool at the target (what stays uneven), the rest a few PGs per step
    assert sum(mapped) < 2 * (4096 + 4 * T.max_splitting), (len(mapped), sum(mapped))
    # up_rows gives what map_pool gives for those rows, items and down OSDs included
    placer = Placer(snap)
    item_ps = next(int(k.split(".")[1], 16) for k in snap.pg_upmap_items if k.startswith(f"{rbd.id}."))
    rows = np.array(sorted({item_ps, 1, 77, 4095, 3000}), dtype=np.int64)
    for pgp in (4096, 2048, 3001):
        whole = placer.map_pool(rbd, 4096, pgp).up
        assert np.array_equal(placer.up_rows(rbd, pgp, rows), whole[rows]), pgp


def test_an_auto_balance_plan_rounds_over_every_pool_as_the_check_that_started_it() -> None:
    # every pool within 1 PG of its share, the OSDs' totals 1.1 PGs off (fixtures/
    # thrash_total): auto mode's check over all pools finds moves, all of pool ratio's; a
    # plan of ratio alone would balance ratio alone (a run of one pool has no total to
    # even) and end empty, and another begin a minute later, for ever
    from pg_advisor.balance.balancer import Balancer
    from pg_advisor.execute.driver import Driver
    from pg_advisor.model.options import make
    from pg_advisor_testkit.dumps import read_case
    from .fakes import context

    def total_off(snap: snapshot.Snapshot) -> float:
        """The OSDs' totals from CRUSH and the items (the fake's PG stats do not follow)."""
        t = Balancer(snap).total
        return float(np.abs(t.counts - t.share)[t.share > 0].max())
    ceph = FakeCeph(read_case("thrash_total"))
    assert total_off(ceph.snap()) > 1.1
    kv: Dict[str, Any] = {}
    drv = Driver(kv.get, kv.__setitem__, 0.0)
    opts = make({"mode": "auto"})
    drv.tick(context(ceph, opts, 0.0))
    st = drv.executor.state
    assert st is not None and st.source == Source.AUTO
    assert set(st.pools) == {p.name for p in ceph.snap().pools}      # every pool, for the total
    assert {s.pool for s in st.steps} == {"ratio"}                   # steps where PGs move
    for minute in range(1, 30):
        if not drv.executor.open:
            break
        drv.tick(context(ceph, opts, minute * 60.0))
    assert [c for c in ceph.sent if c["prefix"] == "osd pg-upmap-items"]
    assert total_off(ceph.snap()) <= 1.0


@pytest.mark.parametrize("state", ["active+undersized+degraded", "unknown", "peering",
                                   "active+recovering+degraded", "down", "stale+active+clean"])
def test_nothing_starts_while_a_pg_is_not_active_and_whole(dumps: Dict[str, Any], state: str) -> None:
    # design.rst's invariant: no pg_num step of a pool goes out while one of its PGs is
    # inactive, degraded or unknown; a PG of another pool does not hold it (gates.py)
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    stats = ceph.dumps["pg_dump"]["pg_map"]["pg_stats"]
    other = next(s for s in stats if s["pgid"].startswith("2."))
    other["state"] = state
    mine = next(s for s in stats if s["pgid"].startswith("1."))
    was = mine["state"]
    mine["state"] = state
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))
    assert ceph.sent == []
    why = " | ".join((store.state or {})["blockers"])
    assert f"1 PGs of pool rbd are not active and whole (e.g. {mine['pgid']} {state})" in why, why
    mine["state"] = was
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 1.0))
    assert ceph.sent and not (store.state or {})["blockers"]


@pytest.mark.parametrize("state, holds", [("active+undersized+degraded", False), ("unknown", True),
                                          ("peering", True), ("stale+active+clean", True)])
def test_a_balance_round_waits_for_its_pools_inactive_pgs_only(dumps: Dict[str, Any], state: str,
                                                               holds: bool) -> None:
    # a round moves no PG that is not whole (pool_state.healthy), so only an inactive PG of
    # the plan's pools holds it; its pgid is named
    ceph, store = FakeCeph(dumps), Store()
    ex = Executor([], [], store.save)
    rbd = ceph.snap().pool_by_name("rbd")
    ex.start([balance_step(rbd, rbd.pg_num, rbd.pgp_num, 16, object_copies(ceph.snap()))], [rbd],
             Source.APPLY, 0.0)
    stats = ceph.dumps["pg_dump"]["pg_map"]["pg_stats"]
    mine = next(s for s in stats if s["pgid"].startswith("1."))
    mine["state"] = state
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))
    why = " | ".join((store.state or {})["blockers"])
    assert (f"1 PGs of pool rbd are not active (e.g. {mine['pgid']} {state})" in why) == holds, why
