"""OSDMaps `osdmaptool --createsimple` cannot make (EC pools, a pool per rule, any pg_num): a
throw-away ceph-mon without OSDs, seeded with our CRUSH map, creates the pools as a cluster
would, and we keep its binary OSDMap (about 2 s for 10,000 OSDs).

    PYTHONPATH=src /usr/bin/python3 -m qa.maps.monbuilt --demo [--big] [--out DIR]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..cluster import free_port
from ..cluster.rados_client import Rados
from .crushgen import (HOST, REPLICATED_HOST, GeneratedMap, Layout, OsdMapSpec, crush_text, rule, run,
                       simple_map)


@dataclass
class PoolSpec:
    name: str
    pg_num: int
    rule: Optional[str] = None             # a rule of the CRUSH text; replicated default: the first,
    #                                        EC default: one the mon writes from the profile
    size: int = 3                          # replicated only; an EC pool has k + m
    ec: Optional[Tuple[int, int]] = None   # (k, m) for an erasure pool
    failure_domain: str = "host"           # the EC profile's (a type the map has)


# What a pool-creating mon without OSDs needs, on its own port (never the test cluster's 3300/6789)
CONF = """[global]
fsid = {fsid}
mon host = v2:127.0.0.1:{port}
public addr = 127.0.0.1
ms bind ipv4 = true
ms bind ipv6 = false
ms bind msgr1 = false
auth cluster required = none
auth service required = none
auth client required = none
run dir = {d}/run
crash dir = {d}/crash
# pool creation checks pg_num * size against max(in OSDs, 3) x this; here no OSD is in
mon max pg per osd = 100000000
mon max pool pg num = 16777216
# without this the mon creates at most 1024 PGs and leaves pg_num_target for a mgr to step to
mon osd max initial pgs = 16777216
mon allow pool size one = true
osd pool default pg autoscale mode = off
# the OSDs do not exist (so are out): the mon's PG mapping, restarted after each command,
# exhausts CRUSH's retries on every PG, and the next proposal waits for its running chunk
mon osd mapping pgs per chunk = 64
# each pool command waits for a Paxos proposal, 1 s apart by default
paxos propose interval = 0.01
paxos min wait = 0.001

[mon]
mon data = {d}/mon.$id
log file = {d}/$name.log
admin socket = {d}/run/$name.asok

