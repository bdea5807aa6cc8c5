"""msr rules (Squid and later: types msr_firstn 4 / msr_indep 5, steps choosemsr) against
Tentacle's own tools, from a fixture they made (qa/maps/msr_maps.py writes it; qa/maps/test_crush_msr.py
checks it is still what they say, and compares many more maps): a 12-OSD map of mixed
weights with osd.4 out and osd.9 of CRUSH weight 0, whose pool uses an msr_firstn rule
(`choosemsr 2 type host; choosemsr 2 type osd`), and the EC 4+2 rule the EC plugin makes
for crush-num-failure-domains=3 crush-osds-per-failure-domain=2."""
import errno
import json
from typing import Any, Dict, List

import numpy as np
import pytest

from pg_advisor.crush import msr
from pg_advisor.crush.descent import RunContext
from pg_advisor.crush.mapper import do_rule
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor.model.constants import CRUSH_ITEM_NONE, WEIGHT_ONE
from pg_advisor.model.errors import AdvisorError

from pg_advisor_testkit.dumps import FIXTURES, read
from pg_advisor_testkit.osdmaptool_output import parse_dump_all
from .test_crush import assert_maps_as_osdmaptool

MSR = FIXTURES / "msr"


def load(crush: Any = None, osd_dump: Any = None) -> snapshot.Snapshot:
    return snapshot.load(osd_dump or read("osd_dump.json", MSR), crush or read("crush_dump.json", MSR))


def runs() -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = json.loads((MSR / "crushtool_test.json").read_text())
    return out


def crush_results(snap: snapshot.Snapshot, run: Dict[str, Any]) -> Dict[int, List[int]]:
    """crush_do_rule's result per input of a crushtool run, ours: its reweights as crushtool
    takes them ((int)(w * 0x10000)), the weight set it uses (none here)."""
    cm = Placer(snap).crush
    weight = np.full(cm.max_devices, WEIGHT_ONE, dtype=np.int64)
    for osd, w in run["reweight"].items():
        weight[int(osd)] = int(np.float32(w) * np.float32(WEIGHT_ONE))
    xs = np.array(sorted(int(x) for x in run["mappings"]), dtype=np.int64)
    res, rlen = do_rule(RunContext(cm, None, weight), cm.rules[run["rule"]], xs, run["num_rep"])
    return {int(x): res[i, :rlen[i]].tolist() for i, x in enumerate(xs.tolist())}


def differ(got: Dict[int, List[int]], run: Dict[str, Any]) -> List[str]:
    want = {int(x): v for x, v in run["mappings"].items()}
    assert set(got) == set(want)
    return [f"x {x}: ours {got[x]}, Ceph {want[x]}" for x in sorted(want) if got[x] != want[x]]


def test_every_pg_maps_as_osdmaptool_maps_it() -> None:
    snap = load()
    assert [r.type for r in snap.rules.values()] == [4, 5]
    ref = parse_dump_all((MSR / "osdmaptool_dump_all.txt").read_text())
    pool = snap.pools[0]
    m = Placer(snap).map_pool(pool)
    bad = [f"{m.pgid(i)}: ours {m.up_list(i)}, Ceph {ref[m.pgid(i)]}" for i in range(m.ps.size)
           if (m.up_list(i), int(m.up_primary[i])) != ref[m.pgid(i)]]
    assert m.ps.size == len(ref) == pool.pg_num == 768
    assert not bad, f"{len(bad)} of 768 PGs differ, first: {bad[:5]}"
    # osd.4 is out and osd.9 weighs nothing: MSR found each PG another OSD
    assert not (np.isin(m.up, [4, 9])).any() and (m.up >= 0).all()


@pytest.mark.parametrize("index", range(3), ids=["ec42", "ec42-reweighted", "rep22-reweighted"])
def test_crush_do_rule_as_crushtool_computes_it(index: int) -> None:
    run = runs()[index]
    got = crush_results(load(), run)
    bad = differ(got, run)
    assert not bad, f"{len(bad)} of {len(got)} inputs differ, first: {bad[:5]}"
    if run["reweight"]:     # the reweights matter: some results hold holes or differ
        plain = crush_results(load(), dict(run, reweight={}))
        assert sum(plain[x] != got[x] for x in got) > 100


def test_shortcuts_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # the literal algorithm (one descent and one collision try at a time, no row skipped as
    # hopeless or stuck) gives what the shortcuts give, and what crushtool gave
    run = runs()[1]
    fast = crush_results(load(), run)
    monkeypatch.setattr(msr, "DEPTHS", (1,))
    monkeypatch.setattr(msr._Run, "hopeless", lambda self, st, level, rows, *a: np.zeros(rows.size, bool))
    monkeypatch.setattr(msr._Run, "stuck", lambda self, st, rows, *a: np.zeros(rows.size, bool))
    assert crush_results(load(), run) == fast
    assert not differ(fast, run)
    assert sum(CRUSH_ITEM_NONE in v for v in fast.values()) > 0    # rows that stay short


def test_pools_take_msr_rules_of_their_kind() -> None:
    # CrushWrapper::rule_valid_for_pool_type: replicated takes msr_firstn, erasure msr_indep
    cm = Placer(load()).crush
    assert cm.find_rule(0, 1, 4) is cm.rules[0] and cm.find_rule(1, 1, 4) is None
    assert cm.find_rule(1, 3, 6) is cm.rules[1] and cm.find_rule(0, 3, 6) is None


