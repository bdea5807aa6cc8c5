"""Generate CRUSH/OSD maps with Ceph's own tools, and Ceph's mapping of them as a reference.

A layout (racks x hosts x OSDs, weights, device classes) becomes CRUSH text, `crushtool -c`
compiles it, `osdmaptool --createsimple` makes an OSDMap around it, and
`osdmaptool --test-map-pgs-dump-all` says where Ceph puts every PG (`crushtool --test`
says what crush_do_rule itself returns, for inputs and reweights of one's choosing).

The tools are this system's (the host's Pacific, or Tentacle's inside its chroot) unless
a `Tools` says otherwise: `tentacle_tools()` runs Tentacle's from the host through
qa/cluster/tentacle.sh, for maps Pacific cannot read (msr rules).
"""
import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from pg_advisor.model import snapshot
from pg_advisor.crush.placement import Placer
from pg_advisor_testkit.osdmaptool_output import parse_dump_all

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
    racks: int                       # 0: hosts hang straight off the root (or room)
    hosts: int                       # per rack (or per room or in total when racks == 0)
    osds_per_host: int
    weight: Callable[[int], float] = lambda osd: 1.0
    device_class: Callable[[int], Optional[str]] = lambda osd: None
    alg: str = "straw2"
    rooms: int = 0                   # 0: racks hang straight off the root; else racks per room
    # (bucket type, bucket name) -> its algorithm; None: `alg` for every bucket
    alg_of: Optional[Callable[[str, str], str]] = None

    def bucket_alg(self, kind: str, name: str) -> str:
        return self.alg if self.alg_of is None else self.alg_of(kind, name)

    @property
    def num_osds(self) -> int:
        return max(self.rooms, 1) * max(self.racks, 1) * self.hosts * self.osds_per_host


def crush_text(layout: Layout, rules: Sequence[str]) -> str:
    out: List[str] = [TUNABLES, "\n# devices\n"]
    for o in range(layout.num_osds):
        cls = layout.device_class(o)
        out.append(f"device {o} osd.{o}" + (f" class {cls}" if cls else "") + "\n")
    out.append("\n# types\ntype 0 osd\ntype 1 host\ntype 2 rack\ntype 3 root\ntype 4 room\n\n"
               "# buckets\n")
    next_id = -1

    def bucket(kind: str, name: str, children: List[Tuple[str, float]]) -> None:
        nonlocal next_id
        next_id -= 1
        items = "".join(f"\titem {c} weight {w:.5f}\n" for c, w in children)
        out.append(f"{kind} {name} {{\n\tid {next_id}\n\talg {layout.bucket_alg(kind, name)}\n\thash 0\n"
                   f"{items}}}\n")

    osd = 0
    tops: List[Tuple[str, float]] = []
    racks = max(layout.racks, 1)
    for rm in range(max(layout.rooms, 1)):
        in_room: List[Tuple[str, float]] = []
        for rk in range(rm * racks, (rm + 1) * racks):
            hosts: List[Tuple[str, float]] = []
            for h in range(layout.hosts):
                name = f"host{rk * layout.hosts + h}"
                kids = [(f"osd.{o}", layout.weight(o)) for o in range(osd, osd + layout.osds_per_host)]
                osd += layout.osds_per_host
                bucket("host", name, kids)
                hosts.append((name, sum(w for _, w in kids)))
            if layout.racks:
                bucket("rack", f"rack{rk}", hosts)
                in_room.append((f"rack{rk}", sum(w for _, w in hosts)))
            else:
                in_room.extend(hosts)
        if layout.rooms:
            bucket("room", f"room{rm}", in_room)
            tops.append((f"room{rm}", sum(w for _, w in in_room)))
        else:
            tops.extend(in_room)
    # the root gets id -1 as in a default map: emit it last with an explicit id
    items = "".join(f"\titem {c} weight {w:.5f}\n" for c, w in tops)
    out.append(f"root default {{\n\tid -1\n\talg {layout.bucket_alg('root', 'default')}\n\thash 0\n"
               f"{items}}}\n\n# rules\n")
    out.extend(rules)
    return "".join(out)


