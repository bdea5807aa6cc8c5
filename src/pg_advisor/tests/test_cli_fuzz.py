"""The offline CLI's contract on malformed dumps: exit 2, one line on stderr, no traceback,
bounded work and memory.

Each case is the captured 6-OSD cluster with one thing broken, the way a truncated copy, a
hand edit or a buggy exporter breaks a dump. Every command runs on it through the CLI's
`main` in this process (cli_harness.py: the work counted from zero, the peak of memory
allocated traced); a few run as a user runs them, `python3 -m pg_advisor` in a child
process whose peak RSS is read from the kernel (wait4).
"""
import copy
import json
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

from pg_advisor_testkit.dumps import CLUSTER6, DUMP_FILES, read

from .cli_harness import COMMANDS, Docs, check, check_all, heap_set_aside, run_child, run_here, write


@pytest.fixture(autouse=True, scope="module")
def _heap_set_aside() -> Iterator[None]:
    with heap_set_aside():
        yield


def _bucket(d: Docs, name: str) -> Dict[str, Any]:
    return next(b for b in d["crush"]["buckets"] if b["name"] == name)


def _pool(d: Docs, name: str) -> Dict[str, Any]:
    return next(p for p in d["osd_dump"]["pools"] if p["pool_name"] == name)


def _rule(d: Docs, name: str) -> Dict[str, Any]:
    return next(r for r in d["crush"]["rules"] if r["rule_name"] == name)


def _pg(d: Docs, pgid: str) -> Dict[str, Any]:
    return next(s for s in d["pg_dump"]["pg_map"]["pg_stats"] if s["pgid"] == pgid)


def _set(path: Callable[[Docs], Dict[str, Any]], key: str, value: Any) -> Callable[[Docs], None]:
    def mutate(d: Docs) -> None:
        path(d)[key] = value
    return mutate


def _del(path: Callable[[Docs], Dict[str, Any]], key: str) -> Callable[[Docs], None]:
    def mutate(d: Docs) -> None:
        del path(d)[key]
    return mutate


def _grow_all(d: Docs, pg_num: int, size: int) -> None:
    for p in d["osd_dump"]["pools"]:
        p.update(pg_num=pg_num, pg_placement_num=pg_num, pg_num_target=pg_num,
                 pg_placement_num_target=pg_num, size=size)


INF, NAN = float("inf"), float("nan")

