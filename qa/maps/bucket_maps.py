"""Maps that mix every bucket algorithm Ceph maps (uniform, list, tree, straw, straw2): each
`BucketCase` is a layout whose buckets take their algorithm by type and name, a firstn rule, an
indep one and a straw_calc_version, checked against osdmaptool and crushtool --test (doc/crush.rst).
`python3 -m qa.maps.bucket_maps [DIR]` writes the unit tests' fixture (fixtures/buckets),
`... --legacy [DIR]` the one under argonaut's tunables (fixtures/legacy). LEGACY_CASES map
under the tunables of argonaut and bobtail, or a rule's own set_choose_local_* steps.
"""
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

from pg_advisor_testkit.dumps import FIXTURES

from .crushgen import (Layout, MapCase, OsdMapSpec, Tools, crush_text, generate, map_files, rule, write_files,
                       write_fixture_main)

FIXTURE = FIXTURES / "buckets"
ALGS = ("uniform", "list", "tree", "straw", "straw2")


def by_index(host_algs: Sequence[str], rack_algs: Sequence[str] = ("straw",),
             root_alg: str = "straw") -> Callable[[str, str], str]:
    """hostN and rackN take their algorithm from the lists by N (cycling), the root its own."""
    def alg(kind: str, name: str) -> str:
        if kind == "root":
            return root_alg
        algs = host_algs if kind == "host" else rack_algs
        return algs[int(name.lstrip("abcdefghijklmnopqrstuvwxyz")) % len(algs)]
    return alg


def ties(osd: int) -> float:
    """Weights with ties and steps (straw_calc_version 0 and 1 differ on ties), the same
    pattern in every host of 5 (so that hosts weigh alike under a uniform bucket)."""
    return (1.0, 1.0, 2.0, 4.0, 2.0)[osd % 5]


