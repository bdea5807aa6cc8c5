"""Maps with msr rules (Squid and later) built by Tentacle's own tools, and their references:
each `MsrCase` is a layout and one rule, checked against osdmaptool (every PG of its
replicated pool, which Ceph maps by rule id alone) and crushtool --test (holes at their
positions, reweights of our choice); doc/crush.rst says how.

`python3 -m qa.maps.msr_maps [DIR]` (as root on the host, or inside the chroot) writes the
unit tests' fixture (fixtures/msr).
"""
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from pg_advisor_testkit.dumps import FIXTURES

from .bucket_maps import by_index
from .crushgen import (GeneratedMap, Layout, OsdMapSpec, Tools, crush_text, crushtool_runs, generate,
                       write_files, write_fixture_main)

FIXTURE = FIXTURES / "msr"


def msr_rule(steps: Sequence[str], rule_type: str = "msr_indep", name: str = "msr",
             rule_id: int = 0) -> str:
    """A rule as Tentacle's crushtool takes it (no min_size/max_size: gone since Reef)."""
    body = "".join(f"\tstep {s}\n" for s in steps)
    return f"rule {name} {{\n\tid {rule_id}\n\ttype {rule_type}\n{body}}}\n"


def mixed_weight(osd: int) -> float:
    return (1.0, 2.0, 4.0)[osd % 3]


def every_fourth_ssd(osd: int) -> str:
    return "ssd" if osd % 4 == 0 else "hdd"


@dataclass
class MsrCase:
    name: str
    layout: Layout
    steps: Tuple[str, ...]
    size: int
    pg_bits: int                       # pg_num = OSDs << pg_bits
    rule_type: str = "msr_indep"
    mark_out: Tuple[int, ...] = ()     # osdmaptool marks one OSD out
    crush_weights: Dict[int, float] = field(default_factory=dict)
    # crushtool's reweights (0: out), one run each
    reweights: Tuple[Dict[int, float], ...] = ({},)
    pool_size: Optional[int] = None    # osdmaptool's pool, when not `size` (it makes 10 at most)
    tunables: str = ""                 # CRUSH text before the map's: tunable lines
    extra: str = ""                    # CRUSH text after its rule: weight sets

    def text(self) -> str:
        return self.tunables + crush_text(self.layout, [msr_rule(self.steps, self.rule_type)]) + self.extra

    def make(self, tools: Tools, tmp: Path) -> GeneratedMap:
        spec = OsdMapSpec(pg_bits=self.pg_bits, size=self.pool_size or self.size, mark_out=self.mark_out,
                          crush_weights=self.crush_weights)
        return generate(tmp, self.layout, [], spec, tools=tools, text=self.text())


def choose_args(key: int, entries: Sequence[Tuple[int, Sequence[Sequence[float]], Optional[Sequence[int]]]]
                ) -> str:
    """A choose_args section: per bucket id, its weight set (one row per position) and
    alternative ids (None: its own)."""
    out = [f"choose_args {key} {{\n"]
    for bucket, sets, ids in entries:
        rows = "".join("      [ " + " ".join(f"{w:.5f}" for w in s) + " ]\n" for s in sets)
        alt = f"    ids [ {' '.join(str(i) for i in ids)} ]\n" if ids else ""
        out.append(f"  {{\n    bucket_id {bucket}\n    weight_set [\n{rows}    ]\n{alt}  }}\n")
    return "".join(out) + "}\n"


EC42 = ("take default", "choosemsr 3 type host", "choosemsr 2 type osd", "emit")

