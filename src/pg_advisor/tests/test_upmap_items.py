"""The one builder of item lists (crush/upmap.py) against Ceph's sequential application:
pairs in order, a pair skipped when its target is already in the set or is marked out,
each replacing the first slot that holds its source."""
import copy
import itertools
import random
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

from pg_advisor.balance.balancer import Balancer
from pg_advisor.balance.remapped import pin_remapped
from pg_advisor.crush.placement import Placer
from pg_advisor.crush.upmap import NotExpressible, apply_items, apply_upmap, build_items, mismatches
from pg_advisor.execute import balance_steps
from pg_advisor.execute.driver import Driver
from pg_advisor.model import snapshot
from pg_advisor.model.constants import CRUSH_ITEM_NONE
from pg_advisor.model.options import make
from pg_advisor.render.expand_text import pins_text
from pg_advisor.execute import operator_commands as ops

from .conftest import cmd
from .fakes import OPEN, FakeCeph, Store, balance_plan, context, tick_of

NONE = CRUSH_ITEM_NONE
ALL_IN = np.ones(64, dtype=np.int64)


def test_the_ec_chain_pin_remapped_left_backfilling() -> None:
    # PG 3.c of the report: CRUSH gave [6, 1, 5] after a host was added, the data sat on
    # [5, 1, 0]. Written slot by slot, 6->5 is skipped (5 is still in the set) and 5->0
    # then gives [6, 1, 0]: the PG stayed remapped.
    raw, want = [6, 1, 5], [5, 1, 0]
    assert apply_items(raw, [(6, 5), (5, 0)], ALL_IN) == [6, 1, 0]
    pairs = build_items(raw, want, False, ALL_IN)
    assert pairs == [(5, 0), (6, 5)] and apply_items(raw, pairs, ALL_IN) == want


def test_a_cycle_is_not_expressible_and_says_why() -> None:
    with pytest.raises(NotExpressible) as e:
        build_items([1, 2, 3], [2, 1, 3], False, ALL_IN)
    assert "cycle" in str(e.value) and "osd.1" in str(e.value)
    # the same as sets is no change at all for a replicated pool
    assert build_items([1, 2, 3], [2, 1, 3], True, ALL_IN) == []


def test_a_replicated_pg_keeps_its_order_where_a_chain_writes_it() -> None:
    # a weight change: CRUSH now gives [1, 5, 3], the data and the primary sit on [7, 1, 3].
    # One pair (5->7) keeps the OSDs but gives [1, 7, 3]: a new primary, a new interval.
    raw, want = [1, 5, 3], [7, 1, 3]
    assert apply_items(raw, [(5, 7)], ALL_IN) == [1, 7, 3]
    pairs = build_items(raw, want, True, ALL_IN)
    assert pairs == [(1, 7), (5, 1)] and apply_items(raw, pairs, ALL_IN) == want
    # padding is left out, the order of the rest kept
    assert apply_items([1, 5], build_items([1, 5, -1], [7, 1, -1], True, ALL_IN), ALL_IN) == [7, 1]


def test_property_a_replicated_pg_gets_its_order_whenever_items_can_write_it() -> None:
    rng = random.Random(29)
    ordered = 0
    for _ in range(20000):
        raw, want, replicated, w = _case(rng)
        r, t = [o for o in raw if o >= 0], [o for o in want if o >= 0]
        if not replicated or len(r) != len(t) or not _expressible(r, t, False, w):
            continue
        got = apply_items(r, build_items(raw, want, True, w), w)
        assert got == t, (raw, want, got)
        gone, new = [o for o in r if o not in t], [o for o in t if o not in r]
        ordered += apply_items(r, list(zip(gone, new)), w) != t
    # many of them a set-wise list would have reordered
    assert ordered > 250, ordered


def test_out_targets_and_size_changes_are_not_expressible() -> None:
    w = ALL_IN.copy()
    w[7] = 0
    with pytest.raises(NotExpressible, match="osd.7 is out"):
        build_items([1, 2, 3], [1, 2, 7], True, w)
    with pytest.raises(NotExpressible, match="cannot add one"):
        build_items([1, 2], [1, 2, 3], True, ALL_IN)


