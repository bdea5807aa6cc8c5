"""The offline CLI: its reports equal the live module's on the same dumps, its options and
formats, and its entry point's contract (exit codes, one-line errors)."""
import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, List

import pytest

from pg_advisor import cli
from pg_advisor.model import snapshot
from pg_advisor.analysis.status import status_report

from pg_advisor_testkit.dumps import CLUSTER6, DUMP_FILES, read

from .cli_harness import heap_set_aside, run_here
from .fakes import as_captured, without_sizing

SRC = Path(__file__).resolve().parents[2]
BASE = ["--osdmap", str(CLUSTER6 / "osd_dump.json"), "--crush", str(CLUSTER6 / "crush_dump.json"),
        "--pg-dump", str(CLUSTER6 / "pg_dump.json"), "--df", str(CLUSTER6 / "df.json"),
        "--autoscale-status", str(CLUSTER6 / "autoscale_status.json")]


@pytest.fixture(autouse=True, scope="module")
def _heap_set_aside() -> Iterator[None]:
    with heap_set_aside():
        yield


def run_cli(argv: List[str]) -> subprocess.CompletedProcess:
    """The offline CLI's main on argv in this process, its exit code and output as
    `python3 -m pg_advisor` gives them (cli_harness.run_here)."""
    ran = run_here(argv)
    return subprocess.CompletedProcess(argv, ran.code, ran.out, ran.err)


def run_entry_point(argv: List[str]) -> subprocess.CompletedProcess:
    """Run `python3 -m pg_advisor` as a user would, in a child process."""
    return subprocess.run([sys.executable, "-m", "pg_advisor", *argv], cwd=SRC,
                          capture_output=True, text=True, timeout=60)


def test_json_is_the_status_report() -> None:
    out = io.StringIO()
    assert cli.run(BASE + ["status", "-f", "json"], out) == 0
    d = {k: read(v) for k, v in DUMP_FILES.items()}
    snap = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"],
                         autoscale=read("autoscale_status.json"))
    assert json.loads(out.getvalue()) == status_report(snap)


def test_offline_json_equals_what_the_live_module_printed() -> None:
    # live_status.json was printed by `ceph pg-advisor status -f json` on the cluster the
    # other dumps were taken from, at the same moment (qa/cluster/capture_fixtures.sh)
    out = io.StringIO()
    cli.run(BASE + ["status", "-f", "json"], out)
    got, live = as_captured(json.loads(out.getvalue())), without_sizing(read("live_status.json"))
    assert got == live


def test_plain_table() -> None:
    p = run_entry_point(BASE + ["status"])
    assert p.returncode == 0, p.stderr
    for header in ("POOLS", "OSDS", "PGS PER OSD", "rbd", "ecpool", "(all pools)",
                   "mon_max_pg_per_osd 250"):
        assert header in p.stdout


def test_one_pool_json() -> None:
    p = run_entry_point(BASE + ["status", "rbd", "-f", "json-pretty"])
    assert p.returncode == 0
    assert [x["name"] for x in json.loads(p.stdout)["pools"]] == ["rbd"]


def test_mon_max_pg_per_osd_option() -> None:
    out = io.StringIO()
    cli.run(BASE + ["--mon-max-pg-per-osd", "100", "status", "-f", "json"], out)
    assert json.loads(out.getvalue())["cluster"]["mon_max_pg_per_osd"] == 100
    # set huge to silence Ceph's check (as qa/bench/mgr_scale's mon has it): still answered;
    # a mon_max_pool_pg_num past what the model sizes is read as its bound, 2^20
    d = {k: read(v) for k, v in DUMP_FILES.items()}
    snap = snapshot.load(d["osd_dump"], d["crush"],
                         settings=snapshot.Settings(config={"mon_max_pool_pg_num": 1 << 24}))
    assert snap.config["mon_max_pool_pg_num"] == snapshot.MAX_PG_NUM
    for cmd in (["status"], ["plan"]):
        out = io.StringIO()
        cli.run(BASE + ["--mon-max-pg-per-osd", "100000000", *cmd, "-f", "json"], out)
        assert json.loads(out.getvalue())


@pytest.mark.parametrize("argv, message", [
    (["--osdmap", "/nonexistent.json", "--crush", str(CLUSTER6 / "crush_dump.json"), "status"],
     "--osdmap /nonexistent.json: No such file or directory"),
    (["--osdmap", str(CLUSTER6 / "crush_dump.json"), "--crush", str(CLUSTER6 / "crush_dump.json"),
      "status"], "osd dump: not the output of `ceph osd dump -f json`"),
    (BASE + ["status", "nosuchpool"], "pool 'nosuchpool' does not exist"),
    (BASE + ["--mon-max-pg-per-osd", "0", "status"],
     "mon_max_pg_per_osd is 0; it must be within 1..9007199254740992"),
])
def test_bad_input_is_one_line_and_exit_2(argv: List[str], message: str) -> None:
    p = run_cli(argv)
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr.startswith(f"pg_advisor: error: {message}")
    assert len(p.stderr.strip().splitlines()) == 1


