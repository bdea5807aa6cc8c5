"""The backfill limit a plan paces by (model/backfill_limit.py): the option when set, else
RESERVATION_DEPTH x the lowest osd_max_backfills of the OSDs that are in, as the mon
resolves it per OSD from the config dump; and where the limit is read (the plan's pacing,
the split's chunk, the reservations the status names)."""
import copy
from typing import Any, Dict, List, Optional

from pg_advisor.analysis.backfill import full_reservations
from pg_advisor.execute.context import Context
from pg_advisor.execute.planning import throttles
from pg_advisor.model import snapshot
from pg_advisor.model.backfill_limit import (LIMIT_MAX, RESERVATION_DEPTH, backfill_limit,
                                             cluster_backfills, limit_source)
from pg_advisor.model.options import Options


def load(d: Dict[str, Any], config: Optional[Dict[str, Any]] = None,
         dump: Optional[List[Dict[str, Any]]] = None) -> snapshot.Snapshot:
    return snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"],
                         settings=snapshot.Settings(config=config, config_dump=dump))


def entry(section: str, value: str) -> Dict[str, Any]:
    return {"section": section, "name": "osd_max_backfills", "value": value, "mask": ""}


def test_the_default_is_the_depth_times_the_clusters_reservations(dumps: Dict[str, Any]) -> None:
    assert Options().max_backfills_per_osd == 0
    assert RESERVATION_DEPTH == 8
    snap = load(dumps)
    assert cluster_backfills(snap) == 1 and backfill_limit(snap, 0) == 8
    assert limit_source(snap, 0) == "8: 8 x osd_max_backfills 1"
    # the mgr's own value, where no OSD has one of its own
    assert backfill_limit(load(dumps, {"osd_max_backfills": 3}), 0) == 24
    # the option, when set, whatever the cluster says
    assert backfill_limit(load(dumps, {"osd_max_backfills": 3}), 2) == 2
    assert limit_source(snap, 5) == "max_backfills_per_osd 5"


def test_the_lowest_in_osd_sets_the_pace(dumps: Dict[str, Any]) -> None:
    # `ceph config set osd osd_max_backfills 4`, and osd.2 kept at 2
    snap = load(dumps, dump=[entry("osd", "4"), entry("osd.2", "2")])
    assert snap.osd_config["osd_max_backfills"].tolist()[:6] == [4, 4, 2, 4, 4, 4]
    assert backfill_limit(snap, 0) == 16
    # osd.2 out: it takes no backfill, so it does not slow the others
    d = copy.deepcopy(dumps)
    next(o for o in d["osd_dump"]["osds"] if o["osd"] == 2)["in"] = 0
    assert backfill_limit(load(d, dump=[entry("osd", "4"), entry("osd.2", "2")]), 0) == 32
    # an OSD at 0 (no backfills at all) is not a limit of 0 (which means none); a huge
    # setting is not a plan's pace
    assert backfill_limit(load(dumps, dump=[entry("osd", "0")]), 0) == RESERVATION_DEPTH
    assert backfill_limit(load(dumps, dump=[entry("osd", "100000000")]), 0) == LIMIT_MAX


def test_the_plan_and_the_split_pace_by_it(dumps: Dict[str, Any]) -> None:
    snap = load(dumps, dump=[entry("osd", "2")])
    ctx = Context(snap, Options(), 0.05, 0.0, lambda cmd: (0, ""))
    assert ctx.for_tick().pacing.max_backfills == 16
    assert throttles(snap, Options(), 0.05).max_backfills_per_osd == 16
    set_ = Options(max_backfills_per_osd=3)
    assert Context(snap, set_, 0.05, 0.0, ctx.send).for_tick().pacing.max_backfills == 3
    assert throttles(snap, set_, 0.05).max_backfills_per_osd == 3


def test_full_reservations_use_each_osds_own_setting(dumps: Dict[str, Any]) -> None:
    d = copy.deepcopy(dumps)
    rows = [s for s in d["pg_dump"]["pg_map"]["pg_stats"] if s["pgid"].startswith("1.")]
    moving = [s for s in rows if 5 not in s["up"]][:3]
    for s in moving[:2]:                 # two PGs backfill into osd.5, a third waits
        s["up"] = s["up"][:-1] + [5]
        s["state"] = "active+remapped+backfilling"
    moving[2]["state"] = "active+remapped+backfill_wait"
    # every OSD has room for two, osd.5 for one: only osd.5 is full
    got = full_reservations(load(d, dump=[entry("osd", "2"), entry("osd.5", "1")]))
    assert [o["osd"] for o in got["full_osds"]] == [5] and got["osd_max_backfills"] == 1
    # osd.5 has room for three: no OSD is full
    assert full_reservations(load(d, dump=[entry("osd", "2"), entry("osd.5", "3")]))["full_osds"] == []
