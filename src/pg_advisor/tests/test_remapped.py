"""pin-remapped: each remapped PG mapped back onto the OSDs with its data, and the drain."""
import copy
import json
from typing import Any, Dict, List, Optional, Tuple

import pytest

from pg_advisor.model import snapshot
from pg_advisor.balance.balancer import Balancer
from pg_advisor.crush.placement import Placer
from pg_advisor.execute.driver import Driver
from pg_advisor.model.errors import AdvisorError
from pg_advisor.model.options import make
from pg_advisor.balance.remapped import pin_remapped, pins_report
from pg_advisor.execute.steps import StepPlanner
from pg_advisor.render.expand_text import pins_text
from pg_advisor.execute.plan_state import Source
from pg_advisor.execute import operator_commands as ops

from .fakes import OPEN, T, FakeCeph, context

REMAPPED = "active+remapped+backfill_wait"


def load(d: Dict[str, Any]) -> snapshot.Snapshot:
    return snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])


def reweighted(dumps: Dict[str, Any], weights: Dict[int, float]) -> Dict[str, Any]:
    """The dumps after `ceph osd reweight` of some OSDs, as the PG stats show it before any
    backfill: the up sets CRUSH now gives, the acting sets where the data still is."""
    d = copy.deepcopy(dumps)
    for o in d["osd_dump"]["osds"]:
        if o["osd"] in weights:
            o["weight"] = weights[o["osd"]]
            o["in"] = int(weights[o["osd"]] > 0)
    snap = load(d)
    placer = Placer(snap)
    ups = {}
    for pool in snap.pools:
        m = placer.map_pool(pool)
        for r in range(m.up.shape[0]):
            ups[m.pgid(r)] = (m.up[r].tolist(), int(m.up_primary[r]))
    for s in d["pg_dump"]["pg_map"]["pg_stats"]:
        up, primary = ups[s["pgid"]]
        replicated = next(p for p in snap.pools if p.id == int(s["pgid"].split(".")[0])).type == "replicated"
        up = [o for o in up if o >= 0] if replicated else up
        if (sorted(up) != sorted(s["acting"])) if replicated else up != s["acting"]:
            s["up"], s["up_primary"], s["state"] = up, primary, REMAPPED
    return d


def with_items(d: Dict[str, Any], items: Dict[str, List[Tuple[int, int]]]) -> Dict[str, Any]:
    d = copy.deepcopy(d)
    kept = [u for u in d["osd_dump"]["pg_upmap_items"] if u["pgid"] not in items]
    kept += [{"pgid": k, "mappings": [{"from": a, "to": b} for a, b in v]} for k, v in items.items() if v]
    d["osd_dump"]["pg_upmap_items"] = kept
    return d


def remapped_pgs(d: Dict[str, Any]) -> Dict[str, List[int]]:
    return {s["pgid"]: s["acting"] for s in d["pg_dump"]["pg_map"]["pg_stats"] if "remapped" in s["state"]}


def test_each_remapped_pg_maps_back_onto_its_acting_set(dumps: Dict[str, Any]) -> None:
    d = reweighted(dumps, {3: 0.5, 1: 0.7})
    moved = remapped_pgs(d)
    assert len(moved) >= 5, "the reweight remaps too little to show anything"
    pins = pin_remapped(load(d))
    # pool "fast" (size 2 on a class of few OSDs): CRUSH now finds one OSD for 3.6, and an
    # item can only replace an OSD, not add one
    assert pins.remapped == len(moved) and set(pins.items) | set(pins.skipped) == set(moved)
    assert set(pins.skipped) == {"3.6"} and "cannot add one" in pins.skipped["3.6"]
    # with the items set, CRUSH (our placer, checked against osdmaptool elsewhere) maps each
    # of them exactly where its data is: replicated as a set, EC shard by shard
    after = load(with_items(d, pins.items))
    placer = Placer(after)
    for pool in after.pools:
        m = placer.map_pool(pool)
        for r in range(m.up.shape[0]):
            if m.pgid(r) in pins.items:
                want = moved[m.pgid(r)]
                got = m.up_list(r)
                assert (sorted(got) == sorted(want)) if pool.type == "replicated" else got == want
    # a PG that already had items keeps the ones still needed: the new list replaces it whole
    assert all(a != b for v in pins.items.values() for a, b in v)
    assert any(k.startswith("2.") for k in pins.items), "no EC PG was remapped"