def uniform_hosts_even(host_algs: Sequence[str], per_host: int) -> Callable[[int], float]:
    """ties(), but 1.0 for the OSDs of a uniform host (its items must weigh alike)."""
    def weight(osd: int) -> float:
        return 1.0 if host_algs[(osd // per_host) % len(host_algs)] == "uniform" else ties(osd)
    return weight


@dataclass
class BucketCase(MapCase):
    indep: Tuple[str, ...] = ("set_chooseleaf_tries 5", "set_choose_tries 100", "take default",
                              "chooseleaf indep 0 type host", "emit")
    ec_size: int = 6                      # crushtool's num_rep for the indep rule
    straw_calc_version: int = 1
    legacy: Tuple[Tuple[str, int], ...] = ()   # tunables set otherwise (argonaut's, bobtail's)

    def rules(self, pool_rule: int = 0) -> List[str]:
        """The firstn rule (`steps`) and the indep one; the pool's (`pool_rule` 0: firstn) gets id 0."""
        ids = (0, 1) if pool_rule == 0 else (1, 0)
        return [rule(self.steps, "firstn", ids[0]), rule(self.indep, "indep", ids[1])]

    def text(self, pool_rule: int = 0) -> str:
        text = crush_text(self.layout, self.rules(pool_rule))
        for name, value in (("straw_calc_version", self.straw_calc_version),) + self.legacy:
            text = re.sub(rf"^tunable {name} \d+$", f"tunable {name} {value}", text, count=1, flags=re.M)
        return text

    def runs(self) -> List[Tuple[int, int, Dict[int, float]]]:
        """crushtool --test runs on the map of pool_rule 0: (rule, num_rep, reweights)."""
        return [(r, n, w) for w in self.reweights for r, n in ((0, self.size), (1, self.ec_size))]


WIDE = ("uniform", "list", "tree", "straw")
RACKED_HOSTS = ("straw", "list", "tree")    # 3 OSDs each; a rack of these weighs like another
UNIFORM = by_index(("uniform",), ("uniform",), "uniform")
CASES: List[BucketCase] = [
    # hosts of every algorithm under a straw root, both straw_calc_versions
    *(BucketCase(f"hosts-of-every-alg-v{v}",
                 Layout(0, 10, 5, weight=uniform_hosts_even(ALGS, 5), alg_of=by_index(ALGS)),
                 straw_calc_version=v, mark_out=(12,), crush_weights={7: 0.0, 11: 5.0, 16: 3.0, 23: 0.5},
                 reweights=({}, {1: 0.0, 2: 0.5, 13: 0.0, 18: 0.3, 21: 0.75, 33: 0.0}))
      for v in (0, 1)),
    # a root of each older algorithm over hosts that weigh alike
    *(BucketCase(f"{root}-root", Layout(0, 6, 5, weight=ties,
                                        alg_of=by_index(("straw", "list", "tree", "straw2"), root_alg=root)),
                 straw_calc_version=0, mark_out=(4,), crush_weights={9: 0.0},
                 reweights=({}, {0: 0.0, 6: 0.5, 11: 0.0, 27: 0.25}))
      for root in ("uniform", "list", "tree")),
    # racks of straw, list and uniform under a tree root, hosts of 3 below them
    BucketCase("racks-of-three-algs",
               Layout(3, 3, 3, weight=lambda o: (1.0, 2.0, 2.0)[o % 3],
                      alg_of=by_index(RACKED_HOSTS, ("straw", "list", "uniform"), "tree")),
               steps=("take default", "choose firstn 0 type rack", "chooseleaf firstn 1 type host", "emit"),
               indep=("set_choose_tries 100", "take default", "choose indep 3 type rack",
                      "choose indep 2 type osd", "emit"),
               straw_calc_version=0, mark_out=(20,), crush_weights={3: 0.0, 10: 1.0},
               reweights=({}, {0: 0.0, 1: 0.0, 9: 0.5, 19: 0.0, 22: 0.6})),
    # uniform all the way down: indep retries a uniform bucket whose size the count
    # divides with r + (numrep + 1) * ftotal (3 racks for 3 or 6, 2 hosts of 2 for 2)
    BucketCase("uniform-indep", Layout(3, 2, 2, alg_of=UNIFORM),
               indep=("set_choose_tries 100", "take default", "choose indep 3 type rack",
                      "chooseleaf indep 2 type host", "emit"),
               ec_size=6, pg_bits=7, mark_out=(5,),
               reweights=({}, {0: 0.0, 4: 0.5, 9: 0.0}, {2: 0.0, 3: 0.0, 7: 0.25})),
    BucketCase("uniform-indep-3", Layout(3, 2, 2, alg_of=UNIFORM),
               ec_size=3, pg_bits=7, mark_out=(1,), reweights=({}, {6: 0.0, 7: 0.5})),
    # OSDs straight from one wide host of each older algorithm, with a third of them out in
    # crushtool's runs: many collisions and retries (uniform's permutation built far along,
    # a tree of 4 levels)
    *(BucketCase(f"osds-of-one-{alg}-host",
                 Layout(0, 4, 12, weight=uniform_hosts_even(WIDE, 12), alg_of=by_index(WIDE)),
                 steps=(f"take host{h}", "choose firstn 0 type osd", "emit"),
                 indep=(f"take host{h}", "choose indep 0 type osd", "emit"),
                 size=6, ec_size=9, pg_bits=5, straw_calc_version=h % 2, mark_out=(12 * h + 3,),
                 reweights=({}, {12 * h + o: 0.0 for o in (0, 2, 5, 7)} | {12 * h + 9: 0.5},
                            {12 * h + o: 0.0 for o in range(1, 12, 2)}))
      for h, alg in enumerate(WIDE)),
]


def classes_over(host_algs: Sequence[str], rack_algs: Sequence[str], root_alg: str) -> Layout:
    """80 OSDs in 4 racks of 5 hosts of 4, of weights 1 to 4, in three classes: ssd every
    fifth OSD (a host holds one ssd or none, so a shadow host holds a single item or none),
    nvme every seventh of the others, hdd the rest."""
    return Layout(4, 5, 4, weight=lambda o: (1.0, 2.0, 4.0, 3.0)[o % 4],
                  device_class=lambda o: "ssd" if o % 5 == 0 else "nvme" if o % 7 == 0 else "hdd",
                  alg_of=by_index(host_algs, rack_algs, root_alg))


CLASS_RULES = (rule(["take default class ssd", "chooseleaf firstn 0 type host", "emit"]),
               rule(["set_chooseleaf_tries 5", "set_choose_tries 100", "take default class hdd",
                     "choose indep 3 type rack", "chooseleaf indep 2 type host", "emit"]))


# the tunables of argonaut and bobtail, which Ceph still maps (ceph osd crush tunables NAME)
ARGONAUT = (("choose_local_tries", 2), ("choose_local_fallback_tries", 5), ("choose_total_tries", 19),
            ("chooseleaf_descend_once", 0), ("chooseleaf_vary_r", 0), ("chooseleaf_stable", 0))
BOBTAIL = (("choose_local_tries", 0), ("choose_local_fallback_tries", 0), ("choose_total_tries", 50),
           ("chooseleaf_descend_once", 1), ("chooseleaf_vary_r", 0), ("chooseleaf_stable", 0))
LEGACY_CASES: List[BucketCase] = [
    *(BucketCase(f"{name}-hosts-of-every-alg",
                 Layout(0, 10, 5, weight=uniform_hosts_even(ALGS, 5), alg_of=by_index(ALGS)),
                 straw_calc_version=0, legacy=tun, mark_out=(12,), crush_weights={7: 0.0, 23: 0.5},
                 reweights=({}, {1: 0.0, 2: 0.5, 13: 0.0, 18: 0.3, 21: 0.75, 33: 0.0}))
      for name, tun in (("argonaut", ARGONAUT), ("bobtail", BOBTAIL))),
    BucketCase("argonaut-racks", Layout(3, 3, 3, weight=lambda o: (1.0, 2.0, 2.0)[o % 3],
                                        alg_of=by_index(RACKED_HOSTS, ("straw", "list", "uniform"), "straw")),
               steps=("take default", "choose firstn 0 type rack", "chooseleaf firstn 1 type host", "emit"),
               legacy=ARGONAUT, straw_calc_version=0, mark_out=(20,), crush_weights={3: 0.0},
               reweights=({}, {0: 0.0, 1: 0.0, 9: 0.5, 19: 0.0, 22: 0.6})),
    # a third of a wide host's OSDs out: many collisions, the fallback's permutation draws
    *(BucketCase(f"argonaut-osds-of-one-{alg}-host",
                 Layout(0, 4, 12, weight=uniform_hosts_even(WIDE, 12), alg_of=by_index(WIDE)),
                 steps=(f"take host{h}", "choose firstn 0 type osd", "emit"),
                 indep=(f"take host{h}", "choose indep 0 type osd", "emit"),
                 size=6, ec_size=9, pg_bits=5, legacy=ARGONAUT, mark_out=(12 * h + 3,),
                 reweights=({}, {12 * h + o: 0.0 for o in (0, 2, 5, 7)} | {12 * h + 9: 0.5},
                            {12 * h + o: 0.0 for o in range(1, 12, 2)}))
      for h, alg in enumerate(WIDE)),
    # firefly's tunables, the local retries set by the rule's own steps
    BucketCase("local-tries-by-rule-steps",
               Layout(0, 10, 5, weight=uniform_hosts_even(ALGS, 5), alg_of=by_index(ALGS)),
               steps=("set_choose_local_tries 1", "set_choose_local_fallback_tries 3", "take default",
                      "chooseleaf firstn 0 type host", "emit"),
               mark_out=(12,), reweights=({}, {1: 0.0, 2: 0.5, 13: 0.0, 21: 0.75})),
]


FIXTURE_CASE = BucketCase(
    "fixture", Layout(0, 5, 3, weight=lambda o: (1.0, 1.0, 2.0)[o % 3] if o // 3 else 1.0,
                      alg_of=by_index(ALGS)),
    straw_calc_version=0, pg_bits=6, mark_out=(4,), crush_weights={10: 0.0},
    reweights=({}, {1: 0.0, 5: 0.5, 7: 0.0, 11: 0.75}))
FIXTURE_X = 1023
# argonaut's tunables over 4 wide hosts of the older algorithms, 4 replicas of 4 hosts: the
# local retries and the fallback's permutation draws at every level
LEGACY_FIXTURE = FIXTURES / "legacy"
TREE_CLASSES_FIXTURE = FIXTURES / "tree_classes"
LEGACY_FIXTURE_CASE = BucketCase(
    "legacy-fixture", Layout(0, 4, 12, weight=uniform_hosts_even(WIDE, 12), alg_of=by_index(WIDE)),
    size=4, ec_size=4, pg_bits=4, legacy=ARGONAUT, mark_out=(5,), crush_weights={13: 0.0},
    reweights=({}, {0: 0.0, 2: 0.0, 14: 0.5, 25: 0.0, 27: 0.0, 29: 0.0, 40: 0.25}))


def write_fixture(tools: Tools, dest: Path, case: BucketCase = FIXTURE_CASE) -> None:
    """A 15-OSD map (a host of each algorithm under a straw root, straw_calc_version 0, osd.4 out,
    osd.10 of CRUSH weight 0), or `case`'s: its dumps, osdmaptool's PGs under each rule,
    crushtool's results."""
    files: Dict[str, Any] = {}
    with tools.work() as work:
        for pool_rule in (0, 1):
            got = map_files(case.make(tools, work / f"rule{pool_rule}", pool_rule),
                            case.runs() if pool_rule == 0 else (), FIXTURE_X)
            files[f"crush_dump_rule{pool_rule}.json"] = got.pop("crush_dump.json")
            files[f"osdmaptool_dump_all_rule{pool_rule}.txt"] = got.pop("osdmaptool_dump_all.txt")
            if pool_rule == 0:
                files.update(got)
    write_files(dest, files)


def write_legacy_fixture(tools: Tools, dest: Path) -> None:
    write_fixture(tools, dest, LEGACY_FIXTURE_CASE)


# 6 tree hosts of 6 OSDs (every third an ssd) under a tree root: Tentacle's crushtool
# builds each shadow tree an item at a time and leaves in some node weights what its memory
# held (crush_add_tree_bucket_item); the binary map holds them
TREE_CLASSES_LAYOUT = Layout(0, 6, 6, device_class=lambda o: "ssd" if o % 3 == 0 else "hdd",
                             alg_of=lambda kind, name: "tree")


def write_tree_classes_fixture(tools: Tools, dest: Path) -> None:
    """A class rule over a tree root (classes_over): its dumps, the binary CRUSH map and
    osdmaptool's PGs. Tentacle's crushtool leaves what its memory held in the shadow
    tree's node weights (crush_add_tree_bucket_item): the binary map holds them."""
    with tools.work() as work:
        gm = generate(work, TREE_CLASSES_LAYOUT, [CLASS_RULES[0]], OsdMapSpec(pg_bits=4), tools=tools)
        osd_dump, crush = gm.dumps()           # (exports the binary map in the same state)
        write_files(dest, {"osd_dump.json": osd_dump, "crush_dump.json": crush,
                           "osdmaptool_dump_all_rule0.txt": gm.dump_all()})
        (dest / "crushmap.bin").write_bytes(gm.path.with_suffix(".crush").read_bytes())


if __name__ == "__main__":     # [--legacy | --tree-classes] [DIR]
    if sys.argv[1:2] == ["--tree-classes"]:
        sys.exit(write_fixture_main(sys.argv[2:], "bucket_maps", TREE_CLASSES_FIXTURE,
                                    write_tree_classes_fixture, tentacle=True))
    if sys.argv[1:2] == ["--legacy"]:
        sys.exit(write_fixture_main(sys.argv[2:], "bucket_maps", LEGACY_FIXTURE, write_legacy_fixture))
    sys.exit(write_fixture_main(sys.argv[1:], "bucket_maps", FIXTURE, write_fixture))
