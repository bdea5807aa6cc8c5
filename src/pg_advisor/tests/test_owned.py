"""Which of the map's pg_upmap_items are pg_advisor's (mgr/mon.OwnedItems): the lists the mon
took from the module's own commands, while the map holds them as set; kept across a
failover in the mgr store; a stored value that is not a record counts as none."""
import json
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
    assert {k: json.loads(v) for k, v in kept.items()} == {"owned_upmap_items/1.0": {"1.1": [2, 3, 4, 5]}}


def test_the_record_is_kept_in_entries_the_mon_takes() -> None:
    # 40,000 lists of 11 pairs (EC 8+3) in two pools: each store entry under 60,000 bytes,
    # written only where it changed
    kept, get, put = _store()
    o = OwnedItems(get, put)
    pairs = [(10000 + i, 20000 + i) for i in range(11)]
    cmds = [upmap_items(f"{pool}.{ps:x}", pairs) for pool in (3, 7) for ps in range(20000)]
    o.sent(cmds, [(0, "")] * len(cmds))
    assert len(kept) == 2 * 20000 // owned.SHARD_PGS + 2 - 2 * (20000 % owned.SHARD_PGS == 0)
    in_map = {c["pgid"]: tuple(pairs) for c in cmds}
    assert OwnedItems(get, put).ours(in_map) == 40000
    writes: List[str] = []
    o2 = OwnedItems(get, lambda key, value: writes.append(key))
    o2.sent([upmap_items("7.4e20", [])], [(0, "")])
    assert writes == [owned.shard_of("7.4e20")] == ["owned_upmap_items/7.78"]


@pytest.mark.parametrize("raw", ["", "{", "[1, 2]", json.dumps({"1.0": "x"}), json.dumps({"1.0": [1]}),
                                 json.dumps({"1.0": [True, 1]}), json.dumps({"1.0": list(range(66))}),
                                 "null", json.dumps({"1.0": [0, 1], "1.1": {"a": 1}})])
def test_a_stored_value_that_is_not_a_record_counts_as_none(raw: str) -> None:
    o = OwnedItems(lambda prefix: {prefix + "1.0": raw}, lambda key, value: None)
    in_map = {"1.0": ((0, 1),), "1.1": ((2, 3),)}
    assert o.ours(in_map) == (1 if raw.startswith('{"1.0": [0, 1]') else 0)


def test_the_record_is_trimmed_to_the_map(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(owned, "SLACK", 3)
    kept, get, put = _store()
    o = OwnedItems(get, put)
    o.sent([upmap_items(f"1.{i:x}", [(0, 1)]) for i in range(10)], [(0, "")] * 10)
    in_map = {f"1.{i:x}": ((0, 1),) for i in range(2)}
    assert o.ours(in_map) == 2
    assert o.ours({f"1.{i:x}": ((0, 1),) for i in range(10)}) == 2    # the others were dropped


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
