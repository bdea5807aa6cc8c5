"""Which of the map's pg_upmap_items are pg_advisor's (mgr/mon.OwnedItems): the lists the mon
took from the module's own commands, while the map holds them as set; kept across a
failover in the mgr store; a stored value that is not a record counts as none."""
from typing import Any, Dict, List, Optional

import pytest

from pg_advisor.analysis.status import status_report, with_ours
from pg_advisor.mgr import mon as owned
from pg_advisor.mgr.mon import OwnedItems
from pg_advisor.model.mon_commands import upmap_items
from pg_advisor.panel.metrics import metrics
from pg_advisor.render.status_text import status_text

from .conftest import cmd


def _store() -> Any:
    """A mgr store: (its entries, get_store_prefix, set_store)."""
    kept: Dict[str, str] = {}

    def put(key: str, value: Optional[str]) -> None:
        if value is None:
            kept.pop(key, None)
        else:
            assert len(value) < 60000, (key, len(value))     # the mon's 64 KiB per entry
            kept[key] = value
    return kept, lambda prefix: {k: v for k, v in kept.items() if k.startswith(prefix)}, put


def test_the_lists_the_mon_took_count_while_the_map_holds_them_as_set() -> None:
    kept, get, put = _store()
    o = OwnedItems(get, put)
    cmds = [upmap_items("1.0", [(0, 1)]), upmap_items("1.1", [(2, 3), (4, 5)]), upmap_items("1.2", [(1, 2)]),
            {"prefix": "osd pool set", "pool": "rbd"}]
    o.sent(cmds, [(0, ""), (0, ""), (-22, "refused"), (0, "")])
    in_map = {"1.0": ((0, 1),), "1.1": ((2, 3), (4, 5)), "1.2": ((1, 2),), "1.3": ((0, 2),)}
    assert o.ours(in_map) == 2                       # 1.2 refused, 1.3 another tool's
    assert o.ours(dict(in_map, **{"1.1": ((2, 3),)})) == 1     # changed since: not ours
    o.sent([upmap_items("1.0", [])], [(0, "")])      # removed by us
    assert o.ours(in_map) == 1
    # a failover: a new module reads the record back
    assert OwnedItems(get, put).ours(in_map) == 1
    assert kept == {"owned_upmap_items/1.0": f"1={owned.list_crc([2, 3, 4, 5]):08x};"}


def test_the_record_is_kept_in_few_entries_the_mon_takes() -> None:
    # 40,000 lists of 11 pairs (EC 8+3) in two pools of 2^20 PGs: each store entry under
    # 60,000 bytes (the put asserts it), and one burst writes one entry per 3,000 PGs
    kept, get, put = _store()
    writes: List[str] = []

    def counted(key: str, value: Optional[str]) -> None:
        writes.append(key)
        put(key, value)
    o = OwnedItems(get, counted)
    pairs = [(10000 + i, 20000 + i) for i in range(11)]
    top = 1 << 20
    cmds = [upmap_items(f"{pool}.{ps:x}", pairs) for pool in (3, 7) for ps in range(top - 20000, top)]
    o.sent(cmds, [(0, "")] * len(cmds))
    assert len(kept) == len(writes) == 2 * 8      # (ps 1,028,576.. in 3,000s: 8 entries a pool)
    in_map = {c["pgid"]: tuple(pairs) for c in cmds}
    assert OwnedItems(get, put).ours(in_map) == 40000
    writes.clear()
    o.sent([upmap_items("7.fffff", [])], [(0, "")])
    assert writes == [owned.shard_of("7.fffff")] and OwnedItems(get, put).ours(in_map) == 39999


@pytest.mark.parametrize("raw", ["", "garbage", "0=zz;", "0=1234567;", "0=123456789;", "g=12345678;",
                                 "123456789=12345678;", ";;;", "0", "x" * 70000])
