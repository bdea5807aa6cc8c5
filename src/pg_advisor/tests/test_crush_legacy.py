"""argonaut's CRUSH tunables (choose_local_tries 2, choose_local_fallback_tries 5,
choose_total_tries 19, chooseleaf_descend_once 0, chooseleaf_vary_r 0) against Ceph's own
tools, from a fixture they made (qa/maps/bucket_maps.py --legacy writes it;
qa/maps/test_crush_exact.py checks it is still what they say and compares more maps): 48
OSDs in 4 hosts of 12, uniform, list, tree and straw under a straw root, 4 replicas of 4
hosts, osd.5 out and osd.13 of CRUSH weight 0; a firstn rule and an indep one. Every PG
and crush_do_rule result is checked against them in test_crush_buckets.py; here, that the
fixture needs the local retries, and the fallback's permutation draw."""
from typing import Any, Dict, List

import numpy as np
import pytest

from pg_advisor.crush import mapper
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot

from pg_advisor_testkit.dumps import read
from .test_crush_buckets import LEGACY, bucket_runs, load as buckets_load, pg_mismatches as buckets_mismatches
from .test_crush_msr import crush_results, differ


def load(pool_rule: int) -> snapshot.Snapshot:
    return buckets_load(pool_rule, fixture=LEGACY)


def pg_mismatches(snap: snapshot.Snapshot, pool_rule: int) -> List[str]:
    return buckets_mismatches(snap, pool_rule, LEGACY, 768)


def runs() -> List[Dict[str, Any]]:
    return bucket_runs(LEGACY)


def test_the_fixture_holds_argonauts_tunables() -> None:
    t = read("crush_dump_rule0.json", LEGACY)["tunables"]
    assert (t["choose_local_tries"], t["choose_local_fallback_tries"], t["choose_total_tries"],
            t["chooseleaf_descend_once"], t["chooseleaf_vary_r"]) == (2, 5, 19, 0, 0)


def test_the_local_retries_decide_many_of_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # the fixture tests the local retries: mapped as firefly maps (no retry in the bucket,
    # no permutation fallback), many inputs land elsewhere
    plain = mapper._choose_firstn
    monkeypatch.setattr(mapper, "choose_firstn", lambda ctx, batch, spec, reach=None: plain(
        ctx, batch, spec._replace(local_tries=0, local_fallback=0), reach))
    snap = load(0)
    assert len(pg_mismatches(snap, 0)) > 20
    wrong = [len(differ(crush_results(snap, run), run)) for run in runs() if run["rule"] == 0]
    assert min(wrong) > 20, wrong


def test_the_fallback_draws_by_permutation_whatever_the_algorithm() -> None:
    # bucket_perm_choose over a list bucket: the uniform draw's permutation of its items
    snap = load(0)
    cm = Placer(snap).crush
    from pg_advisor.crush.descent import RunContext
    ctx = RunContext(cm, None, np.full(cm.max_devices, 0x10000, dtype=np.int64))
    host1 = next(i for i in range(cm.max_buckets) if cm.exists[i] and cm.alg_id[i] == 2)
    x = np.arange(200, dtype=np.int64)
    picks = ctx.perm_choose(np.full(200, host1), x, np.zeros(200, dtype=np.int64))
    assert set(picks.tolist()) <= set(cm.items[host1, :cm.size[host1]].tolist())
    # r and r + size pick the same item (the permutation is taken modulo the size)
    again = ctx.perm_choose(np.full(200, host1), x, np.full(200, int(cm.size[host1])))
    assert picks.tolist() == again.tolist()
    # a permutation: r = 0 .. size-1 pick each item once for any x
    one = [int(ctx.perm_choose(np.array([host1]), np.array([7]), np.array([r]))[0])
           for r in range(int(cm.size[host1]))]
    assert sorted(one) == sorted(cm.items[host1, :cm.size[host1]].tolist())
