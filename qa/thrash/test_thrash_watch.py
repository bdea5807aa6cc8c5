"""The thrasher's own checks (qa/thrash/watch.py), on made-up input: each one fails when
what it guards goes wrong, so a passing thrash run means something."""
import json
from pathlib import Path
from typing import Any, Dict, List

from .watch import (CleanWait, Share, Watcher, check, commands_to_missing_pools, moved_positions,
                    parent_pg, payload)


def test_moved_positions_count_copies_that_must_move() -> None:
    assert moved_positions([1, 2, 3], [1, 2, 3], erasure=False) == 0
    assert moved_positions([1, 2, 3], [3, 1, 2], erasure=False) == 0     # order only
    assert moved_positions([1, 2, 3], [1, 2, 4], erasure=False) == 1
    assert moved_positions([1, 2, 3], [1, 2], erasure=False) == 0        # an OSD went down
    # EC: a shard that changes position moves, even among the same OSDs
    assert moved_positions([1, 2, 3], [2, 1, 3], erasure=True) == 2
    assert moved_positions([1, 2, 3], [1, 2147483647, 3], erasure=True) == 0


def test_parent_pg_clears_top_bits_until_a_known_pg() -> None:
    known = {"3.1": 1, "3.5": 1}
    assert parent_pg("3.15", known) == "3.5"      # 0x15 -> 0x5
    assert parent_pg("3.9", known) == "3.1"       # 0x9 -> 0x1
    assert parent_pg("3.2", known) is None
    assert parent_pg("4.5", known) is None


