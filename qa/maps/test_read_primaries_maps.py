"""pg_advisor's read balancer beside `osdmaptool --read` (Reef on) on built maps, no cluster.

qa/bench/read_primaries.py's 60-OSD map as CRUSH leaves it and made uneven (pg_upmap_primaries
written into the binary map), and its "multi" map made uneven (pools of two-step rules, an
OSD out, two of CRUSH weight 0). Per replicated pool: pg_advisor's plan, unbounded, scores
at least as low as osdmaptool's result; held to as many changes as osdmaptool made, it
scores at least as low with no more commands; every entry it sets is one the mon keeps (an
OSD of CRUSH's own set of the PG past the first). Both are scored on pg_advisor's model of
Reef's read_balance score, which must agree with osdmaptool's own printed score. Pacific's
osdmaptool has no --read: skipped there.
"""
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Tuple

import pytest

from pg_advisor.model import snapshot

from ..bench.read_primaries import (UNBOUNDED, applied, invalid_entries, measure, osdmaptool_read,
                                    plan_entries, timed_plan, uneven_map)
from .crushgen import GeneratedMap
from .monbuilt import build_case

Built = Tuple[GeneratedMap, snapshot.Snapshot]
CASES = [("60", "even"), ("60", "uneven"), ("multi", "uneven")]


def has_read() -> bool:
    if shutil.which("osdmaptool") is None:
        return False
    p = subprocess.run(["osdmaptool", "--help"], capture_output=True, text=True, timeout=60)
    return "--read " in p.stdout + p.stderr


class Maps:
    """Each map built once for the module, on first use."""

    def __init__(self, tmp: pytest.TempPathFactory) -> None:
        self.tmp = tmp
        self.built: Dict[Tuple[str, str], Built] = {}

    def get(self, name: str, variant: str) -> Built:
        if (name, variant) not in self.built:
            gm = build_case(self.tmp.mktemp(f"read{name}"), name)
            snap = snapshot.load(*gm.dumps())
            self.built[name, "even"] = (gm, snap)
            ugm, entries, _ = uneven_map(gm, snap)
            uneven = snapshot.load(*ugm.dumps())
            assert uneven.pg_upmap_primaries == entries
            self.built[name, "uneven"] = (ugm, uneven)
        return self.built[name, variant]


@pytest.fixture(scope="module")
def maps(tmp_path_factory: pytest.TempPathFactory) -> Maps:
    if not has_read():
        pytest.skip("this osdmaptool has no --read (pg-upmap-primary came with Reef)")
    return Maps(tmp_path_factory)


@pytest.mark.parametrize("name,variant", CASES)
def test_plan_beats_osdmaptool_read(maps: Maps, name: str, variant: str, tmp_path: Path) -> None:
    gm, snap = maps.get(name, variant)
    pools = [p.name for p in snap.pools if p.type == "replicated"]
    assert pools
    for pool in pools:
        tool = osdmaptool_read(gm, pool, tmp_path / f"{pool}.txt", timeout=120)
        assert tool.status == "done", tool.status
        tool_score, _ = measure(applied(snap, tool.entries), pool)
        assert tool_score is not None
        if tool.said_after is not None:      # printed when it changed something
            assert abs(tool.said_after - tool_score) <= 0.01 + 1e-6, (tool.said_after, tool_score)

        plan, _ = timed_plan(snap, pool, UNBOUNDED)
        score = plan.pools[0]["score_after"]
        assert score is not None and score <= tool_score, (score, tool_score)
        assert measure(applied(snap, plan_entries(plan)), pool)[0] == score
        assert invalid_entries(snap, pool, plan_entries(plan)) == ([], [])

        if tool.commands:
            held, _ = timed_plan(snap, pool, tool.commands)
            held_score = measure(applied(snap, plan_entries(held)), pool)[0]
            assert held_score is not None and held_score <= tool_score, (held_score, tool_score)
            assert len(held.commands()) <= tool.commands
            assert invalid_entries(snap, pool, plan_entries(held)) == ([], [])
        print(f"{name} {variant} {pool}: osdmaptool {tool.commands} commands -> {tool_score:.2f}; "
              f"pg_advisor {len(plan.commands())} -> {score:.2f}")
