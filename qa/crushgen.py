"""Generate CRUSH/OSD maps with Ceph's own tools, and Ceph's mapping of them as a reference.

A layout (racks x hosts x OSDs, weights, device classes) becomes CRUSH text, `crushtool -c`
compiles it, `osdmaptool --createsimple` makes an OSDMap around it, and
`osdmaptool --test-map-pgs-dump-all` says where Ceph puts every PG.
"""
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pg_advisor import snapshot
from pg_advisor.crush.placement import Placer
from pg_advisor.tests.osdmaptool_output import parse_dump_all

TUNABLES = """tunable choose_local_tries 0
tunable choose_local_fallback_tries 0
tunable choose_total_tries 50
tunable chooseleaf_descend_once 1
tunable chooseleaf_vary_r 1
tunable chooseleaf_stable 1
tunable straw_calc_version 1
tunable allowed_bucket_algs 54
"""

REPLICATED_HOST = """rule replicated_rule {
\tid 0
\ttype replicated
\tmin_size 1
\tmax_size 10
\tstep take default
\tstep chooseleaf firstn 0 type host
\tstep emit
}
"""


def rule(body: Sequence[str], name: str = "replicated_rule", rule_id: int = 0,
         rule_type: str = "replicated") -> str:
    steps = "".join(f"\tstep {s}\n" for s in body)
    return (f"rule {name} {{\n\tid {rule_id}\n\ttype {rule_type}\n\tmin_size 1\n"
            f"\tmax_size 20\n{steps}}}\n")


@dataclass
class Layout:
    racks: int                       # 0: hosts hang straight off the root
    hosts: int                       # per rack (or in total when racks == 0)
    osds_per_host: int
    weight: Callable[[int], float] = lambda osd: 1.0
    device_class: Callable[[int], Optional[str]] = lambda osd: None
    alg: str = "straw2"

    @property
    def num_osds(self) -> int:
        return max(self.racks, 1) * self.hosts * self.osds_per_host


def crush_text(layout: Layout, rules: Sequence[str]) -> str:
    out: List[str] = [TUNABLES, "\n# devices\n"]
    for o in range(layout.num_osds):
        cls = layout.device_class(o)
        out.append(f"device {o} osd.{o}" + (f" class {cls}" if cls else "") + "\n")
    out.append("\n# types\ntype 0 osd\ntype 1 host\ntype 2 rack\ntype 3 root\n\n# buckets\n")
    next_id = -1

    def bucket(kind: str, name: str, children: List[Tuple[str, float]]) -> None:
        nonlocal next_id
        next_id -= 1
        items = "".join(f"\titem {c} weight {w:.5f}\n" for c, w in children)
        out.append(f"{kind} {name} {{\n\tid {next_id}\n\talg {layout.alg}\n\thash 0\n{items}}}\n")

    osd = 0
    tops: List[Tuple[str, float]] = []
    for rk in range(max(layout.racks, 1)):
        hosts: List[Tuple[str, float]] = []
        for h in range(layout.hosts):
            name = f"host{rk * layout.hosts + h}"
            kids = [(f"osd.{o}", layout.weight(o)) for o in range(osd, osd + layout.osds_per_host)]
            osd += layout.osds_per_host
            bucket("host", name, kids)
            hosts.append((name, sum(w for _, w in kids)))
        if layout.racks:
            bucket("rack", f"rack{rk}", hosts)
            tops.append((f"rack{rk}", sum(w for _, w in hosts)))
        else:
            tops.extend(hosts)
    # the root gets id -1 as in a default map: emit it last with an explicit id
    items = "".join(f"\titem {c} weight {w:.5f}\n" for c, w in tops)
    out.append(f"root default {{\n\tid -1\n\talg {layout.alg}\n\thash 0\n{items}}}\n\n# rules\n")
    out.extend(rules)
    return "".join(out)


def run(*args: str) -> str:
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({p.returncode}): {p.stderr[-2000:]}")
    return p.stdout


@dataclass
class GeneratedMap:
    path: Path
    num_osds: int
    mark_out: List[int] = field(default_factory=list)
    as_is: bool = False     # a real cluster's map: keep its up/in states

    def _state_args(self) -> List[str]:
        if self.as_is:
            return []
        args = ["--mark-up-in"]
        for o in self.mark_out:
            args += ["--mark-out", str(o)]
        return args

    def dumps(self, pg_num: Optional[int] = None) -> Tuple[Dict, Dict]:
        """(osd dump, crush dump) JSON as Ceph prints them, in the marked state."""
        text = run("osdmaptool", str(self.path), *self._state_args(), "--dump", "json")
        osd_dump = json.loads(text[text.index("{"):])   # past "marking all OSDs up and in"
        if pg_num is not None:   # what osdmaptool's --pg_num does to the pools
            for p in osd_dump["pools"]:
                p["pg_num"] = p["pg_num_target"] = pg_num
        # export in the same marked state: --mark-up-in also lifts zero CRUSH weights to 1.0
        crush_bin = self.path.with_suffix(".crush")
        run("osdmaptool", str(self.path), *self._state_args(), "--export-crush", str(crush_bin))
        crush = json.loads(run("crushtool", "-i", str(crush_bin), "--dump"))
        return osd_dump, crush

    def reference(self, pg_num: Optional[int] = None) -> Dict[str, Tuple[List[int], int]]:
        """pgid -> (up set, up primary) according to osdmaptool."""
        args = ["osdmaptool", str(self.path), *self._state_args(), "--test-map-pgs-dump-all"]
        if pg_num is not None:
            args += ["--pg_num", str(pg_num)]
        return parse_dump_all(run(*args))


def generate(tmp: Path, layout: Layout, rules: Sequence[str], pg_bits: int = 6,
             pgp_bits: Optional[int] = None, size: int = 3,
             mark_out: Sequence[int] = ()) -> GeneratedMap:
    """Write the maps under tmp and return a handle on them."""
    tmp.mkdir(parents=True, exist_ok=True)
    txt = tmp / "crush.txt"
    txt.write_text(crush_text(layout, rules))
    crush_bin = tmp / "crush.bin"
    run("crushtool", "-c", str(txt), "-o", str(crush_bin))
    om = tmp / "osdmap.bin"
    run("osdmaptool", "--createsimple", str(layout.num_osds), "--with-default-pool", "--clobber",
        "--pg-bits", str(pg_bits), "--pgp-bits", str(pgp_bits if pgp_bits is not None else pg_bits),
        f"--osd_pool_default_size={size}", str(om))
    run("osdmaptool", str(om), "--import-crush", str(crush_bin))
    return GeneratedMap(path=om, num_osds=layout.num_osds, mark_out=list(mark_out))


def synthetic_pg_dump(snap: snapshot.Snapshot, sigma: float, seed: int = 1) -> Dict[str, Any]:
    """A `pg dump` of the map's PGs where PG sizes spread lognormally (sigma), as skewed
    object sizes or hot buckets make them."""
    rng = np.random.default_rng(seed)
    stats = []
    for pool in snap.pools:
        m = Placer(snap).map_pool(pool)
        sizes = rng.lognormal(0.0, sigma, m.up.shape[0]) * 1e9
        for r in range(m.up.shape[0]):
            up = m.up_list(r)
            stats.append({"pgid": m.pgid(r), "up": up, "acting": up, "up_primary": up[0],
                          "state": "active+clean",
                          "stat_sum": {"num_bytes": int(sizes[r]), "num_objects": 100}})
    return {"osd_stats": [], "pool_stats": [], "pg_stats": stats}