def test_an_ec_pool_on_the_msr_indep_rule_keeps_positions() -> None:
    osd_dump = read("osd_dump.json", MSR)
    osd_dump["erasure_code_profiles"]["ec42"] = {"k": "4", "m": "2"}
    pool = osd_dump["pools"][0]
    pool.update(type=3, size=6, crush_rule=1, erasure_code_profile="ec42")
    snap = load(osd_dump=osd_dump)
    m = Placer(snap).map_pool(snap.pools[0])
    assert m.up.shape == (768, 6)
    # at most 2 shards per host: each host's 3 OSDs are 3 consecutive ids
    hosts = np.where(m.up == CRUSH_ITEM_NONE, -1, m.up // 3)
    for h in range(4):
        assert ((hosts == h).sum(axis=1) <= 2).all()
    assert not np.isin(m.up, [4, 9]).any()


def with_rule(steps: List[Dict[str, Any]], rule_type: int = 5) -> snapshot.Snapshot:
    crush = read("crush_dump.json", MSR)
    crush["rules"][1].update(steps=steps, type=rule_type)
    return load(crush)


def map_rule_1(snap: snapshot.Snapshot) -> np.ndarray:
    cm = Placer(snap).crush
    res, _ = do_rule(RunContext(cm, None, np.full(12, WEIGHT_ONE)), cm.rules[1], np.arange(64), 6)
    return res


TAKE = {"op": "take", "item": -1, "item_name": "default"}
HOSTS = {"op": "choosemsr", "num": 3, "type": "host"}
OSDS = {"op": "choosemsr", "num": 2, "type": "osd"}
EMIT = {"op": "emit"}


@pytest.mark.parametrize("steps, words", [
    ([TAKE, {"op": "chooseleaf_indep", "num": 3, "type": "host"}, EMIT], "where choosemsr or emit"),
    ([TAKE, HOSTS, OSDS], "the end of the rule"),
    ([TAKE, HOSTS, OSDS, EMIT, {"op": "set_msr_descents", "num": 3}], "where a take is due"),
    ([TAKE, dict(HOSTS, num=-1), OSDS, EMIT], "negative count"),
    ([{"op": "set_msr_collision_tries", "num": -2}, TAKE, HOSTS, OSDS, EMIT], "is negative"),
    ([{"op": "take", "item": 3, "item_name": "osd.3"}, EMIT], "take of a device"),
    ([TAKE, EMIT], "no choosemsr"),
    ([TAKE, HOSTS, EMIT], "only the last may, and must, pick OSDs"),
    ([TAKE, OSDS, HOSTS, EMIT], "only the last may, and must, pick OSDs"),
    ([], "no take"),
], ids=["chooseleaf", "no-emit", "config-after-emit", "negative-count", "negative-tries",
        "take-osd", "take-emit", "no-leaf", "leaf-first", "empty"])
def test_rules_ceph_maps_nothing_with_or_crashes_on_are_refused(
        steps: List[Dict[str, Any]], words: str) -> None:
    snap = with_rule(steps)          # the map loads; mapping with the rule is refused
    with pytest.raises(AdvisorError) as e:
        map_rule_1(snap)
    assert e.value.code == -errno.EINVAL
    assert "crush rule 'ec42' (type msr)" in str(e.value) and words in str(e.value)


def test_rule_steps_as_ceph_reads_them() -> None:
    # the rule's own set_msr_* steps win over the map's tunables, which the dump carries
    base = map_rule_1(with_rule([TAKE, HOSTS, OSDS, EMIT]))
    assert (map_rule_1(with_rule([{"op": "set_msr_descents", "num": 100}, TAKE, HOSTS, OSDS, EMIT]))
            == base).all()
    crush = read("crush_dump.json", MSR)
    crush["tunables"]["msr_descents"] = 0       # no descent: nothing placed
    assert (map_rule_1(load(crush)) == CRUSH_ITEM_NONE).all()
    crush["rules"][1]["steps"].insert(0, {"op": "set_msr_descents", "num": 100})
    assert (map_rule_1(load(crush)) == base).all()


def test_a_draw_that_meets_an_empty_bucket_is_refused() -> None:
    # Ceph's mapper asserts on an empty bucket (crush_bucket_choose): here the root's only
    # host is empty, so the first draw reaches it
    crush = read("crush_dump.json", MSR)
    root = next(b for b in crush["buckets"] if b["id"] == -1)
    host = next(b for b in crush["buckets"] if b["id"] == root["items"][0]["id"])
    host["items"], root["items"] = [], root["items"][:1]
    with pytest.raises(AdvisorError, match="meets an empty bucket"):
        map_rule_1(load(crush))


def test_msr_steps_in_other_rules_are_skipped_as_ceph_skips_them() -> None:
    # crush_do_rule does not know them outside an msr rule: the cluster6 map is unchanged
    crush = read("crush_dump.json")
    for r in crush["rules"]:
        r["steps"][1:1] = [{"op": "set_msr_descents", "num": 1},
                           {"op": "choosemsr", "num": 1, "type": "host"}]
    assert_maps_as_osdmaptool(snapshot.load(read("osd_dump.json"), crush))
