"""The module's plan commands and background tick, with the mon simulated (unit level)."""
import json
from typing import Any, Dict, List, Tuple

import pytest

from . import mgr_stub
from .conftest import cmd

from pg_advisor.module import Module
from pg_advisor.execute import auto_mode


def test_apply_dry_run_starts_nothing(wired: Any) -> None:
    m, ceph, _ = wired
    code, r, _ = cmd(m, "apply", pool="rbd", pg_num=64, dry_run=True)
    assert code == 0 and r["dry_run"] and r["steps"][-1]["pg_num"] == 64
    assert cmd(m, "progress")[1] == {"plan": None, "plans": [], "commands_waiting": []} and ceph.sent == []


@pytest.mark.parametrize("kw, code, message", [
    ({"pg_num": 64}, -22, "--pg-num needs --pool"),
    ({"pool": "nope", "pg_num": 64}, -2, "does not exist"),
    ({"pool": "rbd", "pg_num": 0}, -22, "between 1 and"),
    ({"pool": "rbd", "pg_num": 32}, -22, "already has pg_num 32"),
    ({"pool": "rbd", "pg_num": 4096}, -22, "(mon_max_pg_per_osd 250 x 6 OSDs in)"),
    ({"pool": "rbd", "pg_num": 450}, -22, "on an OSD, over mon_max_pg_per_osd 250"),
    ({"pool": "rbd", "pg_num": -5}, -22, "between 1 and 65536"),
    ({"pool": "rbd", "pg_num": 2 ** 31}, -22, "between 1 and 65536"),
    ({"pool": "rbd", "pg_num": 10 ** 8}, -22, "between 1 and 65536"),
    ({"pool": "rbd", "pg_num": 10 ** 12}, -22, "between 1 and 65536"),
])
def test_bad_apply_changes_nothing(wired: Any, kw: Dict[str, Any], code: int, message: str) -> None:
    m, ceph, _ = wired
    got, _, err = cmd(m, "apply", **kw)
    assert got == code and message in err
    assert ceph.sent == [] and mgr_stub.BaseMgrModule.fake.store.get("exec_state") in (None, "null")


def test_apply_then_tick_pause_resume_abort(wired: Any) -> None:
    m, ceph, refresh = wired
    code, r, _ = cmd(m, "apply", pool="rbd", pg_num=64)
    assert code == 0 and r["plan"]
    assert cmd(m, "apply", pool="rbd", pg_num=128)[0] == -16       # one plan at a time
    m.background.run_plan()
    assert [c["var"] for c in ceph.sent] == ["pg_num", "pgp_num"]
    ceph.settle()
    refresh()
    assert cmd(m, "pause")[1]["plan"]["status"] == "paused"
    m.background.run_plan()
    assert len(ceph.sent) == 2                                      # paused: nothing new
    assert cmd(m, "pause")[0] == -22
    cmd(m, "resume")
    code, r, _ = cmd(m, "abort")
    assert code == 0 and r["aborted"] and "short of the plan's 64" in r["summary"]
    assert cmd(m, "abort")[0] == -2
    hist = [h["event"] for h in cmd(m, "history")[1]["history"]]
    assert hist[0] == "start" and "pause" in hist and hist[-1] == "abort"
    # the state is in the mgr store: a new module instance (a new mgr) reads it back
    m2 = Module("pg_advisor", None, None)
    assert m2.driver.executor.state is not None and m2.driver.executor.state.status == "aborted"


def test_blocked_plan_raises_a_health_check(wired: Any) -> None:
    m, ceph, refresh = wired
    cmd(m, "apply", pool="rbd", pg_num=64)
    ceph.dumps["osd_dump"]["flags"] += ",norebalance"
    ceph.dumps["osd_dump"]["epoch"] += 1        # a flag set is a new map, as the mon makes it
    refresh()
    m.background.run_plan()
    m.background.publish_health()
    health = mgr_stub.BaseMgrModule.fake.health
    checks: Dict[str, Any] = dict(health)
    assert "PG_ADVISOR_BLOCKED" in checks and "norebalance" in json.dumps(checks)
    assert ceph.sent == []


def test_mode_is_an_option(wired: Any) -> None:
    m, _, _ = wired
    assert cmd(m, "mode", mode="auto")[1] == {"mode": "auto"}
    assert cmd(m, "mode")[1] == {"mode": "auto"}


def test_after_an_abort_auto_mode_waits_until_the_operator_sets_it_again(wired: Any) -> None:
    m, ceph, _ = wired
    fake = mgr_stub.BaseMgrModule.fake
    fake.module_options[("pg_advisor", "mode")] = "auto"
    m.background.run_plan()
    assert cmd(m, "progress")[1]["plan"]["source"] == "auto"
    cmd(m, "abort")
    m.background.run_plan()                      # within the hour after an abort: nothing starts
    assert cmd(m, "progress")[1]["plan"]["status"] == "aborted"
    assert cmd(m, "mode", mode="advise")[0] == 0
    fake.module_options[("pg_advisor", "mode")] = "auto"
    m.background.run_plan()                      # a mode other than auto does not re-arm it
    assert cmd(m, "progress")[1]["plan"]["status"] == "aborted"
    assert cmd(m, "mode", mode="auto")[0] == 0
    m.background.run_plan()                      # `mode auto` after the abort: auto goes on
    r = cmd(m, "progress")[1]
    assert r["plan"]["source"] == "auto" and r["plan"]["status"] == "running"
    events = [(h["event"], h["detail"]) for h in cmd(m, "history")[1]["history"]]
    after = [e for e, _ in events[max(i for i, (e, _) in enumerate(events) if e == "abort"):]]
    assert after[:4] == ["abort", "mode", "mode", "start"] and ("mode", "auto") in events


