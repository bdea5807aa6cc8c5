"""The mgr adapter, driven through Ceph's own mgr_module with a stand-in for the C++ side."""
import json
import socket
import urllib.request
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

from pg_advisor_testkit.dumps import read

from . import mgr_stub
from .conftest import free_port
from .fakes import as_captured, calls, without_sizing

from pg_advisor.module import Module


def test_package_exposes_module_inside_the_mgr() -> None:
    import pg_advisor
    import importlib
    importlib.reload(pg_advisor)
    assert pg_advisor.Module is Module


def test_no_command_argument_takes_a_name_the_ceph_cli_keeps_for_itself() -> None:
    # the `ceph` CLI reads `target` (which daemon to ask) and `prefix` itself: an argument so
    # named arrives as ['mon-mgr', '']. `format` is declared as pg_autoscaler declares it
    # (`osd pool autoscale-status`): optional, a string
    import re
    names = {n for c in Module.COMMANDS for n in re.findall(r"name=(\w+)", c["cmd"])}
    assert names and not names & {"target", "prefix"}, names & {"target", "prefix"}
    for c in Module.COMMANDS:
        assert c["cmd"].startswith("pg-advisor ") and c["desc"], c
        assert arguments(c["cmd"])[-1] == "name=format,req=false,type=CephString", c["cmd"]


def arguments(cmd: str) -> List[str]:
    """A command descriptor's arguments as Pacific writes them: Tentacle adds
    `positional=false` to every argument after the first flag (the `ceph` CLI then takes
    them as --name only), which changes nothing for the arguments pg_advisor declares."""
    return [",".join(f for f in a.split(",") if f != "positional=false")
            for a in cmd.split(" ") if a.startswith("name=")]


def as_pacific(cmd: str) -> str:
    """The whole descriptor, its arguments as Pacific writes them."""
    return " ".join([w for w in cmd.split(" ") if not w.startswith("name=")] + arguments(cmd))


def test_commands_are_declared_with_their_typed_arguments() -> None:
    cmds = {c["cmd"].split(" name=")[0]: {**c, "cmd": as_pacific(c["cmd"])} for c in Module.COMMANDS}
    assert set(cmds) == {f"pg-advisor {n}" for n in (
        "status", "plan", "eval", "balance", "read-balance", "map", "simulate", "mode", "apply",
        "pin-remapped", "drain",
        "crush-reweight", "pause", "resume", "abort", "progress", "history")}
    assert cmds["pg-advisor drain"]["cmd"].startswith("pg-advisor drain name=osd_or_bucket,type=CephString "
                                                      "name=dry_run,req=false,type=CephBool")
    assert "name=mode,req=false,strings=off|advise|auto,type=CephChoices" in cmds["pg-advisor mode"]["cmd"]
    assert "name=mode,req=false,strings=pgs|bytes,type=CephChoices" in cmds["pg-advisor balance"]["cmd"]
    assert "name=pg_num,req=false,type=CephInt" in cmds["pg-advisor apply"]["cmd"]
    assert "name=weight,req=false,type=CephFloat" in cmds["pg-advisor simulate"]["cmd"]
    assert cmds["pg-advisor crush-reweight"]["cmd"].startswith(
        "pg-advisor crush-reweight name=osd,n=N,type=CephInt name=weight,type=CephFloat")
    assert {c["perm"] for n, c in cmds.items() if n.split()[1] in ("status", "plan", "progress")} == {"r"}
    assert {c["perm"] for n, c in cmds.items() if n.split()[1] in (
        "apply", "drain", "abort", "crush-reweight")} == {"w"}


def test_status_json_equals_offline(module: Module) -> None:
    code, out, err = module._handle_command(None, {"prefix": "pg-advisor status", "format": "json"})
    assert (code, err) == (0, "")
    assert as_captured(json.loads(out)) == without_sizing(read("live_status.json"))


