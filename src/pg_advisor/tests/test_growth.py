"""simulate --add-host: the map grown as Ceph grows it, and what CRUSH then moves."""
import math
from typing import Any, Dict

import numpy as np
import pytest

from pg_advisor.model import snapshot
from pg_advisor.crush.placement import Placer
from pg_advisor.model.errors import AdvisorError
from pg_advisor.analysis.growth import NewHost, growth_report, with_host
from pg_advisor.render.whatif_text import growth_text

W = 0.00099     # the fixture's OSDs' CRUSH weight (1 GiB memstore)


def test_the_host_goes_under_the_root_with_its_weight_and_class(snap: snapshot.Snapshot) -> None:
    grown, ids, cls = with_host(snap, "host9", 2, W)
    assert ids == [snap.osds.count, snap.osds.count + 1] and cls == "hdd"
    names = {b.name: b for b in grown.buckets.values()}
    host, root = names["host9"], names["default"]
    assert host.items.tolist() == ids and np.allclose(host.weights, W) and host.alg == "straw2"
    old_root = next(b for b in snap.buckets.values() if b.name == "default")
    assert root.items.tolist() == old_root.items.tolist() + [host.id]
    assert math.isclose(float(root.weights.sum()), float(old_root.weights.sum()) + 2 * W)
    # the class's shadow tree grows alike (rules that take "default class hdd" see the host)
    if "default~hdd" in names:
        assert names["host9~hdd"].items.tolist() == ids
        assert names["host9~hdd"].id in names["default~hdd"].items.tolist()
    o = grown.osds
    assert o.exists[ids].all() and o.up[ids].all() and o.in_[ids].all() and (o.reweight[ids] == 1).all()
    assert [o.host[i] for i in ids] == ["host9", "host9"] and [o.device_class[i] for i in ids] == ["hdd"] * 2
    # nothing else of the map changed
    assert all(grown.buckets[b.id].items.tolist() == b.items.tolist()
               for b in snap.buckets.values() if b.name not in ("default", "default~hdd"))


def test_what_crush_then_moves(snap: snapshot.Snapshot) -> None:
    r = growth_report(snap, NewHost("host9", 2, W), budget=0.05, rate=10 * (1 << 20))
    by = {p["pool"]: p for p in r["pools"]}
    # the replicated and EC pools on hdd move a share onto the new host; the ssd pool none
    assert by["rbd"]["shards_moved"] > 0 and by["ecpool"]["shards_moved"] > 0
    assert by["fast"]["shards_moved"] == 0 and by["fast"]["new_osd_pgs"] == [0, 0]
    # what lands on the new OSDs moves; a few more shards move between the old ones
    # (CRUSH's retries take other paths once a host is added)
    grown, ids, _ = with_host(snap, "host9", 2, W)
    placer = Placer(grown)
    on_new = sum(int(np.isin(placer.map_pool(p).up, ids).sum()) for p in grown.pools)
    assert on_new == sum(x["pgs"] for x in r["new_osds"]) and 0 < on_new <= r["total"]["shards_moved"]
    assert 0 < r["misplaced_at_once"] < 1 and r["drain_rounds"] == math.ceil(r["misplaced_at_once"] / 0.05)
    assert r["drain_seconds"] == pytest.approx(r["total"]["bytes_moved"] / (10 * (1 << 20)), abs=0.1)
    text = growth_text(r)
    assert "host9" in text and f"{r['drain_rounds']} rounds" in text


def test_an_ssd_host_moves_the_ssd_pool(snap: snapshot.Snapshot) -> None:
    r = growth_report(snap, NewHost("fasthost", 1, W, device_class="ssd"))
    by = {p["pool"]: p for p in r["pools"]}
    # (rbd's rule takes the whole root, any class: it moves too)
    assert by["fast"]["shards_moved"] > 0 and by["fast"]["new_osd_pgs"][0] > 0


@pytest.mark.parametrize("kw, code, message", [
    ({"name": "host0"}, -22, "exists already"),
    ({"name": "a~b"}, -22, "exists already"),
    ({"count": 0}, -22, "--osds must be within 1..1024"),
    ({"count": -1}, -22, "--osds must be within 1..1024"),
    ({"count": 2 ** 31}, -22, "--osds must be within 1..1024"),
    ({"count": 10 ** 8}, -22, "--osds must be within 1..1024"),
    ({"weight": 0.0}, -22, "--weight"),
    ({"weight": -1.0}, -22, "--weight"),
    ({"weight": float("nan")}, -22, "--weight"),
    ({"weight": float("inf")}, -22, "--weight"),
    ({"weight": 2.0 ** 31}, -22, "--weight"),
    ({"root": "nowhere"}, -2, "no CRUSH bucket 'nowhere'"),
])
def test_bad_growth_is_refused(snap: snapshot.Snapshot, kw: Dict[str, Any], code: int, message: str) -> None:
    args: Dict[str, Any] = {"name": "host9", "count": 2, "weight": W, **kw}
    with pytest.raises(AdvisorError) as e:
        growth_report(snap, NewHost(args["name"], args["count"], args["weight"],
                                    root=args.get("root", "default")))
    assert e.value.code == code and message in e.value.message