def test_as_captured_only_the_pg_crush_cannot_fill_is_remapped_and_nothing_is_pinned(
        dumps: Dict[str, Any]) -> None:
    # the real cluster's 3.6 (pool fast, size 2): up [4], acting [4, 5] by its pg_temp
    pins = pin_remapped(load(dumps))
    assert (pins.remapped, pins.items, list(pins.skipped)) == (1, {}, ["3.6"])


def test_degraded_and_out_pgs_are_left_with_their_reason(dumps: Dict[str, Any]) -> None:
    d = reweighted(dumps, {3: 0.0, 1: 0.7})     # osd.3 out: its PGs' data is on it
    stats = d["pg_dump"]["pg_map"]["pg_stats"]
    other = next(s for s in stats if "remapped" in s["state"] and 3 not in s["acting"]
                 and s["pgid"].startswith("1."))
    other["state"] = "active+undersized+degraded+remapped+backfill_wait"
    pins = pin_remapped(load(d))
    on_out = {s["pgid"] for s in stats if "remapped" in s["state"] and 3 in s["acting"]}
    assert on_out and all("osd.3" in pins.skipped[k] for k in on_out)
    assert "recovery, not a move" in pins.skipped[other["pgid"]]
    assert other["pgid"] not in pins.items and not on_out & set(pins.items)
    r = pins_report(load(d), pins)
    assert r["skipped"] == len(pins.skipped) and sum(r["skipped_reasons"].values()) == r["skipped"]
    text = pins_text(dict(r, dry_run=True))
    assert "left as they are" in text and "dry run" in text


def test_no_pg_stats_is_a_clear_error(dumps: Dict[str, Any]) -> None:
    snap = snapshot.load(dumps["osd_dump"], dumps["crush"], None, None)
    with pytest.raises(AdvisorError) as e:
        pin_remapped(snap)
    assert "no PG stats" in e.value.message


