"""The pacing benchmark's model (qa/bench/backfill_model.py) and its paths on a small map."""
import math

import numpy as np

from .backfill_model import Backfills, PgBackfill, pg_backfills
from .pacing import Model, build, parser, __doc__ as PACING_DOC

GIB = float(1 << 30)


def test_backfills_take_their_reservations_and_their_time() -> None:
    # 1 GiB at 1 GiB/s: a second each; two PGs into osd.3 wait for each other, a third
    # elsewhere runs beside them
    back = Backfills(6, 1, GIB, copies_bytes=6 * GIB)
    back.add([PgBackfill(0, (3,), (0,), GIB), PgBackfill(1, (3,), (1,), GIB),
              PgBackfill(2, (4,), (2,), GIB)])
    assert len(back.running) == 2 and len(back.queued) == 1
    assert math.isclose(back.misplaced(), 0.5)
    assert back.load().tolist() == [1, 1, 1, 2, 1, 0]
    back.advance(1.0)
    assert len(back.running) == 1 and not back.queued and back.running[0].primary == 1
    back.advance(1.0)
    assert back.idle() and back.moved == 3 * GIB and back.peak_running == 2


def test_pg_backfills_are_the_pgs_whose_up_sets_change() -> None:
    before = np.array([[0, 1, 2], [3, 4, 5]])
    after = np.array([[0, 1, 2], [3, 6, 4]])
    (b,) = pg_backfills(before, after, GIB)
    assert (b.primary, b.targets, b.leaving) == (3, (6,), (5,))


def test_every_path_moves_all_it_must_and_ceph_and_pg_advisor_split_the_same() -> None:
    a = parser(PACING_DOC, racks=2, hosts=5, osds_per_host=4, pg_num=256, to=512, pg_gib=1.0,
               backfill_mib_s=100.0, osd_max_backfills=1, days=1.0).parse_args([])
    m = Model(build(a), a)
    ceph, ours, pinned = m.ceph_split(), m.advisor_split(False, 2), m.advisor_split(True, 2)
    assert all(r.moved_at < math.inf for r in (ceph, ours, pinned))
    # the same children end on the same OSDs: the same bytes copied, paced otherwise
    assert ceph.moved == ours.moved > 0 and ceph.peak_misplaced > ours.peak_misplaced
    # pinned, the pgp_num steps move nothing and leave an item per child
    assert pinned.moved == 0 and pinned.items == 256
    # the default limit (0) is the cluster's: 8 x osd_max_backfills 1, as many backfills as
    # the chunks may start; labelled so
    default = m.advisor_split(False, 0)
    assert default.path.endswith("limit 8 (default)") and default.moved == ceph.moved
    assert default.moved_at <= ours.moved_at and default.peak_backfills >= ours.peak_backfills
    drained = m.advisor_drain("host0", 2)
    assert drained.moved_at < math.inf and drained.moved == m.ceph_drain(
        [o for o, h in enumerate(m.snap.osds.host) if h == "host0"]).moved
