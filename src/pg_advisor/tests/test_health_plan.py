"""The sizing health checks: raised only where a change presses and pg_autoscaler is silent,
cleared when the pools match, and the limits' checks."""
import copy
import dataclasses
from typing import Any, Dict

from pg_advisor.model import options, snapshot
from pg_advisor.analysis.plan import plan_report
from pg_advisor.sizing.sizer import autoscaler_would_act, recommend
from pg_advisor_testkit.loose import health_checks, status_report


def test_checks_follow_the_recommendations(snap: snapshot.Snapshot) -> None:
    r = status_report(snap)
    checks = health_checks(r)
    few = checks["PG_ADVISOR_TOO_FEW_PGS"]
    grow = [p["name"] for p in r["pools"] if p["recommended_pg_num"] > p["pg_num_target"]]
    assert all(p["pressing"] for p in r["pools"] if p["name"] in grow)     # each 3x or more
    assert grow and few["count"] == len(grow) == len(few["detail"])
    assert all(any(d.startswith(n + ":") for d in few["detail"]) for n in grow)
    assert "PG_ADVISOR_TOO_MANY_PGS" not in checks


def test_checks_clear_when_pools_match(snap: snapshot.Snapshot, dumps: Dict[str, Any]) -> None:
    rec = {p["name"]: p["recommended_pg_num"] for p in status_report(snap)["pools"]}
    d = copy.deepcopy(dumps)
    for p in d["osd_dump"]["pools"]:
        n = rec[p["pool_name"]]
        p["pg_num"] = p["pg_num_target"] = p["pg_placement_num"] = p["pg_placement_num_target"] = n
    s = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])
    checks = health_checks(status_report(s))
    assert "PG_ADVISOR_TOO_FEW_PGS" not in checks and "PG_ADVISOR_TOO_MANY_PGS" not in checks


def with_pg_nums(dumps: Dict[str, Any], pg_num: Dict[str, int],
                 names: Dict[str, str] = {}) -> snapshot.Snapshot:
    d = copy.deepcopy(dumps)
    for p in d["osd_dump"]["pools"]:
        n = pg_num[p["pool_name"]]
        p["pg_num"] = p["pg_num_target"] = p["pg_placement_num"] = p["pg_placement_num_target"] = n
        p["pool_name"] = names.get(p["pool_name"], p["pool_name"])
    return snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])


