"""The unit tests' memo of CRUSH runs (pg_advisor_testkit/crush_memo.py) gives what a run
gives and counts what it counts, and maps anew whatever a run reads that changed."""
import dataclasses
from typing import Any, Tuple

import numpy as np
import pytest

from pg_advisor.crush import mapper
from pg_advisor.crush.descent import CrushWork, RunContext
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot, work
from pg_advisor.model.constants import WEIGHT_ONE

from pg_advisor_testkit import crush_memo
from pg_advisor_testkit.dumps import read


def inputs(snap: snapshot.Snapshot) -> Tuple[Any, ...]:
    """A run of the rbd pool's rule over 256 inputs."""
    cm = Placer(snap).crush
    pool = snap.pool_by_name("rbd")
    rule = cm.find_rule(pool.crush_rule, 1, pool.size)
    weight = np.full(cm.max_devices, WEIGHT_ONE, dtype=np.int64)
    return RunContext(cm, None, weight), rule, np.arange(256, dtype=np.int64), pool.size


def load() -> snapshot.Snapshot:
    return snapshot.load(read("osd_dump.json"), read("crush_dump.json"))


def ran(call: Any, ctx: RunContext, *args: Any) -> Tuple[np.ndarray, np.ndarray, CrushWork, dict]:
    w = CrushWork(draws=5, replicas=7)      # a caller's work so far, added to
    before = dict(work.TALLY)
    res, rlen = call(dataclasses.replace(ctx, work=w), *args)
    spent = {k: v - before.get(k, 0) for k, v in work.TALLY.items() if v != before.get(k, 0)}
    return res, rlen, w, spent


def test_a_kept_run_gives_and_counts_what_the_run_gives_and_counts() -> None:
    memo = crush_memo.Memo(mapper.do_rule)
    args = inputs(load())
    real = ran(mapper.do_rule, *args)
    first = ran(memo.do_rule, *args)
    again = ran(memo.do_rule, *inputs(load()))        # another snapshot of the same map
    assert (memo.misses, memo.hits) == (1, 1)
    for got in (first, again):
        assert np.array_equal(got[0], real[0]) and np.array_equal(got[1], real[1])
        assert got[2] == real[2] and got[3] == real[3]
    assert real[3]["crush_draws"] > 0 and real[3]["crush_replicas"] == 256 * 3
    # what a caller does to its sets is not what the next one gets
    again[0][:] = -7
    assert np.array_equal(ran(memo.do_rule, *args)[0], real[0])


def test_what_a_run_reads_changed_is_mapped_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    memo = crush_memo.Memo(mapper.do_rule)
    ctx, rule, x, size = inputs(load())
    memo.do_rule(ctx, rule, x, size)
    out = ctx.dev_weight.copy()
    out[2] = 0
    crush = read("crush_dump.json")
    crush["buckets"][0]["items"][0]["weight"] //= 2
    for args in [(ctx, rule, x[:100], size), (ctx, rule, x, size - 1),
                 (dataclasses.replace(ctx, dev_weight=out), rule, x, size),
                 inputs(snapshot.load(read("osd_dump.json"), crush))]:
        misses = memo.misses
        memo.do_rule(*args)
        assert memo.misses == misses + 1
    # the engine patched, as the CRUSH tests patch it: its own runs
    monkeypatch.setattr(mapper, "AHEAD_MAX", 1)
    memo.do_rule(ctx, rule, x, size)
    assert memo.misses == 6 and memo.hits == 0
    memo.bypass = True
    memo.do_rule(ctx, rule, x, size)
    assert memo.misses == 6 and memo.hits == 0 and len(memo.runs) == 6


def test_the_suite_runs_through_the_memo_outside_the_crush_tests() -> None:
    # (test_crush.py checks the other side: there it is bypassed)
    from pg_advisor.crush import placement
    if crush_memo.MEMO is None:
        pytest.skip("PG_ADVISOR_CRUSH_MEMO=0: no memo")
    assert placement.do_rule == crush_memo.MEMO.do_rule and not crush_memo.MEMO.bypass