def test_a_stored_value_that_is_not_a_record_counts_as_none(raw: str) -> None:
    o = OwnedItems(lambda prefix: {prefix + "1.0": raw, prefix + "x.0": "0=" + "0" * 8 + ";"},
                   lambda key, value: None)
    assert o.ours({"1.0": ((0, 1),), "1.1": ((2, 3),), "x.0": ((0, 1),)}) == 0


def test_what_can_be_read_of_a_stored_value_counts() -> None:
    good = f"1={owned.list_crc([2, 3]):08x};"
    o = OwnedItems(lambda prefix: {prefix + "1.0": "junk;" + good + "0=zz;"}, lambda key, value: None)
    assert o.ours({"1.0": ((0, 1),), "1.1": ((2, 3),)}) == 1


def test_the_record_is_trimmed_to_the_map_once_a_snapshot_could_show_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # lists just set that a stale snapshot does not show yet stay; past TRIM_AGE they go
    monkeypatch.setattr(owned, "SLACK", 3)
    now = [0.0]
    kept, get, put = _store()
    o = OwnedItems(get, put, clock=lambda: now[0])
    o.sent([upmap_items(f"1.{i:x}", [(0, 1)]) for i in range(10)], [(0, "")] * 10)
    every = {f"1.{i:x}": ((0, 1),) for i in range(10)}
    assert o.ours({}) == 0 and o.ours(every) == 10           # a stale snapshot forgets nothing
    now[0] = owned.TRIM_AGE + 1
    assert o.ours({f"1.{i:x}": ((0, 1),) for i in range(2)}) == 2
    assert o.ours(every) == 2                                  # the others were dropped
    o.flush()
    assert OwnedItems(get, put).ours(every) == 2               # and so in the store


def test_status_text_and_metrics_show_them(snap: Any) -> None:
    r = with_ours(status_report(snap), 7)
    assert r["cluster"]["upmap_entries"]["pg_upmap_items_ours"] == 7
    assert status_report(snap)["cluster"]["upmap_entries"]["pg_upmap_items_ours"] is None
    assert ", 7 set by pg_advisor)" in status_text(r)
    assert 'pg_advisor_upmap_entries{kind="pg_upmap_items_ours"} 7' in metrics(r, {"plan": None, "steps": []})


def test_the_module_counts_what_its_balance_round_set(wired: Any) -> None:
    m, ceph, refresh = wired
    code, before, _ = cmd(m, "status")
    assert code == 0 and before["cluster"]["upmap_entries"]["pg_upmap_items_ours"] == 0
    code, r, err = cmd(m, "balance", max_items=5, mode="pgs")
    assert code == 0 and r["applied"] > 0, err
    set_ = {c["pgid"] for c in ceph.sent if c["prefix"] == "osd pg-upmap-items"}
    m.reader.take_snapshot(fresh=True)
    code, after, _ = cmd(m, "status")
    assert after["cluster"]["upmap_entries"]["pg_upmap_items_ours"] == len(set_) > 0
    # the panel's and /metrics' status too
    assert m.background.status()["cluster"]["upmap_entries"]["pg_upmap_items_ours"] == len(set_)


def test_a_count_over_the_same_map_is_not_made_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # the panel, /metrics and status ask over one snapshot's lists again and again: one CRC
    # pass per snapshot and change of the record
    kept, get, put = _store()
    o = OwnedItems(get, put)
    o.sent([upmap_items("1.0", [(0, 1)])], [(0, "")])
    in_map = {"1.0": ((0, 1),), "1.1": ((2, 3),)}
    crcs: List[int] = []
    real = owned.list_crc

    def counted(ids: Any) -> int:
        crcs.append(1)
        return real(ids)
    monkeypatch.setattr(owned, "list_crc", counted)
    assert o.ours(in_map) == 1 and len(crcs) == 1              # (of the lists it recorded)
    assert o.ours(in_map) == 1 and len(crcs) == 1              # the same map, the same record
    o.sent([upmap_items("1.1", [(2, 3)])], [(0, "")])
    assert o.ours(in_map) == 2                                 # the record changed: counted again
    assert o.ours(dict(in_map)) == 2                           # another snapshot's lists: again
