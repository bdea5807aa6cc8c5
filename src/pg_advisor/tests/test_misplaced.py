"""The misplaced budget is one rule (model/misplaced.py): plan rounds, the removal of full
pg-upmaps and `balance` live and offline take it from the same object."""
from typing import Any, Dict, Optional

import pytest

from pg_advisor.execute.context import BalanceRequest
from pg_advisor.execute.driver import Driver
from pg_advisor.model import snapshot
from pg_advisor.model.distribution import object_copies
from pg_advisor.model.misplaced import (ROUND_FILL, MisplacedBudget, misplaced_fraction, misplaced_max,
                                        shard_objects)
from pg_advisor.model.options import BalanceMode, make
from pg_advisor.execute import operator_commands as ops

from .fakes import FakeCeph, context


def test_a_round_takes_its_share_of_the_budget_less_what_is_misplaced(snap: snapshot.Snapshot) -> None:
    b = MisplacedBudget.of(snap, 0.05)
    assert b.copies is not None and b.first_free == (snap.misplaced_objects == 0)
    assert abs(b.copies - max(0.05 * ROUND_FILL * object_copies(snap) - snap.misplaced_objects, 0)) < 1e-6
    # the option, else the cluster's ratio
    assert misplaced_max(make({}), 0.07) == 0.07
    assert misplaced_max(make({"misplaced_budget": 0.01}), 0.07) == 0.01
    assert MisplacedBudget.from_options(snap, make({"misplaced_budget": 0.01}), 0.07) == \
        MisplacedBudget.of(snap, 0.01)


def test_the_first_move_is_free_only_when_nothing_is_misplaced() -> None:
    free, held = MisplacedBudget(10.0, True), MisplacedBudget(10.0, False)
    assert free.affordable(0.0, 50.0) and not held.affordable(0.0, 50.0)
    assert not free.affordable(1.0, 50.0)          # the first move only
    assert free.affordable(4.0, 6.0) and not free.affordable(4.0, 6.5)
    assert MisplacedBudget(None, False).affordable(1e18, 1e18)     # no PG stats: no limit


def test_one_formula_for_what_moving_shards_misplaces(snap: snapshot.Snapshot) -> None:
    pool = snap.pool_by_name("rbd")
    copies = object_copies(snap)
    assert shard_objects(pool, pool.pg_num, 0) == 0.0
    assert abs(misplaced_fraction(pool, pool.pg_num, 3, copies) * copies
               - shard_objects(pool, pool.pg_num, 3)) < 1e-9
    assert misplaced_fraction(pool, pool.pg_num, 3, 0.0) == 0.0


def test_live_balance_obeys_the_misplaced_budget_option(dumps: Dict[str, Any]) -> None:
    ceph = FakeCeph(dumps)
    kv: Dict[str, Optional[str]] = {}
    drv = Driver(kv.get, kv.__setitem__, 0.0)
    req = BalanceRequest(None, 1000, BalanceMode.PGS, dry_run=True)

    def balance(budget: float, ratio: float) -> Any:
        return ops.balance(drv.plans, context(ceph, make({"misplaced_budget": budget}), ratio=ratio), req)
    wide, tight = balance(1.0, 1e-9), balance(1e-9, 1.0)
    assert wide["moves"] > 1 and not wide["throttled"]
    assert tight["moves"] == 1 and tight["throttled"]     # the first move alone: nothing misplaced


@pytest.mark.parametrize("now, step, most, goes", [
    (0.0, 0.5, 0.05, True),       # nothing misplaced: the step goes, however big (first free)
    (0.01, 0.03, 0.05, True),     # within the budget
    (0.01, 0.04, 0.05, True),     # at it
    (0.01, 0.05, 0.05, False),    # past it: the step waits
    (0.06, 0.0, 0.05, False),     # already past, even a step that misplaces nothing waits
])
def test_a_plan_step_goes_by_the_rounds_rule_on_the_whole_budget(now: float, step: float, most: float,
                                                                 goes: bool) -> None:
    from pg_advisor.model.misplaced import step_fits
    assert step_fits(now, step, most) is goes
