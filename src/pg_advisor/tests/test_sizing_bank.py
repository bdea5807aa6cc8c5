"""The sizing bank (issue 56): pools as real clusters have them on a 384-OSD map (32 hosts of
10 hdd and 2 ssd OSDs, 10 TiB each, 30 % used; a class-less rule, a rule per class, EC 4+2
on hdd), each with the recommendation a Ceph engineer would sign and the reason in words.
doc/sizing.rst shows this table; test_the_doc_shows_the_bank keeps the two the same."""
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

import pytest

from pg_advisor_testkit.loose import health_checks, status_report
from pg_advisor.model import options, snapshot
from pg_advisor_testkit.sizing_bank import GIB, MIB, TIB, ClusterSpec, PoolSpec, dumps

C384 = ClusterSpec(hosts=32, hdd_per_host=10, ssd_per_host=2)
MGR = PoolSpec(".mgr", "replicated_rule", 1, 2 * MIB, {"pg_num_min": 1, "pg_num_max": 32}, mode="on")
RBD = PoolSpec("rbd", "hdd", 2048, 150 * TIB)
DOC = Path(__file__).resolve().parents[3] / "doc" / "sizing.rst"


@dataclass(frozen=True)
class Case:
    name: str
    pools: Tuple[PoolSpec, ...]
    pool: str                       # the pool the case is about
    want: Optional[int]             # its recommendation (None: none)
    code: str                       # the reason that says why
    why: str                        # in words, for the table
    pressing: bool = False
    config: Dict[str, Any] = field(default_factory=dict)
    flags: Tuple[str, ...] = ()


BANK: Sequence[Case] = (
    Case("no stats yet", (MGR, PoolSpec("rbd", "hdd", 2048, None)), "rbd", None, "unknown",
         "unknown is not empty: no recommendation, not pressing, not planned"),
    Case("pre-sized empty pool", (MGR, RBD, PoolSpec("images", "hdd", 1024, 0)), "images", 32,
         "past_band",
         "empty and past the 3x band: a merge is suggested (moves nothing), not pressed, not made by auto"),
    Case("pre-sized empty pool near its floor", (MGR, RBD, PoolSpec("images", "hdd", 64, 0)), "images", 64,
         "merge_avoided", "within 3x of its floor: kept"),
    Case("bulk RGW index", (MGR, RBD, PoolSpec("rgw.index", "ssd", 128, 20 * GIB, bulk=True)), "rgw.index",
         2048, "share",
         "bulk: counted as the free ssd space it will fill; grows, never shrunk for lack of data",
         pressing=True),
    Case(".mgr", (MGR, RBD), ".mgr", 1, "near_empty",
         "its own pg_num_min 1 is the floor: stays at 1"),
    Case("10 MiB pool on the class-less root", (MGR, RBD, PoolSpec("tiny", "replicated_rule", 64, 10 * MIB)),
         "tiny", 64, "merge_avoided",
         "overlapping roots share each OSD's budget: near-empty there, kept at 64 (never thousands)"),
    Case("big pool while another grows", (MGR, PoolSpec("rbd", "hdd", 4096, 150 * TIB),
                                          PoolSpec("rgw.data", "ec_hdd", 1024, 1000 * TIB)),
         "rbd", 4096, "merge_avoided", "its ideal fell to 2048 as rgw.data grew: no merge without pressure"),
    Case("target_size_ratio on an empty pool", (MGR, RBD, PoolSpec("future", "hdd", 32, 0,
                                                                   {"target_size_ratio": 0.5})),
         "future", 8192, "share", "sized by its target (half the hdd capacity), not its data", pressing=True),
    Case("EC 4+2 pool", (MGR, RBD, PoolSpec("ec", "ec_hdd", 256, 200 * TIB)), "ec", 2048, "share",
         "each PG's 6 shards count against the OSDs' budget", pressing=True),
    Case("small osd_memory_target", (MGR, PoolSpec("rbd", "hdd", 1024, 150 * TIB)), "rbd", 2048, "cap_peak",
         "1.125 GiB OSDs: beside osd_memory_base and the least cache, the default PG-log budget and a "
         "recovery's missing objects leave room for 23 PGs an OSD; memory binds, not the PG limit",
         pressing=True,
         config={"mon_target_pg_per_osd": 400, "mon_max_pg_per_osd": 1000, "osd_memory_target": 9 << 27}),
    Case("Umbrella's defaults (200 / 500)", (MGR, PoolSpec("rbd", "hdd", 2048, 150 * TIB)), "rbd", 16384,
         "share", "mon_target_pg_per_osd 200 read from the cluster; limit 400", pressing=True,
         config={"mon_target_pg_per_osd": 200, "mon_max_pg_per_osd": 500}),
    Case("pool in pg_autoscale_mode warn", (MGR, PoolSpec("rbd", "hdd", 256, 150 * TIB, mode="warn")), "rbd",
         8192, "autoscaler", "pg_autoscaler warns on it: pg_advisor raises no second warning", pressing=True),
    Case("noautoscale flag", (MGR, PoolSpec("rbd", "hdd", 256, 150 * TIB, mode="on")), "rbd", 8192, "share",
         "the flag turns pg_autoscaler off for every pool: pg_advisor's advice stands", pressing=True,
         flags=("noautoscale",)),
)


