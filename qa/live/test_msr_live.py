"""An msr EC pool on the real Tentacle cluster (a profile with crush-osds-per-failure-domain
and crush-num-failure-domains: Squid's choosemsr rule): once it made every pg_advisor
command fail for every pool. Now it is mapped as the mon maps it, sized and balanced."""
from typing import Dict, Iterator

import numpy as np
import pytest

from ..cluster import Cluster


@pytest.fixture(scope="module")
def msr_pool(cluster: Cluster) -> Iterator[Cluster]:
    c = cluster
    if c.release() == "pacific":
        pytest.skip("msr rules came with Squid; this cluster runs Pacific")
    with c.min_compat_client("squid"):
        # 2 hosts of the 3, 2 shards each: CRUSH leaves the hosts uneven, so a balance has work
        c.ceph("osd", "erasure-code-profile", "set", "msr22", "k=2", "m=2", "crush-failure-domain=host",
               "crush-osds-per-failure-domain=2", "crush-num-failure-domains=2")
        with c.pool("ecmsr", 32, "erasure", "msr22"):
            c.wait_clean()
            yield c
        c.ceph("osd", "erasure-code-profile", "rm", "msr22")


def hosts(c: Cluster) -> Dict[int, int]:
    """Each OSD -> its host, named by the host's lowest OSD."""
    return {o: min([o] + others) for o, others in c.host_mates().items()}


def test_the_msr_pool_is_mapped_as_the_mon_maps_it(msr_pool: Cluster) -> None:
    c = msr_pool
    rule = next(r for r in c.json("osd", "crush", "dump")["rules"]
                if r["rule_id"] == next(p for p in c.json("osd", "dump")["pools"]
                                        if p["pool_name"] == "ecmsr")["crush_rule"])
    assert [s["op"] for s in rule["steps"]].count("choosemsr") == 2
    ours = c.advisor("map", "ecmsr")["pgs"]
    ceph = c.up_sets("ecmsr")
    differ = {k: (ours.get(k), v) for k, v in ceph.items() if ours.get(k) != v}
    assert len(ceph) == 32 and ours == ceph, differ
    st = c.advisor("status")
    rows = {p["name"]: p for p in st["pools"]}
    assert rows["ecmsr"]["not_mapped"] is None and rows["ecmsr"]["recommended_pg_num"] is not None
    assert all(p["not_mapped"] is None for p in st["pools"])
    health = c.json("health", "detail")["checks"]
    assert "PG_ADVISOR_POOL_NOT_MAPPED" not in health and "PG_ADVISOR_STATUS_FAILED" not in health


def test_its_balance_keeps_at_most_two_shards_a_host(msr_pool: Cluster) -> None:
    c = msr_pool
    host = hosts(c)
    got = c.advisor("balance", "--pool", "ecmsr", "--dry-run")
    up = c.up_sets("ecmsr")          # no items yet: CRUSH's own sets, which the items rewrite
    assert got["items"], "nothing to even on 32 PGs of 4 shards on 2 of 3 hosts"
    for pgid, pairs in got["items"].items():
        row = list(up[pgid])
        for frm, to in pairs:
            row[row.index(frm)] = to
        per_host = np.bincount([host[o] for o in row])
        assert per_host.max() <= 2, (pgid, row)


def test_a_balance_round_lands_as_predicted(msr_pool: Cluster) -> None:
    c = msr_pool
    host = hosts(c)
    done = c.advisor("balance", "--pool", "ecmsr")
    assert done["applied"] and done["failed"] == []
    c.wait_clean(pool="ecmsr")
    ceph = c.up_sets("ecmsr")
    assert c.advisor("map", "ecmsr")["pgs"] == ceph
    assert all(np.bincount([host[o] for o in up]).max() <= 2 for up in ceph.values())
    for pg in [u["pgid"] for u in c.json("osd", "dump")["pg_upmap_items"]]:
        c.ceph("osd", "rm-pg-upmap-items", pg)
