"""pg_autoscaler's pick computed by its rules (sizing/ceph_autoscaler.py), each rule moved
on its own over the captured 6-OSD cluster; qa/live/test_status_live.py checks every field
against `ceph osd pool autoscale-status` on both releases."""
import copy
import io
import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from pg_advisor import cli
from pg_advisor.model import snapshot
from pg_advisor.model.errors import AdvisorError
from pg_advisor.sizing.ceph_autoscaler import Flavour, autoscale_status, nearest_power_of_two, with_autoscale

from .conftest import read

PACIFIC, TENTACLE = Flavour.of_release(16), Flavour.of_release(20)


def rows(dumps: Dict[str, Any], flavour: Flavour = TENTACLE) -> Dict[str, Dict[str, Any]]:
    snap = snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])
    return {r["pool_name"]: r for r in autoscale_status(snap, flavour)}


@pytest.fixture
def one_root(dumps: Dict[str, Any]) -> Dict[str, Any]:
    """The dumps with pool `fast` on the default root: its class rule takes default~ssd,
    whose OSDs are also under default (overlapping roots, which pg_autoscaler leaves)."""
    d = copy.deepcopy(dumps)
    pool(d, "fast")["crush_rule"] = 0
    return d


def pool(dumps: Dict[str, Any], name: str) -> Dict[str, Any]:
    found: Dict[str, Any] = next(p for p in dumps["osd_dump"]["pools"] if p["pool_name"] == name)
    return found


@pytest.mark.parametrize("n, want", [(0, 0), (0.9, 0), (1, 1), (1.6, 1), (2.9, 2), (3, 4), (5, 4), (6, 8),
                                     (47.9, 32), (48, 64), (1000, 1024), (1536, 2048)])
def test_the_nearest_power_of_two_goes_up_on_a_tie(n: float, want: int) -> None:
    # pg_autoscaler's: the bounds are those of int(n), the distances from n itself
    assert nearest_power_of_two(n) == want


def test_overlapping_roots_are_not_scaled_as_ceph_said_of_the_captured_cluster(dumps: Dict[str, Any]) -> None:
    # `ceph osd pool autoscale-status -f json` of the captured cluster: no pool (rule 2
    # takes default~ssd, under default like rules 0 and 1)
    assert read("autoscale_status.json") == []
    assert rows(dumps) == {} and rows(dumps, PACIFIC) == {}


def test_every_pool_gets_a_row_with_its_root_capacity_and_budget(one_root: Dict[str, Any]) -> None:
    dumps = one_root
    got = rows(dumps)
    assert sorted(got) == sorted(p["pool_name"] for p in dumps["osd_dump"]["pools"])
    kb = sum(s["kb"] for s in dumps["pg_dump"]["pg_map"]["osd_stats"])
    for r in got.values():
        assert r["subtree_capacity"] == kb * 1024 and r["pg_num_final"] >= 32, r
    # every pool's mode is off here: Pacific would adjust none; Tentacle's would_adjust is
    # the threshold's alone (it checks the mode only to say why it does not act)
    assert not any(r["would_adjust"] for r in rows(dumps, PACIFIC).values())
    # the raw use: Tentacle reads df's bytes_used, Pacific stored x the raw rate
    rbd = next(p for p in dumps["df"]["pools"] if p["name"] == "rbd")["stats"]
    assert got["rbd"]["actual_raw_used"] == rbd["bytes_used"]
    assert rows(dumps, PACIFIC)["rbd"]["actual_raw_used"] == rbd["stored"] * 3


def test_target_ratios_are_normalised_on_their_root_and_pg_num_max_caps(one_root: Dict[str, Any]) -> None:
    d = one_root
    pool(d, "rbd")["options"] = {"target_size_ratio": 0.2}
    pool(d, "ecpool")["options"] = {"target_size_ratio": 0.6}
    got = rows(d)
    assert got["rbd"]["effective_target_ratio"] == pytest.approx(0.25)
    assert got["ecpool"]["effective_target_ratio"] == pytest.approx(0.75)
    assert got["ecpool"]["pg_num_final"] > got["rbd"]["pg_num_final"]
    pool(d, "ecpool")["options"]["pg_num_max"] = 8
    assert rows(d)["ecpool"]["pg_num_final"] == 8


