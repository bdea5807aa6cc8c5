"""Maps with msr rules (Squid and later) built by Tentacle's own tools: each `MsrCase` is a
layout and one rule, checked against osdmaptool and crushtool --test (doc/crush.rst).
`python3 -m qa.maps.msr_maps [DIR]` (as root on the host, or in the chroot) writes fixtures/msr.
"""
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from pg_advisor_testkit.dumps import FIXTURES

from .bucket_maps import by_index
from .crushgen import (GeneratedMap, Layout, MapCase, OsdMapSpec, Tools, crush_text, generate, map_files,
                       rule, write_files, write_fixture_main)

FIXTURE = FIXTURES / "msr"


def msr_rule(steps: Sequence[str], rule_type: str = "msr_indep", name: str = "msr", rule_id: int = 0) -> str:
    return rule(steps, name, rule_id, rule_type, sizes=False)


def mixed_weight(osd: int) -> float:
    return (1.0, 2.0, 4.0)[osd % 3]


@dataclass
class MsrCase(MapCase):
    rule_type: str = "msr_indep"


def choose_args(key: int, entries: Sequence[Tuple[int, Sequence[Sequence[float]], Optional[Sequence[int]]]]
                ) -> str:
    """A choose_args section: per bucket id, its weight set (a row per position) and alternative ids."""
    out = [f"choose_args {key} {{\n"]
    for bucket, sets, ids in entries:
        rows = "".join("      [ " + " ".join(f"{w:.5f}" for w in s) + " ]\n" for s in sets)
        alt = f"    ids [ {' '.join(str(i) for i in ids)} ]\n" if ids else ""
        out.append(f"  {{\n    bucket_id {bucket}\n    weight_set [\n{rows}    ]\n{alt}  }}\n")
    return "".join(out) + "}\n"


def choosemsr(*levels: str) -> Tuple[str, ...]:
    """take default, a choosemsr step per level ("COUNT TYPE"), emit."""
    return ("take default", *(f"choosemsr {n} type {t}" for n, t in (lv.split() for lv in levels)), "emit")


EC42 = choosemsr("3 host", "2 osd")
HOSTS22 = choosemsr("2 host", "2 osd")

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
    MsrCase("ec84-4-domains-of-3", Layout(0, 6, 4), choosemsr("4 host", "3 osd"), 12, 5, mark_out=(5,),
            crush_weights={10: 0.0}, pool_size=10,
            reweights=({4: 0.0, 5: 0.0, 6: 0.0, 7: 0.0, 13: 0.5, 20: 0.25}, {9: 0.75, 22: 0.0})),
    # two levels of failure domains: 2 racks, 2 hosts in each, 2 OSDs in each
    MsrCase("racks-hosts-osds", Layout(3, 3, 3), choosemsr("2 rack", "2 host", "2 osd"), 8, 5,
            mark_out=(4,), reweights=({0: 0.0, 1: 0.0, 2: 0.0, 10: 0.5, 20: 0.5},)),
    # 2 racks of 2 hosts of 2 OSDs for 8 shards: every OSD taken, an out one leaves a hole
    MsrCase("racks-hosts-osds-tight", Layout(2, 2, 2), choosemsr("2 rack", "2 host", "2 osd"), 8, 7,
            mark_out=(5,), reweights=({3: 0.0, 6: 0.5}, {0: 0.0, 1: 0.0})),
    # hosts chosen through racks the rule does not name (a descent passes them)
    MsrCase("hosts-under-racks", Layout(2, 3, 2), EC42, 6, 6, mark_out=(0,),
            reweights=({2: 0.0, 3: 0.0, 4: 0.0, 5: 0.0, 7: 0.5}, {1: 0.0, 8: 0.0})),
    # msr_firstn for a replicated pool: results in emission order, shorter when short
    MsrCase("firstn-2-hosts-of-2", Layout(0, 5, 3, weight=mixed_weight), HOSTS22, 4, 6,
            rule_type="msr_firstn", mark_out=(7,), crush_weights={3: 0.0},
            reweights=({7: 0.0, 1: 0.5}, {0: 0.0, 1: 0.0, 2: 0.0, 9: 0.3})),
    MsrCase("firstn-short", Layout(0, 2, 2), HOSTS22, 4, 8, rule_type="msr_firstn", mark_out=(1,),
            reweights=({1: 0.0}, {0: 0.5, 3: 0.0})),
    # two blocks over device classes (shadow trees), the second's count 0 (the pool's size)
    MsrCase("two-blocks-by-class", Layout(0, 6, 4, device_class=lambda o: "hdd" if o % 4 else "ssd"),
            ("take default class ssd", "choosemsr 2 type host", "choosemsr 1 type osd", "emit",
             "take default class hdd", "choosemsr 0 type host", "choosemsr 1 type osd", "emit"),
            6, 5, mark_out=(8,), reweights=({4: 0.0, 1: 0.5, 6: 0.0},)),
    # few retries: the rule's own set_msr_* steps and the map's msr tunables
    MsrCase("few-retries", Layout(0, 4, 2), ("set_msr_descents 2", "set_msr_collision_tries 3")
            + EC42, 6, 7, mark_out=(0,), reweights=({1: 0.5, 2: 0.3, 5: 0.0},)),
    MsrCase("map-tunables", Layout(0, 4, 2), EC42, 6, 7, mark_out=(6,), reweights=({1: 0.5, 2: 0.3, 5: 0.0},),
            tunables="tunable msr_descents 3\ntunable msr_collision_tries 2\n"),
    # more domains, or more OSDs per domain, than there are: strides that can never fill
    MsrCase("more-hosts-than-there-are", Layout(0, 3, 3), choosemsr("4 host", "2 osd"), 8, 6,
            mark_out=(2,), reweights=({}, {4: 0.0})),
    MsrCase("more-osds-than-a-host-has", Layout(0, 4, 3), choosemsr("2 host", "4 osd"), 8, 6,
            mark_out=(2,), reweights=({}, {4: 0.0})),
    # weight sets: positional ones per pool (key 1 for osdmaptool's pool, 0 for crushtool),
    # with alternative ids on a host
    MsrCase("weight-sets", Layout(0, 4, 3), EC42, 6, 6, mark_out=(10,), reweights=({}, {3: 0.0, 4: 0.5}),
            extra=choose_args(1, [(-1, [[1, 3, 2, 0.5], [2, 2, 1, 3], [3, 1, 1, 1]], None)])
            + choose_args(0, [(-1, [[3, 1, 2, 2], [1, 1, 3, 0.5]], None),
                              (-2, [[1, 0.5, 2]], [100, 101, 102])])),
    # the older bucket algorithms under msr rules (r = (try << 16) + collision try there)
    MsrCase("older-buckets", Layout(0, 5, 3, alg_of=by_index(("uniform", "list", "tree", "straw", "straw2"))),
            EC42, 6, 6, mark_out=(7,), crush_weights={13: 0.0}, reweights=({}, {1: 0.0, 4: 0.5, 9: 0.0})),
    MsrCase("older-buckets-firstn",
            Layout(0, 4, 3, alg_of=by_index(("straw", "list", "tree", "uniform"), root_alg="uniform")),
            HOSTS22, 4, 6, rule_type="msr_firstn", mark_out=(5,), reweights=({}, {0: 0.0, 6: 0.5})),
]