def test_status_plain_and_one_pool(module: Module) -> None:
    code, out, _ = module._handle_command(None, {"prefix": "pg-advisor status", "pool": "ecpool"})
    assert code == 0 and "ecpool" in out and "rbd " not in out


def test_mon_max_pg_per_osd_comes_from_the_mgr_config(module: Module) -> None:
    mgr_stub.BaseMgrModule.fake.options["mon_max_pg_per_osd"] = 300
    _, out, _ = module._handle_command(None, {"prefix": "pg-advisor status", "format": "json"})
    assert json.loads(out)["cluster"]["mon_max_pg_per_osd"] == 300


@pytest.mark.parametrize("cmd, code, message", [
    ({"prefix": "pg-advisor status", "pool": "nope"}, -2, "pool 'nope' does not exist"),
    ({"prefix": "pg-advisor status", "format": "xml"}, -22, "unsupported format 'xml'"),
    ({"prefix": "pg-advisor frobnicate"}, -22, "unknown command"),
])
def test_bad_input(module: Module, cmd: Dict[str, Any], code: int, message: str) -> None:
    r = module._handle_command(None, cmd)
    assert r[0] == code and r[1] == "" and message in r[2]


def test_junk_from_the_mgr_is_einval(module: Module) -> None:
    mgr_stub.BaseMgrModule.fake.docs["osd_map"] = None
    code, _, err = module._handle_command(None, {"prefix": "pg-advisor status"})
    assert code == -22 and "osd dump" in err


def test_a_bug_is_reported_not_raised(module: Module, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any) -> None:
        raise ZeroDivisionError("oops")
    monkeypatch.setattr("pg_advisor.commands.answers.status_of", boom)
    code, _, err = module._handle_command(None, {"prefix": "pg-advisor status"})
    assert code == -5 and "internal error" in err and "oops" in err


def test_plan_command(module: Module) -> None:
    code, out, err = module._handle_command(None, {"prefix": "pg-advisor plan", "format": "json"})
    assert code == 0, err
    steps = json.loads(out)["steps"]
    assert [s["pool"] for s in steps] == ["rbd", "ecpool", "fast"]
    # each step takes its pool from the pg_num it has to the one `status` recommends, and
    # the PGs per OSD it predicts add up step by step
    _, out, _ = module._handle_command(None, {"prefix": "pg-advisor status", "format": "json"})
    pools = {p["name"]: p for p in json.loads(out)["pools"]}
    want = [[pools[s["pool"]]["pg_num"], pools[s["pool"]]["recommended_pg_num"]] for s in steps]
    assert [s["pg_num"] for s in steps] == want == [[32, 128], [16, 64], [8, 32]]
    after = [s["pgs_per_osd_max_after"] for s in steps]
    assert after == sorted(after) and after[0] > 0 and all(s["pgs_remapped"] > 0 for s in steps)


def test_health_refresh_sets_the_checks(module: Module) -> None:
    module.background.refresh_health()
    checks = mgr_stub.BaseMgrModule.fake.health
    assert "PG_ADVISOR_TOO_FEW_PGS" in checks
    assert checks["PG_ADVISOR_TOO_FEW_PGS"]["count"] == 3
    assert "PG_ADVISOR_STATUS_FAILED" not in checks


def test_a_status_that_cannot_be_computed_raises_a_health_check(module: Module) -> None:
    # the mgr log alone went unseen: a check says it, and clears once a status is computed
    fake = mgr_stub.BaseMgrModule.fake
    good = fake.docs["osd_map"]
    fake.docs["osd_map"] = dict(good, epoch=good["epoch"] + 1, max_osd=-3)
    module.background.refresh_status()
    module.background.publish_health()
    failed = fake.health["PG_ADVISOR_STATUS_FAILED"]
    assert "max_osd" in failed["summary"] and failed["count"] == 1
    fake.docs["osd_map"] = dict(good, epoch=good["epoch"] + 2)
    module.background.refresh_status()
    module.background.publish_health()
    assert "PG_ADVISOR_STATUS_FAILED" not in fake.health