CASES: List[MsrCase] = [
    # what the EC plugin makes for k=4 m=2 crush-failure-domain=host
    # crush-num-failure-domains=3 crush-osds-per-failure-domain=2, on 3 hosts of 2 OSDs:
    # an out OSD can only leave a hole (no host is free)
    MsrCase("ec42-3-hosts-of-2", Layout(0, 3, 2), EC42, 6, 7, mark_out=(3,),
            reweights=({}, {1: 0.5, 4: 0.0}, {0: 0.0, 5: 0.5, 2: 0.75})),
    # the same rule with hosts to spare: a stride whose OSD is out takes another host
    MsrCase("ec42-5-hosts-of-3", Layout(0, 5, 3, weight=mixed_weight), EC42, 6, 6, mark_out=(7,),
            crush_weights={12: 0.0}, reweights=({}, {6: 0.0, 7: 0.0, 8: 0.0, 2: 0.5, 13: 0.25})),
    # 4 failure domains x 3 (EC 8+4) over 6 hosts of 4, a whole host out in crushtool's runs;
    # osdmaptool's pool of 10 (its most) takes the first 10 positions of the 12
    MsrCase("ec84-4-domains-of-3", Layout(0, 6, 4), ("take default", "choosemsr 4 type host",
                                                     "choosemsr 3 type osd", "emit"),
            12, 5, mark_out=(5,), crush_weights={10: 0.0}, pool_size=10,
            reweights=({4: 0.0, 5: 0.0, 6: 0.0, 7: 0.0, 13: 0.5, 20: 0.25}, {9: 0.75, 22: 0.0})),
    # two levels of failure domains: 2 racks, 2 hosts in each, 2 OSDs in each
    MsrCase("racks-hosts-osds", Layout(3, 3, 3), ("take default", "choosemsr 2 type rack",
                                                  "choosemsr 2 type host", "choosemsr 2 type osd",
                                                  "emit"),
            8, 5, mark_out=(4,), reweights=({0: 0.0, 1: 0.0, 2: 0.0, 10: 0.5, 20: 0.5},)),
    # 2 racks of 2 hosts of 2 OSDs for 8 shards: every OSD taken, an out one leaves a hole
    MsrCase("racks-hosts-osds-tight", Layout(2, 2, 2), ("take default", "choosemsr 2 type rack",
                                                        "choosemsr 2 type host",
                                                        "choosemsr 2 type osd", "emit"),
            8, 7, mark_out=(5,), reweights=({3: 0.0, 6: 0.5}, {0: 0.0, 1: 0.0})),
    # hosts chosen through racks the rule does not name (a descent passes them)
    MsrCase("hosts-under-racks", Layout(2, 3, 2), EC42, 6, 6, mark_out=(0,),
            reweights=({2: 0.0, 3: 0.0, 4: 0.0, 5: 0.0, 7: 0.5}, {1: 0.0, 8: 0.0})),
    # msr_firstn for a replicated pool: results in emission order, shorter when short
    MsrCase("firstn-2-hosts-of-2", Layout(0, 5, 3, weight=mixed_weight),
            ("take default", "choosemsr 2 type host", "choosemsr 2 type osd", "emit"), 4, 6,
            rule_type="msr_firstn", mark_out=(7,), crush_weights={3: 0.0},
            reweights=({7: 0.0, 1: 0.5}, {0: 0.0, 1: 0.0, 2: 0.0, 9: 0.3})),
    MsrCase("firstn-short", Layout(0, 2, 2), ("take default", "choosemsr 2 type host",
                                              "choosemsr 2 type osd", "emit"), 4, 8,
            rule_type="msr_firstn", mark_out=(1,), reweights=({1: 0.0}, {0: 0.5, 3: 0.0})),
    # two blocks over device classes (shadow trees), the second's count 0 (the pool's size)
    MsrCase("two-blocks-by-class", Layout(0, 6, 4, device_class=every_fourth_ssd),
            ("take default class ssd", "choosemsr 2 type host", "choosemsr 1 type osd", "emit",
             "take default class hdd", "choosemsr 0 type host", "choosemsr 1 type osd", "emit"),
            6, 5, mark_out=(8,), reweights=({4: 0.0, 1: 0.5, 6: 0.0},)),
    # few retries: the rule's own set_msr_* steps and the map's msr tunables
    MsrCase("few-retries", Layout(0, 4, 2), ("set_msr_descents 2", "set_msr_collision_tries 3")
            + EC42, 6, 7, mark_out=(0,), reweights=({1: 0.5, 2: 0.3, 5: 0.0},)),
    MsrCase("map-tunables", Layout(0, 4, 2), EC42, 6, 7, mark_out=(6,),
            reweights=({1: 0.5, 2: 0.3, 5: 0.0},),
            tunables="tunable msr_descents 3\ntunable msr_collision_tries 2\n"),
    # more domains, or more OSDs per domain, than there are: strides that can never fill
    MsrCase("more-hosts-than-there-are", Layout(0, 3, 3), ("take default", "choosemsr 4 type host",
                                                           "choosemsr 2 type osd", "emit"),
            8, 6, mark_out=(2,), reweights=({}, {4: 0.0})),
    MsrCase("more-osds-than-a-host-has", Layout(0, 4, 3), ("take default", "choosemsr 2 type host",
                                                           "choosemsr 4 type osd", "emit"),
            8, 6, mark_out=(2,), reweights=({}, {4: 0.0})),
    # weight sets: positional ones per pool (key 1 for osdmaptool's pool, 0 for crushtool),
    # with alternative ids on a host
    MsrCase("weight-sets", Layout(0, 4, 3), EC42, 6, 6, mark_out=(10,),
            reweights=({}, {3: 0.0, 4: 0.5}),
            extra=choose_args(1, [(-1, [[1, 3, 2, 0.5], [2, 2, 1, 3], [3, 1, 1, 1]], None)])
            + choose_args(0, [(-1, [[3, 1, 2, 2], [1, 1, 3, 0.5]], None),
                              (-2, [[1, 0.5, 2]], [100, 101, 102])])),
    # the older bucket algorithms under msr rules (r = (try << 16) + collision try there)
    MsrCase("older-buckets", Layout(0, 5, 3, alg_of=by_index(("uniform", "list", "tree", "straw", "straw2"))),
            EC42, 6, 6, mark_out=(7,), crush_weights={13: 0.0}, reweights=({}, {1: 0.0, 4: 0.5, 9: 0.0})),
    MsrCase("older-buckets-firstn",
            Layout(0, 4, 3, alg_of=by_index(("straw", "list", "tree", "uniform"), root_alg="uniform")),
            ("take default", "choosemsr 2 type host", "choosemsr 2 type osd", "emit"), 4, 6,
            rule_type="msr_firstn", mark_out=(5,), reweights=({}, {0: 0.0, 6: 0.5})),
]


