"""A pool whose rule the CRUSH model cannot follow is set aside with the reason; every
other pool is answered as before (one such rule once made every command fail)."""
import copy
import json
from pathlib import Path
from typing import Any, Dict

import pytest

from pg_advisor.analysis.plan import plan_report
from pg_advisor_testkit.loose import health_checks, status_report
from pg_advisor.balance.balancer import Balancer
from pg_advisor.model import options, snapshot
from pg_advisor.model.cluster import RuleStep
from pg_advisor.model.errors import AdvisorError

from .cli_harness import run_here, write


def with_bucket(dumps: Dict[str, Any], **fields: str) -> snapshot.Snapshot:
    """The 6-OSD cluster with host1~ssd (only the rule `fast` reaches it) changed so."""
    d = copy.deepcopy(dumps)
    next(b for b in d["crush"]["buckets"] if b["name"] == "host1~ssd").update(fields)
    return snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])


def with_unknown_hash(dumps: Dict[str, Any]) -> snapshot.Snapshot:
    """host1~ssd of a hash Ceph does not have (only rjenkins1, hash 0, exists)."""
    return with_bucket(dumps, hash="unknown")


def test_the_pool_is_set_aside_with_the_reason(dumps: Dict[str, Any]) -> None:
    snap = with_unknown_hash(dumps)
    assert [p.name for p in snap.pools] == ["rbd", "ecpool"]
    assert [(p.name, why) for p, why in snap.unmapped] == [
        ("fast", "crush rule 'fast' reaches bucket 'host1~ssd' of algorithm 'straw2' (hash unknown); "
                 "pg_advisor maps uniform, list, tree, straw, straw2 buckets with the rjenkins1 hash only")]
    with pytest.raises(AdvisorError) as e:
        snap.pool_by_name("fast")
    assert e.value.message.startswith("pool 'fast' is not mapped: crush rule 'fast' reaches")


def test_status_names_it_and_the_rest_goes_on(dumps: Dict[str, Any], snap: snapshot.Snapshot) -> None:
    aside = with_unknown_hash(dumps)
    r, whole = status_report(aside), status_report(snap)
    rows = {p["name"]: p for p in r["pools"]}
    assert rows["fast"]["not_mapped"].startswith("crush rule 'fast' reaches bucket 'host1~ssd'")
    assert rows["fast"]["recommended_pg_num"] is None and rows["fast"]["pgs_reported"] == 8
    for name in ("rbd", "ecpool"):        # the others as before
        was = next(p for p in whole["pools"] if p["name"] == name)
        assert rows[name]["not_mapped"] is None
        assert rows[name]["recommended_pg_num"] == was["recommended_pg_num"]
    # the OSDs hold the set-aside pool's PGs: their totals count them
    assert [o["pgs"] for o in r["osds"]] == [o["pgs"] for o in whole["osds"]]
    assert any(n.startswith("pool fast is not mapped") for n in r["notes"])
    check = health_checks(r)["PG_ADVISOR_POOL_NOT_MAPPED"]
    assert check["count"] == 1 and check["detail"][0].startswith("fast: crush rule 'fast'")
    assert "PG_ADVISOR_POOL_NOT_MAPPED" not in health_checks(whole)


def test_plan_and_balance_answer_for_the_others(dumps: Dict[str, Any]) -> None:
    snap = with_unknown_hash(dumps)
    plan = plan_report(snap, options.make())
    assert {s["pool"] for s in plan["steps"]} <= {"rbd", "ecpool"}
    res = Balancer(snap).run()
    assert not [pg for pg in res.items if pg.startswith("3.")]      # nothing for fast (pool 3)


def _every_rule_unknown(crush: Dict[str, Any]) -> None:
    for r in crush["rules"]:
        r["steps"].insert(1, {"op": "choose_future", "num": 2, "type": "host"})


@pytest.mark.parametrize("change, reason", [
    (_every_rule_unknown, "crush rule '"),
    (lambda c: c["rules"][2]["steps"].insert(0, {"opcode": 99, "arg1": 0, "arg2": 0}),
     "crush rule 'fast' has a step 'opcode 99'"),
])
def test_other_things_the_model_does_not_follow(dumps: Dict[str, Any], change: Any, reason: str) -> None:
    d = copy.deepcopy(dumps)
    change(d["crush"])
    snap = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])
    assert snap.unmapped and all(why.startswith(reason) for _, why in snap.unmapped)
    r = status_report(snap)         # still answered, each pool with its reason
    assert all(p["not_mapped"] for p in r["pools"] if p["name"] not in {q.name for q in snap.pools})
    assert "PG_ADVISOR_POOL_NOT_MAPPED" in health_checks(r)
    # and so are a plan and a balance, for the pools left (none, where every rule is aside)
    plan = plan_report(snap, options.make())
    assert {s["pool"] for s in plan["steps"]} <= {p.name for p in snap.pools}
    assert Balancer(snap).run().items is not None


def test_a_step_the_model_does_not_know_sets_its_pools_aside(dumps: Dict[str, Any]) -> None:
    # a rule step of a Ceph to come once refused the whole map: now only its rule's pools
    d = copy.deepcopy(dumps)
    d["crush"]["rules"][2]["steps"].insert(1, {"op": "choose_future", "num": 2, "type": "host"})
    snap = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])
    assert [(p.name, why) for p, why in snap.unmapped] == [
        ("fast", "crush rule 'fast' has a step 'choose_future', which pg_advisor does not map")]
    r = status_report(snap)
    assert [p["name"] for p in r["pools"] if p["recommended_pg_num"] is not None] == ["rbd", "ecpool"]
    assert Balancer(snap).run().items is not None