def run(*args: str) -> str:
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({p.returncode}): {p.stderr[-2000:]}")
    return p.stdout


REPO = Path(__file__).resolve().parents[2]
CHROOT_MARKER = Path("/etc/pg-advisor-tentacle")     # qa/cluster/tentacle.sh's, inside its chroot


@dataclass(frozen=True)
class Tools:
    """Where crushtool and osdmaptool run: here (`root` None), or in the Tentacle chroot
    at `root` through qa/cluster/tentacle.sh exec, where the chroot's /tmp is `root`/tmp here:
    files the tools read or write must lie there (`workdir`), and paths are passed as
    the chroot sees them."""
    root: Optional[Path] = None

    def run(self, *args: Union[str, Path]) -> str:
        if self.root is None:
            return run(*(str(a) for a in args))
        return run("bash", str(REPO / "qa" / "cluster" / "tentacle.sh"), "exec",
                   *(self.inside(a) for a in args))

    def inside(self, arg: Union[str, Path]) -> str:
        text = str(arg)
        if self.root is not None and text.startswith(str(self.root) + "/"):
            return text[len(str(self.root)):]
        return text

    def workdir(self) -> Path:
        """A new directory both sides see (the caller removes it)."""
        base = None if self.root is None else self.root / "tmp"
        return Path(tempfile.mkdtemp(prefix="pg-advisor-crush-", dir=base))


HOST = Tools()


def tentacle_tools() -> Tuple[Optional[Tools], str]:
    """(Tentacle's tools, or None and why not): this system's inside the chroot, else the
    chroot's (qa/cluster/tentacle.sh build makes it) run from the host, which takes root."""
    if CHROOT_MARKER.exists():
        return HOST, ""
    root = Path(os.environ.get("PG_ADVISOR_CHROOT", "/var/lib/pg-advisor/forky"))
    marker = root / str(CHROOT_MARKER).lstrip("/")
    if not (root / "usr/bin/osdmaptool").exists() or not marker.exists():
        return None, f"no Tentacle chroot at {root} (qa/cluster/tentacle.sh build makes one)"
    m = re.search(r"ceph version (\d+)\.", marker.read_text())
    if not m or int(m.group(1)) < 19:
        return None, f"the chroot at {root} has no Ceph of Squid (19) or later: no msr rules"
    if os.geteuid() != 0:
        return None, "qa/cluster/tentacle.sh exec (the chroot's tools from the host) needs root"
    return Tools(root=root), ""


MAPPING_RE = re.compile(r"^CRUSH rule (\d+) x (\d+) \[([^\]]*)\]")


def crush_test(tools: Tools, crush_bin: Path, rule_id: int, num_rep: int, max_x: int,
               reweight: Optional[Dict[int, float]] = None) -> Dict[int, List[int]]:
    """x -> crush_do_rule's result for inputs 0..max_x, as `crushtool --test` prints it
    (holes as 2147483647; firstn rules cut to what they placed), OSDs reweighted as
    given (0: out). crushtool uses the weight set of key 0, else the default one (-1)."""
    args: List[Union[str, Path]] = ["crushtool", "-i", crush_bin, "--test", "--show-mappings",
                                    "--rule", str(rule_id), "--num-rep", str(num_rep),
                                    "--min-x", "0", "--max-x", str(max_x)]
    for osd, w in (reweight or {}).items():
        args += ["--weight", str(osd), repr(w)]
    out: Dict[int, List[int]] = {}
    for line in tools.run(*args).splitlines():
        m = MAPPING_RE.match(line)
        if m and int(m.group(1)) == rule_id:
            out[int(m.group(2))] = [int(v) for v in m.group(3).split(",") if v]
    return out