def test_options_reach_the_model(module: Module) -> None:
    mgr_stub.BaseMgrModule.fake.module_options[("pg_advisor", "min_pgs_per_pool")] = 64
    _, out, _ = module._handle_command(None, {"prefix": "pg-advisor status", "format": "json"})
    assert {p["name"]: p["recommended_pg_num"] for p in json.loads(out)["pools"]}["fast"] == 64


def test_balanced_when_the_upmap_balancer_is_active(module: Module) -> None:
    fake = mgr_stub.BaseMgrModule.fake
    assert not module.balanced(module.current_options())
    fake.module_options[("balancer", "active")] = True
    fake.module_options[("balancer", "mode")] = "upmap"
    assert module.balanced(module.current_options())
    # Reef's upmap-read evens the PGs as upmap does, then the primaries; read only these
    for mode, evens in (("upmap-read", True), ("read", False), ("crush-compat", False)):
        fake.module_options[("balancer", "mode")] = mode
        assert module.balanced(module.current_options()) is evens, mode
    fake.module_options[("pg_advisor", "assume_balanced")] = "no"
    assert not module.balanced(module.current_options())


def test_the_panel_follows_its_options_and_survives_a_busy_port(module: Module,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    fake = mgr_stub.BaseMgrModule.fake
    ports: List[int] = []
    while len(ports) < 3:          # three different ones
        ports = list(dict.fromkeys(ports + [free_port()]))
    try:
        fake.module_options[("pg_advisor", "server_port")] = ports[0]
        module.background.keep_panel()
        assert fake.uri == f"http://127.0.0.1:{ports[0]}/"
        assert urllib.request.urlopen(fake.uri + "api/history", timeout=10).status == 200
        # a new port: served there, the old one released
        fake.module_options[("pg_advisor", "server_port")] = ports[1]
        module.background.keep_panel()
        assert fake.uri == f"http://127.0.0.1:{ports[1]}/"
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", ports[0])) != 0
        with socket.socket() as s:
            s.bind(("127.0.0.1", ports[2]))
            s.listen()
            # a port in use: said in the log, no URL published, and this process lives on
            fake.module_options[("pg_advisor", "server_port")] = ports[2]
            module.background.keep_panel()
            assert fake.uri == ""
            assert "panel not started" in caplog.text
        module.background.keep_panel()          # same options: not retried until they change
        assert fake.uri == ""
        fake.module_options[("pg_advisor", "server_port")] = ports[0]
        module.background.keep_panel()
        assert fake.uri == f"http://127.0.0.1:{ports[0]}/"
    finally:
        module.panel.stop()


def test_an_unchanged_cluster_is_read_once_and_mapped_once(
        module: Module, monkeypatch: pytest.MonkeyPatch) -> None:
    # the background's tick, the panel's status refresh, the sizing checks and a `status`
    # command on a cluster whose OSDMap epoch and PG summary have not moved: no pg dump is
    # read and no CRUSH is run after the first (at 10,000 OSDs each cost seconds of the
    # mgr's GIL, every 2 s); a new epoch or new PG stats read it all again
    import pg_advisor.crush.placement as placement
    runs = [0]
    real = placement.do_rule

    def counted(*args: Any, **kw: Any) -> Any:
        runs[0] += 1
        return real(*args, **kw)
    monkeypatch.setattr(placement, "do_rule", counted)
    fake = mgr_stub.BaseMgrModule.fake
    remote = module.remote
    asked = [0]

    def autoscaler(mod: str, *args: Any, **kw: Any) -> Any:
        asked[0] += mod == "pg_autoscaler"      # its pick is computed, never asked of it
        return remote(mod, *args, **kw)
    monkeypatch.setattr(module, "remote", autoscaler)

    def everything() -> None:
        module.background.run_plan()
        module.background.refresh_status()
        module.background.refresh_health()
        assert module._handle_command(None, {"prefix": "pg-advisor status", "format": "json"})[0] == 0
    everything()
    reads, crush, scaler = fake.reads["pg_dump"], runs[0], asked[0]
    assert reads >= 1 and crush >= 1 and scaler == 0
    copies = fake.reads["get_osdmap"]
    for _ in range(3):
        everything()
    assert (fake.reads["pg_dump"], runs[0], asked[0]) == (reads, crush, scaler)
    # nor is the mgr's OSDMap copied for its epoch: notify says when it changes
    assert fake.reads["get_osdmap"] == copies
    # a new map: read again, once; where it changed nothing CRUSH reads (a round's items),
    # its CRUSH sets are the last snapshot's (crush/placement.Placer.carry)
    fake.docs["osd_map"]["epoch"] += 1
    everything()
    everything()
    assert fake.reads["pg_dump"] == reads + 1 and runs[0] == crush
    assert fake.reads["get_osdmap"] == copies + 1
    # an OSD reweighted: mapped again
    fake.docs["osd_map"]["epoch"] += 1
    fake.docs["osd_map"]["osds"][0]["weight"] = 0.5
    everything()
    assert fake.reads["pg_dump"] == reads + 2 and runs[0] > crush
    # new PG stats (objects written): read again, CRUSH's sets kept
    crush = runs[0]
    fake.docs["pg_dump"]["pg_stats_sum"]["stat_sum"]["num_objects"] += 10
    everything()
    assert fake.reads["pg_dump"] == reads + 3 and runs[0] == crush
    # a summary that cannot be read: nothing is kept, every read is fresh
    del fake.docs["pg_dump"]["pg_stats"]
    code = module._handle_command(None, {"prefix": "pg-advisor status"})[0]
    assert code == -22 and fake.reads["pg_dump"] == reads + 4


def test_the_status_refresh_takes_one_snapshot(module: Module, monkeypatch: pytest.MonkeyPatch) -> None:
    # the status and the figures /metrics adds to it read the same snapshot: each take asks
    # the mgr for the PG summary and the map's epoch, even when it then reuses the last
    taken = calls(monkeypatch, module.reader, "take_snapshot")
    module.background.refresh_status()
    assert len(taken) == 1 and module.panel.status is not None
    assert module.panel.served["figures"]["misplaced_ratio"] is not None


def test_a_snapshot_asks_for_the_pg_summary_and_the_settings_once(module: Module) -> None:
    # the change key and a fresh read share one pg_status and one read of each cluster
    # setting (they each asked for them)
    fake = mgr_stub.BaseMgrModule.fake
    setting = "option mon_max_pg_per_osd"
    for fresh in (True, False):
        before, dumps = fake.reads.get("pg_status", 0), fake.reads.get("pg_dump", 0)
        asked = fake.reads.get(setting, 0)
        module.reader.take_snapshot()
        assert fake.reads.get("pg_dump", 0) == dumps + fresh
        assert fake.reads["pg_status"] == before + 1
        assert fake.reads[setting] == asked + 1


def interpreter_state() -> Tuple[Any, ...]:
    """What the mgr's modules share on Tentacle (one Python interpreter for them all)."""
    import gc
    import logging
    import signal
    import sys
    import warnings
    return (gc.isenabled(), gc.get_threshold(), list(logging.getLogger().handlers),
            logging.getLogger().level, logging.raiseExceptions, list(warnings.filters),
            sys.getswitchinterval(), sys.getrecursionlimit(),
            {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)})