def report(case: Case) -> Dict[str, Any]:
    d = dumps(ClusterSpec(C384.hosts, C384.hdd_per_host, C384.ssd_per_host, flags=case.flags), case.pools)
    cfg = dict(case.config)
    snap = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"], settings=snapshot.Settings(
        mon_max_pg_per_osd=int(cfg.pop("mon_max_pg_per_osd", 250)), config=cfg))
    return status_report(snap, opts=options.make(), balanced=True)


@pytest.mark.parametrize("case", BANK, ids=[c.name for c in BANK])
def test_the_bank(case: Case) -> None:
    r = report(case)
    p = next(x for x in r["pools"] if x["name"] == case.pool)
    assert p["recommended_pg_num"] == case.want, p["recommendation"]
    assert case.code in [x["code"] for x in p["reasons"]], p["recommendation"]
    assert p["pressing"] is case.pressing, p["recommendation"]
    few = health_checks(r).get("PG_ADVISOR_TOO_FEW_PGS", {}).get("detail", [])
    raised = case.pressing and p["autoscaler_mode"] == "off"
    assert any(d.startswith(case.pool + ":") for d in few) is raised
    if case.want is None:
        assert p["automatic"] is False and p["data_share"] is None
    room = re.search(r"room for (\d+) PGs an OSD", case.why)
    if room:        # the figure the words give is the one status gives
        assert r["cluster"]["sizing"]["pgs_per_osd_memory_allows"] == int(room.group(1))


def test_overcommitted_targets_are_named() -> None:
    pools = (MGR, PoolSpec("a", "hdd", 32, 0, {"target_size_bytes": 800 * TIB}),
             PoolSpec("b", "hdd", 32, 0, {"target_size_bytes": 400 * TIB}))
    r = report(Case("overcommit", pools, "a", None, "", ""))
    over = r["cluster"]["sizing"]["overcommitted"]
    # 1,200 TiB x 3 promised on 320 x 10 TiB of hdd
    assert [(o["root"], o["pools"], o["by"]) for o in over] == [
        ("default~hdd", ["a", "b"], "target_size_bytes")]
    assert over[0]["factor"] == pytest.approx(3600 / 3200, rel=1e-3)
    assert "PG_ADVISOR_TARGET_OVERCOMMITTED" in health_checks(r)


def test_ratio_wins_over_bytes_as_pg_autoscaler_takes_them() -> None:
    pools = (MGR, RBD, PoolSpec("both", "hdd", 32, 0, {"target_size_ratio": 0.1, "target_size_bytes": TIB}))
    p = next(x for x in report(Case("both", pools, "both", None, "", ""))["pools"] if x["name"] == "both")
    assert any("target_size_ratio wins" in x["text"] for x in p["reasons"])


def table() -> str:
    rows = [(c.name, ", ".join(f"{p.name} {p.pg_num}" for p in c.pools if p.name != ".mgr") or ".mgr 1",
             "none" if c.want is None else str(c.want), c.code, c.why) for c in BANK]
    heads = ("case", "pools (pg_num now)", "recommended", "reason code", "why")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    line = "  ".join("=" * w for w in widths)
    fmt = "  ".join("{:<%d}" % w for w in widths)
    return "\n".join([line, fmt.format(*heads).rstrip(), line]
                     + [fmt.format(*r).rstrip() for r in rows] + [line])


def test_the_doc_shows_the_bank() -> None:
    text = DOC.read_text()
    m = re.search(r"\.\. bank-start\n\n(.*?)\n\n\.\. bank-end", text, re.S)
    assert m, "doc/sizing.rst lacks the bank table (between .. bank-start and .. bank-end)"
    assert m.group(1) == table(), "doc/sizing.rst's bank table is not the bank: print(table())"


@pytest.mark.parametrize("argv", [["status", "-f", "json"], ["plan", "-f", "json"], ["eval", "-f", "json"],
                                  ["map", "rbd", "-f", "json"], ["balance", "-f", "json"],
                                  ["simulate", "--pool", "rbd", "--pg-num", "64", "-f", "json"],
                                  ["read-balance", "-f", "json"]])
def test_without_usage_every_view_answers_and_sizing_says_unknown(argv: Sequence[str]) -> None:
    # `--osdmap --crush` alone: no PG stats, no df; nothing sized, planned or pressed
    from pg_advisor_testkit.dumps import CLUSTER6
    from .cli_harness import run_here
    ran = run_here(["--osdmap", str(CLUSTER6 / "osd_dump.json"),
                    "--crush", str(CLUSTER6 / "crush_dump.json"), *argv])
    assert ran.code == 0, ran.err
    doc = json.loads(ran.out)
    if argv[0] == "status":
        assert {p["sizing"] for p in doc["pools"]} == {"unknown"}
        assert all(p["recommended_pg_num"] is None and p["pressing"] is False for p in doc["pools"])
        assert all(p["recommendation"].startswith(f"{p['name']}: unknown") for p in doc["pools"])
        assert not {"PG_ADVISOR_TOO_FEW_PGS", "PG_ADVISOR_TOO_MANY_PGS"} & set(health_checks(doc))
    if argv[0] == "plan":
        assert doc["steps"] == []