@dataclass
class GeneratedMap:
    path: Path
    num_osds: int
    mark_out: List[int] = field(default_factory=list)
    as_is: bool = False     # a real cluster's map: keep its up/in states
    # CRUSH weights set after --mark-up-in (which lifts a zero weight to 1): zero-weight OSDs
    crush_weights: Dict[int, float] = field(default_factory=dict)
    tools: Tools = HOST

    def state_args(self) -> List[str]:
        """osdmaptool's options that put the map in its state (every tool call gets them)."""
        if self.as_is:
            return []
        args = ["--mark-up-in"]
        # osdmaptool keeps only the last --mark-out it is given: one OSD out at most
        if len(self.mark_out) > 1:
            raise ValueError(f"osdmaptool marks one OSD out, not {self.mark_out}")
        for o in self.mark_out:
            args += ["--mark-out", str(o)]
        if self.crush_weights:
            args += ["--adjust-crush-weight", ",".join(f"{o}:{w}" for o, w in self.crush_weights.items())]
        return args

    def _marked(self, osd_dump: Dict) -> Dict:
        """What --mark-up-in and --mark-out do to an `osd dump` of a new map (every OSD up
        to max_osd made, up and in; the CRUSH weights are in the exported CRUSH map)."""
        osd_dump["osds"] = [
            {"osd": i, "up": 1, "in": 0 if i in self.mark_out else 1,
             "weight": 0.0 if i in self.mark_out else 1.0, "primary_affinity": 1.0,
             "state": ["exists", "up"]}
            for i in range(osd_dump["max_osd"])]
        return osd_dump

    def dumps(self, pg_num: Optional[int] = None) -> Tuple[Dict, Dict]:
        """(osd dump, crush dump) JSON as Ceph prints them, in the marked state."""
        try:
            text = self.tools.run("osdmaptool", self.path, *self.state_args(), "--dump", "json")
            osd_dump = json.loads(text[text.index("{"):])   # past "marking all OSDs up and in"
        except RuntimeError as e:
            # Tentacle 20.2.4's osdmaptool dies (SIGSEGV) dumping as JSON (not as text) a
            # marked map whose rule cannot reach some up OSDs: its map unmarked, marked here
            if "failed (-11)" not in str(e) or self.as_is:
                raise
            text = self.tools.run("osdmaptool", self.path, "--dump", "json")
            osd_dump = self._marked(json.loads(text[text.index("{"):]))
        if pg_num is not None:   # what osdmaptool's --pg_num does to the pools
            for p in osd_dump["pools"]:
                p["pg_num"] = p["pg_num_target"] = pg_num
        # export in the same marked state: --mark-up-in also lifts zero CRUSH weights to 1.0
        crush_bin = self.path.with_suffix(".crush")
        self.tools.run("osdmaptool", self.path, *self.state_args(), "--export-crush", crush_bin)
        crush = json.loads(self.tools.run("crushtool", "-i", crush_bin, "--dump"))
        return osd_dump, crush

    def reference(self, pg_num: Optional[int] = None) -> Dict[str, Tuple[List[int], int]]:
        """pgid -> (up set, up primary) according to osdmaptool."""
        args = ["osdmaptool", str(self.path), *self.state_args(), "--test-map-pgs-dump-all"]
        if pg_num is not None:
            args += ["--pg_num", str(pg_num)]
        return parse_dump_all(self.tools.run(*args))


def mismatches(snap: snapshot.Snapshot, ref: Dict[str, Tuple[List[int], int]],
               pgp_num: Optional[int] = None) -> List[str]:
    """Every PG whose up set or primary pg_advisor maps otherwise than `ref` (a
    GeneratedMap's reference()), named; fails unless both mapped the same PGs."""
    placer = Placer(snap)
    bad = []
    seen = 0
    for pool in snap.pools:
        m = placer.map_pool(pool, pgp_num=pgp_num)
        for i in range(m.ps.size):
            got = (m.up_list(i), int(m.up_primary[i]))
            want = ref[m.pgid(i)]
            seen += 1
            if got != want:
                bad.append(f"{m.pgid(i)}: ours {got}, Ceph {want}")
    assert seen == len(ref), f"mapped {seen} PGs, Ceph mapped {len(ref)}"
    return bad