[client]
log to file = false
"""


class _Mon:
    """One ceph-mon in the foreground, owned by this process: stop() always ends it."""

    def __init__(self, d: Path, osdmap: Path) -> None:
        self.d, self.port = d, free_port()
        self.conf = d / "ceph.conf"
        fsid = str(uuid.uuid4())
        (d / "run").mkdir(parents=True)
        self.conf.write_text(CONF.format(fsid=fsid, port=self.port, d=d))
        # the mon and its client must not pick up the test cluster's CEPH_CONF / CEPH_ARGS
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CEPH_")}
        run("monmaptool", "--create", "--fsid", fsid, "--addv", "a", f"[v2:127.0.0.1:{self.port}]",
            str(d / "monmap"), timeout=300, env=self.env)
        # --osdmap seeds the mon's first OSDMap (OSDs, CRUSH map and rules) at mkfs
        run("ceph-mon", "-c", str(self.conf), "--mkfs", "-i", "a", "--monmap", str(d / "monmap"),
            "--osdmap", str(osdmap), timeout=300, env=self.env)
        # foreground (-f) so that this process owns it; output to a file, as a pipe could fill up
        with open(d / "stderr", "wb") as err:
            self.proc: Optional[subprocess.Popen] = subprocess.Popen(
                ["ceph-mon", "-c", str(self.conf), "-i", "a", "-f"], env=self.env,
                stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT)
        self.client: Optional[Rados] = None

    def connect(self, timeout: float = 30) -> None:
        try:
            self.client = Rados(str(self.conf), connect_timeout=int(timeout))
        except Exception as e:
            assert self.proc is not None
            err = (self.d / "stderr").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"no mon in {timeout} s (exit code {self.proc.poll()}): {e}: {err}"
                               f" (mon in {self.d})") from e

    def command(self, prefix: str, **args: Any) -> Any:
        """A mon command's JSON answer; "osd getmap"'s bytes."""
        assert self.client is not None
        if prefix == "osd getmap":
            return self.client.raw("mon", prefix, 600)[1]
        return self.client.command("mon", prefix, 600, **args)

    def stop(self) -> None:
        if self.client is not None:
            self.client.shutdown()
            self.client = None
        if self.proc is not None:
            # SIGKILL: the store is thrown away, and a clean shutdown first waits out the mon's
            # background PG mapping job (2.5 s at 10,000 OSDs)
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def _create_pool(mon: _Mon, p: PoolSpec, default_rule: str) -> None:
    kind: Dict[str, Any] = {"pool_type": "replicated", "rule": p.rule or default_rule, "size": p.size}
    if p.ec is not None:
        profile = f"{p.name}_profile"
        mon.command("osd erasure-code-profile set", name=profile,
                    profile=[f"k={p.ec[0]}", f"m={p.ec[1]}", f"crush-failure-domain={p.failure_domain}"])
        # without a rule the mon writes an indep one, named after the pool, from the profile
        kind = {"pool_type": "erasure", "erasure_code_profile": profile}
        kind.update({"rule": p.rule} if p.rule else {})
    mon.command("osd pool create", pool=p.name, pg_num=p.pg_num, pgp_num=p.pg_num, **kind)


def make_osds(mon: _Mon, n: int) -> None:
    """OSDs 0..n-1 existing and in, never booted (down): CRUSH maps PGs onto them, none is up."""
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda i: mon.command("osd new", uuid=str(uuid.uuid4()), id=i), range(n)))
    mon.command("osd in", ids=["all"])


def build(tmp: Path, layout: Layout, rules: Sequence[str], pools: Sequence[PoolSpec],
          states: OsdMapSpec = OsdMapSpec(),
          items: Optional[Mapping[str, Sequence[Tuple[int, int]]]] = None) -> GeneratedMap:
    """tmp/osdmap.bin holding the layout, the rules and the pools, and a handle on it in
    `states`. Its OSDs do not exist (as with --createsimple) unless `items` is given
    (pg-upmap-items for the handle's state, which osdmaptool cannot set; {}: none): then they
    exist, down."""
    tmp.mkdir(parents=True, exist_ok=True)
    seed = tmp / "osdmap0.bin"
    # no --with-default-pool: every pool comes from the mon. The OSDs stay nonexistent: up OSDs
    # that never booted kill the mon ("FAILED ceph_assert(osdmap.get_up_osd_features() &
    # CEPH_FEATURE_MON_STATEFUL_SUB)" in check_pg_creates_subs)
    crush_bin = simple_map(HOST, seed, crush_text(layout, rules), layout.num_osds)
    default_rule = json.loads(run("crushtool", "-i", str(crush_bin), "--dump"))["rules"][0]["rule_name"]
    # not under tmp: the admin socket's path must stay within AF_UNIX's 107 bytes
    mon_dir = Path(tempfile.mkdtemp(prefix="monbuilt-mon-"))
    mon = _Mon(mon_dir, seed)
    ok = False
    try:
        mon.connect()
        if items is not None:
            # the mon keeps an item only on OSDs that exist and are in (check_pg_upmaps): they
            # are made before the pools (each is a map epoch, cheap while no PG maps)
            make_osds(mon, layout.num_osds)
            if states.mark_out:
                mon.command("osd out", ids=[str(o) for o in states.mark_out])
            for o, w in (states.crush_weights or {}).items():
                mon.command("osd crush reweight", name=f"osd.{o}", weight=float(w))
            mon.command("osd set-require-min-compat-client", version="luminous", yes_i_really_mean_it=True)
        for p in pools:
            _create_pool(mon, p, default_rule)
        asked = {p.name: p.pg_num for p in pools}
        for d in mon.command("osd pool ls", detail="detail", format="json"):
            got = (d["pg_num"], d["pg_num_target"], d["pg_placement_num"], d["pg_placement_num_target"])
            if got != (asked[d["pool_name"]],) * 4:
                raise RuntimeError(f"pool {d['pool_name']}: asked pg_num {asked[d['pool_name']]}, mon made "
                                   f"(pg_num, target, pgp_num, target) = {got}")
        pairs = [(pgid, [int(x) for pair in v for x in pair]) for pgid, v in (items or {}).items() if v]
        # concurrent: the commands that wait on one proposal go into the next map epoch together
        with ThreadPoolExecutor(32) as ex:
            list(ex.map(lambda a: mon.command("osd pg-upmap-items", pgid=a[0], id=a[1]), pairs))
        om = tmp / "osdmap.bin"
        om.write_bytes(mon.command("osd getmap"))
        ok = True
    finally:
        mon.stop()
        if ok:   # after a failure its log stays for the post-mortem (errors name the dir)
            shutil.rmtree(mon_dir, ignore_errors=True)
    return states.handle(om, layout.num_osds)


HDD = "take default class hdd"
# Rules of more than one choose step: EC 8+3 in 4 racks of 3 hosts, 4 replicas in 2 racks of
# 2 hosts, 6 in 3 rooms of 2 hosts; one OSD per host is an ssd, with a rule of its own
MULTI_RULES = [
    rule(["set_chooseleaf_tries 5", "set_choose_tries 100", HDD, "choose indep 4 type rack",
          "chooseleaf indep 3 type host", "emit"], "ec83_racks", 0, "erasure"),
    rule([HDD, "choose firstn 2 type rack", "chooseleaf firstn 2 type host", "emit"], "two_racks", 1),
    rule([HDD, "choose firstn 3 type room", "chooseleaf firstn 2 type host", "emit"], "three_rooms", 2),
    rule(["take default class ssd", "chooseleaf firstn 0 type host", "emit"], "ssd_host", 3),
]


def rooms(racks: int, hosts: int, per_host: int) -> Layout:
    """3 rooms of unequal weight (1 : 2 : 3), OSDs of two sizes within each, one ssd per host."""
    per_room = racks * hosts * per_host
    return Layout(racks, hosts, per_host, weight=lambda o: (1.0, 2.0, 3.0)[o // per_room] * (1.0, 1.5)[o % 2],
                  rooms=3, device_class=lambda o: "ssd" if o % per_host == per_host - 1 else "hdd")


MULTI384 = rooms(4, 4, 8)
MULTI384_POOLS = [PoolSpec("ec83", 2048, "ec83_racks", ec=(8, 3)),
                  PoolSpec("rep4", 2048, "two_racks", size=4),
                  PoolSpec("rep6", 1024, "three_rooms", size=6), PoolSpec("ssd", 512, "ssd_host")]
ONE_PER_ROOM = rule([HDD, "chooseleaf firstn 0 type room", "emit"], "one_per_room", 4)

# The benchmark's maps (qa/bench/balance.py): 60 OSDs with a 2048-PG pool; 1,000 OSDs of mixed
# weights in racks and hosts with a replicated pool per rule plus an EC 4+2 pool; 10,000 OSDs;
# "multi": 72 OSDs in 3 rooms x 2 racks x 3 hosts with a pool per multi-step rule, one OSD
# out and two of CRUSH weight 0.
CASES: Dict[str, Tuple[Layout, List[str], List[PoolSpec]]] = {
    "60": (Layout(0, 5, 12), [REPLICATED_HOST], [PoolSpec("rbd", 2048)]),
    "1000": (Layout(10, 10, 10, weight=lambda o: (4.0, 8.0, 16.0)[o % 3]),
             [rule(["take default", "chooseleaf firstn 0 type host", "emit"], "by_host", 0),
              rule(["take default", "chooseleaf firstn 0 type rack", "emit"], "by_rack", 1),
              rule(["take default", "choose firstn 3 type rack", "chooseleaf firstn 1 type host", "emit"],
                   "rack_then_host", 2)],
             [PoolSpec("p_host", 2048, "by_host"), PoolSpec("p_rack", 1024, "by_rack"),
              PoolSpec("p_rack_host", 1024, "rack_then_host"), PoolSpec("ec42", 1024, ec=(4, 2))]),
    "10000": (Layout(20, 25, 20, weight=lambda o: (1.0, 2.0, 4.0)[o % 3]), [REPLICATED_HOST],
              [PoolSpec("rbd", 81920)]),
    "4000": (Layout(10, 20, 20, weight=lambda o: (1.0, 2.0, 4.0)[o % 3]), [REPLICATED_HOST],
             [PoolSpec("rbd", 32768)]),
    "multi": (rooms(2, 3, 4), MULTI_RULES, [replace(p, pg_num=p.pg_num // 4) for p in MULTI384_POOLS]),
    # "multi" at 384 OSDs (3 rooms of 4 racks of 4 hosts of 8), one ssd per host: a map
    # on which a balancer can leave the pools' totals over 1 PG from their shares
    "multi384": (MULTI384, MULTI_RULES, MULTI384_POOLS),
    # and an "rgw" pool of one replica per room: each room holds pg_num of its replicas
    # whatever its weight, so the light room's OSDs hold twice their share by weight
    "multi384rgw": (MULTI384, MULTI_RULES + [ONE_PER_ROOM],
                    MULTI384_POOLS + [PoolSpec("rgw", 512, "one_per_room")]),
}
# OSD states of a case, set as osdmaptool sets them for every tool: out, CRUSH weight
STATES: Dict[str, OsdMapSpec] = {
    "multi": OsdMapSpec(mark_out=[30], crush_weights={10: 0.0, 50: 0.0}),
    "multi384": OsdMapSpec(mark_out=[141], crush_weights={10: 0.0, 150: 0.0, 77: 0.5, 260: 1.2}),
    # more OSDs of other CRUSH weights, in every room
    "multi384rgw": OsdMapSpec(mark_out=[141], crush_weights={10: 0.0, 150: 0.0, 77: 0.5, 260: 1.2, 20: 2.5,
                                                             33: 0.3, 300: 0.4}),
}


def build_case(tmp: Path, name: str,
               items: Optional[Mapping[str, Sequence[Tuple[int, int]]]] = None) -> GeneratedMap:
    layout, rules, pools = CASES[name]
    return build(tmp, layout, rules, pools, STATES.get(name, OsdMapSpec()), items)


# Items Ceph's own balancer (`osdmaptool --upmap`: it chooses at random, so recorded)
# proposed for the "multi" map, and OSDs reweighted as `ceph osd reweight` would (which
# osdmaptool cannot set, so in the dump as the mon shows it)
MULTI_CEPH_ITEMS = Path(__file__).parent / "fixtures" / "multi_ceph_upmap.txt"
MULTI_REWEIGHTS = ((1, 0.7), (26, 0.85), (61, 0.6))


def reweighted_multi(tmp: Path) -> Tuple[GeneratedMap, Dict[str, Any], Dict[str, Any]]:
    """The "multi" map with the reweights and Ceph's recorded items set: (map, osd dump, crush)."""
    gm = build_case(tmp, "multi")
    osd_dump, crush = gm.dumps()
    pools = {p["pool"]: p["pg_num"] for p in osd_dump["pools"]}
    items: List[Dict[str, Any]] = []
    for line in MULTI_CEPH_ITEMS.read_text().splitlines():
        w = line.split()
        if w[:3] != ["ceph", "osd", "pg-upmap-items"]:
            continue
        pool, ps = w[3].split(".")
        v = [int(x) for x in w[4:]]
        # the recording is of this map
        if int(ps, 16) >= pools[int(pool)] or not all(0 <= x < gm.num_osds for x in v):
            raise ValueError(f"{MULTI_CEPH_ITEMS}: not of this map: {line}")
        items.append({"pgid": w[3], "mappings": [{"from": a, "to": b} for a, b in zip(v[0::2], v[1::2])]})
    osd_dump["pg_upmap_items"] = items
    for o, rw in MULTI_REWEIGHTS:
        osd_dump["osds"][o]["weight"] = rw
    return gm, osd_dump, crush


def demo(big: bool, out: Optional[Path]) -> None:
    with tempfile.TemporaryDirectory(prefix="monbuilt-") as d:
        for label, (layout, rules, pools) in CASES.items():
            if label in ("10000", "4000") and not big:
                continue
            t0 = time.monotonic()
            gm = build((out or Path(d)) / label, layout, rules, pools)
            print(f"{label} OSDs: built in {time.monotonic() - t0:.1f} s" + (f" -> {gm.path}" if out else ""))
            osd_dump, crush = gm.dumps()
            rule_of = {r["rule_id"]: r["rule_name"] for r in crush["rules"]}
            for p in osd_dump["pools"]:
                kind, rule_name = {1: "replicated", 3: "erasure"}[p["type"]], rule_of[p["crush_rule"]]
                print(f"  id={p['pool']}  name={p['pool_name']}  type={kind}  size={p['size']}"
                      f"  pg_num={p['pg_num']}  pgp_num={p['pg_placement_num']}  rule={rule_name}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--demo", action="store_true", help="build the 60 and 1000 OSD maps")
    ap.add_argument("--big", action="store_true", help="with --demo: also 10,000 OSDs, 81920 PGs")
    ap.add_argument("--out", type=Path, help="keep the maps in OUT/<OSDs>/osdmap.bin")
    a = ap.parse_args()
    if not a.demo:
        ap.print_help()
        sys.exit(2)
    demo(a.big, a.out)
