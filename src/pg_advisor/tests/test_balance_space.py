"""Space-aware moves: no item sends a PG to an OSD that would pass the fill limit (the
cluster's nearfull_ratio, or backfillfull_ratio), counting what is already being copied
onto it; a drain that cannot place its replicas under it names the OSDs."""
from typing import Any, Dict, List

import numpy as np
import pytest

from pg_advisor.analysis.space import fill_room
from pg_advisor.balance.budget import Guards, Limits
from pg_advisor.balance.balancer import Balancer, BalanceResult
from pg_advisor.balance.drain import drain_report
from pg_advisor.balance.evener import fullness, used_bytes
from pg_advisor.balance.proposal import Aim, propose
from pg_advisor.model import snapshot
from pg_advisor.model.options import BalanceMode, FillLimit
from pg_advisor.model.load_pgs import pg_map_of

GIB = 1 << 30


def load(dumps: Dict[str, Any]) -> snapshot.Snapshot:
    return snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])


def gained(res: BalanceResult) -> Dict[int, List[float]]:
    """Per OSD: the bytes of each PG the run newly puts there."""
    out: Dict[int, List[float]] = {}
    for st in res.pools:
        for r in range(st.up.shape[0]):
            for o in set(st.up[r].tolist()) - set(st.start[r].tolist()):
                out.setdefault(o, []).append(float(st.bytes[r]))
    return out


def osd_stats(dumps: Dict[str, Any], osd: int) -> Dict[str, Any]:
    return next(s for s in pg_map_of(dumps["pg_dump"])["osd_stats"] if s["osd"] == osd)


def busiest(dumps: Dict[str, Any]) -> int:
    """The OSD the plain run (the fixture's OSDs are 4 % full) sends the most PGs to."""
    got = gained(Balancer(load(dumps)).run())
    return max(got, key=lambda o: len(got[o]))


def fill(dumps: Dict[str, Any], osd: int, ratio: float) -> None:
    s = osd_stats(dumps, osd)
    s["kb_used"] = int(s["kb"] * ratio)


@pytest.mark.parametrize("limit, takes", [(FillLimit.NEARFULL, False), (FillLimit.BACKFILLFULL, True)])
def test_an_osd_past_nearfull_takes_no_pg_unless_the_limit_is_backfillfull(
        dumps: Dict[str, Any], limit: FillLimit, takes: bool) -> None:
    d = busiest(dumps)
    fill(dumps, d, 0.86)            # past nearfull 0.85, short of backfillfull 0.90
    res = Balancer(load(dumps), limits=Limits(guards=Guards(fill=limit))).run()
    assert (d in gained(res)) is takes
    named = [n for n in res.notes if "take no PG" in n]
    assert bool(named) is not takes
    if named:
        assert f"osd.{d} (86%)" in named[0] and "nearfull_ratio 85%" in named[0]


def test_what_is_already_copied_onto_an_osd_counts_against_its_room(dumps: Dict[str, Any]) -> None:
    d = busiest(dumps)
    fill(dumps, d, 0.80)
    # three PGs of 20 MiB each backfill into d: 60 MiB of the 1 GiB OSD's last 5 %
    stats = [s for s in pg_map_of(dumps["pg_dump"])["pg_stats"]
             if d not in s["up"] and s["pgid"].startswith("1.")][:3]
    for s in stats:
        s["stat_sum"]["num_bytes"] = 20 << 20
    assert d in gained(Balancer(load(dumps)).run())       # the bytes alone: room left
    for s in stats:
        s["up"] = s["up"][:-1] + [d]
        s["state"] = "active+remapped+backfilling"
    snap = load(dumps)
    assert fill_room(snap)[d] < 0
    assert d not in gained(Balancer(snap).run())


def test_an_osd_takes_pgs_only_while_they_fit_under_the_limit(dumps: Dict[str, Any]) -> None:
    d = busiest(dumps)
    snap = load(dumps)
    largest = max(float(st.bytes.max()) for st in Balancer(snap).states)
    # room for two and a half of the largest PGs: fewer than the plain run sends there
    kb = osd_stats(dumps, d)["kb"]
    osd_stats(dumps, d)["kb_used"] = int((snap.fill_ratios.nearfull * kb * 1024 - 2.5 * largest) / 1024)
    snap = load(dumps)
    room = float(fill_room(snap)[d])
    res = Balancer(snap).run()
    took = gained(res).get(d, [])
    assert took and sum(took) <= room
    assert any(f"osd.{d} " in n for n in res.notes)


