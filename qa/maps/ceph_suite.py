"""Ceph's own crushtool test maps (qa/maps/ceph_crushtool/, whose ORIGIN says whence), as
Ceph ships them: each text map compiled by this release's crushtool, a real ceph-mon making
one pool per rule (qa/maps/monbuilt.py's), then every PG pg_advisor answers set against
osdmaptool's in four states of the map (fresh, an OSD out, CRUSH weights changed, a bucket
emptied), and crush_do_rule against `crushtool --test` under reweights (which osdmaptool
cannot set: its --mark-up-in puts every OSD in).

    PYTHONPATH=src:. python3 -m qa.maps.ceph_suite [MAP...]   # the table, for this release
"""
import io
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from pg_advisor.cli import run as cli_run
from pg_advisor.model import snapshot

from .crushgen import HOST, GeneratedMap, crush_test, mismatches, run
from .monbuilt import PoolSpec, _create_pool, _Mon
from .test_crush_msr import crush_mismatches

SUITE = Path(__file__).parent / "ceph_crushtool"
PG_NUM = 128                 # a pool's PGs (and PGPs)
MAX_X = 511                  # crushtool --test inputs 0..MAX_X per rule and reweight
STATES = ("fresh", "osd out", "crush weights", "bucket emptied")
# the offline CLI's commands run on each state's dumps: none may raise, each answers 0 (2 for
# `map` when it maps no pool)
COMMANDS = (("status", "-f", "json"), ("eval",), ("plan", "-f", "json"), ("map", "-f", "json"),
            ("balance", "-f", "json"))


def suite_maps() -> List[str]:
    """The maps' file names, as ORIGIN lists them."""
    lines = (SUITE / "ORIGIN").read_text().splitlines()
    return [ln.split("\t")[0] for ln in lines if ln and not ln.startswith("#")]


@dataclass
class Row:
    """What one map gave on this release."""
    name: str
    not_compiled: str = ""                              # crushtool -c's error
    pools: int = 0
    refused: Dict[str, str] = field(default_factory=dict)   # rule -> why the mon made no pool
    pgs: int = 0                                        # PGs compared, all states
    exact: int = 0
    set_aside: Dict[str, str] = field(default_factory=dict)  # pool -> pg_advisor's reason
    inputs: int = 0                                     # crushtool --test inputs compared
    inputs_exact: int = 0
    commands: int = 0                                   # offline CLI commands run
    bad: List[str] = field(default_factory=list)        # the first differences, named
    states: List[str] = field(default_factory=list)     # those the map had room for

    @property
    def holds(self) -> bool:
        return not self.bad and self.exact == self.pgs and self.inputs_exact == self.inputs


def _error(e: Exception) -> str:
    """A tool's or the mon's failure in one line: its last that is not a warning, without the
    command run."""
    text = str(e).split(" failed (", 1)[-1].split("): ", 1)[-1]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "WARNING" not in ln]
    return lines[-1] if lines else text


def _pool_for(r: Dict[str, Any], crush: Dict[str, Any]) -> Tuple[Optional[PoolSpec], str]:
    """A pool of rule `r` (its size within the rule's min_size..max_size, where the release
    still has them), or None and why none can be. An erasure pool's profile names the map's
    own leaf type as failure domain (the mon refuses a profile of a type the map lacks; the
    pool takes the rule given)."""
    lo, hi = int(r.get("min_size", 1)), int(r.get("max_size", 10))
    name = f"p{r['rule_id']}-{r['rule_name']}"
    if r["type"] == 1:
        return PoolSpec(name, PG_NUM, r["rule_name"], size=min(max(3, lo), hi)), ""
    if r["type"] == 3:
        size = min(max(6, lo), hi)
        if size < 3:
            return None, f"an erasure pool needs 3 shards or more; the rule's max_size is {hi}"
        m = 2 if size >= 4 else 1
        leaf = next(t["name"] for t in crush["types"] if t["type_id"] == 0)
        return PoolSpec(name, PG_NUM, r["rule_name"], ec=(size - m, m), failure_domain=leaf), ""
    return None, f"rule type {r['type']} is neither replicated nor erasure"


def _num_devices(crush: Dict[str, Any]) -> int:
    """The OSDMap's size for the map: its highest device id + 1 (--createsimple takes 1 or more)."""
    return max([d["id"] for d in crush["devices"]] + [0]) + 1


def _osdmap(work: Path, crush_bin: Path, crush: Dict[str, Any], row: Row) -> Path:
    """The OSDMap a ceph-mon makes around the map, with a pool per rule it takes."""
    seed = work / "osdmap0.bin"
    run("osdmaptool", "--createsimple", str(_num_devices(crush)), "--clobber", str(seed))
    run("osdmaptool", str(seed), "--import-crush", str(crush_bin))
    mon_dir = Path(tempfile.mkdtemp(prefix="ceph-suite-mon-"))   # short: the admin socket's path
    mon = _Mon(mon_dir, seed)
    try:
        mon.connect()
        for r in crush["rules"]:
            spec, why = _pool_for(r, crush)
            if spec is None:
                row.refused[r["rule_name"]] = why
                continue
            try:
                _create_pool(mon, spec, r["rule_name"])
                row.pools += 1
            except RuntimeError as e:   # the mon's refusal, in its words
                row.refused[r["rule_name"]] = _error(e)
        om = work / "osdmap.bin"
        om.write_bytes(mon.command("osd getmap"))
        return om
    finally:
        mon.stop()
        shutil.rmtree(mon_dir, ignore_errors=True)


