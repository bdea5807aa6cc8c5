"""The unit tests' fixtures: the captured 6-OSD cluster's dumps and snapshot, and the module
as the mgr runs it over them (mgr_stub.py), wired to a simulated mon."""
import json
import os
import socket
from typing import Any, Dict, Iterator

import pytest

from pg_advisor.model import snapshot
from pg_advisor_testkit import crush_memo
from pg_advisor_testkit.dumps import DUMP_FILES, read

from . import mgr_stub
from .fakes import FakeCeph

mgr_stub.install()      # Ceph's own mgr_module over a stand-in for the C++ side

from pg_advisor.module import Module  # noqa: E402

Module._register_options("pg_advisor")  # as the mgr does when it loads the module
Module._register_commands("pg_advisor")

# CRUSH's runs kept across tests (pg_advisor_testkit/crush_memo.py); PG_ADVISOR_CRUSH_MEMO=0
# runs every one
MEMO = None if os.environ.get("PG_ADVISOR_CRUSH_MEMO") == "0" else crush_memo.install()


@pytest.fixture(autouse=True)
def crush_memo_outside_the_crush_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """The CRUSH engine's own tests (test_crush*.py) map every input themselves."""
    if MEMO is not None:
        MEMO.bypass = request.module.__name__.rpartition(".")[2].startswith("test_crush")
    yield
    if MEMO is not None:
        MEMO.bypass = False


def free_port() -> int:
    """A loopback port nothing listens on (the kernel's pick, released at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def dumps() -> Dict[str, Any]:
    """The four dumps captured from a real 6-OSD cluster (see qa/cluster/capture_fixtures.sh)."""
    return {k: read(v) for k, v in DUMP_FILES.items()}


@pytest.fixture
def snap(dumps: Dict[str, Any]) -> snapshot.Snapshot:
    return snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"],
                         autoscale=read("autoscale_status.json"))


@pytest.fixture
def module(dumps: Dict[str, Any]) -> Module:
    """The module as the mgr runs it, over the 6-OSD dumps."""
    # the mgr hands out the pg map bare, the same documents otherwise
    fake = mgr_stub.FakeMgr({"osd_map": dumps["osd_dump"], "osd_map_crush": dumps["crush"],
                             "pg_dump": dumps["pg_dump"]["pg_map"], "df": dumps["df"]})
    mgr_stub.BaseMgrModule.fake = fake
    m = Module("pg_advisor", None, None)
    # the only module it calls is progress (events in `ceph -s`), whose calls return nothing;
    # another module's call fails as the mgr fails it (pg_autoscaler's pick is computed)

    def remote(mod: str, meth: str, *args: Any, **kw: Any) -> None:
        if mod != "progress":
            raise ImportError(f"Module not found: {mod}")
    m.remote = remote
    return acting_at_once(m)


def acting_at_once(m: Module) -> Module:
    """`m` with its serve thread standing in at once: a command's intent is done inside its
    handler's wake, before the handler waits (test_intents.py runs the real thread)."""
    wake = m.wake

    def wake_and_act() -> None:
        wake()
        m.background.run_intents()
    setattr(m, "wake", wake_and_act)
    return m


@pytest.fixture
def wired(module: Module, dumps: Dict[str, Any]) -> Any:
    """The module with its commands to the mon going to a FakeCeph: (module, ceph, refresh)."""
    ceph = FakeCeph(dumps)
    fake = mgr_stub.BaseMgrModule.fake
    fake.options["target_max_misplaced_ratio"] = 0.05

    def refresh() -> None:      # what the mgr would hand out after the mon changed
        fake.docs["osd_map"] = ceph.dumps["osd_dump"]

    def send(cmd: Dict[str, Any]) -> Any:
        out = ceph.send(cmd)
        refresh()
        return out

    def set_option(key: str, value: Any) -> None:
        fake.module_options[("pg_advisor", key)] = value
    setattr(module, "send", send)
    # a burst's commands, each answered at once (the mgr sends them without waiting)
    setattr(module, "send_nowait", lambda c: (lambda r: lambda seconds: r)(send(c)))
    setattr(module, "set_module_option", set_option)
    return module, ceph, refresh


def cmd(m: Module, prefix: str, **kw: Any) -> Any:
    """A `ceph pg-advisor PREFIX -f json` through the module: (code, parsed out, err)."""
    code, out, err = m._handle_command(None, {"prefix": "pg-advisor " + prefix, "format": "json", **kw})
    return code, (json.loads(out) if out else None), err