def test_a_pg_upmap_naming_an_out_osd_voids_the_items_too() -> None:
    # OSDMap::_apply_upmap returns before the items when the explicit mapping is refused
    w = ALL_IN.copy()
    w[9] = 0
    assert apply_upmap([1, 2, 3], [4, 9, 5], [(1, 6)], w) == [1, 2, 3]
    assert apply_upmap([1, 2, 3], [4, 8, 5], [(4, 6)], w) == [6, 8, 5]


def _expressible(raw: Sequence[int], want: Sequence[int], replicated: bool, w: np.ndarray) -> bool:
    """By brute force: does some order of one pair per changed slot reach `want`? (The mon
    drops a pair whose source CRUSH does not give, so these are all the lists there are.)"""
    if replicated:
        r, t = [o for o in raw if o >= 0], [o for o in want if o >= 0]
        if len(r) != len(t):
            return False
        gone, new = [o for o in r if o not in t], [o for o in t if o not in r]
        return any(sorted(apply_items(r, list(zip(gone, p)), w)) == sorted(t)
                   for p in itertools.permutations(new))
    slots = [(a, b) for a, b in zip(raw, want) if a != b]
    return any(apply_items(raw, list(p), w) == list(want) for p in itertools.permutations(slots))


def _case(rng: random.Random) -> Tuple[List[int], List[int], bool, np.ndarray]:
    """A random CRUSH set and wanted set over few OSDs (so chains and cycles are common),
    with holes and out OSDs."""
    replicated = rng.random() < 0.4
    size = rng.randint(1, 6)
    osds = list(range(10))
    raw = rng.sample(osds, size)
    want = list(raw)
    for i in range(size):
        roll = rng.random()
        if roll < 0.3:
            want[i] = rng.choice(osds)          # a new OSD, or one of the set (a chain)
        elif roll < 0.4:
            j = rng.randrange(size)             # a swap (a cycle)
            want[i], want[j] = want[j], want[i]
    if not replicated and rng.random() < 0.15:
        raw[rng.randrange(size)] = NONE          # CRUSH found no OSD for a slot
    if replicated and rng.random() < 0.1:
        want = want[:-1] if rng.random() < 0.5 else want + [rng.choice(osds)]
    w = np.ones(10, dtype=np.int64)
    for o in rng.sample(osds, rng.choice([0, 0, 1, 2])):
        w[o] = 0
    return raw, want, replicated, w


def test_property_every_pg_gets_its_wanted_set_or_a_reason() -> None:
    rng = random.Random(25)
    outcomes = {"items": 0, "chains": 0, "refused": 0}
    for _ in range(10000):
        raw, want, replicated, w = _case(rng)
        possible = _expressible(raw, want, replicated, w)
        try:
            pairs = build_items(raw, want, replicated, w)
        except NotExpressible as e:
            assert not possible, f"{raw} -> {want} (replicated {replicated}) has an order: {e}"
            assert str(e)
            outcomes["refused"] += 1
            continue
        got = apply_items([o for o in raw if o >= 0] if replicated else raw, pairs, w)
        assert (sorted(got) == sorted(o for o in want if o >= 0)) if replicated else got == want
        assert all(a != b for a, b in pairs)
        outcomes["items"] += 1
        outcomes["chains"] += any(b in raw for _, b in pairs)
    # the draw covers all three kinds, each many times
    assert min(outcomes.values()) > 200, outcomes


def _load(d: Dict[str, Any]) -> snapshot.Snapshot:
    return snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])


def _chained(dumps: Dict[str, Any]) -> Tuple[Dict[str, Any], str, List[int]]:
    """An EC PG whose data sits on [b, x, c] while CRUSH gives [a, b, c], x beside a on
    its host: shard 1 must leave b before shard 0 can take it."""
    d = copy.deepcopy(dumps)
    snap = _load(d)
    pool = next(p for p in snap.pools if p.type == "erasure")
    raw = Placer(snap).map_pool(pool, upmaps=False)
    host = snap.osds.host
    for r in range(raw.up.shape[0]):
        pgid = raw.pgid(r)
        a, b, c = raw.up[r].tolist()
        if pgid in snap.pg_upmap_items:
            continue
        x = next(o for o in range(snap.osds.count) if host[o] == host[a] and o != a)
        want = [b, x, c]
        # shard 0 on b's host and shard 1 on a's: the hosts stay distinct
        for s in d["pg_dump"]["pg_map"]["pg_stats"]:
            if s["pgid"] == pgid:
                s["up"], s["acting"] = [a, b, c], want
                s["state"] = "active+remapped+backfill_wait"
        return d, pgid, want
    raise AssertionError("no EC PG without items")