def _hosted(crush: Dict[str, Any]) -> List[int]:
    """The devices some bucket holds, ascending."""
    return sorted({i["id"] for b in crush["buckets"] for i in b["items"] if i["id"] >= 0})


def _emptied(work: Path, om: Path, crush_bin: Path, crush: Dict[str, Any]) -> Optional[GeneratedMap]:
    """The map with the devices of its first bucket of devices removed (crushtool --remove-item)."""
    names = {d["id"]: d["name"] for d in crush["devices"]}
    of_devices = [b for b in crush["buckets"] if b["items"] and all(i["id"] >= 0 for i in b["items"])]
    if not of_devices:
        return None
    # crushtool aborts freeing a tree bucket it emptied (crush_destroy_bucket_tree) and writes
    # a broken map: a tree keeps its last item at CRUSH weight 0, unless another bucket will do
    of_devices.sort(key=lambda b: b["alg"] == "tree")
    bucket = of_devices[0]
    last = bucket["items"][-1]["id"] if bucket["alg"] == "tree" else None
    cur = crush_bin
    for k, item in enumerate(bucket["items"]):
        nxt = work / f"emptied{k}.bin"
        how = ["--remove-item", names[item["id"]]] if item["id"] != last else \
            ["--reweight-item", names[item["id"]], "0"]
        run("crushtool", "-i", str(cur), *how, "-o", str(nxt))
        cur = nxt
    om2 = work / "osdmap-emptied.bin"
    shutil.copy(om, om2)
    run("osdmaptool", str(om2), "--import-crush", str(cur))
    return GeneratedMap(path=om2, num_osds=_num_devices(crush))