# (case id, the change, the start of the one-line error it must give)
MALFORMED: List[Tuple[str, Callable[[Docs], None], str]] = [
    ("crush-item-weight-inf",
     lambda d: _bucket(d, "host0")["items"][0].update(weight=INF), "crush dump: bucket host0"),
    ("crush-item-weight-negative",
     lambda d: _bucket(d, "host0")["items"][0].update(weight=-65536), "crush dump: bucket host0"),
    ("pool-pg-num-inf", _set(lambda d: _pool(d, "rbd"), "pg_num", INF), "osd dump: pool 1"),
    ("pool-pg-num-zero", _set(lambda d: _pool(d, "rbd"), "pg_num", 0), "osd dump: pool 1"),
    ("pool-pg-num-negative", _set(lambda d: _pool(d, "rbd"), "pg_num", -32), "osd dump: pool 1"),
    ("pool-pg-num-1e12", _set(lambda d: _pool(d, "rbd"), "pg_num", 10 ** 12), "osd dump: pool 1"),
    ("pool-pg-num-4000-digits", _set(lambda d: _pool(d, "rbd"), "pg_num", 10 ** 4000),
     "osd dump: pool 1"),
    ("pool-pgp-num-above-pg-num",
     _set(lambda d: _pool(d, "rbd"), "pg_placement_num", 64), "osd dump: pool 1"),
    ("pool-size-zero", _set(lambda d: _pool(d, "rbd"), "size", 0), "osd dump: pool 1"),
    ("pool-size-negative", _set(lambda d: _pool(d, "rbd"), "size", -3), "osd dump: pool 1"),
    ("pool-size-300", _set(lambda d: _pool(d, "rbd"), "size", 300), "osd dump: pool 1"),
    ("pool-too-many-replicas", lambda d: _grow_all(d, 1 << 20, 4), "osd dump: the pools hold"),
    ("pool-name-not-string", _set(lambda d: _pool(d, "rbd"), "pool_name", 7), "osd dump: pool 1"),
    ("pool-id-duplicate", _set(lambda d: _pool(d, "fast"), "pool", 1), "osd dump: pool 1"),
    ("pool-options-nan-ratio",
     lambda d: _pool(d, "rbd")["options"].update(target_size_ratio=NAN), "osd dump: pool 1"),
    ("ec-k-zero",
     lambda d: d["osd_dump"]["erasure_code_profiles"]["ec21"].update(k="0"),
     "osd dump: erasure code profile ec21"),
    ("ec-k-not-number",
     lambda d: d["osd_dump"]["erasure_code_profiles"]["ec21"].update(k="two"),
     "osd dump: erasure code profile ec21"),
    ("ec-profile-missing",
     lambda d: d["osd_dump"]["erasure_code_profiles"].pop("ec21"), "osd dump: pool 2"),
    ("bucket-id-positive", _set(lambda d: _bucket(d, "host1"), "id", 7), "crush dump: bucket host1"),
    ("bucket-id-minus-1e9", _set(lambda d: _bucket(d, "host1"), "id", -10 ** 9),
     "crush dump: bucket host1"),
    ("bucket-id-duplicate", _set(lambda d: _bucket(d, "host1"), "id", -2),
     "crush dump: bucket host1"),
    ("bucket-item-unknown-bucket",
     lambda d: _bucket(d, "host1")["items"].append({"id": -99, "weight": 65536, "pos": 2}),
     "crush dump: bucket host1 holds bucket -99"),
    ("bucket-cycle",
     lambda d: _bucket(d, "host1")["items"].append({"id": -1, "weight": 65536, "pos": 2}),
     "crush dump: bucket"),
    ("bucket-item-osd-1e9",
     lambda d: _bucket(d, "host1")["items"].append({"id": 10 ** 9, "weight": 65536, "pos": 2}),
     "crush dump: bucket host1"),
    ("max-osd-1e12", _set(lambda d: d["osd_dump"], "max_osd", 10 ** 12), "osd dump"),
    ("max-osd-negative", _set(lambda d: d["osd_dump"], "max_osd", -1), "osd dump"),
    ("osd-beyond-max-osd", _set(lambda d: d["osd_dump"], "max_osd", 3), "osd dump: osd.3"),
    ("osd-reweight-nan", lambda d: d["osd_dump"]["osds"][0].update(weight=NAN), "osd dump: osd.0"),
    ("osd-reweight-inf", lambda d: d["osd_dump"]["osds"][0].update(weight=INF), "osd dump: osd.0"),
    ("osd-reweight-above-1", lambda d: d["osd_dump"]["osds"][0].update(weight=2), "osd dump: osd.0"),
    ("osd-affinity-nan",
     lambda d: d["osd_dump"]["osds"][1].update(primary_affinity=NAN), "osd dump: osd.1"),
    ("rule-take-without-item",
     lambda d: _rule(d, "replicated_rule")["steps"][0].pop("item"), "crush rule 'replicated_rule'"),
    ("rule-choose-without-num",
     lambda d: _rule(d, "replicated_rule")["steps"][1].pop("num"), "crush rule 'replicated_rule'"),
    ("rule-choose-without-type",
     lambda d: _rule(d, "replicated_rule")["steps"][1].pop("type"), "crush rule 'replicated_rule'"),
    ("rule-choose-unknown-type",
     lambda d: _rule(d, "replicated_rule")["steps"][1].update(type="galaxy"),
     "crush rule 'replicated_rule': unknown bucket type"),
    ("rule-choose-num-1e9",
     lambda d: _rule(d, "replicated_rule")["steps"][1].update(num=10 ** 9),
     "crush rule 'replicated_rule'"),
    ("tunable-not-number",
     lambda d: d["crush"]["tunables"].update(choose_total_tries="lots"), "crush dump: tunables"),
    ("tunable-huge",
     lambda d: d["crush"]["tunables"].update(choose_total_tries=10 ** 9), "crush dump: tunables"),
    ("tunables-not-object", _set(lambda d: d["crush"], "tunables", [1, 2]), "crush dump"),
    ("choose-args-weight-inf",
     _set(lambda d: d["crush"], "choose_args",
          {"-1": [{"bucket_id": -2, "weight_set": [[INF, 1.0]]}]}), "crush dump: choose_args -1"),
    ("choose-args-unknown-bucket",
     _set(lambda d: d["crush"], "choose_args",
          {"-1": [{"bucket_id": -77, "weight_set": [[1.0]]}]}), "crush dump: choose_args -1"),
    ("pg-id-garbage", _set(lambda d: _pg(d, "1.1f"), "pgid", "one.x"), "pg dump"),
    ("pg-up-osd-1e9", _set(lambda d: _pg(d, "1.1f"), "up", [0, 10 ** 9, 2]),
     "pg dump: pg 1.1f: up names osd.1000000000"),
    ("pg-acting-osd-6", _set(lambda d: _pg(d, "1.1f"), "acting", [0, 6, 2]),
     "pg dump: pg 1.1f: acting names osd.6"),
    ("pg-up-300-wide", _set(lambda d: _pg(d, "1.1f"), "up", list(range(300))), "pg dump: pg 1.1f"),
    ("pg-bytes-nan", lambda d: _pg(d, "1.1f")["stat_sum"].update(num_bytes=NAN), "pg dump: pg 1.1f"),
    ("pg-stats-not-list", lambda d: d["pg_dump"]["pg_map"].update(pg_stats={}), "pg dump"),
    ("osd-stats-kb-inf",
     lambda d: d["pg_dump"]["pg_map"]["osd_stats"][0].update(kb=INF), "pg dump: osd_stats"),
    ("df-stored-negative",
     lambda d: d["df"]["pools"][0]["stats"].update(stored=-1), "df: pool stats"),
    ("upmap-items-to-1e12",
     _set(lambda d: d["osd_dump"], "pg_upmap_items",
          [{"pgid": "1.0", "mappings": [{"from": 1, "to": 10 ** 12}]}]),
     "osd dump: pg_upmap_items 1.0"),
    ("osdmap-is-a-list", lambda d: d.update(osd_dump=[1, 2, 3]), "osd dump: not the output"),
    # numbers Python reads but Ceph never writes: a fraction, "_", spaces, other scripts' digits
    ("pool-pg-num-fraction", _set(lambda d: _pool(d, "rbd"), "pg_num", 32.5), "osd dump: pool 1"),
    ("pool-pg-num-underscore", _set(lambda d: _pool(d, "rbd"), "pg_num", "3_2"), "osd dump: pool 1"),
    ("pool-pg-num-spaces", _set(lambda d: _pool(d, "rbd"), "pg_num", " 32 "), "osd dump: pool 1"),
    ("pool-pg-num-arabic-indic", _set(lambda d: _pool(d, "rbd"), "pg_num", "\u0663\u0662"),
     "osd dump: pool 1"),
    ("osd-id-duplicate", lambda d: d["osd_dump"]["osds"].append(copy.deepcopy(d["osd_dump"]["osds"][0])),
     "osd dump: osd.0 is listed twice"),
    ("pool-name-duplicate", _set(lambda d: _pool(d, "fast"), "pool_name", "rbd"), "osd dump: pool 3"),
    ("bucket-name-duplicate", _set(lambda d: _bucket(d, "host1"), "name", "host0"),
     "crush dump: bucket host0"),
    ("pool-type-99", _set(lambda d: _pool(d, "rbd"), "type", 99), "osd dump: pool 1: type 99"),
    # more entries than PGs: the mon drops those of PGs that are gone (200,000 show it as
    # well as a million, at a fifth of the work)
    ("upmap-items-200k",     # built when the case runs: every garbage collection walks what is kept
     lambda d: d["osd_dump"].update(pg_upmap_items=[{"pgid": f"1.{i:x}", "mappings": [{"from": 0, "to": 1}]}
                                                    for i in range(200_000)]),
     "osd dump: 200,000 pg_upmap_items entries for 56 PGs"),
    ("crush-is-a-string", lambda d: d.update(crush="crush"), "crush dump: not the output"),
]