class _Mon:
    def json(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("not used")


def _stats(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [{"pgid": r["pgid"], "reported_epoch": r.get("epoch", 10),
             "stat_sum": {"num_objects": r["objects"], "num_objects_misplaced": r["misplaced"],
                          "num_object_copies": r["objects"] * 3}} for r in rows]


def test_misplaced_beyond_the_budget_is_caught_and_the_thrashers_share_is_not(tmp_path: Path) -> None:
    w = Watcher(_Mon(), tmp_path, budget=0.05)   # type: ignore[arg-type]
    # 10 PGs of 100 objects, 3 copies: 3000 copies, a budget of 150
    rows: List[Dict[str, Any]] = [{"pgid": f"1.{i:x}", "objects": 100, "misplaced": 0} for i in range(10)]
    rows[0]["misplaced"] = 100
    w._misplaced(_stats(rows))
    assert not w.fig.over and round(w.fig.peak_ours, 2) == 0.67
    rows[1]["misplaced"] = 100                   # 200 of pg_advisor's: over
    w._misplaced(_stats(rows))
    assert w.fig.over
    # the same, with one of the two PGs remapped by the thrasher (one copy per object)
    w2 = Watcher(_Mon(), tmp_path, budget=0.05)  # type: ignore[arg-type]
    w2.shares["1.1"] = Share(positions=1, epoch=12)
    w2._misplaced(_stats(rows))
    assert not w2.fig.over and w2.fig.peak_total == 200 and w2.fig.peak_total_allowance == 250
    # stats from before the action's epoch do not end its share; later clean ones do
    rows[1]["misplaced"] = 0
    w2._misplaced(_stats(rows))
    assert "1.1" in w2.shares
    rows[1]["epoch"] = 12
    w2._misplaced(_stats(rows))
    assert "1.1" not in w2.shares
    # a split child of a charged PG is charged alike
    w2.shares["1.1"] = Share(positions=1, epoch=12)
    rows.append({"pgid": "1.11", "objects": 100, "misplaced": 100})
    w2._misplaced(_stats(rows))
    assert w2.shares["1.11"].positions == 1 and len(w2.fig.over) == 0


def test_objects_added_to_a_misplaced_pg_count_at_the_share_they_had(tmp_path: Path) -> None:
    w = Watcher(_Mon(), tmp_path, budget=0.05)   # type: ignore[arg-type]
    rows: List[Dict[str, Any]] = [{"pgid": f"1.{i:x}", "objects": 100, "misplaced": 0} for i in range(10)]
    rows[0]["misplaced"] = 140
    w._misplaced(_stats(rows))
    rows[0].update(objects=200, misplaced=280)   # a fill doubles the PG: still 140 of ours
    w._misplaced(_stats(rows))
    assert not w.fig.over


def _audit(lines: List[Dict[str, Any]]) -> str:
    out = []
    for i, d in enumerate(lines):
        out.append(f"2026-11-27T07:00:{i:02d}.0+0000 mon.a (mon.0) {i} : audit [INF] from='x' "
                   f"entity='{d['entity']}' cmd=[{json.dumps(d['cmd'])}]: {d['phase']}")
    return "\n".join(out) + "\n"


def test_commands_to_a_removed_pool_are_found_in_the_audit_log(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    rm = {"prefix": "osd pool rm", "pool": "thrash-0", "pool2": "thrash-0"}
    item = {"prefix": "osd pg-upmap-items", "pgid": "7.3", "id": [1, 2]}
    pgnum = {"prefix": "osd pool set", "pool": "thrash-0", "var": "pg_num", "val": "32"}
    ceph_own = {"prefix": "osd pool set", "pool": "thrash-0", "var": "pgp_num_actual", "val": "9"}
    log.write_text(_audit([
        {"entity": "mgr.x", "cmd": item, "phase": "dispatch"},            # before: fine
        {"entity": "client.admin", "cmd": rm, "phase": "dispatch"},
        {"entity": "client.admin", "cmd": rm, "phase": "finished"},
        {"entity": "mgr.x", "cmd": ceph_own, "phase": "dispatch"},        # Ceph's, not ours
    ]))
    assert commands_to_missing_pools(log, {"thrash-0": 7}) == (1, [])
    log.write_text(log.read_text() + _audit([{"entity": "mgr.x", "cmd": item, "phase": "dispatch"},
                                            {"entity": "mgr.x", "cmd": pgnum, "phase": "dispatch"}]))
    ours, bad = commands_to_missing_pools(log, {"thrash-0": 7})
    assert ours == 3 and len(bad) == 2


def test_the_client_check_knows_each_version() -> None:
    assert check("a", payload("a", 2, 4096), (2, 4096), None) == ""
    assert check("a", payload("a", 1, 4096), (2, 4096), None) != ""
    # after a failed write, the old and the new version are both possible
    assert check("a", payload("a", 1, 4096), (2, 4096), {(1, 4096), (2, 4096)}) == ""
    assert check("a", b"", (2, 4096), {(1, 4096), (2, 4096)}) != ""


def test_the_thrasher_deals_every_action_in_each_round(monkeypatch: Any) -> None:
    import random
    from .thrasher import Thrasher
    th = Thrasher(None, None, None, None, random.Random(5))   # type: ignore[arg-type]
    monkeypatch.setattr(th, "say", lambda text: None)
    refuse = {"kill"}                  # can never be taken here: the others still come round
    for name in Thrasher.ACTIONS:
        monkeypatch.setattr(th, f"act_{name}", lambda name=name: name not in refuse)
    rounds = 3
    for _ in range(rounds * (len(Thrasher.ACTIONS) - 1)):
        th.step()
    assert th.counts == {n: rounds for n in Thrasher.ACTIONS if n not in refuse}
    assert th.refused["kill"] > 0


def test_a_plan_waiting_on_backfill_with_every_pg_clean_is_timed() -> None:
    w = CleanWait()
    wait = {"status": "running", "waiting": "the misplaced budget or max_backfills_per_osd holds "
                                            "the next balance round back"}
    assert w.update(0.0, wait, clean=False) == 0.0        # backfill there: a fair wait
    assert w.update(10.0, wait, clean=True) == 0.0        # the clean wait begins
    assert w.update(130.0, wait, clean=True) == 120.0
    assert w.update(140.0, {**wait, "status": "paused"}, clean=True) == 0.0
    assert w.update(150.0, wait, clean=True) == 0.0       # a new wait starts over
    assert w.update(160.0, {**wait, "waiting": "next step after 12:00:00"}, clean=True) == 0.0
    assert w.update(170.0, None, clean=True) == 0.0       # no plan
    budget = {"status": "running", "waiting": "misplaced 1.00% + this step's 4.50% would pass "
                                              "the budget 5.00%"}
    assert w.update(180.0, budget, clean=True) == 0.0
    assert w.update(200.0, budget, clean=True) == 20.0


def test_the_audit_check_reads_lines_as_both_releases_write_them(tmp_path: Path) -> None:
    # a finished command's list is quoted (both releases); Tentacle writes ` : dispatch`: the
    # pattern before matched neither, so the check could never fail
    rm = {"prefix": "osd pool rm", "pool": "thrash-0", "pool2": "thrash-0"}
    item = {"prefix": "osd pg-upmap-items", "pgid": "7.3", "id": [1, 2], "format": "json"}
    lines = [f"mon.a audit [INF] entity='client.admin' cmd='[{json.dumps(rm)}]': finished",
             f"mon.a audit [INF] entity='mgr.x' cmd={json.dumps(item)} : dispatch"]
    log = tmp_path / "audit.log"
    log.write_text("\n".join(lines) + "\n")
    assert commands_to_missing_pools(log, {"thrash-0": 7}) == (1, [lines[1]])