@pytest.mark.parametrize("collector_on", [True, False])
def test_a_read_changes_nothing_the_interpreter_shares(
        module: Module, monkeypatch: pytest.MonkeyPatch, collector_on: bool) -> None:
    # not the cyclic collector, not for the span of a read: on Tentacle every other module
    # runs in the same interpreter; as it was before, during and after, failed read or not
    import gc
    from pg_advisor.mgr import read as adapter
    load = adapter.snapshot.load
    was = gc.isenabled()
    # earlier tests' modules, dead but not yet collected, would take their log handlers off
    # the root logger when a collection during the read finalizes them (mgr_module's
    # __del__): collected first, so that what changes is the read's doing
    gc.collect()
    (gc.enable if collector_on else gc.disable)()
    try:
        before = interpreter_state()
        seen: List[Any] = []

        def watched(*args: Any, **kw: Any) -> Any:
            seen.append(interpreter_state())
            if len(seen) == 2:
                raise adapter.AdvisorError.invalid("a bad dump")
            return load(*args, **kw)
        monkeypatch.setattr(adapter.snapshot, "load", watched)
        module.reader.take_snapshot()
        fake = mgr_stub.BaseMgrModule.fake
        fake.docs["osd_map"]["epoch"] += 1
        with pytest.raises(adapter.AdvisorError):
            module.reader.take_snapshot()
        assert seen == [before, before] and interpreter_state() == before
    finally:
        (gc.enable if was else gc.disable)()