def test_pin_remapped_orders_an_ec_chain(dumps: Dict[str, Any]) -> None:
    d, pgid, want = _chained(dumps)
    pins = pin_remapped(_load(d))
    assert pgid in pins.items, pins.skipped.get(pgid)
    d["osd_dump"]["pg_upmap_items"].append(
        {"pgid": pgid, "mappings": [{"from": a, "to": b} for a, b in pins.items[pgid]]})
    after = _load(d)
    pool = next(p for p in after.pools if p.type == "erasure")
    m = Placer(after).map_pool(pool)
    assert m.up_list(int(pgid.split(".")[1], 16)) == want


def test_the_balancer_rewrites_a_chained_pg_in_an_order_ceph_keeps(dumps: Dict[str, Any]) -> None:
    # the chain above set as items; the balancer then moves the PG's third shard within
    # its host: the list it writes, applied the way Ceph applies it, gives the set it meant
    d, pgid, want = _chained(dumps)
    pins = pin_remapped(_load(d))
    d["osd_dump"]["pg_upmap_items"].append(
        {"pgid": pgid, "mappings": [{"from": a, "to": b} for a, b in pins.items[pgid]]})
    snap = _load(d)
    b = Balancer(snap)
    st = next(s for s in b.states if s.pool.type == "erasure")
    row = int(pgid.split(".")[1], 16)
    assert st.up[row].tolist() == want
    c = want[2]
    y = next(o for o in range(snap.osds.count) if snap.osds.host[o] == snap.osds.host[c] and o != c)
    st.move(row, c, y)
    items = b.items()
    meant = want[:2] + [y]
    placer = Placer(snap).with_upmaps(snap.pg_upmap, {**snap.pg_upmap_items, pgid: tuple(items[pgid])})
    assert placer.map_pool(st.pool).up_list(row) == meant


def _driver() -> Driver:
    kv: Dict[str, Optional[str]] = {}
    return Driver(kv.get, kv.__setitem__, 0.0)


def test_mismatches_compare_replicated_as_sets_and_ec_by_slot() -> None:
    up = np.ones(8, dtype=bool)
    want = {"1.0": [1, 2, 3], "2.0": [1, 2, 3], "2.1": [4, 5, 6]}
    got = {"1.0": [3, 1, 2], "2.0": [2, 1, 3], "2.1": [4, 5, 6]}
    bad = mismatches(want, got, {1}, up)
    assert list(bad) == ["2.0"] and "[1, 2, 3]" in bad["2.0"] and "[2, 1, 3]" in bad["2.0"]
    up[5] = False       # the map drops a down OSD whatever the items say: not compared
    assert mismatches({"2.1": [4, 5, 6]}, {"2.1": [4, NONE, 6]}, {1}, up) == {}
    assert mismatches({"2.2": [4, 6, 7]}, {}, {1}, up) == {"2.2": "not in the map"}


def test_pins_are_checked_against_the_map_once_it_holds_them(dumps: Dict[str, Any]) -> None:
    d, pgid, want = _chained(dumps)
    ceph, drv = FakeCeph(d), _driver()
    ctx = context(ceph, make({}), 0.0, burst=lambda cmds: [ceph.send(c) for c in cmds])
    r = ops.pin_remapped(drv.plans, ctx, False)
    assert pgid in r["items"]
    # the exact model on the new map agrees with every pin: nothing is reported
    ok = ops.verify_pins(drv.plans, ceph.snap(), 1.0)
    assert ok is not None and ok["checked"] == r["pinned"] and ok["mismatched"] == 0
    assert f"{r['pinned']} of {r['pinned']} pinned PGs are on their data" in pins_text(dict(r, verified=ok))
    assert not any(h["event"] == "mismatch" for h in drv.executor.history)
    assert "PG_ADVISOR_UPMAP_MISMATCH" not in drv.health()


