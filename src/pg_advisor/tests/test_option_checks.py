"""What the module reads goes through its checks: an option value the mon let through falls
back to its default and is reported, and the panel serves the status the serve loop computed,
once per refresh."""
import json
from typing import Any, List, Optional

import pytest

from . import mgr_stub

from pg_advisor.module import Module


def test_an_option_the_mon_let_through_falls_back_and_is_reported(module: Module) -> None:  # noqa: F811
    fake = mgr_stub.BaseMgrModule.fake
    fake.module_options[("pg_advisor", "misplaced_budget")] = float("nan")   # `config set` takes nan
    assert module.current_options().misplaced_budget == 0.0
    module.background.publish_health()
    check = fake.health.get("PG_ADVISOR_OPTION_INVALID")
    assert check and "misplaced_budget" in check["summary"] and "default 0.0" in check["summary"]
    assert module._handle_command(None, {"prefix": "pg-advisor status", "format": "json"})[0] == 0
    fake.module_options[("pg_advisor", "misplaced_budget")] = 0.02
    module.current_options()
    module.background.publish_health()
    assert "PG_ADVISOR_OPTION_INVALID" not in fake.health


def test_every_option_the_module_reads_goes_through_the_checks(module: Module) -> None:  # noqa: F811
    # the serve loop's intervals, the mode, the panel's address: read raw, a value the mon
    # let through ('nan', a port it cannot bind) reached int()/float() or the socket
    fake = mgr_stub.BaseMgrModule.fake
    for name, value in (("mode", "sideways"), ("server_port", "nan"), ("poll_interval", "nan")):
        fake.module_options[("pg_advisor", name)] = value
    try:
        assert module._handle_command(None, {"prefix": "pg-advisor mode", "format": "json"})[1] == \
            '{"mode": "advise"}'
        module.background.publish_health()
        summary = fake.health["PG_ADVISOR_OPTION_INVALID"]["summary"]
        assert "3 option value(s)" in summary
        module.background.keep_panel()
        assert module.panel.at == ("127.0.0.1", 9285)
    finally:
        for name in ("mode", "server_port", "poll_interval"):
            del fake.module_options[("pg_advisor", name)]
        module.panel.stop()


# -- the panel serves what the serve loop computed, once per refresh --------------------------

def test_the_panel_serves_the_status_computed_once_per_refresh(module: Module) -> None:  # noqa: F811
    import urllib.error
    import urllib.request
    from .conftest import free_port
    fake = mgr_stub.BaseMgrModule.fake
    calls: List[int] = []
    real = module.background.status

    def counted(pool: Optional[str] = None, snap: Any = None) -> Any:
        calls.append(1)
        return real(pool, snap)
    setattr(module.background, "status", counted)
    fake.module_options[("pg_advisor", "server_port")] = free_port()
    try:
        module.background.keep_panel()
        with pytest.raises(urllib.error.HTTPError) as early:    # not computed yet: no work here
            urllib.request.urlopen(fake.uri + "api/status", timeout=10)
        assert early.value.code == 503 and calls == []
        module.background.refresh_status()
        for _ in range(10):
            for path in ("api/status", "metrics", "api/progress", "api/history"):
                assert urllib.request.urlopen(fake.uri + path, timeout=10).status == 200
        served = json.loads(urllib.request.urlopen(fake.uri + "api/status", timeout=10).read())
        assert len(calls) == 1 and served == real()
    finally:
        module.panel.stop()


def test_a_choice_given_as_text_is_its_member() -> None:
    # `opts.mode is Mode.AUTO` holds however the options were made
    from pg_advisor.model.options import AssumeBalanced, BalanceMode, Mode, Options
    o = Options(mode="auto", balance_mode="pgs", assume_balanced="yes")   # type: ignore[arg-type]
    assert o.mode is Mode.AUTO and o.balance_mode is BalanceMode.PGS
    assert o.assume_balanced is AssumeBalanced.YES
    with pytest.raises(ValueError):
        Options(mode="sometimes")       # type: ignore[arg-type]