def costly_and_changed(module: Module) -> Tuple[Any, int]:
    """A snapshot whose read took 10 s (a big cluster), then a new map: (the fake mgr, its
    pg_dump reads so far)."""
    fake = mgr_stub.BaseMgrModule.fake
    module.reader.take_snapshot()
    module.reader.snaps._took = 10.0
    fake.docs["osd_map"]["epoch"] += 1
    return fake, fake.reads["pg_dump"]


def test_a_costly_read_waits_for_views_but_not_for_a_command_that_acts(module: Module) -> None:
    # where a read costs 10 s (a big cluster), a new map is read within MAP_LAG_MAX, not at
    # once, for what only looks; a command about to change the cluster reads it at once
    fake, reads = costly_and_changed(module)
    assert module._handle_command(None, {"prefix": "pg-advisor status", "format": "json"})[0] == 0
    module.background.refresh_status()
    assert fake.reads["pg_dump"] == reads
    module._handle_command(None, {"prefix": "pg-advisor abort"})
    assert fake.reads["pg_dump"] == reads + 1


def test_a_command_that_looks_leaves_a_costly_read_to_the_background(module: Module) -> None:
    # `status` of a big cluster answers from the last snapshot at once; the background,
    # woken, reads the new one
    fake, reads = costly_and_changed(module)
    module.reader.snaps._at -= 60.0       # past the 15 s a new map may wait
    module._wake.clear()
    before = module._handle_command(None, {"prefix": "pg-advisor status", "format": "json"})
    assert before[0] == 0 and fake.reads["pg_dump"] == reads
    assert module.reader.snaps.due and module._wake.is_set()
    module.background.read_due()
    assert fake.reads["pg_dump"] == reads + 1 and not module.reader.snaps.due