def test_auto_mode_starts_plans_itself(wired: Any, monkeypatch: Any) -> None:
    m, ceph, refresh = wired
    fake = mgr_stub.BaseMgrModule.fake
    fake.module_options[("pg_advisor", "mode")] = "auto"
    m.background.run_plan()                      # pg_num changes are recommended: a pg_num plan
    r = cmd(m, "progress")[1]
    assert r["plan"]["source"] == "auto" and r["steps"][0]["kind"] == "pg_num"
    cmd(m, "abort")
    # none due (and an abort an hour ago): balance rounds for the pools that need them
    monkeypatch.setattr(auto_mode, "auto_targets", lambda *a, **k: {})
    for h in m.driver.executor.history:
        h["time"] -= 7200
    ceph.sent.clear()
    m.background.run_plan()
    r = cmd(m, "progress")[1]
    assert r["plan"]["source"] == "auto" and {s["kind"] for s in r["steps"]} == {"balance"}
    assert any("pgid" in c for c in ceph.sent)
    # with the built-in balancer on, auto mode sets no upmap items
    cmd(m, "abort")
    for h in m.driver.executor.history:
        h["time"] -= 7200
    m.driver.auto.next_balance_check = 0.0
    fake.module_options[("balancer", "active")] = True
    ceph.sent.clear()
    m.background.run_plan()
    assert cmd(m, "progress")[1]["plan"]["status"] == "aborted" and ceph.sent == []


def test_a_malformed_window_is_refused_and_reported(wired: Any) -> None:
    m, ceph, _ = wired
    fake = mgr_stub.BaseMgrModule.fake
    fake.module_options[("pg_advisor", "window_begin")] = "25:00"
    code, _, err = cmd(m, "apply", pool="rbd", pg_num=64)
    assert code == -22 and "window_begin" in err and ceph.sent == []
    fake.module_options[("pg_advisor", "window_begin")] = "00:00"
    assert cmd(m, "apply", pool="rbd", pg_num=64)[0] == 0
    fake.module_options[("pg_advisor", "window_days")] = "someday"
    m.background.run_plan()
    m.background.publish_health()
    assert "PG_ADVISOR_PLAN_ERROR" in fake.health and ceph.sent == []
    assert "window_days" in str(fake.health["PG_ADVISOR_PLAN_ERROR"])
    fake.module_options[("pg_advisor", "window_days")] = ""
    m.background.run_plan()
    m.background.publish_health()
    assert "PG_ADVISOR_PLAN_ERROR" not in fake.health and ceph.sent


def test_expansion_commands_through_the_module(wired: Any) -> None:
    m, ceph, _ = wired
    code, r, err = cmd(m, "pin-remapped", dry_run=True)
    assert code == 0 and r["dry_run"] and r["remapped"] == 1, err      # the fixture's 3.6
    code, r, err = cmd(m, "drain", osd_or_bucket="osd.0", dry_run=True)
    assert code == 0 and r["osds"] == [0] and r["replicas"] > 0, err
    code, r, err = cmd(m, "simulate", add_host="h9", osds=2, weight=0.001, backfill_mib_s=10.0)
    assert code == 0 and r["add_host"]["osds"] == [6, 7] and r["drain_seconds"] is not None, err
    assert ceph.sent == []
    for kw, code_, message in (
            ({"add_host": "h9", "osds": 2}, -22, "goes with --osds N and --weight W"),
            ({"add_host": "h9", "osds": 2, "weight": 1.0, "backfill_mib_s": -1.0}, -22, "backfill-mib-s"),
            ({"add_host": "h9", "osds": 2, "weight": 1.0, "out_osd": [1]}, -22, "on its own")):
        code, _, err = cmd(m, "simulate", **kw)
        assert code == code_ and message in err
    code, _, err = cmd(m, "drain", osd_or_bucket="osd.99")
    assert code == -2 and "does not exist" in err and ceph.sent == []
    code, r, err = cmd(m, "drain", osd_or_bucket="osd.0")
    assert code == 0 and r["plan"], err
    code, _, err = cmd(m, "pin-remapped")
    assert code == -16 and "plan" in err


def test_the_plan_is_an_event_in_ceph_s_closed_once(wired: Any) -> None:
    # updated by the background while the plan runs; an abort fails it at once; then
    # nothing more is sent for it
    m, ceph, _ = wired
    other = m.remote
    sent: List[Tuple[str, Tuple[Any, ...], Dict[str, Any]]] = []

    def remote(module: str, method: str, *args: Any, **kw: Any) -> Any:
        if module != "progress":
            return other(module, method, *args, **kw)
        sent.append((method, args, kw))
    setattr(m, "remote", remote)
    plan = cmd(m, "apply", pool="rbd", pg_num=64)[1]["plan"]
    m.background.run_plan()
    assert [(meth, args[0]) for meth, args, _ in sent] == [("update", f"pg_advisor-{plan}")]
    assert sent[0][2]["add_to_ceph_s"] and 0.0 <= sent[0][2]["ev_progress"] < 1.0
    cmd(m, "abort")
    assert sent[1] == ("fail", (f"pg_advisor-{plan}", "plan aborted"), {})
    m.background.run_plan()
    assert len(sent) == 2