def test_a_pg_the_map_puts_elsewhere_is_counted_logged_and_raised(dumps: Dict[str, Any]) -> None:
    d, pgid, want = _chained(dumps)
    ceph, drv = FakeCeph(d), _driver()
    model = drv.executor.up_sets

    def as_before_the_fix(snap: snapshot.Snapshot, pgids: Sequence[str]) -> Dict[str, List[int]]:
        # the cluster applying the chain slot by slot, as it did in the report
        got = model(snap, pgids)
        got[pgid] = [want[0] if o == want[1] else o for o in got[pgid]][:1] + got[pgid][1:]
        got[pgid][0] = 99
        return got
    drv.executor.up_sets = as_before_the_fix
    ctx = context(ceph, make({}), 0.0, burst=lambda cmds: [ceph.send(c) for c in cmds])
    r = ops.pin_remapped(drv.plans, ctx, False)
    assert pgid in r["items"]
    # the next tick sees a newer map and checks the pins there
    drv.tick(context(ceph, make({}), 5.0))
    st = drv.executor.state
    assert st is not None and st.mismatched == 1 and st.mismatch_detail[0].startswith(pgid)
    assert any(h["event"] == "mismatch" and pgid in h["detail"] for h in drv.executor.history)
    check = drv.health()["PG_ADVISOR_UPMAP_MISMATCH"]
    assert check["count"] == 1 and pgid in check["detail"][0]
    n = r["pinned"]
    assert [h["detail"].split(": ", 1)[1] for h in drv.executor.history if h["event"] == "checked"] == [
        f"{n - 1} of {n} PGs where their pins put them"]
    # checked once: a later tick adds nothing, and the command, asking after the tick,
    # gets the tick's answer
    found = ops.verify_pins(drv.plans, ceph.snap(), 9.0)
    assert found is not None and found["mismatched"] == 1 and pgid in found["mismatched_pgs"]
    drv.tick(context(ceph, make({}), 10.0))
    assert drv.executor.state is not None and drv.executor.state.mismatched == 1


def test_with_no_plan_ticking_the_pins_are_still_checked(dumps: Dict[str, Any]) -> None:
    # mode off: the serve loop runs no plan, only the checks of what commands set
    d, pgid, want = _chained(dumps)
    ceph, drv = FakeCeph(d), _driver()
    ctx = context(ceph, make({}), 0.0, burst=lambda cmds: [ceph.send(c) for c in cmds])
    r = ops.pin_remapped(drv.plans, ctx, False)
    assert drv.plans.pins.want and drv.plans.pins.verified is None
    drv.check_commands(context(ceph, make({}), 5.0))
    assert not drv.plans.pins.want and drv.plans.pins.verified == {
        "checked": r["pinned"], "mismatched": 0, "mismatched_pgs": {}}
    assert [h["event"] for h in drv.executor.history][-1] == "checked"


def test_a_balance_round_is_checked_against_the_map(dumps: Dict[str, Any],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # the state keeps at most ROUND_CHECK_MAX PGs of a round for the checks: 2 here
    monkeypatch.setattr(balance_steps, "ROUND_CHECK_MAX", 2)
    ceph, store = FakeCeph(dumps), Store()
    ex = balance_plan(ceph, store)
    seen: List[List[str]] = []
    model = ex.up_sets

    def shifted(snap: snapshot.Snapshot, pgids: Sequence[str]) -> Dict[str, List[int]]:
        seen.append(list(pgids))
        got = model(snap, pgids)
        first = sorted(got)[0]
        got[first] = got[first][::-1][:-1] + [63]     # not where its items put it
        return got
    ex.up_sets = shifted
    for i in range(3):
        ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 100.0 * i))
        rnd = (store.state or {}).get("round")
        if rnd:
            assert len(rnd["items"]) <= 2 and set(rnd["want"]) == set(rnd["items"])
    assert seen and all(len(s) <= 2 for s in seen), "no round was checked"
    sizes = [int(h["detail"].split(": ")[1].split(" ")[0]) for h in ex.history if h["event"] == "round"]
    assert max(sizes) > 2, sizes      # a round bigger than what the state keeps
    st = ex.state
    # one PG of each round checked, each counted once
    assert st is not None and st.mismatched == len(seen)
    assert any(h["event"] == "mismatch" and "round" in h["detail"] for h in ex.history)
    assert store.state is not None and store.state["mismatched"] == len(seen)