def with_foreign_items(tools: Tools, tmp: Path) -> GeneratedMap:
    """12 OSDs in 4 hosts whose pool has the items osdmaptool --upmap made under a rule of
    failure domain osd, then an msr rule of 2 hosts x 2 OSDs in its place."""
    lay = Layout(0, 4, 3, weight=lambda o: (1.0, 3.0, 1.0, 2.0)[o // 3] * (1 + o % 3))
    osd_rule = msr_rule(("take default", "chooseleaf firstn 0 type osd", "emit"), "replicated", "by-osd")
    gm = generate(tmp, lay, [osd_rule], OsdMapSpec(pg_bits=7, size=4), tools=tools)
    tools.run("osdmaptool", gm.path, "--mark-up-in", "--upmap", tmp / "items.txt", "--upmap-deviation", "1",
              "--upmap-max", "2000", "--upmap-active", "--save")
    (tmp / "msr.txt").write_text(crush_text(lay, [msr_rule(HOSTS22, "msr_firstn")]))
    tools.run("crushtool", "-c", tmp / "msr.txt", "-o", tmp / "msr.bin")
    tools.run("osdmaptool", gm.path, "--import-crush", tmp / "msr.bin")
    return gm


FIXTURE_LAYOUT = Layout(0, 4, 3, weight=mixed_weight)
FIXTURE_RULES = (msr_rule(HOSTS22, "msr_firstn", "rep22", 0), msr_rule(EC42, "msr_indep", "ec42", 1))
# crushtool --test runs: (rule, num_rep, reweights)
FIXTURE_RUNS: Tuple[Tuple[int, int, Dict[int, float]], ...] = (
    (1, 6, {}), (1, 6, {4: 0.0, 1: 0.5, 7: 0.75, 10: 0.0}), (0, 4, {4: 0.0, 5: 0.0, 1: 0.5}))
FIXTURE_X = 1023


def write_fixture(tools: Tools, dest: Path) -> None:
    """A 12-OSD map (osd.4 out, osd.9 of CRUSH weight 0) whose pool's rule is msr_firstn: its
    dumps, osdmaptool's PGs, crushtool's results of both rules under reweights."""
    with tools.work() as work:
        spec = OsdMapSpec(pg_bits=6, size=4, mark_out=(4,), crush_weights={9: 0.0})
        gm = generate(work, FIXTURE_LAYOUT, FIXTURE_RULES, spec, tools=tools)
        write_files(dest, map_files(gm, FIXTURE_RUNS, FIXTURE_X))


if __name__ == "__main__":
    sys.exit(write_fixture_main(sys.argv[1:], "msr_maps", FIXTURE, write_fixture, tentacle=True))
