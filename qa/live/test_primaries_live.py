"""pg_upmap_primaries (Reef on) on the live Tentacle mon's map: every PG against osdmaptool.

A module of its own: test_crush_exact.py's live map (an OSD out, weight sets, a primary
affinity) is put back before this one starts."""
import dataclasses
from typing import Iterator

import pytest

from pg_advisor.model import snapshot

from ..cluster import Cluster
from ..maps.crushgen import GeneratedMap, mismatches


@pytest.fixture(scope="module")
def primaries_map(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GeneratedMap]:
    """The live mon's map with pg_upmap_primaries (Reef on): a pool of 128 PGs with every
    PG that has osd.0 past its first slot given osd.0 as its primary by hand, then a
    round of Ceph's own read balancer (mode read), which undoes some; osd.5 marked out in
    the saved map alone (osdmaptool --mark-out): CRUSH moves its PGs, and an entry that
    named it no longer applies."""
    c = cluster
    if c.release() == "pacific":
        pytest.skip("pg-upmap-primary came with Reef; this cluster runs Pacific")
    with c.min_compat_client("reef"), c.pool("reads", 128):
        path = tmp_path_factory.mktemp("primaries") / "osdmap.bin"
        try:
            c.wait_clean()
            c.hand_primaries("reads", 0)
            c.wait_clean()        # a new primary peers the PG; the balancer waits for active PGs
            c.ceph("balancer", "mode", "read")
            code, _, err = c.run("balancer", "optimize", "rb", "reads")
            assert code == 0, err
            c.ceph("balancer", "execute", "rb")
            c.ceph("osd", "getmap", "-o", str(path))
            entries = c.json("osd", "dump")["pg_upmap_primaries"]
            assert any(e["primary_osd"] != 0 for e in entries), "Ceph's read balancer set none"
            yield GeneratedMap(path=path, num_osds=6, mark_out=[5])
        finally:
            c.ceph("balancer", "mode", "upmap")
            c.rm_primaries()


def test_live_map_with_pg_upmap_primaries(primaries_map: GeneratedMap) -> None:
    osd_dump, crush = primaries_map.dumps()
    ref = primaries_map.reference()
    snap = snapshot.load(osd_dump, crush)
    assert len(snap.pg_upmap_primaries) > 3
    bad = mismatches(snap, ref)
    assert not bad, f"{len(bad)} of {len(ref)} PGs differ, first: {bad[:5]}"
    print(f"{len(ref)} PGs with {len(snap.pg_upmap_primaries)} pg_upmap_primaries: all as osdmaptool")
    # the primaries matter here: ignoring them must change some PGs' order
    assert mismatches(dataclasses.replace(snap, pg_upmap_primaries={}), ref)