def states(work: Path, om: Path, crush_bin: Path, crush: Dict[str, Any]) -> List[Tuple[str, GeneratedMap]]:
    """The map fresh, with an OSD out, with CRUSH weights changed (one to 0, one raised) and
    with a bucket emptied: (state, map), those the map has room for."""
    n = _num_devices(crush)
    out: List[Tuple[str, GeneratedMap]] = [("fresh", GeneratedMap(path=om, num_osds=n))]
    hosted = _hosted(crush)
    if hosted:
        out.append(("osd out", GeneratedMap(path=om, num_osds=n, mark_out=[hosted[len(hosted) // 2]])))
        weights = {hosted[0]: 0.0} | ({hosted[-1]: 3.5} if len(hosted) > 1 else {})
        out.append(("crush weights", GeneratedMap(path=om, num_osds=n, crush_weights=weights)))
    emptied = _emptied(work, om, crush_bin, crush)
    if emptied is not None:
        out.append(("bucket emptied", emptied))
    return out


def _commands(row: Row, state: str, gm: GeneratedMap, osd_dump: Dict[str, Any],
              crush: Dict[str, Any]) -> None:
    """The offline CLI's COMMANDS on the state's dumps (and binary CRUSH map), in this process:
    an exception fails the caller with its traceback."""
    files = {"--osdmap": gm.path.with_suffix(".osd.json"), "--crush": gm.path.with_suffix(".crush.json")}
    files["--osdmap"].write_text(json.dumps(osd_dump))
    files["--crush"].write_text(json.dumps(crush))
    args = [a for k, f in files.items() for a in (k, str(f))]
    args += ["--crush-bin", str(gm.path.with_suffix(".crush"))]
    for cmd in COMMANDS:
        out = io.StringIO()
        rc = cli_run(args + list(cmd), out)
        row.commands += 1
        if rc != 0 and not (rc == 2 and cmd[0] == "map" and not osd_dump["pools"]):
            row.bad.append(f"{state}: `{' '.join(cmd)}` exited {rc}: {out.getvalue()[-200:]}")


def _compare_pgs(row: Row, state: str, gm: GeneratedMap) -> snapshot.Snapshot:
    """Every PG pg_advisor answers in `gm` against osdmaptool's (from the dumps; the fresh map
    from its binary CRUSH map too), into `row`; then the offline CLI on it."""
    osd_dump, crush = gm.dumps()
    snap = snapshot.load(osd_dump, crush)
    ref = gm.reference()
    if state == "fresh":
        binary = gm.path.with_suffix(".crush").read_bytes()
        with_bin = snapshot.load(osd_dump, crush, settings=snapshot.Settings(crush_binary=binary))
        _pgs(row, "fresh, binary CRUSH map", with_bin, ref)
    _pgs(row, state, snap, ref)
    _commands(row, state, gm, osd_dump, crush)
    return snap


def _pgs(row: Row, state: str, snap: snapshot.Snapshot, ref: Dict[str, Tuple[List[int], int]]) -> None:
    """Each PG of the pools `snap` maps against `ref` (crushgen.mismatches); the PGs of the
    pools it sets aside counted, not exact."""
    mapped = {str(p.id) for p in snap.pools}
    bad = mismatches(snap, {k: v for k, v in ref.items() if k.split(".")[0] in mapped})
    answered = sum(p.pg_num for p in snap.pools)
    row.pgs += answered
    row.exact += answered - len(bad)
    row.bad += [f"{state}: pg {b}" for b in bad[:max(0, 5 - len(row.bad))]]
    for pool, why in snap.unmapped:
        row.set_aside[pool.name] = why
        row.pgs += pool.pg_num
    held = answered + sum(p.pg_num for p, _ in snap.unmapped)
    if held != len(ref):
        row.bad.append(f"{state}: pg_advisor holds {held} PGs, osdmaptool maps {len(ref)}")


def _compare_inputs(row: Row, snap: snapshot.Snapshot, crush_bin: Path, crush: Dict[str, Any]) -> None:
    """crush_do_rule under reweights (an OSD at 0, one at half), ours against crushtool --test,
    for the rules of the pools pg_advisor maps."""
    hosted = _hosted(crush)
    reweights: List[Dict[int, float]] = [{}]
    if hosted:
        reweights.append({hosted[1]: 0.0, hosted[-1]: 0.5} if len(hosted) > 1 else {hosted[0]: 0.5})
    for pool in snap.pools:
        for w in reweights:
            want = crush_test(HOST, crush_bin, pool.crush_rule, pool.size, MAX_X, w)
            if hosted and len(want) != MAX_X + 1:
                row.bad.append(f"crushtool rule {pool.crush_rule}: {len(want)} results for "
                               f"{MAX_X + 1} inputs")
            bad = crush_mismatches(snap, pool.crush_rule, pool.size, w, want)
            row.inputs += len(want)
            row.inputs_exact += len(want) - len(bad)
            row.bad += [f"crushtool rule {pool.crush_rule} x{pool.size} {w}: {b}" for b in bad[:2]]


def check_map(name: str, work: Path) -> Row:
    """One map of the suite on this release's tools (see the module's doc)."""
    row = Row(name)
    crush_bin = work / "crush.bin"
    try:
        run("crushtool", "-c", str(SUITE / name), "-o", str(crush_bin))
    except RuntimeError as e:
        row.not_compiled = _error(e).replace(str(SUITE / name), name)
        return row
    crush = json.loads(run("crushtool", "-i", str(crush_bin), "--dump"))
    om = _osdmap(work, crush_bin, crush, row)
    for state, gm in states(work, om, crush_bin, crush):
        row.states.append(state)
        snap = _compare_pgs(row, state, gm)
        if state == "fresh":
            # the exported map (--mark-up-in lifts no weight here: the fresh map is unchanged)
            _compare_inputs(row, snap, gm.path.with_suffix(".crush"), crush)
    return row


def table(rows: Sequence[Row], release: str) -> str:
    head = (f"{'map (' + release + ')':<40} {'pools':>5} {'PGs':>6} {'exact':>6} {'inputs':>7} "
            f"{'exact':>7}  notes")
    out = [head]
    for r in rows:
        if r.not_compiled:
            out.append(f"{r.name:<40} {'-':>5} {'-':>6} {'-':>6} {'-':>7} {'-':>7}  not compiled: "
                       f"{r.not_compiled}")
            continue
        notes = [f"no pool for rule {k}: {v}" for k, v in r.refused.items()]
        notes += [f"set aside {k}: {v}" for k, v in r.set_aside.items()]
        notes += r.bad[:3]
        out.append(f"{r.name:<40} {r.pools:>5} {r.pgs:>6} {r.exact:>6} {r.inputs:>7} {r.inputs_exact:>7}"
                   f"  {'; '.join(notes)}")
    done = [r for r in rows if not r.not_compiled]
    out.append(f"{len(rows)} maps, {len(done)} compiled: {sum(r.pools for r in done)} pools, "
               f"{sum(r.exact for r in done)} of {sum(r.pgs for r in done)} PGs exact (the {len(STATES)} "
               f"states, and the fresh map from its binary CRUSH map), {sum(r.commands for r in done)} "
               f"CLI commands, {sum(r.inputs_exact for r in done)} of {sum(r.inputs for r in done)} "
               "crushtool inputs")
    return "\n".join(out)


def release() -> str:
    return run("ceph-mon", "--version").split(" (")[0].replace("ceph version ", "")


def main(argv: Sequence[str]) -> int:
    rows = []
    for name in argv or suite_maps():
        with tempfile.TemporaryDirectory(prefix="ceph-suite-") as d:
            rows.append(check_map(name, Path(d)))
    print(table(rows, release()))
    return 0 if all(r.holds for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