def test_the_balancer_leaves_a_pg_with_a_full_pg_upmap_to_its_owner(dumps: Dict[str, Any]) -> None:
    # items written from CRUSH's set would not apply to it as written: every rbd PG with a
    # pg-upmap (its CRUSH set as it is) must come out of a balance run untouched
    d = copy.deepcopy(dumps)
    snap = _load(d)
    rbd = snap.pool_by_name("rbd")
    raw = Placer(snap).map_pool(rbd, upmaps=False)
    owned = [raw.pgid(r) for r in range(0, rbd.pg_num, 2)]
    d["osd_dump"]["pg_upmap"] = [{"pgid": k, "osds": raw.up_list(int(k.split(".")[1], 16))} for k in owned]
    b = Balancer(_load(d), pools=["rbd"])
    res = b.run()
    assert res.moves > 0, "nothing to balance: the test shows nothing"
    assert not set(owned) & set(res.items)
    assert any("pg-upmap" in n for n in res.notes)


def test_an_ec_shard_may_move_back_to_crushs_osd_for_its_slot_only(dumps: Dict[str, Any]) -> None:
    # the drain undoes a pin by moving the shard back where CRUSH puts that slot; an OSD
    # CRUSH gives another slot stays held (it could close a cycle items cannot write)
    d, pgid, want = _chained(dumps)
    pins = pin_remapped(_load(d))
    d["osd_dump"]["pg_upmap_items"].append(
        {"pgid": pgid, "mappings": [{"from": a, "to": b} for a, b in pins.items[pgid]]})
    b = Balancer(_load(d))
    st = next(s for s in b.states if s.pool.type == "erasure")
    row = np.array([int(pgid.split(".")[1], 16)])
    crush = st.raw[row[0]].tolist()          # [a, b, c]; the data on [b, x, c]
    assert crush[0] in st.forbidden(row)[0]                       # no source named: all held
    shard1 = np.array([want[1]])             # x, on slot 1, whose CRUSH OSD is b
    held = st.forbidden(row, shard1)[0].tolist()
    assert crush[0] in held                  # slot 0's CRUSH OSD stays held for slot 1
    shard0 = np.array([want[0]])             # b, on slot 0, whose CRUSH OSD is a
    assert crush[0] not in st.forbidden(row, shard0)[0].tolist()


def test_the_balance_command_lists_a_pg_the_map_puts_elsewhere(wired: Any) -> None:
    m, ceph, _ = wired

    def mon_command(c: Dict[str, Any]) -> Tuple[int, str, str]:
        rc, err = m.send(c)
        return rc, "", err
    setattr(m, "mon_command", mon_command)
    real = m.reader.mon_up_sets

    def one_elsewhere(snap: snapshot.Snapshot, pgids: Sequence[str]) -> Dict[str, List[int]]:
        got = real(snap, pgids)
        first = sorted(got)[0]
        got[first] = got[first][:-1] + [63]
        return got
    setattr(m.reader, "mon_up_sets", one_elsewhere)
    code, r, _ = cmd(m, "balance")
    assert code == 0 and r["items"] and r["applied"] == len(r["items"]) and r["failed"] == []
    # the background checks the round on the next map, and names the PG in the history
    m.background.run_plan()
    first = sorted(r["items"])[0]
    (check,) = [h["detail"] for h in cmd(m, "history")[1]["history"] if h["event"] == "checked"]
    assert f"1 PGs not where their items put them: {first}: items written for" in check, check
    assert ", 63]" in check, check      # where the map put it (the OSD the test gave)


def _swapped(dumps: Dict[str, Any]) -> Tuple[Dict[str, Any], str, List[int]]:
    """An EC PG whose data sits on CRUSH's set with two shards swapped (the hosts stay
    distinct, so the rule holds): no item list writes it."""
    d = copy.deepcopy(dumps)
    snap = _load(d)
    pool = next(p for p in snap.pools if p.type == "erasure")
    raw = Placer(snap).map_pool(pool, upmaps=False)
    for r in range(raw.up.shape[0]):
        pgid = raw.pgid(r)
        if pgid in snap.pg_upmap_items:
            continue
        a, b, c = raw.up[r].tolist()
        for s in d["pg_dump"]["pg_map"]["pg_stats"]:
            if s["pgid"] == pgid:
                s["up"], s["acting"] = [a, b, c], [b, a, c]
                s["state"] = "active+remapped+backfill_wait"
        return d, pgid, [b, a, c]
    raise AssertionError("no EC PG without items")


