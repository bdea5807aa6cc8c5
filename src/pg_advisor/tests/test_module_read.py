"""`ceph pg-advisor read-balance` through the module, the mon simulated (unit level): the
gate on require_min_compat_client, bad input refused with nothing sent, a round that sets
the entries the plan made and leaves nothing to do after it."""
from typing import Any, Dict

import pytest

from . import mgr_stub
from .conftest import cmd
from pg_advisor.execute import auto_mode


def reef(ceph: Any, refresh: Any) -> None:
    ceph.dumps["osd_dump"]["require_min_compat_client"] = "reef"
    ceph.dumps["osd_dump"]["epoch"] += 1
    refresh()


def test_before_reef_a_dry_run_shows_the_scores_and_a_round_is_refused(wired: Any) -> None:
    m, ceph, _ = wired
    code, r, _ = cmd(m, "read-balance", dry_run=True)
    assert code == 0 and r["allowed"] is False and r["commands"] == []
    assert {p["pool"] for p in r["pools"]} == {"rbd", "fast"}
    assert all(p["score_before"] is not None for p in r["pools"])
    assert any("require_min_compat_client reef" in n for n in r["notes"])
    code, _, err = cmd(m, "read-balance")
    assert code == -95 and "require_min_compat_client reef" in err and ceph.sent == []


@pytest.mark.parametrize("kw, code, message", [
    ({"max_changes": 0}, -22, "must be within 1..10000"),
    ({"max_changes": -1}, -22, "must be within 1..10000"),
    ({"max_changes": 2 ** 31}, -22, "must be within 1..10000"),
    ({"max_changes": 10 ** 8}, -22, "must be within 1..10000"),
    ({"pool": "nope"}, -2, "does not exist"),
])
def test_bad_input_is_refused_and_sends_nothing(wired: Any, kw: Dict[str, Any], code: int,
                                                message: str) -> None:
    m, ceph, refresh = wired
    reef(ceph, refresh)
    got, _, err = cmd(m, "read-balance", **kw)
    assert got == code and message in err, (got, err)
    assert ceph.sent == []


def test_a_round_sets_the_planned_entries_and_leaves_nothing_to_do(wired: Any) -> None:
    m, ceph, refresh = wired
    reef(ceph, refresh)
    code, plan, _ = cmd(m, "read-balance", dry_run=True)
    assert code == 0 and plan["allowed"] and plan["changes"] > 0 and ceph.sent == []
    rbd = next(p for p in plan["pools"] if p["pool"] == "rbd")
    assert rbd["max_after"] < rbd["max_before"] and rbd["score_after"] < rbd["score_before"]
    code, r, err = cmd(m, "read-balance", max_changes=1000)
    assert code == 0, err
    assert r["failed"] == [] and r["applied"] == len(r["commands"]) == len(ceph.sent)
    assert r["commands"] == plan["commands"]
    set_ = {c["pgid"]: c["id"] for c in ceph.sent if c["prefix"] == "osd pg-upmap-primary"}
    kept = {u["pgid"]: u["primary_osd"] for u in ceph.dumps["osd_dump"]["pg_upmap_primaries"]}
    assert set_ and kept == set_
    code, again, _ = cmd(m, "read-balance", dry_run=True)
    assert again["commands"] == [] and again["changes"] == 0
    assert next(p for p in again["pools"] if p["pool"] == "rbd")["max_before"] == rbd["max_after"]


def test_a_round_is_bounded_by_the_option(wired: Any) -> None:
    m, ceph, refresh = wired
    reef(ceph, refresh)
    mgr_stub.BaseMgrModule.fake.module_options[("pg_advisor", "read_max_changes")] = 2
    code, r, _ = cmd(m, "read-balance")
    assert code == 0 and r["changes"] <= 2 and len(ceph.sent) == len(r["commands"]) <= 2 + r["cleanup"]


def test_refused_while_a_plan_is_open_or_cephs_balancer_is_active(wired: Any) -> None:
    m, ceph, refresh = wired
    reef(ceph, refresh)
    fake = mgr_stub.BaseMgrModule.fake
    fake.module_options[("balancer", "active")] = True
    code, _, err = cmd(m, "read-balance")
    assert code == -16 and "built-in balancer is active" in err and ceph.sent == []
    fake.module_options[("balancer", "active")] = False
    assert cmd(m, "apply", pool="rbd", pg_num=64)[0] == 0
    code, _, err = cmd(m, "read-balance")
    assert code == -16 and "owns the" in err and ceph.sent == []


@pytest.mark.parametrize("read_balance, compat, rounds", [
    (True, "reef", 1), (False, "reef", 0), (True, "luminous", 0)])