def test_a_shadow_tree_bucket_sets_its_rules_pools_aside(dumps: Dict[str, Any]) -> None:
    # Tentacle 20.2's crushtool leaves another tree than the dump's weights give (a qa/maps
    # probe: 498 of 576 PGs of a class rule under a tree root went elsewhere); a tree
    # bucket outside the shadow trees is mapped (test_crush_buckets.py)
    snap = with_bucket(dumps, alg="tree")
    [(pool, why)] = snap.unmapped
    assert pool.name == "fast" and why == (
        "crush rule 'fast' reaches bucket 'host1~ssd', a device-class shadow of a tree bucket: Ceph "
        "builds its node weights an item at a time into memory it does not clear "
        "(crush_add_tree_bucket_item), so only the binary CRUSH map holds them, not its JSON dump")
    assert [p.name for p in snap.pools] == ["rbd", "ecpool"]


@pytest.mark.parametrize("alg", ["uniform", "list", "straw"])
def test_the_older_bucket_algorithms_are_mapped(dumps: Dict[str, Any], alg: str) -> None:
    snap = with_bucket(dumps, alg=alg)
    assert snap.unmapped == () and [p.name for p in snap.pools] == ["rbd", "ecpool", "fast"]
    rows = {p["name"]: p for p in status_report(snap)["pools"]}
    assert rows["fast"]["not_mapped"] is None and rows["fast"]["recommended_pg_num"] is not None


def test_steps_dumped_by_op_code_are_read_as_their_named_forms(dumps: Dict[str, Any]) -> None:
    """`ceph osd crush dump` prints set_choose_local_tries, set_chooseleaf_vary_r, ... as
    {"opcode": N, "arg1": A, "arg2": B} (CrushWrapper::dump_rule's default branch): read as
    the same steps named, the map and the rule's pools are read and mapped alike."""
    named, coded = copy.deepcopy(dumps), copy.deepcopy(dumps)
    named["crush"]["rules"][2]["steps"][:0] = [{"op": "set_chooseleaf_vary_r", "num": 1},
                                               {"op": "set_chooseleaf_stable", "num": 1}]
    coded["crush"]["rules"][2]["steps"][:0] = [{"opcode": 12, "arg1": 1, "arg2": 0},
                                               {"opcode": 13, "arg1": 1, "arg2": 0}]
    a = snapshot.load(named["osd_dump"], named["crush"], named["pg_dump"], named["df"])
    b = snapshot.load(coded["osd_dump"], coded["crush"], coded["pg_dump"], coded["df"])
    assert a.rules[2].steps == b.rules[2].steps
    assert b.unmapped == () and [p.name for p in b.pools] == ["rbd", "ecpool", "fast"]
    assert (status_report(a)["pools"] == status_report(b)["pools"])
    # argonaut's local retries, by code: mapped as the named step
    coded["crush"]["rules"][2]["steps"][0] = {"opcode": 10, "arg1": 1, "arg2": 0}
    c = snapshot.load(coded["osd_dump"], coded["crush"], coded["pg_dump"], coded["df"])
    assert c.unmapped == () and c.rules[2].steps[0] == RuleStep("set_choose_local_tries", 1, 0)
    # an op code crush.h does not name: that rule's pools alone are set aside
    coded["crush"]["rules"][2]["steps"][0] = {"opcode": 99, "arg1": 0, "arg2": 0}
    d = snapshot.load(coded["osd_dump"], coded["crush"], coded["pg_dump"], coded["df"])
    assert [(p.name, why) for p, why in d.unmapped] == [
        ("fast", "crush rule 'fast' has a step 'opcode 99', which pg_advisor does not map")]


def test_map_names_what_it_sets_aside_and_fails_when_nothing_is_left(tmp_path: Path,
                                                                     dumps: Dict[str, Any]) -> None:
    d = copy.deepcopy(dumps)
    d["crush"]["rules"][2]["steps"].insert(1, {"op": "choose_future", "num": 2, "type": "host"})
    argv = write(tmp_path, d)
    code, out, err, *_ = run_here(argv + ["map", "-f", "json"])
    r = json.loads(out)
    assert code == 0 and err == "" and r["not_mapped"] == [
        {"pool": "fast", "pool_id": 3,
         "reason": "crush rule 'fast' has a step 'choose_future', which pg_advisor does not map"}]
    assert {k.split(".")[0] for k in r["pgs"]} == {"1", "2"}
    code, out, err, *_ = run_here(argv + ["map"])
    assert code == 0 and out.rstrip().endswith(
        "pool fast (id 3) not mapped: crush rule 'fast' has a step 'choose_future', which "
        "pg_advisor does not map"), out[-300:]
    # every pool set aside: nothing answered, exit 2, the reasons on stderr
    _every_rule_unknown(d["crush"])
    code, out, err, *_ = run_here(write(tmp_path, d) + ["map", "-f", "json"])
    assert code == 2 and out == "" and "no pool mapped: pool 'rbd': crush rule '" in err, err
    assert "pool 'fast'" in err
