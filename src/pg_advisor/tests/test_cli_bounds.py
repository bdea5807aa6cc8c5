"""The offline CLI's bounds (commands/bounds.py): inputs Ceph takes that would not be
answered within the contract are refused before any CRUSH mapping or balancing, by a
line that names the bound and the flag lifting it; below the bounds the work counted
(model/work.py) follows the PGs and OSDs that exist. Counted, never timed: CI runs on a
loaded machine."""
import copy
from pathlib import Path
from typing import Iterator

import pytest

from pg_advisor.commands import bounds
from pg_advisor.model import snapshot
from pg_advisor_testkit.dumps import DUMP_FILES, read

from .cli_harness import COMMANDS, Docs, check_all, heap_set_aside, run_here, write
from .test_cli_fuzz import _many_pools, _pool, _rename_osd

NOTHING = {"crush_draws": 0, "crush_replicas": 0, "balance_work": 0}
EVERY = COMMANDS[:4] + [["simulate", "--out", "0"], ["drain", "osd.1"], ["eval"], ["pin-remapped"],
                        ["read-balance"]]
BALANCING = [["balance"], ["drain", "osd.1"], ["drain", "host0"]]
HIGH = (1 << 20) - 2       # the highest OSD id a dump may name (max_osd at most 2^20)


@pytest.fixture
def docs() -> Docs:
    return {k: read(v) for k, v in DUMP_FILES.items()}     # (read parses anew: a fresh copy)


@pytest.fixture(autouse=True, scope="module")
def _heap_set_aside() -> Iterator[None]:
    with heap_set_aside():
        yield


def _of_size(d: Docs, pools: int, pg_num: int, size: int) -> None:
    """`pools` pools of `pg_num` PGs of `size` replicas, no PG stats."""
    _many_pools(d)
    del d["osd_dump"]["pools"][pools:]
    for p in d["osd_dump"]["pools"]:
        p.update(pg_num=pg_num, pg_placement_num=pg_num, pg_num_target=pg_num,
                 pg_placement_num_target=pg_num, size=size, min_size=1)


@pytest.mark.parametrize("pools, pg_num", [(1000, 4096), (300, 4096), (2, 1 << 20)])
def test_many_pgs_are_refused_before_any_mapping(tmp_path: Path, docs: Docs, pools: int,
                                                 pg_num: int) -> None:
    # 4 million PGs of size 1 pass the loader's bound of replicas; mapping and printing
    # them took 13 s and 1.9 GiB
    _of_size(docs, pools, pg_num, 1)
    n = pools * pg_num
    check_all(write(tmp_path, docs), f"the pools hold {n:,} PGs, more than the {bounds.MAX_PGS:,}",
              commands=EVERY, work_limit=NOTHING)
    assert f"(--max-pgs {n} lifts the bound)" in run_here(write(tmp_path, docs) + ["map"]).err


def test_the_pg_bound_is_lifted_by_its_flag(tmp_path: Path, docs: Docs) -> None:
    argv = write(tmp_path, docs)
    n = bounds.pgs(snapshot.load(docs["osd_dump"], docs["crush"]))
    check_all(argv + ["--max-pgs", str(n - 1)], f"the pools hold {n:,} PGs", work_limit=NOTHING)
    check_all(argv + ["--max-pgs", str(n)], None)
    check_all(argv + ["--max-pgs", "0"], "--max-pgs must be at least 1", commands=[["status"]],
              work_limit=NOTHING)


def _sparse(d: Docs, pg_num: int) -> None:
    """osd.5 at the highest id, and the rbd pool at `pg_num` (no PG stats)."""
    _rename_osd(d, 5, HIGH)
    _pool(d, "rbd").update(pg_num=pg_num, pg_placement_num=pg_num, pg_num_target=pg_num,
                           pg_placement_num_target=pg_num)
    del d["pg_dump"]["pg_map"]["pg_stats"][:]


def test_balancing_over_sparse_ids_is_refused_before_any_work(tmp_path: Path, docs: Docs) -> None:
    # a few hundred OSDs and one at id 2^20 - 1 with 38,400 replicas: balance and drain
    # passed over 2^20-long arrays for each move, 45 s; 6 OSDs with 12,400 replicas here
    _sparse(docs, 4096)
    replicas = sum(p["pg_num"] * p["size"] for p in docs["osd_dump"]["pools"])
    work = (HIGH + 1 - 6) * replicas
    assert work > bounds.MAX_SPARSE_WORK
    argv = write(tmp_path, docs)
    check_all(argv, f"OSD ids reach {HIGH} for 6 OSDs", commands=BALANCING, work_limit=NOTHING)
    assert f"(--max-sparse-work {work} lifts it)" in run_here(argv + ["balance"]).err
    # the commands whose cost follows the PGs answer, each mapping the PGs about twice
    limit = {"crush_replicas": 4 * replicas, "crush_draws": 40 * replicas, "balance_work": 10 ** 7}
    check_all(argv, None, commands=[["status"], ["plan"], ["map"], ["simulate", "--out", "0"],
                                    ["eval"], ["pin-remapped"]], work_limit=limit)


def test_the_sparse_bound_is_lifted_by_its_flag(tmp_path: Path, docs: Docs) -> None:
    # below the bound (the unit corpus's osd-id-2^20) balancing answers, as with the flag
    # raised past the work; lowered under it, it refuses
    d = docs
    _rename_osd(d, 5, HIGH)
    argv = write(tmp_path, d)
    work = bounds.sparse_work(snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"]))
    assert 0 < work <= bounds.MAX_SPARSE_WORK
    check_all(argv, None, commands=BALANCING[:2])
    check_all(argv + ["--max-sparse-work", str(work - 1)], "OSD ids reach", commands=BALANCING[:2],
              work_limit=NOTHING)
    check_all(argv + ["--max-sparse-work", str(work)], None, commands=[["balance"]])


def test_dense_ids_are_never_bounded(docs: Docs) -> None:
    # every id below the highest holds an OSD: no gap, whatever the PGs
    snap = snapshot.load(docs["osd_dump"], docs["crush"], docs["pg_dump"])
    assert bounds.sparse_work(snap) == bounds.sparse_cells(snap) == 0
    bounds.check("balance", snap, bounds.MAX_PGS, 1, 1)


def test_many_pools_over_sparse_ids_are_refused_before_any_work(tmp_path: Path, docs: Docs) -> None:
    # each pool keeps rows of per-OSD arrays over every id: 60 small pools with an OSD at
    # 2^20 took 3.7 GiB (balance, eval) and 1.8 GiB (status)
    _of_size(docs, 60, 8, 3)
    _rename_osd(docs, 5, HIGH)
    cells = (HIGH + 1 - 6) * 60
    argv = write(tmp_path, docs)
    check_all(argv, f"OSD ids reach {HIGH} for 6 OSDs: the per-OSD arrays of each pool", commands=EVERY,
              work_limit=NOTHING)
    assert f"(--max-sparse-cells {cells} lifts it)" in run_here(argv + ["plan"]).err
    # a bound lowered under the 6-OSD cluster's own 3 pools there refuses them too
    d = copy.deepcopy(docs)
    d["osd_dump"]["pools"] = d["osd_dump"]["pools"][:3]
    few = write(tmp_path, d)
    check_all(few, None, commands=[["status"], ["eval"]])
    check_all(few + ["--max-sparse-cells", str(cells // 20 - 1)], "OSD ids reach",
              commands=[["status"]], work_limit=NOTHING)
