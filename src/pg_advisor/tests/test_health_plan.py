import copy
import dataclasses
from typing import Any, Dict

from pg_advisor.model import options, snapshot
from pg_advisor.render.health import health_checks
from pg_advisor.analysis.plan import plan_report
from pg_advisor.sizing.sizer import recommend
from pg_advisor.analysis.status import status_report


def test_checks_follow_the_recommendations(snap: snapshot.Snapshot) -> None:
    r = status_report(snap)
    checks = health_checks(r)
    few = checks["PG_ADVISOR_TOO_FEW_PGS"]
    grow = [p["name"] for p in r["pools"] if p["recommended_pg_num"] > p["pg_num_target"]]
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
