"""A plan's rounds of upmap items and its pgp_num steps, primed or not: each PG's acting set
sent just before its items, in small bursts, refusals kept by PG, and what each round set
moving said in its history line."""
import copy
import dataclasses
from typing import Any, Dict, List, Tuple

from pg_advisor.model import snapshot
from pg_advisor.crush.placement import Placer
from pg_advisor.execute.balance_steps import BALANCE_ROUNDS_MAX, rounds_max
from pg_advisor.execute.priming import ASYNC_MIN_COST, asked_acting, primed_commands
from pg_advisor.execute.steps import balance_step
from pg_advisor.model.units import human_bytes

from .fakes import OPEN, FakeCeph, Store, acting_sets, balance_plan, run, start, tick_of


def test_a_primed_round_sends_each_pgs_acting_set_just_before_its_items(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    snap = ceph.snap()
    pgs = snap.pgs
    assert pgs is not None
    acting = acting_sets(snap)
    bursts: List[List[Dict[str, Any]]] = []

    def burst(cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
        bursts.append(list(cmds))
        return [ceph.send(c) for c in cmds]
    ex = balance_plan(ceph, store)
    ex.tick(tick_of(snap, dataclasses.replace(OPEN, prime=True), ceph.send, 0.0, burst))
    assert len(bursts) == 1, "a round's commands go out together, for one map epoch"
    cmds = bursts[0]
    items = [c for c in cmds if c["prefix"].endswith("pg-upmap-items")]     # set or removed: moves
    assert items
    up_after = Placer(ceph.snap()).up_sets([c["pgid"] for c in items])
    entries = {f"{int(p)}.{int(x):x}": int(n) for p, x, n in zip(pgs.pool, pgs.ps, pgs.log_size)}
    asked = 0
    for i, c in enumerate(cmds):
        if c["prefix"] == "osd pg-temp":
            nxt = cmds[i + 1]
            assert nxt["prefix"].endswith("pg-upmap-items") and nxt["pgid"] == c["pgid"]
            # the fixture's logs reach back to the PGs' creation and are longer than
            # osd_async_recovery_min_cost: the primary will want the OSDs that hold the data
            # in the new up set's order, its first first, the new one left out to recover
            old, up = acting[c["pgid"]], up_after[c["pgid"]]
            assert entries[c["pgid"]] > ASYNC_MIN_COST
            if any(snap.osds.primary_affinity[o] < 1 for o in old + up):
                # primary affinity may reorder the new up set: primed as it is
                assert c["id"] == old
                continue
            primary = up[0] if up[0] in old else old[0]
            assert c["id"] == [primary] + [o for o in up if o in old and o != primary], (old, up)
            asked += 1
    assert asked > 0
    # the fixture's PGs are all active+clean: every moved PG is primed but those whose log
    # is short enough for the new OSD to join at once
    assert sum(c["prefix"] == "osd pg-temp" for c in cmds) == \
        sum(entries[c["pgid"]] > ASYNC_MIN_COST for c in items) > 0
    assert any("primed" in h["detail"] for h in store.history if h["event"] == "round")


def test_priming_maps_the_rounds_pgs_alone(dumps: Dict[str, Any]) -> None:
    # the new up set each pg_temp is computed for comes from a CRUSH run over the round's
    # PGs, not the pool's (a round of 16 PGs in a pool of 300,000 maps 16)
    snap = FakeCeph(dumps).snap()
    pool = max((p for p in snap.pools if p.type == "replicated"), key=lambda p: p.pg_num)
    acting = acting_sets(snap)
    cmds = []
    for ps in range(3):
        pgid = f"{pool.id}.{ps:x}"
        spare = next(o for o in range(snap.osds.count) if o not in acting[pgid])
        cmds.append({"prefix": "osd pg-upmap-items", "pgid": pgid, "id": [acting[pgid][-1], spare]})
    out, primed = primed_commands(snap, cmds)
    assert [c for c in out if c["prefix"] == "osd pg-upmap-items"] == cmds and primed > 0
    work = Placer.of(snap).work
    assert pool.pg_num > 3 and work.replicas == 3 * pool.size, (work, pool.pg_num)


def test_the_pg_temp_primed_is_the_acting_set_the_primary_asks_for() -> None:
    # seen with debug_osd 10 (PeeringState::choose_acting): a backfill (the log trimmed)
    # wants the primary, the up set's OSDs with the data in its order, then the leaving one
    assert asked_acting([3, 1, 2], [3, 4, 2], False, 15, 2) == [3, 2, 1]
    # the new OSD first in the up set holds nothing: the primary stays
    assert asked_acting([3, 2, 1], [4, 2, 1], False, 15, 2) == [3, 2, 1]
    assert asked_acting([5, 2, 1], [2, 4, 1], False, 15, 2) == [2, 1, 5]
    # the log reaching back to the PG's creation: the new OSD recovers from it, left out
    # of the acting set past osd_async_recovery_min_cost entries, in it at once below
    assert asked_acting([2, 4, 1], [2, 0, 1], True, 200, 2) == [2, 1]
    assert asked_acting([2, 4, 1], [0, 2, 1], True, 200, 2) == [2, 1]
    assert asked_acting([2, 4, 1], [2, 0, 1], True, ASYNC_MIN_COST, 2) is None
    assert asked_acting([2, 4], [2, 0], True, 200, 2) is None        # not below min_size
    # the same OSDs: the up set; what it cannot tell: the acting set as it is
    assert asked_acting([2, 4, 1], [4, 2, 1], False, 15, 2) is None
    assert asked_acting([2, 4, 1], [2, 0, 3], True, 200, 2) == [2, 4, 1]
    assert asked_acting([2, 4, 1], [2, 0, 3], False, 15, 2) == [2, 4, 1]


def test_a_pg_not_clean_is_not_primed_and_a_refused_pg_temp_fails_nothing(
        dumps: Dict[str, Any]) -> None:
    d = copy.deepcopy(dumps)
    for s in d["pg_dump"]["pg_map"]["pg_stats"]:
        s["state"] = "active+remapped+backfilling"
    ceph, store = FakeCeph(d), Store()
    ex = balance_plan(ceph, store)
    ex.tick(tick_of(ceph.snap(), dataclasses.replace(OPEN, prime=True), ceph.send, 0.0))
    assert ceph.sent and not any(c["prefix"] == "osd pg-temp" for c in ceph.sent)

    ceph, store = FakeCeph(dumps), Store()

    def refuse_temps(cmd: Dict[str, Any]) -> Tuple[int, str]:
        return (-1, "EPERM") if cmd["prefix"] == "osd pg-temp" else ceph.send(cmd)
    ex = balance_plan(ceph, store)
    ex.tick(tick_of(ceph.snap(), dataclasses.replace(OPEN, prime=True), refuse_temps, 0.0))
    assert ceph.sent and store.state is not None and store.state["status"] == "running"
    assert not store.state["blockers"] and not store.state.get("error")


def test_unprimed_rounds_send_no_pg_temp(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = balance_plan(ceph, store)
    ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))
    assert ceph.sent and not any(c["prefix"] == "osd pg-temp" for c in ceph.sent)


def test_a_primed_pgp_step_holds_each_remapped_pg_on_the_osds_with_its_data(
        dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)                 # a plain plan: no pins
    assert ex.state is not None
    pgp_steps = sum(1 for s in ex.state.steps if s.kind == "pgp_num")
    primed_steps = 0
    for i in range(300):
        snap = ceph.snap()
        before = Placer(snap).map_pool(snap.pool_by_name("rbd"))
        acting = acting_sets(snap)
        bursts: List[List[Dict[str, Any]]] = []

        def burst(cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
            bursts.append(list(cmds))
            return [ceph.send(c) for c in cmds]
        ex.tick(tick_of(snap, dataclasses.replace(OPEN, prime=True), ceph.send, float(i), burst))
        ceph.settle()
        after = Placer(ceph.snap()).map_pool(ceph.snap().pool_by_name("rbd"))
        for b in bursts:
            if not any(c.get("var") == "pgp_num_actual" for c in b):
                continue
            primed_steps += 1
            # the PGs whose up set this step changed, found from the maps before and after
            moved = {before.pgid(r) for r in range(before.up.shape[0])
                     if before.up_list(r) != after.up_list(r)}
            temps = {c["pgid"]: c["id"] for c in b if c["prefix"] == "osd pg-temp"}
            assert moved and set(temps) == moved
            assert all(temps[k] == acting[k] for k in temps)     # where the data is now
            # the pg-temps go first, pgp_num target and actual after them, one burst
            assert [c["prefix"] for c in b[len(temps):]] == ["osd pool set"] * 2
        if not ex.active:
            break
    assert primed_steps == pgp_steps > 0
    assert store.state is not None and store.state["status"] == "done"


def test_a_primed_pgp_step_waits_for_the_stats_of_every_new_pg(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = start(ceph, store, 64)
    prime = dataclasses.replace(OPEN, prime=True)
    ex.tick(tick_of(ceph.snap(), prime, ceph.send, 0.0))           # the split
    assert [c["var"] for c in ceph.sent] == ["pg_num", "pgp_num"] and ceph.sent[1]["val"] == "32"
    ceph.settle(report=False)                              # its children not in the stats yet
    n = len(ceph.sent)
    for t in (1.0, 2.0):
        ex.tick(tick_of(ceph.snap(), prime, ceph.send, t))
    assert len(ceph.sent) == n, "a pgp_num step went out before its PGs' stats"
    assert ex.state is not None and ex.state.step().kind == "pgp_num"
    assert "not in the PG stats yet" in (ex.state.waiting or "")
    ceph.report_children()
    ex.tick(tick_of(ceph.snap(), prime, ceph.send, 3.0))
    temps = [c["pgid"] for c in ceph.sent[n:] if c["prefix"] == "osd pg-temp"]
    children = {c for c in temps if int(c.split(".")[1], 16) >= 32}
    assert temps and children, ceph.sent[n:]
    # unprimed, the same step does not wait (Ceph steps pgp_num itself)
    ceph2, store2 = FakeCeph(dumps), Store()
    ex2 = start(ceph2, store2, 64)
    ex2.tick(tick_of(ceph2.snap(), OPEN, ceph2.send, 0.0))
    ceph2.settle(report=False)
    n2 = len(ceph2.sent)
    ex2.tick(tick_of(ceph2.snap(), OPEN, ceph2.send, 1.0))
    assert any(c.get("var") == "pgp_num" for c in ceph2.sent[n2:])


def test_unprimed_pgp_steps_leave_the_stepping_to_ceph(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    run(start(ceph, store, 64), ceph)
    assert not any(c["prefix"] == "osd pg-temp" or c.get("var") == "pgp_num_actual" for c in ceph.sent)


def test_a_rounds_history_line_says_how_many_pgs_and_bytes_it_set_moving(dumps: Dict[str, Any]) -> None:
    ceph, store = FakeCeph(dumps), Store()
    ex = balance_plan(ceph, store)
    snap = ceph.snap()
    ex.tick(tick_of(snap, OPEN, ceph.send, 0.0))
    ex.tick(tick_of(snap, OPEN, ceph.send, 1.0))
    items = (store.state or {}).get("round", {}).get("items") or {}
    assert items, store.history
    assert snap.pgs is not None
    pgs = snap.pgs
    sizes = {f"{p}.{s:x}": int(b) for p, s, b in zip(pgs.pool.tolist(), pgs.ps.tolist(), pgs.bytes.tolist())}
    line = next(h["detail"] for h in store.history if h["event"] == "round")
    assert f": {len(items)} PGs, " in line
    assert f", {human_bytes(sum(sizes[k] for k in items))} in those PGs" in line, line


def test_set_items_sends_small_primed_bursts_and_keeps_refusals_by_pg(snap: snapshot.Snapshot) -> None:
    from pg_advisor.execute.priming import PRIME_BATCH
    from pg_advisor.execute.rounds import set_items
    pool, pgs = snap.pool_by_name("rbd"), snap.pgs
    assert pgs is not None
    # 20 PGs: every item names the PG's first OSD and one not in its up set (any will do
    # for the mon in this fake); refuse one PG's items and another PG's pg_temp
    items: Dict[str, List[List[int]]] = {}
    for i in range(20):
        pgid = f"{pool.id}.{i:x}"
        osds = [int(o) for o in pgs.up[int(pgs.rows_of([pgid])[0])][:pool.size]]
        other = next(o for o in range(snap.osds.count) if o not in osds)
        items[pgid] = [[osds[0], other]]
    bursts: List[List[Dict[str, Any]]] = []

    def burst(cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
        bursts.append(cmds)
        return [(-22, "no such thing") if (c["pgid"], c["prefix"]) in
                {(f"{pool.id}.3", "osd pg-upmap-items"), (f"{pool.id}.4", "osd pg-temp")} else (0, "")
                for c in cmds]

    out = set_items(snap, items, burst, prime=True)
    assert [len({c["pgid"] for c in b}) for b in bursts] == [PRIME_BATCH, 20 - PRIME_BATCH]
    sent = [c for b in bursts for c in b]
    # each PG's pg_temp goes just before its items, in the same burst
    for b in bursts:
        for k, c in enumerate(b):
            if c["prefix"] == "osd pg-temp":
                assert b[k + 1]["prefix"] == "osd pg-upmap-items" and b[k + 1]["pgid"] == c["pgid"]
    assert out.primed == sum(c["prefix"] == "osd pg-temp" for c in sent) > 0
    # a refused pg_temp loses only the priming; refused items are the round's failure
    assert out.failed == {f"{pool.id}.3": "no such thing"}
    assert out.messages() == [f"{pool.id}.3: no such thing"]
    bursts.clear()
    plain = set_items(snap, items, burst, prime=False)
    assert plain.primed == 0 and all(c["prefix"] == "osd pg-upmap-items" for b in bursts for c in b)


def test_an_uneven_pool_stops_the_plan_after_the_rounds_its_predicted_moves_allow(
        dumps: Dict[str, Any]) -> None:
    ceph = FakeCeph(dumps)
    rbd = ceph.snap().pool_by_name("rbd")
    # a split's balance step predicts its moves: as many rounds as they take, four times
    big = balance_step(rbd, rbd.pg_num, rbd.pgp_num, 98_274, 1.0)
    assert rounds_max(big) == 4 * 6_143 > BALANCE_ROUNDS_MAX
    assert rounds_max(balance_step(rbd, rbd.pg_num, rbd.pgp_num, 10, 1.0)) == BALANCE_ROUNDS_MAX
    for done, step, stops in ((BALANCE_ROUNDS_MAX - 1, None, False), (BALANCE_ROUNDS_MAX, None, True),
                              (BALANCE_ROUNDS_MAX, big, False)):
        store = Store()
        ex = balance_plan(ceph, store)
        assert ex.state is not None
        if step is not None:
            ex.state.steps = [step]
        ex.state.rounds = done
        ex.tick(tick_of(ceph.snap(), OPEN, ceph.send, 0.0))
        said = (store.state or {}).get("stopped_why") or ""
        assert ("still not even after 1000 balance rounds" in said) is stops, said
