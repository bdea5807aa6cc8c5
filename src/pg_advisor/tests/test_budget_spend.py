"""The work a run may do, counted in its budget (balance/budget.py): legality checks and
the rows its pool states built again, one bound, one note."""
from typing import List

import numpy as np
import pytest

from pg_advisor.balance.balancer import Balancer
from pg_advisor.balance.budget import Budget, Stop
from pg_advisor.model import snapshot


def test_spend_counts_the_rows_built_and_stops_once_past_the_bound() -> None:
    said: List[int] = []
    b = Budget(None, False, None, work=10, work_max=100, on_work_stop=lambda: said.append(b.work))
    b.start(5)
    b.rows_built = 30
    assert b.spend(20) and b.work == 60 and b.rows_built == 0
    assert b.spend(40) and b.work == 100 and not b.stopped      # at the bound: not past it
    assert not b.spend(1) and b.stop is Stop.WORK and b.out_of_work and said == [101]
    assert not b.spend(1) and said == [101]                     # the note once
    b.halt(Stop.MISPLACED)
    assert b.stop is Stop.WORK                                  # the partial answer's reason stands


def test_work_within_the_bound_is_counted_and_never_stops() -> None:
    # every budget has a work bound (a run without one could hold the mgr for minutes)
    with pytest.raises(TypeError):
        Budget(None, False, None, work=0)      # type: ignore[call-arg]
    b = Budget(None, False, None, work=0, work_max=(1 << 40) + 7)
    b.start(1)
    b.rows_built = 7
    assert b.spend(1 << 40) and b.work == (1 << 40) + 7 and not b.stopped
    assert not b.spend(1) and b.out_of_work


def test_a_run_charges_its_states_rebuilt_rows_to_its_own_budget(snap: snapshot.Snapshot) -> None:
    b = Balancer(snap, pools=["rbd"])
    st = b.states[0]
    assert st.budget is b.budget and b.budget.work_max is not None
    row = 0
    src = int(st.up[row][0])
    dst = next(o for o in range(snap.osds.count) if o not in st.up[row].tolist() and st.allowed[o])
    b.budget.start(10)
    assert b.apply_move(st, row, src, dst)
    before = b.budget.work
    # built again, the move made dst's array stale: the rows it held count, the one come since joins
    got = st.rows(dst)
    assert row in got.tolist() and b.budget.rows_built == got.size - 1
    assert b.budget.spend(0) and b.budget.work == before + got.size - 1 and b.budget.rows_built == 0
    assert np.array_equal(st.rows(dst), got) and b.budget.rows_built == 0     # kept until it changes


def test_a_run_is_freed_when_its_last_reference_goes(snap: snapshot.Snapshot) -> None:
    # the mgr builds a run for every round and command: its parts' callbacks into it must
    # not make a cycle, or its arrays would wait for the cycle collector
    import gc
    import weakref
    gc.collect()
    gc.disable()
    try:
        b = Balancer(snap)
        b.run()
        assert b.budget.on_work_stop is not None
        gone = weakref.ref(b)
        del b
        assert gone() is None
    finally:
        gc.enable()


@pytest.mark.parametrize("first_free", [True, False])
def test_a_chain_payable_at_once_is_charged_move_by_move(first_free: bool) -> None:
    # with nothing misplaced the budget lets a first payment pass it: a chain paid as one
    # sum must then have both its charges taken (the second was refused, half a chain made)
    b = Budget(100.0, first_free, np.full(4, 2), work=0, work_max=1000)
    b.start(10)
    assert b.payable([80.0, 80.0], [0, 1, 1, 2]) is first_free
    if not first_free:
        assert b.stop is Stop.MISPLACED
        return
    assert b.charge(80.0, [0, 1]) and b.charge(80.0, [1, 2]) and not b.stopped
    b.paid_in_full()
    assert not b.charge(1.0, [3, 2]) and b.stop is Stop.MISPLACED     # past the budget now
    assert b.osd_room is not None and b.osd_room.tolist() == [1, 0, 1, 2]


def test_a_chain_is_not_paid_past_the_room_or_the_moves_left() -> None:
    b = Budget(None, False, np.full(3, 1), work=0, work_max=1000)
    b.start(10)
    assert not b.payable([1.0, 1.0], [0, 1, 1, 2]) and b.stop is Stop.ROOM    # osd.1 both ends
    b = Budget(None, False, None, work=0, work_max=1000)
    b.start(1)
    assert not b.payable([1.0, 1.0], [0, 1, 1, 2]) and not b.stopped          # one move left
    assert b.charge(1.0, [0, 1])
