"""The serve loop (mgr/serve.py's MgrServe) in the module with a fake mgr: each job of a tick
under its guard, the wait cut short by a change, shutdown ending it."""
import socket
import threading
from typing import List

import pytest

from . import mgr_stub
from .conftest import free_port

from pg_advisor.module import Module


def test_the_loop_runs_until_shutdown_and_a_change_wakes_it(
        module: Module, monkeypatch: pytest.MonkeyPatch) -> None:
    # serve() blocks in the loop (here in a thread, as the mgr runs it); with nothing due for
    # an hour, config_notify makes it tick at once; shutdown ends it and frees the port
    fake = mgr_stub.BaseMgrModule.fake
    fake.module_options[("pg_advisor", "server_port")] = port = free_port()
    fake.module_options[("pg_advisor", "sleep_interval")] = 3600
    fake.module_options[("pg_advisor", "refresh_interval")] = 3600
    module._wake.clear()        # (each change above woke it)
    ticked: List[threading.Event] = [threading.Event() for _ in range(2)]
    tick = module.background.tick

    def counted() -> float:
        wait = tick()
        next(e for e in ticked + [threading.Event()] if not e.is_set()).set()
        return wait
    monkeypatch.setattr(module.background, "tick", counted)
    loop = threading.Thread(target=module.serve, daemon=True)
    loop.start()
    try:
        assert ticked[0].wait(60) and not ticked[1].is_set()
        assert fake.uri == f"http://127.0.0.1:{port}/"
        module.config_notify()
        assert ticked[1].wait(60)
    finally:
        module.shutdown()
        loop.join(60)
    assert not loop.is_alive()
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_a_tick_job_that_fails_is_logged_and_the_others_still_run(
        module: Module, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # each job of a tick runs under MgrServe._guard: the panel failing to start is a bug
    # logged, and the plan and the health checks are still served that tick
    fake = mgr_stub.BaseMgrModule.fake
    ran: List[str] = []

    def broken() -> None:
        raise ZeroDivisionError("the panel broke")
    monkeypatch.setattr(module.background, "keep_panel", broken)
    monkeypatch.setattr(module.background, "run_plan", lambda: ran.append("run_plan"))
    fake.health.clear()
    assert module.background.tick() > 0
    assert ran == ["run_plan"] and "PG_ADVISOR_TOO_FEW_PGS" in fake.health
    assert [r.levelname for r in caplog.records if "the panel broke" in r.getMessage()] == ["ERROR"]