def test_bulk_pools_share_what_the_others_leave(one_root: Dict[str, Any]) -> None:
    d = one_root
    before = rows(d)
    pool(d, "fast")["flags_names"] += ",bulk"
    after = rows(d)
    assert after["fast"]["bulk"] and after["fast"]["pg_num_final"] > before["fast"]["pg_num_final"]
    order: List[str] = list(after)
    assert order[-1] == "fast"                            # served by a later pass
    # the 6 OSDs x 100 PGs, less what the others took, split evenly among what is left
    budget = 6 * 100 - sum(int(after[n]["capacity_ratio"] * (6 * 100)) for n in ("rbd", "ecpool"))
    assert after["fast"]["pg_num_ideal"] == int(budget / 2)     # size 2


@pytest.mark.parametrize("flavour, target, final, adjust", [
    (TENTACLE, 256, 512, True), (PACIFIC, 256, 512, False),     # 512 and 1024: any growth
    (TENTACLE, 1000, 2048, True), (PACIFIC, 1000, 2048, False),   # 2048: past 2x
    (TENTACLE, 1024, 2048, False),
    (TENTACLE, 128, 32, True), (TENTACLE, 64, 32, False),       # shrinking: past 3x only
    (PACIFIC, 128, 32, True),
])
def test_the_threshold_for_growth_depends_on_the_release(
        one_root: Dict[str, Any], flavour: Flavour, target: int, final: int, adjust: bool) -> None:
    d = one_root
    p = pool(d, "rbd")
    p["pg_autoscale_mode"] = "on"
    p["pg_num_target"] = target
    p["options"] = {"pg_num_min": final, "pg_num_max": final}     # the pick, pinned
    got = rows(d, flavour)["rbd"]
    assert (got["pg_num_final"], got["would_adjust"]) == (final, adjust), got


def test_the_snapshot_carries_the_picks_the_status_shows(one_root: Dict[str, Any]) -> None:
    dumps = one_root
    snap = snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])
    assert snap.autoscale is None
    snap = with_autoscale(snap, TENTACLE)
    assert snap.autoscale is not None and snap.autoscale["rbd"]["pg_num_final"] >= 32


def test_tentacles_would_adjust_ignores_the_mode_pacifics_does_not(one_root: Dict[str, Any]) -> None:
    d = one_root
    p = pool(d, "rbd")
    p["pg_autoscale_mode"], p["pg_num_target"] = "warn", 256
    p["options"] = {"pg_num_min": 1024, "pg_num_max": 1024}
    assert rows(d, TENTACLE)["rbd"]["would_adjust"] and not rows(d, PACIFIC)["rbd"]["would_adjust"]
    p["pg_autoscale_mode"] = "on"
    assert rows(d, TENTACLE)["rbd"]["would_adjust"] and rows(d, PACIFIC)["rbd"]["would_adjust"]


def test_the_offline_cli_computes_the_picks_by_the_release_asked(one_root: Dict[str, Any],
                                                                 tmp_path: Path) -> None:
    files = {"osd_dump": "--osdmap", "crush": "--crush", "pg_dump": "--pg-dump", "df": "--df"}
    argv: List[str] = []
    for key, flag in files.items():
        (tmp_path / f"{key}.json").write_text(json.dumps(one_root[key]))
        argv += [flag, str(tmp_path / f"{key}.json")]
    out = io.StringIO()
    assert cli.run(argv + ["--autoscaler-release", "16", "status", "-f", "json"], out) == 0
    shown = {p["name"]: p["autoscaler_pg_num"] for p in json.loads(out.getvalue())["pools"]}
    assert shown == {k: r["pg_num_final"] for k, r in rows(one_root, PACIFIC).items()}
    out = io.StringIO()
    assert cli.run(argv + ["status", "-f", "json"], out) == 0          # not asked: not shown
    assert {p["autoscaler_pg_num"] for p in json.loads(out.getvalue())["pools"]} == {None}
    both = ["--autoscaler-release", "20", "--autoscale-status", str(tmp_path / "df.json")]
    for bad in (["--autoscaler-release", "0"], both):
        with pytest.raises(AdvisorError, match="--autoscaler-release"):
            cli.run(argv + bad + ["status"], io.StringIO())