def with_foreign_items(tools: Tools, tmp: Path) -> GeneratedMap:
    """12 OSDs in 4 hosts of mixed weights whose pool has pg-upmap-items that Ceph's
    balancer (osdmaptool --upmap) made for a rule of failure domain osd, and then an msr
    rule of 2 hosts x 2 OSDs in its place: items CRUSH's new sets keep or not, some of
    them putting 3 replicas on a host."""
    lay = Layout(0, 4, 3, weight=lambda o: (1.0, 3.0, 1.0, 2.0)[o // 3] * (1 + o % 3))
    osd_rule = msr_rule(("take default", "chooseleaf firstn 0 type osd", "emit"), "replicated", "by-osd")
    gm = generate(tmp, lay, [], OsdMapSpec(pg_bits=7, size=4), tools=tools, text=crush_text(lay, [osd_rule]))
    tools.run("osdmaptool", gm.path, "--mark-up-in", "--upmap", tmp / "items.txt", "--upmap-deviation", "1",
              "--upmap-max", "2000", "--upmap-active", "--save")
    two_by_two = msr_rule(("take default", "choosemsr 2 type host", "choosemsr 2 type osd", "emit"),
                          "msr_firstn")
    (tmp / "msr.txt").write_text(crush_text(lay, [two_by_two]))
    tools.run("crushtool", "-c", tmp / "msr.txt", "-o", tmp / "msr.bin")
    tools.run("osdmaptool", gm.path, "--import-crush", tmp / "msr.bin")
    return gm


# -- the unit tests' fixture -----------------------------------------------------------------

FIXTURE_LAYOUT = Layout(0, 4, 3, weight=mixed_weight)
FIXTURE_RULES = (
    msr_rule(("take default", "choosemsr 2 type host", "choosemsr 2 type osd", "emit"),
             "msr_firstn", "rep22", 0),
    msr_rule(EC42, "msr_indep", "ec42", 1),
)
# crushtool --test runs: (rule, num_rep, reweights)
FIXTURE_RUNS: Tuple[Tuple[int, int, Dict[int, float]], ...] = (
    (1, 6, {}),
    (1, 6, {4: 0.0, 1: 0.5, 7: 0.75, 10: 0.0}),
    (0, 4, {4: 0.0, 5: 0.0, 1: 0.5}),
)
FIXTURE_X = 1023


def write_fixture(tools: Tools, dest: Path) -> None:
    """The dumps of a 12-OSD map (mixed weights, osd.4 out, osd.9 of CRUSH weight 0) whose
    pool uses an msr_firstn rule, osdmaptool's up set of each of its 768 PGs, and
    crushtool's results of both rules for inputs 0..1023 under reweights."""
    with tools.work() as work:
        spec = OsdMapSpec(pg_bits=6, size=4, mark_out=(4,), crush_weights={9: 0.0})
        gm = generate(work, FIXTURE_LAYOUT, FIXTURE_RULES, spec, tools=tools)
        osd_dump, crush = gm.dumps()
        write_files(dest, {"osd_dump.json": osd_dump, "crush_dump.json": crush,
                           "osdmaptool_dump_all.txt": gm.dump_all(),
                           "crushtool_test.json": crushtool_runs(tools, gm.path.with_suffix(".crush"),
                                                                 FIXTURE_RUNS, FIXTURE_X)})


if __name__ == "__main__":
    sys.exit(write_fixture_main(sys.argv[1:], "msr_maps", FIXTURE, write_fixture, tentacle=True))
