"""An operator's `balance` and `read-balance` answer with what the mon accepted and wait
for no map; the background checks, on the first map after theirs, what that map kept and
where it puts the PGs, each outcome a `checked` event in the history
(execute/command_checks.py)."""
from typing import Any, Dict, List, Optional, Sequence

import pytest

from . import mgr_stub
from .conftest import cmd
from pg_advisor.execute import rounds
from pg_advisor.execute.command_checks import CHECK_WAIT, PENDING_MAX, PendingCheck
from pg_advisor.execute.history import Event
from pg_advisor.execute.plan_service import PlanService
from pg_advisor.model import snapshot


def checked(m: Any) -> List[str]:
    return [h["detail"] for h in cmd(m, "history")[1]["history"] if h["event"] == "checked"]


def test_a_balance_waits_for_no_map_and_the_background_checks_it(wired: Any) -> None:
    m, ceph, _ = wired
    fake = mgr_stub.BaseMgrModule.fake
    m.reader.take_snapshot()             # the map's epoch known: the read's own copy
    copies = fake.reads["get_osdmap"]
    code, r, err = cmd(m, "balance", max_items=5)
    assert code == 0, err
    assert r["applied"] == len(r["items"]) > 0 and r["failed"] == [] and "history" in r["checked"]
    # the handler asked the mgr for no map copy (it polled one every 0.2 s for up to 10 s)
    assert fake.reads["get_osdmap"] == copies
    assert checked(m) == [] and m.driver.plans.checks.waiting == 1
    m.background.run_plan()              # mode advise: no plan, only the check
    got = checked(m)
    assert len(got) == 1 and m.driver.plans.checks.waiting == 0
    n = len(r["items"])
    assert f"the items of {n} of {n} PGs kept" in got[0] and "not where" not in got[0], got[0]


def test_items_the_mon_dropped_are_named(wired: Any) -> None:
    m, ceph, refresh = wired
    code, r, _ = cmd(m, "balance", max_items=3)
    assert code == 0 and r["applied"] >= 1
    dropped = sorted(k for k, v in r["items"].items() if v)[0]      # a list set, not one removed
    items = ceph.dumps["osd_dump"]["pg_upmap_items"]
    items[:] = [u for u in items if u["pgid"] != dropped]      # as the mon drops a bad item
    ceph.dumps["osd_dump"]["epoch"] += 1
    refresh()
    m.background.run_plan()
    (got,) = checked(m)
    assert f"did not keep those of {dropped}" in got, got


def test_mode_off_still_checks(wired: Any) -> None:
    m, _, _ = wired
    mgr_stub.BaseMgrModule.fake.module_options[("pg_advisor", "mode")] = "off"
    assert cmd(m, "balance", max_items=2)[0] == 0
    m.background.run_plan()
    assert len(checked(m)) == 1


def test_read_balance_is_checked_by_the_background(wired: Any) -> None:
    m, ceph, refresh = wired
    ceph.dumps["osd_dump"]["require_min_compat_client"] = "reef"
    ceph.dumps["osd_dump"]["epoch"] += 1
    refresh()
    code, r, err = cmd(m, "read-balance", max_changes=4)
    assert code == 0 and r["applied"] >= 1 and r["failed"] == [], err
    m.background.run_plan()
    (got,) = checked(m)
    assert got.endswith(f"{r['applied']} of {r['applied']} primary entries as set"), got


class Log:
    def __init__(self) -> None:
        self.events: List[Any] = []

    def __call__(self, now: float, event: Event, detail: str) -> None:
        self.events.append((event, detail))


def no_up_sets(snap: snapshot.Snapshot, pgids: Sequence[str]) -> Dict[str, List[int]]:
    raise AssertionError("not asked")


def plans() -> PlanService:
    kv: Dict[str, Optional[str]] = {}
    return PlanService(kv.get, kv.__setitem__, 0.0)


def test_a_check_waits_for_a_newer_map_or_its_time(snap: snapshot.Snapshot) -> None:
    ps, log = plans(), Log()
    ps.check_later(PendingCheck("balance", snap.epoch, 100.0, "t"))
    checks = ps.checks
    assert checks.settle(snap, no_up_sets, "t", 100.0 + CHECK_WAIT - 1, log) == 0 and checks.waiting == 1
    assert checks.settle(snap, lambda s, p: {}, "t", 100.0 + CHECK_WAIT, log) == 1
    assert [e for e, _ in log.events] == [Event.CHECKED] and checks.waiting == 0


def test_osds_changed_since_the_command_leave_it_unchecked(snap: snapshot.Snapshot) -> None:
    ps, log = plans(), Log()
    ps.check_later(PendingCheck("balance", snap.epoch - 1, 0.0, "before", items={"1.0": [(0, 1)]}))
    assert ps.checks.settle(snap, no_up_sets, "after", 1.0, log) == 1
    assert log.events[0][0] is Event.UNCHECKED and "OSDs changed" in log.events[0][1]


def test_the_checks_awaited_are_bounded_and_the_dropped_said(snap: snapshot.Snapshot) -> None:
    ps, log = plans(), Log()
    for i in range(PENDING_MAX + 3):
        ps.check_later(PendingCheck("balance", snap.epoch, float(i), "t"))
    assert ps.checks.waiting == PENDING_MAX
    assert [c.at for c in ps.checks.pending] == [float(i) for i in range(3, PENDING_MAX + 3)]
    ps.checks.settle(snap, lambda s, p: {}, "t", 1e9, log)
    assert log.events[0] == (Event.UNCHECKED, f"3 commands' changes not checked: more than {PENDING_MAX} "
                                              f"awaited their map")


def test_a_big_round_is_checked_on_its_first_pgs(wired: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    m, _, _ = wired
    monkeypatch.setattr(rounds, "CHECK_PGS_MAX", 2)
    code, r, _ = cmd(m, "balance", max_items=5)
    assert code == 0 and len(r["items"]) > 2
    (pending,) = m.driver.plans.checks.pending
    assert sorted(pending.items) == sorted(r["items"])[:2] and set(pending.want) <= set(pending.items)