def test_osds_with_no_stats_are_not_bounded(dumps: Dict[str, Any]) -> None:
    d = busiest(dumps)
    fill(dumps, d, 0.99)
    snap = load(dumps)
    no_stats = snapshot.load(dumps["osd_dump"], dumps["crush"], None, None)
    assert fill_room(snap)[d] < 0 and fill_room(no_stats)[d] == float("inf")


def test_a_drain_onto_full_osds_leaves_what_does_not_fit_and_names_them(dumps: Dict[str, Any]) -> None:
    snap = load(dumps)
    others = list(range(1, snap.osds.count))
    plain = drain_report(snap, "osd.0")
    assert plain["left"] == 0 and plain["replicas"] > 0
    for o in others:
        fill(dumps, o, 0.95)
    full = drain_report(load(dumps), "osd.0")
    assert full["left"] == plain["replicas"] and not full["items"]
    note = next(n for n in full["notes"] if "take no PG" in n)
    assert all(f"osd.{o} (95%)" in note for o in others)


def test_bytes_mode_moves_pgs_off_an_osd_past_the_limit_and_none_onto_it(dumps: Dict[str, Any]) -> None:
    snap = load(dumps)
    first = propose(snap, Aim(mode=BalanceMode.BYTES))
    used = used_bytes(first.balancer, start=True)
    fullest = int(np.argmax(used))
    fill(dumps, fullest, 0.90)
    p = propose(load(dumps), Aim(mode=BalanceMode.BYTES))
    assert fullest in p.balancer.full and fullest not in gained(p.result)
    assert used_bytes(p.balancer)[fullest] < used[fullest]      # it still gives PGs away
    # and its fullness is in the report's figures (the fullest before is this OSD)
    assert p.balancer.full and fullness(p.balancer, start=True)["max_ratio"] == \
        fullness(first.balancer, start=True)["max_ratio"]


def test_bytes_mode_compares_each_osd_with_the_mean_of_its_root_and_class(dumps: Dict[str, Any]) -> None:
    snap = load(dumps)       # one root; osd.0-3 hdd, osd.4-5 ssd (the ssd pool is small)
    b = propose(snap, Aim(mode=BalanceMode.PGS)).balancer
    used = used_bytes(b)
    size = snap.osds.bytes_total.astype(float)
    cls = np.array(snap.osds.device_class)
    means = {c: used[cls == c].sum() / size[cls == c].sum() for c in ("hdd", "ssd")}
    rel = np.array([used[o] / size[o] / means[cls[o]] for o in range(6)])
    f = fullness(b)
    assert f["max_ratio"] == pytest.approx(rel.max(), abs=1e-6)
    assert f["min_ratio"] == pytest.approx(rel.min(), abs=1e-6)
    assert f["max_used"] == pytest.approx(used[rel.argmax()] / size[rel.argmax()], abs=1e-6)
    one = used / size / (used.sum() / size.sum())        # against one mean, as before
    assert abs(one.max() - rel.max()) > 0.01 or abs(one.min() - rel.min()) > 0.01


def test_status_its_text_and_metrics_name_the_osds_past_the_fill_limit(dumps: Dict[str, Any]) -> None:
    from pg_advisor.analysis.status import status_report
    from pg_advisor.model.options import make
    from pg_advisor.panel.metrics import metrics
    from pg_advisor.render.status_text import status_text
    clear = status_report(load(dumps))["space"]
    assert clear == {"fill_limit": "nearfull", "ratio": 0.85, "osds": [], "osds_total": 0}
    fill(dumps, 1, 0.86)
    fill(dumps, 4, 0.93)
    snap = load(dumps)
    r = status_report(snap)
    assert r["space"]["osds_total"] == 2 and [o["osd"] for o in r["space"]["osds"]] == [4, 1]
    assert "space: 2 OSDs take no PG, past nearfull_ratio 85% counting what is copied onto them: " \
           "osd.4 (93%), osd.1 (86%)" in status_text(r)
    assert "pg_advisor_osds_past_fill_limit 2" in metrics(r, {"plan": None, "steps": []})
    # at backfillfull (90 %) only osd.4; the balancer leaves out the same OSDs
    back = status_report(snap, opts=make({"fill_limit": "backfillfull"}))["space"]
    assert [o["osd"] for o in back["osds"]] == [4] and back["ratio"] == 0.9
    b = Balancer(snap)
    assert b.full == [1, 4]