def test_a_big_cluster_is_read_through_the_brief_pg_stats(
        module: Module, monkeypatch: pytest.MonkeyPatch) -> None:
    # past pg_stats_full_max PGs the module never asks for the whole PG map (at 320,000 PGs
    # get('pg_dump') held the mgr 17-32 s and left it 6-8 GiB larger): `pg dump pgs_brief`,
    # pg_progress and osd_stats give what it needs, and what they lack is said
    fake = mgr_stub.BaseMgrModule.fake
    full = module.reader.take_snapshot()
    assert full.pgs is not None and full.pgs.logs and fake.reads.get("pg_dump", 0) >= 1
    asked: List[Dict[str, Any]] = []

    def mon_command(c: Dict[str, Any], inbuf: Any = None) -> Tuple[int, str, str]:
        asked.append(c)
        if c["prefix"] == "config dump":      # each OSD's settings: none set here
            return 0, "[]", ""
        return 0, json.dumps(mgr_stub.pgs_brief(fake.docs["pg_dump"])), ""
    monkeypatch.setattr(module, "mon_command", mon_command)
    fake.module_options[("pg_advisor", "pg_stats_full_max")] = full.pgs.count - 1   # read again
    before = fake.reads.get("pg_dump", 0)
    snap = module.reader.take_snapshot()
    assert fake.reads.get("pg_dump", 0) == before, "the whole PG map was read"
    assert [c["dumpcontents"] for c in asked if c["prefix"] == "pg dump"] == [["pgs_brief"]]
    a, b = full.pgs, snap.pgs
    assert b is not None and not b.logs and b.count == a.count
    for col in ("pool", "ps", "up", "acting", "up_primary", "bytes"):
        assert np.array_equal(getattr(a, col), getattr(b, col)), col
    assert b.state == a.state
    # objects: each pool's (ceph df) shared out by bytes, never more than the pool has
    for pool in snap.pools:
        mine, has = b.pool == pool.id, pool.objects or 0
        assert has - int(mine.sum()) <= int(b.objects[mine].sum()) <= has, pool.name
    out = json.loads(module._handle_command(None, {"prefix": "pg-advisor status", "format": "json"})[1])
    assert out["pg_source"] == "pg_stats_brief"
    assert all(o["pg_memory_now"] is None for o in out["osds"]), "memory from logs it did not read"
    # at the bound or under it, the full stats again
    fake.module_options[("pg_advisor", "pg_stats_full_max")] = full.pgs.count
    again = module.reader.take_snapshot().pgs
    assert again is not None and again.logs and fake.reads["pg_dump"] == before + 1


def own_option_reads() -> Dict[str, int]:
    """How often each of the module's own options was read from the mgr so far."""
    return {k: v for k, v in mgr_stub.BaseMgrModule.fake.reads.items()
            if k.startswith("module_option ") and "/" not in k}


def test_the_options_are_read_once_at_start_and_once_per_change(module: Module) -> None:
    # the serve loop, the panel, the health checks and the commands take the options read
    # last; only config_notify (which the mgr calls after `ceph config set`) reads them again
    from pg_advisor.model.options import SPECS
    fake = mgr_stub.BaseMgrModule.fake
    start = own_option_reads()
    assert {s.name: start.get("module_option " + s.name) for s in SPECS} == {s.name: 1 for s in SPECS}

    def work() -> None:
        for _ in range(5):
            module.background.tick()
        for name in ("status", "mode", "progress", "plan"):
            assert module._handle_command(None, {"prefix": "pg-advisor " + name, "format": "json"})[0] == 0
    try:
        fake.module_options[("pg_advisor", "server_port")] = free_port()    # not 9285: tests run beside
        once = own_option_reads()
        assert all(once[k] == start.get(k, 0) + 1 for k in once) and set(start) <= set(once)
        work()
        assert own_option_reads() == once
        fake.module_options[("pg_advisor", "sleep_interval")] = 30
        assert module.current_options().sleep_interval == 30
        again = own_option_reads()
        assert all(again[k] == once[k] + 1 for k in once)
        work()
        assert own_option_reads() == again
    finally:
        module.panel.stop()


def test_the_serve_thread_and_a_command_asking_first_get_one_driver(
        module: Module, monkeypatch: pytest.MonkeyPatch) -> None:
    # both threads find no Driver yet, and the first one's is slow to make (it reads the
    # store): it waits for a second Driver to be made, which only a race makes (under the
    # lock it waits out its second, and the other thread waits on the lock)
    import threading
    from pg_advisor import module as module_py
    made: List[object] = []
    second = threading.Event()
    real = module_py.Driver

    def slow(*args: Any) -> Any:
        made.append(args)
        if len(made) == 1:
            second.wait(timeout=1)
        else:
            second.set()
        return real(*args)
    monkeypatch.setattr(module_py, "Driver", slow)
    together = threading.Barrier(2)
    got: List[object] = []

    def ask() -> None:
        together.wait(timeout=10)
        got.append(module.driver)
    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(got) == 2 and got[0] is got[1] is module.driver