def test_swapped_shards_are_pinned_with_a_full_pg_upmap_the_drain_takes_out_first(
        dumps: Dict[str, Any]) -> None:
    d, pgid, want = _swapped(dumps)
    with pytest.raises(NotExpressible, match="cycle"):
        snap = _load(d)
        pool = next(p for p in snap.pools if p.type == "erasure")
        build_items(Placer(snap).crush_sets(pool)[1][int(pgid.split(".")[1], 16)].tolist(), want, False,
                    ALL_IN)
    pins = pin_remapped(_load(d))
    assert pins.full == {pgid: want} and pgid not in pins.items and pgid not in pins.skipped
    ceph, drv = FakeCeph(d), _driver()
    sent: List[Dict[str, Any]] = []

    def burst(cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
        sent.extend(cmds)
        out = []
        for c in cmds:
            if c["prefix"] == "osd pg-upmap":       # FakeCeph keeps items only: the mon's part here
                ceph.dumps["osd_dump"].setdefault("pg_upmap", []).append({"pgid": c["pgid"], "osds": c["id"]})
                ceph.dumps["osd_dump"]["epoch"] += 1
                out.append((0, ""))
            elif c["prefix"] == "osd rm-pg-upmap":
                ceph.dumps["osd_dump"]["pg_upmap"] = [u for u in ceph.dumps["osd_dump"]["pg_upmap"]
                                                      if u["pgid"] != c["pgid"]]
                ceph.dumps["osd_dump"]["epoch"] += 1
                out.append((0, ""))
            else:
                out.append(ceph.send(c))
        return out
    r = ops.pin_remapped(drv.plans, context(ceph, make({}), 0.0, burst=burst), False)
    assert {"prefix": "osd pg-upmap", "pgid": pgid, "id": want} in sent and r["full"] == {pgid: want}
    assert pgid in pins_text(r) and "pg-upmap" in pins_text(r)
    # the map puts the PG on its data: the check after sending agrees
    v = ops.verify_pins(drv.plans, ceph.snap(), 1.0)
    assert v is not None and v["mismatched"] == 0 and v["checked"] == r["pinned"]
    st = drv.executor.state
    assert st is not None and st.full_pins == {pgid: want}
    drv.tick(context(ceph, make({}), 2.0))
    assert drv.executor.state is not None and drv.executor.state.pins_left >= 1
    # the drain's first round (after step_interval) removes the pg-upmap before any item
    sent.clear()
    for t in (100.0, 200.0):
        drv.tick(context(ceph, make({}), t, burst=burst))
    assert sent and sent[0] == {"prefix": "osd rm-pg-upmap", "pgid": pgid}
    assert not ceph.snap().pg_upmap and drv.executor.state is not None
    assert drv.executor.state.full_pins == {}
    assert any(h["event"] == "unpin" for h in drv.executor.history)


def test_a_pg_upmap_primary_swaps_its_osd_to_the_front_as_ceph_does() -> None:
    w = np.array([0x10000] * 6 + [0], dtype=np.int64)     # osd.6 is out
    assert apply_upmap([1, 2, 3], None, (), w, primary=3) == [3, 2, 1]      # a swap, not a shift
    assert apply_upmap([1, 2, 3], None, (), w, primary=1) == [1, 2, 3]      # already first
    assert apply_upmap([1, 2, 3], None, (), w, primary=4) == [1, 2, 3]      # not in the set
    assert apply_upmap([1, 2, 6], None, (), w, primary=6) == [1, 2, 6]      # out: ignored
    assert apply_upmap([1, 2, 3], None, (), w, primary=9) == [1, 2, 3]      # past max_osd
    # after the items: an item's target can be the primary
    assert apply_upmap([1, 2, 3], None, ((3, 4),), w, primary=4) == [4, 2, 1]
    # a pg_upmap naming an out OSD makes Ceph return before the items and the primary
    assert apply_upmap([1, 2, 3], (6, 2, 3), ((2, 5),), w, primary=3) == [1, 2, 3]


def test_the_placer_applies_pg_upmap_primaries(snap: snapshot.Snapshot) -> None:
    import dataclasses
    pool = snap.pools[0]
    up = Placer(snap).map_pool(pool)
    pgid = up.pgid(0)
    last = up.up_list(0)[-1]
    moved = dataclasses.replace(snap, pg_upmap_primaries={pgid: last})
    m = Placer(moved).map_pool(pool)
    want = up.up_list(0)
    want[0], want[-1] = want[-1], want[0]
    assert m.up_list(0) == want and int(m.up_primary[0]) == last
    assert all(m.up_list(i) == up.up_list(i) for i in range(1, m.ps.size))