# Command-line values that are just as malformed
BAD_ARGS: List[Tuple[str, List[str], str]] = [
    ("option-nan", ["--hysteresis", "nan"], "option hysteresis"),
    ("option-inf", ["--pg-per-osd-headroom", "inf"], "option pg_per_osd_headroom"),
    ("option-int-huge", ["--target-pgs-per-osd", str(10 ** 12)], "option target_pgs_per_osd"),
    ("mon-max-pg-per-osd-negative", ["--mon-max-pg-per-osd", "-1"], "mon_max_pg_per_osd"),
    ("osd-memory-target-2-63", ["--osd-memory-target", str(1 << 63)], "osd_memory_target"),
]

# Odd but legal: Ceph accepts these, and so does pg_advisor (exit 0, valid JSON).
ACCEPTED: List[Tuple[str, Callable[[Docs], None]]] = [
    ("unchanged", lambda d: None),
    # CRUSH may name a device past max_osd: the OSDMap holds no such OSD, CRUSH skips it
    ("crush-item-beyond-max-osd",
     lambda d: _bucket(d, "host1")["items"].append({"id": 40, "weight": 65536, "pos": 2})),
    ("ints-as-strings", lambda d: _pool(d, "rbd").update(pg_num="32", size="3")),
    ("no-tunables", lambda d: d["crush"].pop("tunables")),
    # as in Ceph (OSDMap::_pg_to_raw_osds), a pool whose rule is gone maps its PGs nowhere
    ("pool-rule-missing", _set(lambda d: _pool(d, "rbd"), "crush_rule", 42)),
    # a step of a Ceph to come: its rule's pool (fast) is set aside as not mapped, the rest
    # answered (test_not_mapped.py), not the whole map refused
    ("rule-unknown-op", lambda d: _rule(d, "fast")["steps"].insert(0, {"op": "teleport"})),
    ("zero-weight-osd", lambda d: _bucket(d, "host2")["items"][0].update(weight=0)),
]


