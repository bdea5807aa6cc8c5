"""CRUSH maps and OSDMaps made by Ceph's own tools (crushtool, `osdmaptool --createsimple`) from a
`Layout` and rules or a `MapCase`, and Ceph's mapping on them as the reference; `tentacle_tools()`
runs Tentacle's tools (msr rules) through qa/cluster/tentacle.sh."""
import json
import os
import re
import shutil
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from pg_advisor.model import snapshot
from pg_advisor.crush.placement import Placer
from pg_advisor_testkit.osdmaptool_output import parse_dump_all, run

__all__ = ["run"]       # osdmaptool_output's, which callers here take from this module

TUNABLES = "".join(f"tunable {k} {v}\n" for k, v in (
    ("choose_local_tries", 0), ("choose_local_fallback_tries", 0), ("choose_total_tries", 50),
    ("chooseleaf_descend_once", 1), ("chooseleaf_vary_r", 1), ("chooseleaf_stable", 1),
    ("straw_calc_version", 1), ("allowed_bucket_algs", 54)))


def rule(body: Sequence[str], name: str = "replicated_rule", rule_id: int = 0,
         rule_type: str = "replicated", sizes: bool = True) -> str:
    """A rule's text; without `sizes` as Tentacle's crushtool takes it (min/max_size gone since Reef)."""
    steps = "".join(f"\tstep {s}\n" for s in body)
    limits = "\tmin_size 1\n\tmax_size 20\n" if sizes else ""
    return f"rule {name} {{\n\tid {rule_id}\n\ttype {rule_type}\n{limits}{steps}}}\n"


REPLICATED_HOST = rule(["take default", "chooseleaf firstn 0 type host", "emit"])


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
    ids = iter(range(-2, -1 << 30, -1))     # the root gets -1 as in a default map, emitted last

    def bucket(kind: str, name: str, children: List[Tuple[str, float]], bid: int = 0) -> Tuple[str, float]:
        items = "".join(f"\titem {c} weight {w:.5f}\n" for c, w in children)
        out.append(f"{kind} {name} {{\n\tid {bid or next(ids)}\n\talg {layout.bucket_alg(kind, name)}\n"
                   f"\thash 0\n{items}}}\n")
        return name, sum(w for _, w in children)

    osd = 0
    tops: List[Tuple[str, float]] = []
    racks = max(layout.racks, 1)
    for rm in range(max(layout.rooms, 1)):
        in_room: List[Tuple[str, float]] = []
        for rk in range(rm * racks, (rm + 1) * racks):
            hosts = []
            for h in range(layout.hosts):
                kids = [(f"osd.{o}", layout.weight(o)) for o in range(osd, osd + layout.osds_per_host)]
                osd += layout.osds_per_host
                hosts.append(bucket("host", f"host{rk * layout.hosts + h}", kids))
            in_room += [bucket("rack", f"rack{rk}", hosts)] if layout.racks else hosts
        tops += [bucket("room", f"room{rm}", in_room)] if layout.rooms else in_room
    bucket("root", "default", tops, -1)
    return "".join(out + ["\n# rules\n", *rules])


REPO = Path(__file__).resolve().parents[2]
CHROOT_MARKER = Path("/etc/pg-advisor-tentacle")     # qa/cluster/tentacle.sh's, inside its chroot


@dataclass(frozen=True)
class Tools:
    """Where crushtool and osdmaptool run: here (`root` None), or in the chroot at `root`
    (tentacle.sh exec), whose /tmp is `root`/tmp here: their files must lie there (`work`)."""
    root: Optional[Path] = None

    def run(self, *args: Union[str, Path]) -> str:
        if self.root is None:
            return run(*(str(a) for a in args))
        root = str(self.root)
        return run("bash", str(REPO / "qa" / "cluster" / "tentacle.sh"), "exec",
                   *(str(a)[len(root):] if str(a).startswith(root + "/") else str(a) for a in args))

    @contextmanager
    def work(self) -> Iterator[Path]:
        base = None if self.root is None else self.root / "tmp"
        d = Path(tempfile.mkdtemp(prefix="pg-advisor-crush-", dir=base))
        try:
            yield d
        finally:
            shutil.rmtree(d, ignore_errors=True)


HOST = Tools()


def tentacle_tools() -> Tuple[Optional[Tools], str]:
    """(Tentacle's tools, or None and why not): this system's inside the chroot, else the
    chroot's run from the host, which takes root."""
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


