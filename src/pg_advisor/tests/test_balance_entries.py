"""A map that stays small: past max_upmap_items PGs with pg_upmap_items, a run sets no new
item list; it still changes or removes the ones there, and says where it stopped."""
import json
from typing import Any, Dict

from pg_advisor.balance.balancer import Balancer
from pg_advisor.balance.budget import Guards, Limits
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor.model.distribution import up_counts
from pg_advisor.model.options import Options
from pg_advisor_testkit.proposals import applied


def load(dumps: Dict[str, Any]) -> snapshot.Snapshot:
    return snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])


def held(snap: snapshot.Snapshot, items: Dict[str, Any]) -> int:
    """PGs with items in the map once `items` are set."""
    return len(applied(snap, items).pg_upmap_items)


def bounded(snap: snapshot.Snapshot, most: int, max_items: int = 1 << 20) -> Any:
    return Balancer(snap, limits=Limits(max_items, guards=Guards(upmap_max=most))).run(max_items)


def test_no_new_item_list_past_the_bound(dumps: Dict[str, Any]) -> None:
    snap = load(dumps)
    plain = Balancer(snap).run()
    most = len(snap.pg_upmap_items) + 4        # (the fixture holds one list)
    assert held(snap, plain.items) > most
    res = bounded(snap, most)
    assert held(snap, res.items) == most and res.moves < plain.moves
    assert any(f"stopped at {most} PGs with pg_upmap_items" in n and f"upmap_max ({most})" in n
               for n in res.notes)


def test_at_the_bound_a_run_still_changes_and_removes_the_lists_there(dumps: Dict[str, Any]) -> None:
    snap = load(dumps)
    # lists that unbalance: eight rbd PGs' replicas moved from osd.0 onto osd.3 (one host)
    placer = Placer(snap)
    up = placer.map_pool(snap.pool_by_name("rbd")).up
    rows = [r for r in range(up.shape[0]) if 0 in up[r].tolist() and 3 not in up[r].tolist()][:8]
    assert len(rows) == 8
    bad = applied(snap, {f"1.{r:x}": [[0, 3]] for r in rows})
    k = len(bad.pg_upmap_items)
    res = bounded(bad, k)
    assert res.moves > 0 and held(bad, res.items) <= k
    # lists there changed or removed (a removal leaves room for one new list, no more)
    assert any(pgid in bad.pg_upmap_items for pgid in res.items)
    counts = up_counts(Placer(applied(bad, res.items)).map_pool(bad.pool_by_name("rbd")).up, 6)
    assert counts[3] < up_counts(up, 6)[3] + 8           # osd.3 gave some back


def test_the_option_sets_the_bound_and_0_lifts_it() -> None:
    assert Guards.of(Options()).upmap_max == 10000 and Guards().upmap_max is None
    assert Guards.of(Options(max_upmap_items=100)).upmap_max == 100
    assert Guards.of(Options(max_upmap_items=0)).upmap_max is None


def test_the_offline_balance_takes_the_bound_from_its_option() -> None:
    from pg_advisor_testkit.dumps import CLUSTER6
    from .test_cli import BASE, run_cli
    plain = json.loads(run_cli(BASE + ["balance", "-f", "json"]).stdout)
    p = run_cli(BASE + ["--max-upmap-items", "3", "balance", "-f", "json"])
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    snap = snapshot.load(*(json.loads((CLUSTER6 / f).read_text())
                           for f in ("osd_dump.json", "crush_dump.json")))
    assert held(snap, got["items"]) == 3 < held(snap, plain["items"])
    assert any("upmap_max (3)" in n for n in got["notes"])