def test_invalid_json_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    p = run_entry_point(["--osdmap", str(bad), "--crush", str(CLUSTER6 / "crush_dump.json"), "status"])
    assert p.returncode == 2 and "not valid JSON" in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("collector_on", [True, False])
def test_a_dump_parses_with_the_collector_paused_and_its_state_given_back(
        tmp_path: Path, collector_on: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # the parse pauses the cyclic collector (cli._parse) and leaves it as it found it, on
    # an answer and on a refusal; the mgr's adapters never import the CLI
    import gc
    seen: List[bool] = []
    loads = json.loads

    def watched(text: str) -> Any:
        seen.append(gc.isenabled())
        return loads(text)
    monkeypatch.setattr(cli.json, "loads", watched)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    was = gc.isenabled()
    (gc.enable if collector_on else gc.disable)()
    try:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert cli.main(BASE + ["status", "-f", "json"]) == 0
            assert gc.isenabled() is collector_on
            assert cli.main(["--osdmap", str(bad), "--crush", str(CLUSTER6 / "crush_dump.json"),
                             "status"]) == cli.EXIT_BAD_INPUT
            assert gc.isenabled() is collector_on
    finally:
        (gc.enable if was else gc.disable)()
    assert len(seen) >= 3 and not any(seen), seen
    here = Path(cli.__file__).parent
    mgr_side = [here / "module.py"] + sorted((here / "mgr").glob("*.py"))
    assert len(mgr_side) >= 10
    for f in mgr_side:
        assert "cli" not in {w.strip("(),.") for w in f.read_text().split()}, f.name


@pytest.mark.parametrize("argv, says", [
    (["status"], "required: --osdmap, --crush"),          # --osdmap/--crush missing
    (BASE + ["status", "-f", "xml"], "'xml'"),              # unknown format
    (BASE + ["frobnicate"], "'frobnicate'"),                # unknown command
    (BASE + ["status", "--bogus"], "--bogus"),              # unknown flag
    (BASE + ["simulate", "--out", "osd.1"], "'osd.1'"),     # not a number
    (BASE + ["--split-pinning", "maybe", "status"], "split_pinning"),
    (BASE + ["--window-begin", "25:99", "status"], "window_begin"),
    (BASE + ["--mgr-max-pg-num-change", "0", "status"], "mgr_max_pg_num_change is 0"),
    (BASE + ["--target-pgs-per-osd", "1_00", "status"], "target_pgs_per_osd"),
    (BASE + ["--target-max-misplaced-ratio", "nan", "status"], "target-max-misplaced-ratio"),
    (BASE + ["simulate", "--add-host", "h9", "--osds", "1", "--weight", "1", "--backfill-mib-s", "nan"],
     "--backfill-mib-s"),
    (BASE + ["simulate", "--add-host", "h9", "--osds", "1", "--weight", "1", "--backfill-mib-s", "-1"],
     "--backfill-mib-s"),
    (BASE + ["status", "rb\nd\x1b[31m"], "rb\\nd\\x1b[31m"),    # a name is echoed escaped
])
def test_usage_errors_exit_2_with_one_line(argv: List[str], says: str) -> None:
    # no usage text: one line that says what was wrong, as for every other refusal
    p = run_cli(argv)
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("pg_advisor: error: "), p.stderr
    assert says in lines[0] and p.stdout == "", p.stderr


def test_offline_expansion_views_are_the_core_reports() -> None:
    from pg_advisor.balance.drain import drain_report
    from pg_advisor.analysis.growth import NewHost, growth_report
    from pg_advisor.balance.remapped import pin_remapped, pins_report
    d = {k: read(v) for k, v in DUMP_FILES.items()}
    snap = snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])
    for argv, want in (
            (["pin-remapped"], dict(pins_report(snap, pin_remapped(snap)), dry_run=True)),
            (["drain", "osd.0"], drain_report(snap, "osd.0")),
            (["simulate", "--add-host", "h9", "--osds", "2", "--weight", "0.001"],
             growth_report(snap, NewHost("h9", 2, 0.001)))):
        out = io.StringIO()
        assert cli.run(BASE + argv + ["-f", "json"], out) == 0
        assert json.loads(out.getvalue()) == json.loads(json.dumps(want)), argv
        plain = io.StringIO()
        assert cli.run(BASE + argv, plain) == 0 and plain.getvalue().strip()


@pytest.mark.parametrize("argv, message", [
    (["drain", "osd.99"], "osd.99 does not exist"),
    (["drain", "host0"], "can place"),
    (["simulate", "--add-host", "h9", "--osds", "0", "--weight", "1"], "--osds must be within"),
    (["simulate", "--add-host", "h9", "--osds", "2"], "goes with --osds N and --weight W"),
    (["simulate", "rbd", "--pg-num", "64", "--add-host", "h9", "--osds", "2", "--weight", "1"], "on its own"),
    (["simulate", "--add-host", "h9", "--osds", "2", "--weight", "nan"], "--weight"),
])
def test_offline_expansion_bad_input_is_one_line(argv: List[str], message: str) -> None:
    p = run_cli(BASE + argv)
    assert p.returncode == 2 and message in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