def crushtool_runs(tools: Tools, crush_bin: Path, runs: Iterable[Tuple[int, int, Dict[int, float]]],
                   max_x: int) -> List[Dict[str, Any]]:
    return [{"rule": r, "num_rep": n, "reweight": {str(k): v for k, v in w.items()},
             "mappings": {str(x): m for x, m in crush_test(tools, crush_bin, r, n, max_x, w).items()}}
            for r, n, w in runs]


def simple_map(tools: Tools, om: Path, text: str, num_osds: int, *createsimple: str) -> Path:
    """`osdmaptool --createsimple` writes `om` around `text`, compiled to crush.bin beside it."""
    (om.parent / "crush.txt").write_text(text)
    crush_bin = om.parent / "crush.bin"
    tools.run("crushtool", "-c", om.parent / "crush.txt", "-o", crush_bin)
    tools.run("osdmaptool", "--createsimple", str(num_osds), *createsimple, "--clobber", om)
    tools.run("osdmaptool", om, "--import-crush", crush_bin)
    return crush_bin


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
        # osdmaptool keeps only the last --mark-out it is given: one OSD out at most
        if len(self.mark_out) > 1:
            raise ValueError(f"osdmaptool marks one OSD out, not {self.mark_out}")
        args = ["--mark-up-in", *(a for o in self.mark_out for a in ("--mark-out", str(o)))]
        if self.crush_weights:
            args += ["--adjust-crush-weight", ",".join(f"{o}:{w}" for o, w in self.crush_weights.items())]
        return args

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
            osd_dump = json.loads(text[text.index("{"):])
            # what --mark-up-in and --mark-out do (CRUSH weights: in the exported CRUSH map)
            osd_dump["osds"] = [{"osd": i, "up": 1, "in": int(i not in self.mark_out),
                                 "weight": 0.0 if i in self.mark_out else 1.0, "primary_affinity": 1.0,
                                 "state": ["exists", "up"]} for i in range(osd_dump["max_osd"])]
        if pg_num is not None:   # what osdmaptool's --pg_num does to the pools
            for p in osd_dump["pools"]:
                p["pg_num"] = p["pg_num_target"] = pg_num
        # export in the same marked state: --mark-up-in also lifts zero CRUSH weights to 1.0
        crush_bin = self.path.with_suffix(".crush")
        self.tools.run("osdmaptool", self.path, *self.state_args(), "--export-crush", crush_bin)
        crush = json.loads(self.tools.run("crushtool", "-i", crush_bin, "--dump"))
        return osd_dump, crush

    def dump_all(self, pg_num: Optional[int] = None) -> str:
        """osdmaptool's --test-map-pgs-dump-all output on the map in its state."""
        extra = [] if pg_num is None else ["--pg_num", str(pg_num)]
        return self.tools.run("osdmaptool", self.path, *self.state_args(), "--test-map-pgs-dump-all", *extra)

    def reference(self, pg_num: Optional[int] = None) -> Dict[str, Tuple[List[int], int]]:
        """pgid -> (up set, up primary) according to osdmaptool."""
        return parse_dump_all(self.dump_all(pg_num))


def mismatches(snap: snapshot.Snapshot, ref: Dict[str, Tuple[List[int], int]]) -> List[str]:
    """Every PG pg_advisor maps otherwise than `ref` (reference()), named; both must map the same PGs."""
    placer = Placer(snap)
    bad = []
    seen = 0
    for pool in snap.pools:
        m = placer.map_pool(pool)
        for i in range(m.ps.size):
            got, want = (m.up_list(i), int(m.up_primary[i])), ref[m.pgid(i)]
            seen += 1
            if got != want:
                bad.append(f"{m.pgid(i)}: ours {got}, Ceph {want}")
    assert seen == len(ref), f"mapped {seen} PGs, Ceph mapped {len(ref)}"
    return bad


@dataclass(frozen=True)
class OsdMapSpec:
    """--createsimple's pool (PGs per OSD 2^pg_bits, placed 2^pgp_bits, None: as many; `size`
    replicas), and the state every tool call puts the map in (GeneratedMap.state_args)."""
    pg_bits: int = 6
    pgp_bits: Optional[int] = None
    size: int = 3
    mark_out: Sequence[int] = ()        # at most one OSD
    crush_weights: Optional[Mapping[int, float]] = None

    def handle(self, path: Path, num_osds: int, tools: Tools = HOST) -> "GeneratedMap":
        return GeneratedMap(path=path, num_osds=num_osds, mark_out=list(self.mark_out),
                            crush_weights=dict(self.crush_weights or {}), tools=tools)


