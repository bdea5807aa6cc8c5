"""Commands that act are done by the serve thread (mgr/intents.py): the handler waits at
most command_wait for the answer, reads nothing itself, and past the wait answers "queued"
with the outcome in the history."""
import errno
import itertools
import threading
import time
from typing import Any, Dict, List

import pytest

from pg_advisor.mgr.intents import QUEUE_MAX, Intents
from pg_advisor.model.errors import AdvisorError
from pg_advisor.module import Module

from . import mgr_stub
from .conftest import cmd


def test_an_intent_done_within_the_wait_answers_with_its_report_or_its_error() -> None:
    q = Intents()
    ok, bad = q.put("apply", lambda s: {"plan": "p1"}, 0.0), q.put("drain", lambda s: {}, 0.0)
    assert q.take() == [ok, bad] and q.take() == [] and not q.waiting
    assert q.finish(ok, {"plan": "p1"}, None) is False       # nobody answered "queued" yet
    assert q.answer(ok, 0.0) == {"plan": "p1"}
    q.finish(bad, None, AdvisorError.busy("not draining: 4 plans open"))
    with pytest.raises(AdvisorError) as e:
        q.answer(bad, 0.0)
    assert e.value.code == -errno.EBUSY


def test_past_the_wait_the_answer_is_queued_and_the_outcome_is_for_the_history() -> None:
    q = Intents()
    it = q.put("apply", lambda s: {}, 0.0)
    r = q.answer(it, 0.01)
    assert r["queued"] is True and r["intent"] == it.id and r["command"] == "apply"
    assert q.finish(it, {"plan": "p9"}, None) is True
    assert it.outcome() == f"apply (queued as {it.id}) done: plan p9"


def test_the_queue_is_bounded_and_a_stopping_module_refuses_what_waits() -> None:
    q = Intents()
    waiting = [q.put("balance", lambda s: {}, 0.0) for _ in range(QUEUE_MAX)]
    with pytest.raises(AdvisorError) as e:
        q.put("balance", lambda s: {}, 0.0)
    assert e.value.code == -errno.EBUSY and f"{QUEUE_MAX} commands already wait" in e.value.message
    q.close("the module is stopping")
    with pytest.raises(AdvisorError):
        q.answer(waiting[0], 0.0)
    with pytest.raises(AdvisorError):
        q.put("apply", lambda s: {}, 0.0)


def heavy(reads: Dict[str, int]) -> Dict[str, int]:
    """The reads of the cluster, not of the change key, which the handler reads to know
    whether a costly read comes first: the PG summary and the options (a few hundred bytes),
    and the map's epoch (one copy per new map, mgr/epoch.py, whoever asks first)."""
    return {k: v for k, v in reads.items()
            if k not in ("pg_status", "get_osdmap") and not k.startswith("option ")}


def unhooked(m: Module) -> Module:
    """The module without conftest's stand-in (intents done inside wake): a real serve
    thread, or none."""
    setattr(m, "wake", Module.wake.__get__(m))
    return m


def test_with_no_wait_the_handler_reads_nothing_changes_nothing_and_the_serve_thread_acts(wired: Any) -> None:
    m, ceph, _ = wired
    m = unhooked(m)
    fake = mgr_stub.BaseMgrModule.fake
    fake.module_options[("pg_advisor", "command_wait")] = 0
    m.config_notify()
    m.reader.take_snapshot()
    fake.docs["osd_map"]["epoch"] += 1          # a change: the next fresh snapshot reads it
    reads = dict(fake.reads)
    code, r, _ = cmd(m, "apply", pool="rbd", pg_num=64)
    assert code == 0 and r["queued"] is True and r["command"] == "apply"
    assert heavy(fake.reads) == heavy(reads) and ceph.sent == [] and m.driver.executor.state is None
    code, bad, _ = cmd(m, "drain", osd_or_bucket="osd.99")
    assert code == 0 and bad["queued"] is True
    waiting = cmd(m, "progress")[1]["commands_waiting"]
    assert [(w["intent"], w["command"]) for w in waiting] == [(r["intent"], "apply"),
                                                              (bad["intent"], "drain")]
    text = m._handle_command(None, {"prefix": "pg-advisor progress"})[1]
    assert f"waiting for the background: apply (queued as {r['intent']})" in text
    assert "no plan has run" in text
    m.background.run_intents()                   # the serve loop's first job
    assert cmd(m, "progress")[1]["commands_waiting"] == []
    assert fake.reads["pg_dump"] == reads["pg_dump"] + 1, "one fresh read for both"
    st = m.driver.executor.state
    assert st is not None and st.source == "apply"
    said = [h["detail"] for h in cmd(m, "history")[1]["history"] if h["event"] == "command"]
    assert said == [f"apply (queued as {r['intent']}) done: plan {st.id}",
                    f"drain (queued as {bad['intent']}) refused: " + said[1].split("refused: ")[1]]
    assert "osd.99" in said[1]
    # plain text says the same as json
    out = m._handle_command(None, {"prefix": "pg-advisor abort"})
    assert out[0] == 0 and "queued as" in out[1]


def test_with_the_serve_thread_running_the_command_answers_its_report(wired: Any) -> None:
    m, ceph, _ = wired
    m = unhooked(m)
    t = threading.Thread(target=m.serve, daemon=True)
    t.start()
    try:
        code, r, err = cmd(m, "apply", pool="rbd", pg_num=64)
        assert code == 0 and r.get("plan"), (r, err)
        code, _, err = cmd(m, "apply", pool="rbd", pg_num=128)
        # the serve thread's error, in the handler
        assert code == -errno.EBUSY and "already changing" in err
        code, dry, err = cmd(m, "balance", dry_run=True)       # answered by the handler
        assert code == 0 and dry["dry_run"] is True, err
    finally:
        m.shutdown()
        t.join(30)
    assert not t.is_alive()
    events: List[Any] = [h["event"] for h in cmd(m, "history")[1]["history"]]
    assert "command" not in events, "every outcome went back to its handler"


def test_where_a_costly_read_comes_first_the_handler_answers_queued_at_once(wired: Any) -> None:
    """The handler holds this module's command thread (the mgr's finisher, which also
    brings its notifications): it waits for the serve thread only where that needs no
    costly read first."""
    m, ceph, _ = wired
    m = unhooked(m)                               # no serve thread: a wait lasts command_wait
    fake = mgr_stub.BaseMgrModule.fake
    fake.module_options[("pg_advisor", "command_wait")] = 30
    m.config_notify()
    m.reader.take_snapshot()
    fake.docs["osd_map"]["epoch"] += 1
    assert not m.reader.fresh_read_costly(), "a cheap read: the handler may wait for it"
    ticks = itertools.count(0.0, 5.0)
    m.reader.snaps.clock = lambda: next(ticks)    # each read now measures 5 s: costly
    m.reader.take_snapshot(fresh=True)
    fake.docs["osd_map"]["epoch"] += 1
    assert m.reader.fresh_read_costly()
    reads, t0 = dict(fake.reads), time.monotonic()
    code, r, _ = cmd(m, "apply", pool="rbd", pg_num=64)
    assert code == 0 and r["queued"] is True and time.monotonic() - t0 < 25
    assert heavy(fake.reads) == heavy(reads) and m.driver.executor.state is None
    m.background.run_intents()                    # reads the new map, then applies
    assert m.driver.executor.state is not None
    assert not m.reader.fresh_read_costly(), "the kept snapshot serves: nothing to read first"
