"""The mgr reads the binary CRUSH map where the dump is not enough (mgr/crush_bin.py): a
class rule over tree buckets walks Ceph's shadow trees, whose node weights only the binary
map holds. On the session's cluster a second root of tree buckets (two hosts of two of the
cluster's OSDs, linked there besides their own hosts) and a class rule over it: the pool is
mapped, every PG as the mon maps it, where without the binary map it was set aside. Trees
of two items: Ceph's clone leaves nothing of its memory in a node draws reach (doc/crush.rst).
"""
import io
import json
import re
import subprocess
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

from pg_advisor.cli import run as cli_run

from ..cluster import Cluster

POOL, RULE = "treepool", "tree_cls"


def tree_buckets(text: str, osds: List[int]) -> str:
    """The decompiled CRUSH text with a root of two tree hosts of two OSDs each, ids below
    every id the map uses."""
    low = min(int(x) for x in re.findall(r"^\s*id (-\d+)", text, re.M))
    b = [f"host thost{h} {{\n\tid {low - 1 - h}\n\talg tree\n\thash 0\n"
         + "".join(f"\titem osd.{o} weight 1.00000\n" for o in osds[2 * h:2 * h + 2]) + "}\n"
         for h in (0, 1)]
    b.append(f"root treeroot {{\n\tid {low - 3}\n\talg tree\n\thash 0\n"
             "\titem thost0 weight 2.00000\n\titem thost1 weight 2.00000\n}\n")
    at = text.index("# rules")
    return text[:at] + "".join(b) + "\n" + text[at:]


@pytest.fixture(scope="module")
def tree_pool(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = cluster
    d = tmp_path_factory.mktemp("crushbin")
    orig = d / "orig.bin"
    c.ceph("osd", "getcrushmap", "-o", str(orig))
    text = subprocess.run(["crushtool", "-d", str(orig)], check=True, capture_output=True, text=True).stdout
    devices = c.json("osd", "crush", "dump")["devices"]
    cls = devices[0]["class"]
    osds = [x["id"] for x in devices if x.get("class") == cls][:4]
    assert len(osds) == 4, devices
    (d / "tree.txt").write_text(tree_buckets(text, osds))
    subprocess.run(["crushtool", "-c", str(d / "tree.txt"), "-o", str(d / "tree.bin")], check=True,
                   capture_output=True)
    c.ceph("osd", "setcrushmap", "-i", str(d / "tree.bin"))
    try:
        c.ceph("osd", "crush", "rule", "create-replicated", RULE, "treeroot", "host", cls)
        c.create_pool(POOL, 16, "replicated", RULE)
        c.ceph("osd", "pool", "set", POOL, "size", "2")
        c.wait_clean(pool=POOL)
        yield c
    finally:
        c.remove_pool(POOL, wait=False)
        c.run("osd", "crush", "rule", "rm", RULE)
        c.ceph("osd", "setcrushmap", "-i", str(orig))
        c.wait_clean()


def test_a_class_rule_over_tree_buckets_is_mapped_as_the_mon_maps_it(tree_pool: Cluster) -> None:
    c = tree_pool
    crush = c.json("osd", "crush", "dump")
    shadows = [b for b in crush["buckets"] if b["name"].startswith(("treeroot", "thost"))]
    assert {b["alg"] for b in shadows} == {"tree"} and any("~" in b["name"] for b in shadows)
    rows = {p["name"]: p for p in c.advisor("status")["pools"]}
    assert rows[POOL]["not_mapped"] is None, rows[POOL]["not_mapped"]
    ours = c.advisor("map", POOL)["pgs"]
    ceph = c.up_sets(POOL)
    differ = {k: (ours.get(k), v) for k, v in ceph.items() if ours.get(k) != v}
    assert len(ceph) == 16 and ours == ceph, differ
    assert "PG_ADVISOR_POOL_NOT_MAPPED" not in c.json("health", "detail")["checks"]


def test_offline_the_dump_alone_sets_that_pool_aside(tree_pool: Cluster, tmp_path: Path) -> None:
    # offline from the same cluster's dumps: without --crush-bin the reason, not a guess;
    # with `ceph osd getcrushmap -o` the pool mapped as in the mgr
    c = tree_pool
    for key, cmd in (("osd.json", ("osd", "dump")), ("crush.json", ("osd", "crush", "dump"))):
        (tmp_path / key).write_text(c.ceph(*cmd, "-f", "json"))
    c.ceph("osd", "getcrushmap", "-o", str(tmp_path / "crush.bin"))
    base = ["--osdmap", str(tmp_path / "osd.json"), "--crush", str(tmp_path / "crush.json")]
    runs: List[Tuple[List[str], bool]] = [([], False), (["--crush-bin", str(tmp_path / "crush.bin")], True)]
    for extra, mapped in runs:
        out = io.StringIO()
        assert cli_run(base + extra + ["status", "-f", "json"], out) == 0
        row = next(p for p in json.loads(out.getvalue())["pools"] if p["name"] == POOL)
        if mapped:
            assert row["not_mapped"] is None, row["not_mapped"]
        else:
            assert "a device-class shadow of a tree bucket" in row["not_mapped"]
