"""`ceph pg-advisor simulate` predicts, then the real cluster does it: the two must agree."""
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np
import pytest

from pg_advisor.crush.placement import stable_mod

from ..cluster import Cluster, wait_until
from ..maps.crushgen import GeneratedMap

Ref = Dict[str, Tuple[List[int], int]]


def ceph_mapping(c: Cluster, tmp: Path, name: str) -> Ref:
    path = tmp / f"{name}.bin"
    c.ceph("osd", "getmap", "-o", str(path))
    return GeneratedMap(path=path, num_osds=0, as_is=True).reference()


def per_osd(ref: Ref) -> Counter:
    return Counter(o for up, _ in ref.values() for o in up if o != 0x7FFFFFFF)


@pytest.fixture
def pool(cluster: Cluster) -> Iterator[str]:
    with cluster.pool("whatif", 16) as name:
        pid = cluster.pool_id(name)
        # an upmap item on a parent PG: does its child inherit it? the prediction says no
        up = cluster.json("pg", "map", f"{pid}.0")["up"]
        mates = cluster.host_mates()
        src, dst = next((o, m) for o in up for m in mates[o] if m not in up)
        cluster.ceph("osd", "pg-upmap-items", f"{pid}.0", str(src), str(dst))
        yield name


def predict_on_the_current_map(cluster: Cluster, *args: str) -> Dict[str, Any]:
    """`simulate` once the mgr's map is the mon's, with every OSD up (this test runs right
    after test_vstart's fresh cluster: an OSD there may still be settling, and a prediction
    made while it was down is right for that map, not for the one the split ends on)."""
    cluster.wait_clean()
    epoch = cluster.json("osd", "dump")["epoch"]
    wait_until(lambda: cluster.advisor("status")["epoch"] >= epoch,
               30, f"the mgr's map at epoch {epoch}")
    pred: Dict[str, Any] = cluster.advisor("simulate", *args)
    down = [o["osd"] for o in cluster.json("osd", "dump")["osds"] if not o["up"]]
    assert pred["epoch"] >= epoch and not down, (pred["epoch"], epoch, down)
    return pred


def test_split_prediction_matches_the_real_split(cluster: Cluster, pool: str,
                                                 tmp_path: Path) -> None:
    pred = predict_on_the_current_map(cluster, pool, "--pg_num", "32")
    before = ceph_mapping(cluster, tmp_path, "before")
    cluster.ceph("osd", "pool", "set", pool, "pg_num", "32")

    def split_done() -> bool:
        p = cluster.pool_detail(pool)
        return p["pg_num"] == 32 and p["pg_placement_num"] == 32
    wait_until(split_done, 240, "pg_num and pgp_num 32")
    after = ceph_mapping(cluster, tmp_path, "after")
    # per-OSD PG counts after, over all pools
    actual = per_osd(after)
    assert {o["id"]: o["pgs_after"] for o in pred["osds"]} == {o: actual.get(o, 0) for o in cluster.osd_ids()}
    # PGs whose up set differs from their parent's before the split
    pid = pred["pools"][0]["pool_id"]
    changed = 0
    for c in range(32):
        parent = int(stable_mod(np.array([c]), 16)[0])
        changed += set(after[f"{pid}.{c:x}"][0]) != set(before[f"{pid}.{parent:x}"][0])
    assert pred["pools"][0]["pgs_remapped"] == changed
    assert pred["pools"][0]["pg_num"] == [16, 32]


def test_out_prediction_matches_marking_out(cluster: Cluster, tmp_path: Path) -> None:
    osd = str(cluster.osd_ids(in_up=True)[-1])
    pred = cluster.advisor("simulate", "--out-osd", osd)
    before = ceph_mapping(cluster, tmp_path, "before")
    cluster.ceph("osd", "out", osd)
    try:
        after = ceph_mapping(cluster, tmp_path, "after")
    finally:
        cluster.ceph("osd", "in", osd)
    actual = per_osd(after)
    assert {o["id"]: o["pgs_after"] for o in pred["osds"]} == {o: actual.get(o, 0) for o in cluster.osd_ids()}
    moved = sum(len(set(after[k][0]) - set(before[k][0])) for k in after)
    assert pred["total"]["shards_moved"] == moved
    cluster.wait_clean()


@pytest.mark.parametrize("args, code, message", [
    (["rbd", "--pg_num", "16", "--pgp_num", "32"], 22, "pgp_num must be between 1 and pg_num 16"),
    (["nosuchpool", "--pg_num", "64"], 2, "does not exist"),
    (["--out-osd", "99"], 2, "osd.99 does not exist"),
    (["--reweight", "1", "--weight", "2.5"], 22, "within 0..1"),
    (["--reweight", "1"], 22, "goes with --weight"),
    ([], 22, "nothing to simulate"),
])
def test_bad_simulations_change_nothing(cluster: Cluster, args: List[str], code: int,
                                        message: str) -> None:
    before = cluster.fingerprint()
    got, out, err = cluster.run("pg-advisor", "simulate", *args)
    assert got == code, (out, err)
    assert message in err
    assert cluster.fingerprint() == before