def test_auto_mode_evens_primaries_once_the_counts_are_even(wired: Any, read_balance: bool, compat: str,
                                                            rounds: int,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Mode auto with nothing to split and nothing for the counts to move (the sizing's and
    the count balancer's answers stubbed to "nothing": their own tests are elsewhere): with read_balance
    on and Reef's clients required, one round of at most read_max_changes primary changes
    per sleep_interval, kept in the history; else nothing is sent."""
    m, ceph, refresh = wired
    ceph.dumps["osd_dump"]["require_min_compat_client"] = compat
    ceph.dumps["osd_dump"]["epoch"] += 1
    refresh()
    opts = mgr_stub.BaseMgrModule.fake.module_options
    opts.update({("pg_advisor", "mode"): "auto", ("pg_advisor", "read_balance"): read_balance,
                 ("pg_advisor", "read_max_changes"): 3})
    monkeypatch.setattr(auto_mode, "auto_targets", lambda *a: {})
    monkeypatch.setattr(auto_mode, "start_balancing", lambda *a: False)
    m.background.run_plan()
    m.background.run_plan()            # within sleep_interval: no second round
    sent = [c for c in ceph.sent if "upmap-primary" in c["prefix"]]
    assert len(sent) == (3 if rounds else 0) and len(ceph.sent) == len(sent)
    events = [h for h in cmd(m, "history")[1]["history"] if h["event"] == "read-balance"]
    assert len(events) == rounds and (not rounds or events[0]["detail"].startswith("3 of 3"))


@pytest.mark.parametrize("prime", [False, True])
def test_items_that_take_an_entrys_osd_out_of_its_set_remove_the_entry(snap: Any, prime: bool) -> None:
    """A round's items and its pg_upmap_primaries stay consistent: the item that moves the
    entry's OSD out of the PG's set is followed by rm-pg-upmap-primary; an item that moves
    another OSD, or a PG with no entry, sends none; a refused removal is not an item's
    refusal."""
    import dataclasses
    from pg_advisor.crush.placement import Placer
    from pg_advisor.execute.rounds import set_items
    pool = snap.pool_by_name("rbd")
    m = Placer.of(snap).map_pool(pool, upmaps=False)
    rows = [r for r in range(pool.pg_num) if m.pgid(r) not in snap.pg_upmap_items][:3]
    a, b, c = (m.pgid(r) for r in rows)
    up = {p: m.up_list(r) for p, r in zip((a, b, c), rows)}
    spare = {p: next(o for o in range(snap.osds.count) if o not in up[p]) for p in up}
    snap = dataclasses.replace(snap, pg_upmap_primaries={a: up[a][1], b: up[b][1]})
    items = {a: [[up[a][1], spare[a]]], b: [[up[b][2], spare[b]]], c: [[up[c][1], spare[c]]]}
    sent: list = []

    def burst(cmds: list) -> list:
        sent.extend(cmds)
        return [(-2, "no entry") if x["prefix"] == "osd rm-pg-upmap-primary" else (0, "") for x in cmds]
    out = set_items(snap, items, burst, prime)
    removed = [x["pgid"] for x in sent if x["prefix"] == "osd rm-pg-upmap-primary"]
    assert removed == [a] and out.failed == {}
    order = [(x["prefix"], x["pgid"]) for x in sent if x["pgid"] == a and x["prefix"] != "osd pg-temp"]
    assert order == [("osd pg-upmap-items", a), ("osd rm-pg-upmap-primary", a)]


def test_a_balance_dry_run_shows_the_entries_its_items_unseat(snap: Any) -> None:
    """The dry run lists every command the round would send: an entry on a PG whose new
    items move the entry's OSD is removed right after them, and no other. (An entry changes
    the PG's primary, so the proposal may differ from the one without it: each is checked
    against its own items.)"""
    import dataclasses
    from pg_advisor.balance.budget import Limits
    from pg_advisor.balance.proposal import Aim, balance_report
    from pg_advisor.model.options import BalanceMode
    first = balance_report(snap, Aim(["rbd"], BalanceMode.PGS), Limits(50))
    moved = [(pgid, pairs) for pgid, pairs in first["items"].items() if pairs][:6]
    assert moved
    hits = 0
    for pgid, pairs in moved:
        entry = pairs[0][0]
        r = balance_report(dataclasses.replace(snap, pg_upmap_primaries={pgid: entry}),
                           Aim(["rbd"], BalanceMode.PGS), Limits(50))
        unseated = [k for k, v in r["items"].items() if k == pgid and any(a == entry for a, _ in v)]
        rms = [i for i, c in enumerate(r["commands"]) if c.startswith("ceph osd rm-pg-upmap-primary")]
        assert [r["commands"][i].split()[-1] for i in rms] == unseated
        for i in rms:
            assert r["commands"][i - 1].startswith(f"ceph osd pg-upmap-items {pgid} ")
        hits += len(rms)
    assert hits > 0


def test_a_burst_waits_for_its_answers_within_one_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    # a mon that stops answering: each command's wait runs out, and the burst as a whole
    # takes BURST_WAIT (the time each wait is given is what is left), not that per command
    from pg_advisor.mgr import mon as mgr_mon
    clock = [1000.0]
    monkeypatch.setattr(mgr_mon.time, "monotonic", lambda: clock[0])
    given: list = []

    def silent(cmd: Dict[str, Any]) -> Any:
        def wait(seconds: float) -> Any:
            given.append(seconds)
            clock[0] += seconds         # waited it all out
            return -110, "no answer"
        return wait
    out = mgr_mon.burst(silent, [{"prefix": "osd pg-upmap-items", "pgid": f"1.{i}"} for i in range(5)])
    assert out == [(-110, "no answer")] * 5
    assert given == [mgr_mon.BURST_WAIT, 0.0, 0.0, 0.0, 0.0]