@dataclass(frozen=True)
class OsdMapSpec:
    """The OSDMap `osdmaptool --createsimple` makes around a CRUSH map: its one pool (PGs
    per OSD 2^pg_bits, placed 2^pgp_bits, None: as many; `size` replicas), and the state
    every tool call then puts it in (GeneratedMap.state_args: `mark_out`, at most one OSD
    out; `crush_weights`, OSD -> CRUSH weight)."""
    pg_bits: int = 6
    pgp_bits: Optional[int] = None
    size: int = 3
    mark_out: Sequence[int] = ()
    crush_weights: Optional[Mapping[int, float]] = None


def generate(tmp: Path, layout: Layout, rules: Sequence[str], osdmap: OsdMapSpec = OsdMapSpec(),
             tools: Tools = HOST, text: Optional[str] = None) -> GeneratedMap:
    """Write the maps under tmp (one `tools` can reach) and return a handle on them; the
    CRUSH map is the layout's with `rules`, or `text` as given; the OSDMap around it is `osdmap`."""
    tmp.mkdir(parents=True, exist_ok=True)
    txt = tmp / "crush.txt"
    txt.write_text(text if text is not None else crush_text(layout, rules))
    crush_bin = tmp / "crush.bin"
    tools.run("crushtool", "-c", txt, "-o", crush_bin)
    om = tmp / "osdmap.bin"
    pg_bits, pgp_bits = osdmap.pg_bits, osdmap.pgp_bits
    tools.run("osdmaptool", "--createsimple", str(layout.num_osds), "--with-default-pool", "--clobber",
              "--pg-bits", str(pg_bits), "--pgp-bits", str(pgp_bits if pgp_bits is not None else pg_bits),
              f"--osd_pool_default_size={osdmap.size}", om)
    tools.run("osdmaptool", om, "--import-crush", crush_bin)
    return GeneratedMap(path=om, num_osds=layout.num_osds, mark_out=list(osdmap.mark_out),
                        crush_weights=dict(osdmap.crush_weights or {}), tools=tools)


def synthetic_pg_dump(snap: snapshot.Snapshot, sigma: float, seed: int = 1) -> Dict[str, Any]:
    """A `pg dump` of the map's PGs where PG sizes spread lognormally (sigma), as skewed
    object sizes or hot buckets make them."""
    rng = np.random.default_rng(seed)
    logs = np.random.default_rng(seed + 1)      # apart, so the sizes stay what they were
    stats = []
    for pool in snap.pools:
        m = Placer(snap).map_pool(pool)
        sizes = rng.lognormal(0.0, sigma, m.up.shape[0]) * 1e9
        # logs as a busy cluster's: full, trimmed long ago (the fields a real dump has)
        spans = logs.integers(2500, 3500, m.up.shape[0]).tolist()
        tails = logs.integers(10_000, 1_000_000, m.up.shape[0]).tolist()
        for r in range(m.up.shape[0]):
            up = m.up_list(r)
            stats.append({"pgid": m.pgid(r), "up": up, "acting": up, "up_primary": up[0],
                          "state": "active+clean", "log_size": spans[r],
                          "log_start": f"40'{tails[r]}", "version": f"41'{tails[r] + spans[r]}",
                          "parent_split_bits": 0,
                          "stat_sum": {"num_bytes": int(sizes[r]), "num_objects": 100}})
    return {"osd_stats": [], "pool_stats": [], "pg_stats": stats}


def write_fixture_main(argv: Sequence[str], name: str, fixture: Path,
                       write: Callable[[Tools, Path], None], tools: Tools = HOST) -> int:
    """A fixture writer's command line: `python3 -m qa.maps.NAME [DEST]`."""
    dest = Path(argv[0]) if argv else fixture
    write(tools, dest)
    print(f"{name}: fixture written to {dest}")
    return 0
