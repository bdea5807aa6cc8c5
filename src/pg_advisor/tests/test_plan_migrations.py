"""Stored plans of each earlier layout, as the pg_advisor of that layout wrote them, read
back and run by this one (plan_migrations.py). The fixtures in
pg_advisor_testkit/fixtures/stored_plans were written by the code of their commit: a plan
to double rbd's pg_num on the 6-OSD cluster (`apply rbd --pg-num 64`), and for the last
layout 2 a drain of osd.0 one round in."""
import copy
import json
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from pg_advisor.execute import operator_commands as ops
from pg_advisor.execute.driver import Driver
from pg_advisor.execute.plan_migrations import STATE_VERSION, Unreadable, migrate
from pg_advisor.execute.plan_store import INDEX_VERSION
from pg_advisor.execute.plan_state import Status
from pg_advisor.model.mon_commands import items_commands
from pg_advisor.model.options import make

from .fakes import FakeCeph, context

STORED = Path(__file__).resolve().parents[2] / "pg_advisor_testkit" / "fixtures" / "stored_plans"
LAYOUTS = sorted(p.name for p in STORED.glob("*.json"))


def stored(name: str) -> Dict[str, Optional[str]]:
    return dict(json.loads((STORED / name).read_text()))


def test_there_is_a_stored_plan_of_each_earlier_layout() -> None:
    # layouts 1 to 3 held one plan in exec_state; 4 (INDEX_VERSION) is its index of plans
    versions = {json.loads(str(stored(n)["exec_state"])).get("version", 1) for n in LAYOUTS}
    assert versions == set(range(1, INDEX_VERSION)) and STATE_VERSION == INDEX_VERSION - 1


@pytest.mark.parametrize("name", LAYOUTS)
def test_a_plan_of_an_earlier_layout_resumes_and_is_stored_in_the_current_one(
        name: str, dumps: Dict[str, Any]) -> None:
    kv = stored(name)
    old = json.loads(str(kv["exec_state"]))
    drv = Driver(kv.get, kv.__setitem__, 2000.0)
    st = drv.executor.state
    assert drv.store.error is None and st is not None, drv.store.error
    assert st.id == old["id"] and st.status == Status.RUNNING and st.next == old["next"]
    assert [p.id for p in st.pools.values()] and all(p.id > 0 for p in st.pools.values())
    assert drv.executor.history == json.loads(str(kv["exec_history"]))
    # it runs on: a tick takes its next step (the cluster as the plan left it: a round in
    # flight has its items in the map)
    ceph = FakeCeph(dumps)
    rnd = old.get("round") or {"items": {}}
    for c in items_commands({k: [(a, b) for a, b in v] for k, v in rnd["items"].items()}):
        ceph.send(c)
    ceph.sent.clear()
    opts = make({"step_interval": 0})
    drv.tick(context(ceph, opts, 2001.0))
    st = drv.executor.state
    assert st is not None and st.status == Status.RUNNING and not st.stopped_why
    assert ceph.sent, "the migrated plan sent nothing"
    # and is stored in the current layout, under its own keys (the old chunks removed):
    # a new mgr reads it back as it is
    assert json.loads(str(kv["exec_state"])) == {"version": INDEX_VERSION, "plans": [st.id]}
    assert json.loads(str(kv[f"exec_plan.{st.id}"]))["version"] == STATE_VERSION
    assert not any(v for k, v in kv.items() if k.split(".")[0] in ("exec_steps", "exec_pins")
                   and len(k.split(".")) == 2)
    assert any(v for k, v in kv.items() if k.startswith(f"exec_steps.{st.id}."))
    again = Driver(kv.get, kv.__setitem__, 2002.0)
    assert again.store.error is None and again.executor.state == st


def test_a_layout_1_plan_whose_pool_was_retargeted_stops_and_sends_nothing(dumps: Dict[str, Any]) -> None:
    # the targets a layout-1 plan last set are derived; when the pool shows others, the
    # plan stops for the operator rather than act on a pool it may not know
    kv = stored("layout1_561b935p.json")
    ceph = FakeCeph(dumps)
    ceph.send({"prefix": "osd pool set", "pool": "rbd", "var": "pg_num", "val": "40"})
    ceph.sent.clear()
    drv = Driver(kv.get, kv.__setitem__, 2000.0)
    drv.tick(context(ceph, make({"step_interval": 0}), 2001.0))
    st = drv.executor.state
    assert st is not None and st.status == Status.STOPPED and "outside the plan" in str(st.stopped_why)
    assert ceph.sent == []
    ops.abort(drv.plans, context(ceph, make({}), 2002.0))
    assert drv.executor.state is not None and drv.executor.state.status == Status.ABORTED


@pytest.mark.parametrize("mutate, says", [
    (lambda s: s.update(version=STATE_VERSION + 1), "version 4"),
    (lambda s: s.update(version="2"), "version '2'"),
    (lambda s: s.pop("steps"), "no steps"),
    (lambda s: s.update(next=99), "next step"),
    (lambda s: s.update(pools={"rbd": 64}), r"not \[start, goal\]"),
    (lambda s: s.update(pools={"gone": [1, 2]}), "no step names pool gone"),
])
def test_a_stored_plan_no_migration_leads_from_is_set_aside(mutate: Any, says: str) -> None:
    doc = json.loads(str(stored("layout1_561b935p.json")["exec_state"]))
    if "version" in says:
        doc = json.loads(str(stored("layout2_561b935.json")["exec_state"]))
    bad = copy.deepcopy(doc)
    mutate(bad)
    with pytest.raises(Unreadable, match=says):
        migrate(bad)
    kv = dict(stored("layout1_561b935p.json"), exec_state=json.dumps(bad))
    drv = Driver(kv.get, kv.__setitem__, 1.0)
    assert drv.executor.state is None and drv.store.error and "unreadable" in drv.store.error