@pytest.fixture
def docs() -> Docs:
    return {k: read(v) for k, v in DUMP_FILES.items()}     # (read parses anew: a fresh copy)


@pytest.mark.parametrize("case, mutate, error", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_dump(tmp_path: Path, docs: Docs, case: str, mutate: Callable[[Docs], None],
                        error: str) -> None:
    mutate(docs)
    check_all(write(tmp_path, docs), error)


@pytest.mark.parametrize("case, args, error", BAD_ARGS, ids=[c[0] for c in BAD_ARGS])
def test_malformed_argument(tmp_path: Path, docs: Docs, case: str, args: List[str],
                            error: str) -> None:
    check_all(write(tmp_path, docs) + args, error)


@pytest.mark.parametrize("depth", [100, 100000])
def test_deeply_nested_json(tmp_path: Path, docs: Docs, depth: int) -> None:
    # 100 levels parse (and are refused as the wrong shape); 100000 exceed the parser's stack
    nested = "[" * depth + "]" * depth
    argv = write(tmp_path, docs, {"crush": json.dumps({"buckets": json.loads(nested) if
                                                       depth < 500 else [], "rules": [],
                                                       "devices": []})
                                  if depth < 500 else nested})
    check_all(argv, "crush dump" if depth < 500 else "--crush")


def test_integer_of_5000_digits(tmp_path: Path, docs: Docs) -> None:
    # Python's json refuses ints past 4300 digits (a CPU bound on int parsing)
    text = json.dumps(docs["osd_dump"]).replace('"pg_num": 32', '"pg_num": ' + "9" * 5000, 1)
    check_all(write(tmp_path, docs, {"osd_dump": text}), "--osdmap")


def test_truncated_and_binary_files(tmp_path: Path, docs: Docs) -> None:
    text = json.dumps(docs["osd_dump"])
    check_all(write(tmp_path, docs, {"osd_dump": text[:len(text) // 2]}), "--osdmap")
    (tmp_path / "bin.json").write_bytes((CLUSTER6 / "osdmap.bin").read_bytes())
    argv = write(tmp_path, docs)
    argv[1] = str(tmp_path / "bin.json")
    check_all(argv, "--osdmap")


@pytest.mark.parametrize("case, mutate", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_odd_but_legal_dump(tmp_path: Path, docs: Docs, case: str,
                            mutate: Callable[[Docs], None]) -> None:
    mutate(docs)
    check_all(write(tmp_path, docs), None)


def test_a_dump_that_never_ends_or_is_huge_is_refused_unread(tmp_path: Path, docs: Docs) -> None:
    argv = write(tmp_path, docs)
    argv[1] = "/dev/zero"
    check_all(argv, "--osdmap /dev/zero: more than")
    big = tmp_path / "big.json"
    with open(big, "wb") as f:        # sparse: 600 MiB that take no disk
        f.truncate(600 << 20)
    argv[1] = str(big)
    check_all(argv, f"--osdmap {big}: 600 MiB")


def _no_osds_yet(d: Docs) -> None:
    """A new cluster: pools and hosts made, no OSD created yet."""
    d["osd_dump"].update(osds=[], max_osd=0, pg_upmap_items=[], pg_temp=[], primary_temp=[])
    d["crush"]["devices"] = []
    for b in d["crush"]["buckets"]:
        b["items"] = [] if b["type_name"] == "host" else b["items"]
        for it in b["items"]:
            it["weight"] = 0
    del d["pg_dump"]["pg_map"]["pg_stats"][:]
    del d["pg_dump"]["pg_map"]["osd_stats"][:]


def test_pools_before_any_osd_are_answered(tmp_path: Path, docs: Docs) -> None:
    _no_osds_yet(docs)
    argv = write(tmp_path, docs)
    for cmd in (["status"], ["plan"], ["balance"], ["eval"]):
        code, out, err, *_ = run_here(argv + cmd + ["-f", "json"])
        assert code == 0 and err == "", (cmd, err[-500:])
        json.loads(out)
    code, out, err, *_ = run_here(argv + ["status"])
    assert code == 0 and "no OSD is up and in" in out, out
    code, out, err, *_ = run_here(argv + ["map"])
    assert code == 0 and "56 of 56 PGs have nowhere to go" in out, out
    code, out, err, *_ = run_here(argv + ["simulate", "--add-host", "h0", "--osds", "3", "--weight", "1",
                                          "-f", "json"])
    # `ceph osd new` numbers a new cluster's OSDs from 0
    assert code == 0 and json.loads(out)["add_host"]["osds"] == [0, 1, 2], err
    code, out, err, *_ = run_here(argv + ["simulate", "--out", "0"])
    assert code == 2 and err.startswith("pg_advisor: error: osd.0 does not exist"), err


def test_thousands_of_pgs_per_osd(tmp_path: Path, docs: Docs) -> None:
    # 65,536 PGs of size 3 on 6 OSDs (Ceph's mon would refuse it; a dump can hold it): each
    # OSD holds 32,000 of the pool's PGs, and a move looks at a window of them, not all (a
    # check of all of them each move would reach the work bound part-way)
    pool = _pool(docs, "rbd")
    for key in ("pg_num", "pg_placement_num", "pg_num_target", "pg_placement_num_target"):
        pool[key] = 1 << 16
    del docs["pg_dump"]["pg_map"]["pg_stats"][:]
    # each command maps the pool about once (CRUSH draws some 10 items a replica here);
    # balance's work grows with the moves it needs, not with all of an OSD's PGs a move
    # (1.4e7 units here; a look over all 32,000 costs the whole WORK_MAX)
    replicas = 3 << 16
    outs = check_all(write(tmp_path, docs), None,
                     work_limit={"crush_replicas": 2 * replicas, "crush_draws": 20 * replicas,
                                 "balance_work": 30_000_000})
    balance = json.loads(outs[COMMANDS.index(["balance"])])
    assert not any("units of work" in n for n in balance["notes"]), balance["notes"]
    assert balance["moves"] <= 1.1 * balance["lower_bound"] and not balance["uneven"]
    assert balance["after"]["total"]["max_deviation"] <= 1


def _rename_osd(d: Docs, old: int, new: int) -> None:
    """osd.old becomes osd.new wherever the dumps name it (max_osd grows to hold it)."""
    def o(x: Any) -> Any:
        return new if x == old else x
    od = d["osd_dump"]
    od["max_osd"] = max(od["max_osd"], new + 1)
    for e in od["osds"] + od.get("osd_xinfo", []):
        e["osd"] = o(e["osd"])
    for e in od.get("pg_upmap_items", []):
        for m in e["mappings"]:
            m["from"], m["to"] = o(m["from"]), o(m["to"])
    for e in od.get("pg_upmap", []) + od.get("pg_temp", []):
        e["osds"] = [o(x) for x in e["osds"]]
    for dev in d["crush"]["devices"]:
        if dev["id"] == old:
            dev["id"], dev["name"] = new, f"osd.{new}"
    for b in d["crush"]["buckets"]:
        for it in b["items"]:
            it["id"] = o(it["id"])
    pm = d["pg_dump"]["pg_map"]
    for st in pm["pg_stats"]:
        st.update(up=[o(x) for x in st["up"]], acting=[o(x) for x in st["acting"]],
                  up_primary=o(st["up_primary"]), acting_primary=o(st["acting_primary"]))
    for st in pm["osd_stats"]:
        st["osd"] = o(st["osd"])


def _chain(d: Docs, depth: int) -> None:
    """`depth` nested one-child buckets between each root (and its class shadows) and
    its hosts, as `ceph osd crush add-bucket` and `move` can build."""
    cr = d["crush"]
    row = next(t["type_id"] for t in cr["types"] if t["name"] == "row")
    next_id = min(b["id"] for b in cr["buckets"]) - 1
    for root in [b for b in cr["buckets"] if b["type_name"] == "root"]:
        items = root["items"]
        for level in range(depth, 0, -1):
            cr["buckets"].append({"id": next_id, "name": f"row{level}{root['name'][7:]}", "type_id": row,
                                  "type_name": "row", "weight": root["weight"], "alg": "straw2",
                                  "hash": "rjenkins1", "items": items})
            items = [{"id": next_id, "weight": root["weight"], "pos": 0}]
            next_id -= 1
        root["items"] = items


def _ec_wide(d: Docs) -> None:
    d["osd_dump"]["erasure_code_profiles"]["ec21"].update(k="200", m="55")
    p = _pool(d, "ecpool")
    p.update(size=255, min_size=201)
    d["crush"]["tunables"]["choose_total_tries"] = 100
    _rule(d, "ecpool")["max_size"] = 255
    stats = d["pg_dump"]["pg_map"]["pg_stats"]
    stats[:] = [st for st in stats if not st["pgid"].startswith(f"{p['pool']}.")]


def _many_pools(d: Docs) -> None:
    proto = _pool(d, "rbd")
    d["osd_dump"]["pools"] = [dict(proto, pool=i + 1, pool_name=f"p{i:04d}", pg_num=4096,
                                   pg_placement_num=4096, pg_num_target=4096,
                                   pg_placement_num_target=4096) for i in range(1000)]
    del d["pg_dump"]["pg_map"]["pg_stats"][:]


# Legal but large: Ceph takes each (some with a mon option raised). Answered within the
# contract with costs that follow the work, or refused before any is done.
LARGE: List[Tuple[str, Callable[[Docs], None], Optional[str]]] = [
    ("max-osd-2^20", _set(lambda d: d["osd_dump"], "max_osd", (1 << 20) - 1), None),
    ("osd-id-2^20", lambda d: _rename_osd(d, 5, (1 << 20) - 2), None),
    ("size-255", lambda d: _pool(d, "rbd").update(size=255, min_size=128), None),
    ("ec-200+55-100-tries", _ec_wide, None),
    ("chain-of-3000-buckets", lambda d: _chain(d, 3000), None),
    ("1000-pools-of-4096", _many_pools, "osd dump: the pools hold 12288000 PG replicas"),
]


@pytest.mark.parametrize("case, mutate, error", LARGE, ids=[c[0] for c in LARGE])
def test_legal_but_large(tmp_path: Path, docs: Docs, case: str, mutate: Callable[[Docs], None],
                         error: Optional[str]) -> None:
    mutate(docs)
    every = COMMANDS[:4] + [["simulate", "--out", "0"], ["drain", "osd.1"], ["eval"], ["pin-remapped"]]
    check_all(write(tmp_path, docs), error, commands=every)


def test_the_harness_sees_a_failure(tmp_path: Path, docs: Docs) -> None:
    # the checks above must be able to fail: a valid dump is not an error, a bad one not valid
    with pytest.raises(AssertionError):
        check_all(write(tmp_path, docs), "osd dump")
    _pool(docs, "rbd")["size"] = 0
    with pytest.raises(AssertionError):
        check_all(write(tmp_path, docs), None)


def test_the_entry_point_keeps_the_contract_and_answers_as_main_does(tmp_path: Path, docs: Docs) -> None:
    # `python3 -m pg_advisor` in child processes, as a user runs it: an answer, a dump and
    # an argument refused, a file that is not JSON; each as cli.main gives it here
    argv = write(tmp_path, docs)
    for cmd in (["status"], ["balance"], ["simulate", "rbd", "--pg-num", "64", "--out", "0"]):
        child, here = (run(argv + cmd + ["-f", "json"]) for run in (run_child, run_here))
        check(cmd, child, None)
        assert (child.code, child.out, child.err, child.counted) == \
            (here.code, here.out, here.err, here.counted)
        assert child.counted["crush_replicas"] > 0
    check_all(argv + ["--hysteresis", "nan"], "option hysteresis", commands=[["status"]], run=run_child)
    text = json.dumps(docs["osd_dump"])
    check_all(write(tmp_path, docs, {"osd_dump": text[:len(text) // 2]}), "--osdmap",
              commands=[["plan"]], run=run_child)
    _pool(docs, "rbd")["size"] = 0
    check_all(write(tmp_path, docs), "osd dump: pool 1", commands=[["balance"], ["map"]], run=run_child)
    with pytest.raises(AssertionError):
        check_all(write(tmp_path, docs), None, commands=[["status"]], run=run_child)