class Recorder:
    def __init__(self, ceph: FakeCeph) -> None:
        self.ceph = ceph
        self.bursts: List[List[Dict[str, Any]]] = []

    def __call__(self, cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
        self.bursts.append(list(cmds))
        return [self.ceph.send(c) for c in cmds]


def driver() -> Tuple[Driver, Dict[str, Optional[str]]]:
    kv: Dict[str, Optional[str]] = {}
    return Driver(kv.get, kv.__setitem__, 0.0), kv


def test_pinning_sends_the_items_and_starts_the_drain_after_an_interval(dumps: Dict[str, Any]) -> None:
    d = reweighted(dumps, {3: 0.5, 1: 0.7})
    ceph, (drv, _) = FakeCeph(d), driver()
    opts = make({"step_interval": 30})
    dry = ops.pin_remapped(drv.plans, context(ceph, opts, 0.0, burst=Recorder(ceph)), True)
    assert dry["dry_run"] and dry["pinned"] > 0 and ceph.sent == [] and drv.executor.state is None
    rec = Recorder(ceph)
    r = ops.pin_remapped(drv.plans, context(ceph, opts, 0.0, burst=rec), False)
    assert r["pinned"] == dry["pinned"] and r["failed"] == [] and r["plan"]
    assert all(len(b) <= 16 for b in rec.bursts)
    assert {c["pgid"] for c in ceph.sent} == set(dry["items"])
    st = drv.executor.state
    assert st is not None and st.source == "pin-remapped"
    assert {s.kind for s in st.steps} == {"balance"}
    assert any(h["event"] == "pin" for h in drv.executor.history)
    # the drain's first round waits step_interval: the pins settle first
    n = len(ceph.sent)
    drv.tick(context(ceph, opts, 10.0, burst=Recorder(ceph)))
    assert len(ceph.sent) == n and drv.executor.state is not None
    assert "next step after" in (drv.executor.state.waiting or "")
    # json and text views of the same report
    assert json.loads(json.dumps(r)) == r and "drains the pins" in pins_text(r)


def test_pinning_beside_a_plan_or_the_builtin_balancer_changes_nothing(dumps: Dict[str, Any]) -> None:
    d = reweighted(dumps, {3: 0.5})
    ceph, (drv, _) = FakeCeph(d), driver()
    opts = make({})
    with pytest.raises(AdvisorError) as e:
        ops.pin_remapped(drv.plans, context(ceph, opts, 0.0, burst=Recorder(ceph), balancer_active=True),
                         False)
    assert e.value.code == -16 and "built-in balancer" in e.value.message and ceph.sent == []
    snap = ceph.snap()
    rbd = snap.pool_by_name("rbd")
    ops.apply(drv.plans, context(ceph, opts, 0.0, snap=snap), "rbd", rbd.pg_num * 2, False)
    with pytest.raises(AdvisorError) as e:
        ops.pin_remapped(drv.plans, context(ceph, opts, 1.0, burst=Recorder(ceph)), False)
    assert e.value.code == -16 and "plan" in e.value.message and ceph.sent == []


def test_refused_pins_are_reported(dumps: Dict[str, Any]) -> None:
    d = reweighted(dumps, {3: 0.5, 1: 0.7})
    ceph, (drv, _) = FakeCeph(d), driver()

    def refuse_ec(cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
        return [(-22, "verify_upmap failed") if c["pgid"].startswith("2.") else ceph.send(c) for c in cmds]
    r = ops.pin_remapped(drv.plans, context(ceph, make({}), 0.0, burst=refuse_ec), False)
    refused = [k for k in r["items"] if k.startswith("2.")]
    assert refused and len(r["failed"]) == len(refused)
    pinned = len(r["items"]) - len(refused)
    assert any(h["event"] == "pin" and h["detail"].startswith(f"{pinned} remapped PGs pinned")
               and f"{len(refused)} refused" in h["detail"] for h in drv.executor.history)
    assert "verify_upmap failed" in pins_text(r)


def test_the_drain_takes_in_every_pool_the_pinned_and_the_uneven(dumps: Dict[str, Any]) -> None:
    d = reweighted(dumps, {3: 0.5, 1: 0.7})
    for s in d["pg_dump"]["pg_map"]["pg_stats"]:      # rbd's PGs had moved before the pins
        if s["pgid"].startswith("1."):
            s["acting"], s["state"] = s["up"], "active+clean"
    ceph, (drv, _) = FakeCeph(d), driver()
    assert Balancer(ceph.snap(), pools=["rbd"]).states[0].level.clear() is False
    ctx = context(ceph, make({}), 0.0, ratio=OPEN.misplaced_max, burst=Recorder(ceph))
    r = ops.pin_remapped(drv.plans, ctx, False)
    st = drv.executor.state
    assert st is not None and r["plan"] == st.id
    assert r["items"] and not any(k.startswith("1.") for k in r["items"])
    assert set(st.pools) == {"rbd", "ecpool", "fast"}     # the rounds even the total too


def test_pins_are_kept_in_chunks_and_a_new_mgr_reads_them_back(dumps: Dict[str, Any]) -> None:
    d = reweighted(dumps, {3: 0.5, 1: 0.7})
    ceph, (drv, kv) = FakeCeph(d), driver()
    ops.pin_remapped(drv.plans, context(ceph, make({}), 0.0, burst=Recorder(ceph)), False)
    st = drv.executor.state
    assert st is not None and st.pins and st.pins_left == len(st.pins)
    again = Driver(kv.get, kv.__setitem__, 1.0)
    assert again.store.error is None and again.executor.state is not None
    assert again.executor.state.pins == st.pins and again.executor.state.source == "pin-remapped"
    # many pins: several entries, each under the mon's entry size, read back whole
    many = {f"1.{i:x}": [[i % 6, (i + 1) % 6]] * 11 for i in range(700)}
    st2 = dict(again.executor.state.to_json(), pins=many, pins_left=700)
    again.store.write([st2], [])
    assert all(len(v or "") < 60000 for v in kv.values())
    assert sum(1 for k in kv if k.startswith(f"exec_pins.{st.id}.") and kv[k]) == 3
    third = Driver(kv.get, kv.__setitem__, 2.0)
    assert third.executor.state is not None and third.executor.state.pins == many
    # a torn pin chunk is reported, not run
    kv[f"exec_pins.{st.id}.1"] = "{}"
    assert Driver(kv.get, kv.__setitem__, 3.0).store.error


def test_pg_advisor_pinned_counts_what_the_drain_has_not_yet_taken_out(dumps: Dict[str, Any]) -> None:
    d = reweighted(dumps, {3: 0.5, 1: 0.7})
    ceph, (drv, _) = FakeCeph(d), driver()
    ceph.dumps["osd_dump"]["flags"] = "norebalance"        # the drain holds; the pins stay
    opts = make({})
    r = ops.pin_remapped(drv.plans, context(ceph, opts, 0.0, burst=Recorder(ceph)), False)
    drv.tick(context(ceph, opts, 100.0))
    check = drv.health()["PG_ADVISOR_PINNED"]
    assert check["count"] == r["pinned"] and f"of {r['pinned']} PGs" in check["detail"][0]
    gone = sorted(r["items"])[:3]
    for k in gone:
        ceph.send({"prefix": "osd rm-pg-upmap-items", "pgid": k})
    drv.tick(context(ceph, opts, 101.0))
    assert drv.health()["PG_ADVISOR_PINNED"]["count"] == r["pinned"] - 3
    ops.abort(drv.plans, context(ceph, None, 102.0))
    assert "PG_ADVISOR_PINNED" not in drv.health()


@pytest.mark.parametrize("mode, pin_on_change, misplaced, pins", [
    ("auto", True, 10 ** 6, True),
    ("auto", False, 10 ** 6, False),      # the option is off by default
    ("advise", True, 10 ** 6, False),     # only mode auto changes the cluster by itself
    ("auto", True, 0, False),             # within the budget: Ceph's own pace is fine
])
def test_pin_on_change_pins_and_drains_by_itself_in_mode_auto(
        dumps: Dict[str, Any], mode: str, pin_on_change: bool, misplaced: int, pins: bool) -> None:
    d = reweighted(dumps, {3: 0.5, 1: 0.7})
    d["pg_dump"]["pg_map"]["pg_stats_sum"]["stat_sum"]["num_objects_misplaced"] = misplaced
    ceph, (drv, _) = FakeCeph(d), driver()
    opts = make({"mode": mode, "pin_on_change": pin_on_change})
    drv.tick(context(ceph, opts, 0.0, burst=Recorder(ceph)))
    sent = [c for c in ceph.sent if c["prefix"] in ("osd pg-upmap-items", "osd rm-pg-upmap-items")]
    st = drv.executor.state
    if pins:
        assert sent and st is not None and st.source == "auto" and st.pins_left > 0
        assert any(h["event"] == "pin" for h in drv.executor.history)
    else:
        assert not sent and (st is None or not st.pins)


@pytest.mark.parametrize("name, autoscale, conflict", [
    ("balancer-x", "off", False),          # a name in a blocker's text is not a conflict
    ("my_pg_autoscaler", "off", False),
    ("balancer-x", "on", True),            # pg_autoscaler manages it: a conflict, by kind
])
def test_pg_advisor_conflict_is_raised_by_kind_not_by_the_text(
        dumps: Dict[str, Any], name: str, autoscale: str, conflict: bool) -> None:
    d = copy.deepcopy(dumps)
    rbd = next(p for p in d["osd_dump"]["pools"] if p["pool_name"] == "rbd")
    rbd["pool_name"], rbd["pg_autoscale_mode"] = name, autoscale
    # a blocker that names the pool: "osd.1 is down and in: pool NAME maps onto it"
    next(o for o in d["osd_dump"]["osds"] if o["osd"] == 1)["up"] = 0
    ceph, (drv, _) = FakeCeph(d), driver()
    snap = ceph.snap()
    pool = snap.pool_by_name(name)
    drv.executor.start(StepPlanner(snap, T).plan(pool, pool.pg_num * 2), [pool], Source.APPLY, 0.0)
    drv.tick(context(ceph, make({}), 1.0, snap=snap))
    checks = drv.health()
    assert f"pool {name} maps onto it" in json.dumps(checks["PG_ADVISOR_BLOCKED"])
    assert ("PG_ADVISOR_CONFLICT" in checks) == conflict, checks


def test_pin_on_change_does_not_rerun_crush_every_poll_when_nothing_is_pinnable(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import pg_advisor.execute.auto_mode as auto_module
    d = copy.deepcopy(dumps)        # nothing remapped: misplaced over the budget, nothing to pin
    d["pg_dump"]["pg_map"]["pg_stats_sum"]["stat_sum"]["num_objects_misplaced"] = 10 ** 6
    calls: List[int] = []
    real = auto_module.pin_remapped

    def counted(snap: Any) -> Any:
        calls.append(snap.epoch)
        return real(snap)
    monkeypatch.setattr(auto_module, "pin_remapped", counted)
    ceph, (drv, _) = FakeCeph(d), driver()
    # no sizing or balance plan either: the executor stays closed, so each tick may pin
    monkeypatch.setattr(auto_module, "auto_targets", lambda *a: {})
    monkeypatch.setattr(auto_module, "start_balancing", lambda *a: None)
    opts = make({"mode": "auto", "pin_on_change": True, "sleep_interval": 60})
    for now in (0.0, 1.0, 2.0, 30.0):           # one map: CRUSH once
        drv.tick(context(ceph, opts, now, burst=Recorder(ceph)))
    assert len(calls) == 1 and not drv.executor.open
    drv.tick(context(ceph, opts, 61.0, burst=Recorder(ceph)))   # recovery may end
    assert len(calls) == 2
    ceph.dumps["osd_dump"]["epoch"] += 1                                        # a new map
    drv.tick(context(ceph, opts, 62.0, burst=Recorder(ceph)))
    assert len(calls) == 3 and calls[-1] == calls[0] + 1


def test_the_pins_are_checked_on_the_map_that_holds_every_answer_not_an_epoch_between(
        dumps: Dict[str, Any]) -> None:
    # the mon's epoch once the burst is answered holds all of it; a map between (a weight's
    # epoch its pins spilled past: seen in CI, 13 of 28 "mismatched") is not checked
    import dataclasses
    ceph, (drv, _) = FakeCeph(reweighted(dumps, {3: 0.5, 1: 0.7})), driver()
    first = ceph.snap().epoch
    ops.pin_remapped(drv.plans, context(ceph, make({}), 0.0, mon_epoch=lambda: first + 5), False)
    pins = drv.plans.pins
    assert pins.want and pins.pinned_at == first + 4
    snap = ceph.snap()
    assert not pins.due(dataclasses.replace(snap, epoch=first + 4))
    assert pins.due(dataclasses.replace(snap, epoch=first + 5))
    # a mon that does not answer: the first map after the snapshot, as before
    ceph2, (drv2, _) = FakeCeph(reweighted(dumps, {3: 0.5, 1: 0.7})), driver()
    ops.pin_remapped(drv2.plans, context(ceph2, make({}), 0.0, mon_epoch=lambda: None), False)
    assert drv2.plans.pins.pinned_at == first


def test_the_pins_plan_takes_no_round_until_its_pins_are_checked_and_the_check_comes_first(
        dumps: Dict[str, Any]) -> None:
    # CI saw the drain's first round go out before the check, which then read the live map
    # (in the mgr: Ceph's own mapping, after the round) and counted 8 of 15 "mismatched"
    ceph, (drv, _) = FakeCeph(reweighted(dumps, {3: 0.5, 1: 0.7})), driver()
    opts = make({"step_interval": 10})
    landed: List[int] = []

    def mon_epoch() -> int:       # the mon is two maps ahead of the mgr's copy
        landed.append(ceph.dumps["osd_dump"]["epoch"] + 2)
        return landed[-1]
    ctx = context(ceph, opts, 0.0, burst=Recorder(ceph), mon_epoch=mon_epoch)
    r = ops.pin_remapped(drv.plans, ctx, False)
    model = drv.executor.up_sets
    drv.map_with(lambda snap, pgids: model(ceph.snap(), pgids))      # the live map, as the mgr reads it
    ceph.backfill()          # the pinned PGs clean where their data is, as the pins make them
    n = len(ceph.sent)
    drv.tick(context(ceph, opts, 20.0, burst=Recorder(ceph)))     # past step_interval
    st = drv.executor.state
    assert st is not None and len(ceph.sent) == n and drv.plans.pins.want
    assert "pins are checked first" in (st.waiting or "")
    ceph.dumps["osd_dump"]["epoch"] = landed[0]          # the map that holds them
    drv.tick(context(ceph, opts, 21.0, burst=Recorder(ceph)))
    assert drv.plans.pins.verified == {"checked": r["pinned"], "mismatched": 0, "mismatched_pgs": {}}
    st = drv.executor.state
    assert len(ceph.sent) > n, ("the drain's first round, once the pins are checked", st and st.waiting)


def test_pins_whose_map_never_comes_are_left_unchecked_and_their_plan_goes_on(dumps: Dict[str, Any]) -> None:
    from pg_advisor.execute.pinning import CHECK_WAIT
    ceph, (drv, _) = FakeCeph(reweighted(dumps, {3: 0.5, 1: 0.7})), driver()
    opts = make({"step_interval": 10})
    ops.pin_remapped(drv.plans, context(ceph, opts, 0.0, burst=Recorder(ceph),
                                        mon_epoch=lambda: ceph.dumps["osd_dump"]["epoch"] + 50), False)
    n = len(ceph.sent)
    drv.tick(context(ceph, opts, CHECK_WAIT - 1, burst=Recorder(ceph)))
    assert len(ceph.sent) == n
    ceph.backfill()
    drv.tick(context(ceph, opts, CHECK_WAIT + 1, burst=Recorder(ceph)))
    assert not drv.plans.pins.want and drv.plans.pins.verified is None
    assert any("not checked: no later map came" in h["detail"] for h in drv.executor.history)
    assert len(ceph.sent) > n