def test_a_change_pg_autoscaler_would_not_make_raises_nothing(snap: snapshot.Snapshot,
                                                              dumps: Dict[str, Any]) -> None:
    # a fresh cluster's near-empty pools (16 -> 32, .mgr 1 -> 32) raised TOO_FEW where
    # pg_autoscaler acts only past its threshold (3x) and leaves the mgr's own pool be
    rec = {p["name"]: p["recommended_pg_num"] for p in status_report(snap)["pools"]}
    assert all(n >= 4 for n in rec.values())
    for factor, raised in ((2, False), (4, True)):
        s = with_pg_nums(dumps, {n: v // factor for n, v in rec.items()})
        r = status_report(s)
        # at half, a pool may stay where it is (the growth hysteresis): pressing nowhere
        assert all(p["recommended_pg_num"] in (rec[p["name"]], rec[p["name"]] // factor)
                   and (p["recommended_pg_num"] == rec[p["name"]] or not raised) for p in r["pools"])
        assert all(p["pressing"] is (raised and p["recommended_pg_num"] != p["pg_num_target"])
                   for p in r["pools"]), factor
        assert ("PG_ADVISOR_TOO_FEW_PGS" in health_checks(r)) is raised
    first = min(rec)
    s = with_pg_nums(dumps, {n: v // 4 for n, v in rec.items()}, {first: ".mgr"})
    few = health_checks(status_report(s))["PG_ADVISOR_TOO_FEW_PGS"]["detail"]
    assert len(few) == len(rec) - 1 and not any(d.startswith(".mgr:") for d in few)
    # merges press only under pressure: 2x ecpool alone is kept (a merge would move data
    # for nothing), 4x of every pool past the PGs-per-OSD limit is pressed by the cap
    s = with_pg_nums(dumps, {**rec, "ecpool": rec["ecpool"] * 2})
    r = status_report(s)
    sizing = r["cluster"]["sizing"]
    assert sizing["pgs_per_osd_max_recommended"] <= sizing["pgs_per_osd_limit"]
    assert "PG_ADVISOR_TOO_MANY_PGS" not in health_checks(r)
    assert next(p for p in r["pools"] if p["name"] == "ecpool")["recommended_pg_num"] == rec["ecpool"] * 2
    s = with_pg_nums(dumps, {n: v * 4 for n, v in rec.items()})
    checks = health_checks(status_report(s))
    assert "halved" in " ".join(checks["PG_ADVISOR_TOO_MANY_PGS"]["detail"])


def test_a_merge_past_the_band_without_pressure_is_suggested_not_pressed(dumps: Dict[str, Any]) -> None:
    rec = {p["name"]: p["recommended_pg_num"] for p in status_report(with_pg_nums(dumps, {
        "rbd": 32, "ecpool": 16, "fast": 8}))["pools"]}
    d = copy.deepcopy(dumps)
    for p in d["osd_dump"]["pools"]:
        p["pg_num"] = p["pg_num_target"] = p["pg_placement_num"] = p["pg_placement_num_target"] = \
            rec[p["pool_name"]] * 4
    # a limit nothing reaches and memory to spare: no pressure at 4x
    snap = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"],
                         settings=snapshot.Settings(mon_max_pg_per_osd=100000,
                                                    config={"osd_memory_target": 1 << 40}))
    r = status_report(snap)
    rbd = next(p for p in r["pools"] if p["name"] == "rbd")
    assert rbd["recommended_pg_num"] == rec["rbd"] and not rbd["pressing"] and not rbd["automatic"]
    assert "past_band" in [x["code"] for x in rbd["reasons"]] and rbd["moved_bytes_estimate"] > 0
    assert "PG_ADVISOR_TOO_MANY_PGS" not in health_checks(r)


def test_the_autoscalers_threshold_as_tentacle_has_it() -> None:
    assert not autoscaler_would_act(32, 64) and not autoscaler_would_act(32, 96)
    assert autoscaler_would_act(32, 128) and autoscaler_would_act(256, 512)     # toward 512: 1x
    assert not autoscaler_would_act(1024, 2048) and autoscaler_would_act(512, 2048)
    assert not autoscaler_would_act(64, 32) and autoscaler_would_act(128, 32)
    assert not autoscaler_would_act(32, 32)


def test_a_cap_on_pgs_per_osd_presses_whatever_the_threshold(snap: snapshot.Snapshot,
                                                             dumps: Dict[str, Any]) -> None:
    rec = {p["name"]: p["recommended_pg_num"] for p in status_report(snap)["pools"]}
    s = with_pg_nums(dumps, {n: v * 2 for n, v in rec.items()})
    opts = options.make({"pg_per_osd_headroom": 0.9})
    r = status_report(s, opts=opts)
    capped = [p for p in r["pools"] if any(x["code"] == "cap_pgs" for x in p["reasons"])]
    assert capped and all(p["pressing"] for p in capped)
    assert "PG_ADVISOR_TOO_MANY_PGS" in health_checks(r)


def test_too_many_and_limits(snap: snapshot.Snapshot) -> None:
    r = status_report(snap, opts=options.make({"target_pgs_per_osd": 10, "pg_per_osd_headroom": 0.9,
                                               "pg_memory_fraction": 0.01}))
    checks = health_checks(r)
    assert "PG_ADVISOR_PG_PER_OSD_LIMIT" in checks      # limit 25 PGs, osd.4 holds more
    assert all(d.startswith("osd.") for d in checks["PG_ADVISOR_PG_PER_OSD_LIMIT"]["detail"])
    assert "PG_ADVISOR_OSD_MEMORY" in checks


def test_plan_steps_in_order_with_costs(snap: snapshot.Snapshot) -> None:
    p = plan_report(snap, options.make())
    assert [s["pool"] for s in p["steps"]] and all(s["pg_num"][1] > s["pg_num"][0] for s in p["steps"])
    # the PGs per OSD grow step by step and end at the sizing's prediction
    maxes = [s["pgs_per_osd_max_after"] for s in p["steps"]]
    assert maxes == sorted(maxes) and maxes[-1] <= p["pgs_per_osd_limit"]
    assert all(s["reason"] and s["bytes_moved"] is not None for s in p["steps"])


def test_a_step_the_mon_would_refuse_is_a_note(snap: snapshot.Snapshot) -> None:
    # the sizing grows pools against its own PGs-per-OSD model; the mon counts pg_num x size
    # against mon_max_pg_per_osd x OSDs in: where it would refuse a step, the plan says so
    # and keeps the steps it would take
    have = sum(max(p.pg_num, p.pg_num_target) * p.size for p in snap.pools)
    tight = dataclasses.replace(snap, config=dict(snap.config, mon_max_pg_per_osd=have // 6 + 1))
    # (one setting for both: the sizing, too, works against the tight limit; at their
    # floor of 32 PGs the pools still grow)
    grown = [s for s in recommend(tight, options.make()).pools if s.recommended > s.pool.pg_num]
    assert grown
    p = plan_report(tight, options.make())
    assert [s["pool"] for s in p["steps"] if s["pg_num"][1] > s["pg_num"][0]] == []
    for s in grown:
        assert any(n.startswith(f"pool {s.pool.name}: no step to {s.recommended} PGs: pg_num")
                   and f"mon_max_pg_per_osd {have // 6 + 1} x 6 OSDs in" in n for n in p["notes"]), p["notes"]


def test_the_plan_report_has_exactly_the_keys_its_type_says(dumps: Dict[str, Any]) -> None:
    from pg_advisor.analysis.plan import PlanReport, PlanStepReport
    r = plan_report(with_pg_nums(dumps, {"rbd": 8, "ecpool": 16, "fast": 8}), options.make())
    assert set(r) == set(PlanReport.__annotations__)
    assert r["steps"] and all(set(s) == set(PlanStepReport.__annotations__) for s in r["steps"])