def generate(tmp: Path, layout: Layout, rules: Sequence[str], osdmap: OsdMapSpec = OsdMapSpec(),
             tools: Tools = HOST, text: Optional[str] = None) -> GeneratedMap:
    """The maps under tmp: the layout's CRUSH map with `rules` (or `text`), in the OSDMap `osdmap`."""
    tmp.mkdir(parents=True, exist_ok=True)
    om = tmp / "osdmap.bin"
    pgp_bits = osdmap.pgp_bits if osdmap.pgp_bits is not None else osdmap.pg_bits
    simple_map(tools, om, text if text is not None else crush_text(layout, rules), layout.num_osds,
               "--with-default-pool", "--pg-bits", str(osdmap.pg_bits), "--pgp-bits", str(pgp_bits),
               f"--osd_pool_default_size={osdmap.size}")
    return osdmap.handle(om, layout.num_osds, tools)


@dataclass
class MapCase:
    """One rule (id 0) over a layout, in --createsimple's map (2^pg_bits PGs per OSD; `pool_size`
    or `size` replicas) in the state `mark_out`, `crush_weights`; crushtool runs under `reweights`."""
    name: str
    layout: Layout
    steps: Tuple[str, ...] = ("take default", "chooseleaf firstn 0 type host", "emit")
    size: int = 3
    pg_bits: int = 6
    rule_type: str = "replicated"
    mark_out: Tuple[int, ...] = ()
    crush_weights: Dict[int, float] = field(default_factory=dict)
    reweights: Tuple[Dict[int, float], ...] = ({},)
    pool_size: Optional[int] = None     # osdmaptool's pool, when not `size` (it makes 10 at most)
    tunables: str = ""                  # CRUSH text before the map's: tunable lines
    extra: str = ""                     # CRUSH text after its rules: weight sets

    def rules(self, pool_rule: int = 0) -> List[str]:
        """Rule 0 `steps` (without min/max_size, as Tentacle's crushtool takes msr rules)."""
        return [rule(self.steps, "msr", 0, self.rule_type, sizes=False)]

    def text(self, pool_rule: int = 0) -> str:
        return self.tunables + crush_text(self.layout, self.rules(pool_rule)) + self.extra

    def make(self, tools: Tools, tmp: Path, pool_rule: int = 0) -> GeneratedMap:
        spec = OsdMapSpec(pg_bits=self.pg_bits, size=self.pool_size or self.size, mark_out=self.mark_out,
                          crush_weights=self.crush_weights)
        return generate(tmp, self.layout, [], spec, tools=tools, text=self.text(pool_rule))


def map_files(gm: GeneratedMap, runs: Iterable[Tuple[int, int, Dict[int, float]]], max_x: int,
              dump_all: bool = True, crush_bin: Optional[Path] = None) -> Dict[str, Any]:
    """A fixture's files of a map: its dumps, osdmaptool's PGs, crushtool's results of `runs`."""
    osd_dump, crush = gm.dumps()
    files: Dict[str, Any] = {"osd_dump.json": osd_dump, "crush_dump.json": crush}
    if dump_all:
        files["osdmaptool_dump_all.txt"] = gm.dump_all()
    files["crushtool_test.json"] = crushtool_runs(gm.tools, crush_bin or gm.path.with_suffix(".crush"),
                                                  runs, max_x)
    return files


def synthetic_pg_dump(snap: snapshot.Snapshot, sigma: float, seed: int = 1) -> Dict[str, Any]:
    """A `pg dump` of the map's PGs, their sizes spread lognormally (sigma)."""
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


def write_files(dest: Path, files: Mapping[str, Any]) -> None:
    """A fixture's files under dest: text as is, a dict as indented JSON, a list on one line."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, v in files.items():
        text = v if isinstance(v, str) else json.dumps(v, indent=1 if isinstance(v, dict) else None,
                                                       sort_keys=True) + "\n"
        (dest / name).write_text(text)


def write_fixture_main(argv: Sequence[str], name: str, fixture: Path,
                       write: Callable[[Tools, Path], None], tentacle: bool = False) -> int:
    """`python3 -m qa.maps.NAME [DEST]`, with Tentacle's tools if `tentacle`."""
    tools, why = tentacle_tools() if tentacle else (HOST, "")
    if tools is None:
        print(f"{name}: {why}", file=sys.stderr)
        return 1
    dest = Path(argv[0]) if argv else fixture
    write(tools, dest)
    print(f"{name}: fixture written to {dest}")
    return 0
