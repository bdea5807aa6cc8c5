"""The snapshot: each dump read into the cluster's records, the mgr's forms the same as
the CLI's, malformed dumps refused with a sentence, and when a kept snapshot is read again
(model/reuse.py)."""
import copy
import dataclasses
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest

from pg_advisor.model import load_pgs, snapshot
from pg_advisor.sizing.ceph_autoscaler import Flavour, autoscale_status
from pg_advisor.model.errors import AdvisorError
from pg_advisor.model.constants import NO_OSD
from pg_advisor.module import Module

from . import mgr_stub


def test_osds_read_from_osd_dump_and_crush(snap: snapshot.Snapshot, dumps: Dict[str, Any]) -> None:
    osds = snap.osds
    assert osds.count == dumps["osd_dump"]["max_osd"]
    for o in dumps["osd_dump"]["osds"]:
        i = o["osd"]
        assert osds.exists[i]
        assert osds.up[i] == bool(o["up"]) and osds.in_[i] == bool(o["in"])
        assert osds.reweight[i] == pytest.approx(o["weight"])
    # vstart puts osd.i on host(i % 3); the fixture reweighted osd.5 and made 4, 5 ssd
    assert list(osds.host) == [f"host{i % 3}" for i in range(6)]
    assert osds.reweight[5] == pytest.approx(0.8, rel=1e-4)  # 16.16 fixed point
    assert osds.device_class[4] == "ssd" and osds.device_class[0] == "hdd"
    host0 = next(b for b in dumps["crush"]["buckets"] if b["name"] == "host0")
    for item in host0["items"]:
        assert osds.crush_weight[item["id"]] == pytest.approx(item["weight"] / 0x10000)


def test_osd_bytes_from_pg_dump_osd_stats(snap: snapshot.Snapshot, dumps: Dict[str, Any]) -> None:
    for s in dumps["pg_dump"]["pg_map"]["osd_stats"]:
        assert snap.osds.bytes_used[s["osd"]] == s["kb_used"] * 1024
        assert snap.osds.bytes_total[s["osd"]] == s["kb"] * 1024


def test_pools(snap: snapshot.Snapshot, dumps: Dict[str, Any]) -> None:
    by_name = {p.name: p for p in snap.pools}
    assert set(by_name) == {p["pool_name"] for p in dumps["osd_dump"]["pools"]}
    assert by_name["rbd"].type == "replicated" and by_name["ecpool"].type == "erasure"
    assert by_name["fast"].size == 2
    for d in dumps["df"]["pools"]:
        assert by_name[d["name"]].stored == d["stats"]["stored"]
        assert by_name[d["name"]].objects == d["stats"]["objects"]
    assert [p.id for p in snap.pools] == sorted(p.id for p in snap.pools)


def test_pgs_match_the_pg_stats(snap: snapshot.Snapshot, dumps: Dict[str, Any]) -> None:
    stats = dumps["pg_dump"]["pg_map"]["pg_stats"]
    assert snap.pgs is not None and snap.pgs.count == len(stats)
    rows = {(int(p), int(s)): i for i, (p, s) in enumerate(zip(snap.pgs.pool, snap.pgs.ps))}
    for s in stats:
        pool, ps = s["pgid"].split(".")
        i = rows[(int(pool), int(ps, 16))]
        got = [o for o in snap.pgs.up[i].tolist() if o != NO_OSD]
        assert got == [o for o in s["up"] if o != 0x7FFFFFFF], s["pgid"]
        assert snap.pgs.bytes[i] == s["stat_sum"]["num_bytes"]


def test_upmap_items(snap: snapshot.Snapshot, dumps: Dict[str, Any]) -> None:
    want = {u["pgid"]: tuple((m["from"], m["to"]) for m in u["mappings"])
            for u in dumps["osd_dump"]["pg_upmap_items"]}
    assert want and snap.pg_upmap_items == want


def test_mgr_form_of_pg_dump_gives_the_same_snapshot(dumps: Dict[str, Any]) -> None:
    # the mgr's get('pg_dump') is the bare pg_map; `ceph pg dump` wraps it
    a = snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"])
    b = snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"]["pg_map"], dumps["df"])
    assert a.pgs is not None and b.pgs is not None
    assert np.array_equal(a.pgs.up, b.pgs.up) and np.array_equal(a.osds.bytes_used, b.osds.bytes_used)


def test_the_mgrs_read_loads_its_settings_and_computes_the_autoscalers_status(module: Module) -> None:
    # what mgr/read.py hands snapshot.load beside the maps: each setting the mgr has (one it has
    # not keeps its default); pg_autoscaler's status is computed by the rules of the mgr's
    # release with pg_autoscaler's `threshold` option, never asked of that module
    fake = mgr_stub.BaseMgrModule.fake
    fake.options.update(mon_max_pg_per_osd=300, mon_target_pg_per_osd=200, osd_memory_target=8 << 30)
    fast = next(p for p in fake.docs["osd_map"]["pools"] if p["pool_name"] == "fast")
    fast["crush_rule"] = 0           # one root: pg_autoscaler sizes every pool (no overlap)

    def remote(mod: str, *args: Any, **kw: Any) -> Any:
        raise AssertionError(f"remote call to {mod}")
    setattr(module, "remote", remote)
    snap = module.reader.take_snapshot()
    assert snap.config == dict(snapshot.CONFIG_DEFAULTS, mon_max_pg_per_osd=300,
                               mon_target_pg_per_osd=200, osd_memory_target=8 << 30)
    pacific = autoscale_status(snap, Flavour.of_release(16))
    assert len(pacific) == 3 and snap.autoscale == {r["pool_name"]: r for r in pacific}
    # a Tentacle mgr, with pg_autoscaler's threshold at 1.5
    setattr(module, "_version", "20.2.0")
    fake.module_options[("pg_autoscaler", "threshold")] = 1.5
    fake.docs["osd_map"]["epoch"] += 1
    snap = module.reader.take_snapshot(fresh=True)
    tentacle = autoscale_status(snap, Flavour.of_release(20, 1.5))
    assert snap.autoscale == {r["pool_name"]: r for r in tentacle} and tentacle != pacific


def test_ec_holes_become_no_osd(dumps: Dict[str, Any]) -> None:
    pg = copy.deepcopy(dumps["pg_dump"])
    ec = next(s for s in pg["pg_map"]["pg_stats"] if s["pgid"].startswith("2."))
    ec["up"][1] = 0x7FFFFFFF
    s = snapshot.load(dumps["osd_dump"], dumps["crush"], pg)
    assert s.pgs is not None and int((s.pgs.up == 0x7FFFFFFF).sum()) == 0
    assert int((s.pgs.up == NO_OSD).sum()) > 0


def test_snapshot_is_immutable(snap: snapshot.Snapshot) -> None:
    # every array of the OSDs, the PGs and the buckets is read-only (a snapshot is shared
    # between the reads the mgr keeps it for), and the records themselves are frozen
    assert snap.pgs is not None
    arrays = [(f"{name}.{f.name}", getattr(part, f.name))
              for name, part in (("osds", snap.osds), ("pgs", snap.pgs))
              for f in dataclasses.fields(part) if isinstance(getattr(part, f.name), np.ndarray)]
    arrays += [(f"bucket {b.name}.{k}", getattr(b, k)) for b in snap.buckets.values()
               for k in ("items", "weights")]
    assert len(arrays) >= 20
    for what, a in arrays:
        assert not a.flags.writeable, what
        if a.size:
            with pytest.raises(ValueError):
                a.flat[0] = a.flat[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.epoch = 1      # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.pools[0].pg_num = 1      # type: ignore[misc]


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["osd_dump"].pop("pools"), "osd dump: not the output of `ceph osd dump -f json`"),
    (lambda d: d.__setitem__("osd_dump", d["crush"]), "osd dump: not the output"),
    (lambda d: d["crush"].pop("buckets"), "crush dump: not the output"),
    (lambda d: d["pg_dump"]["pg_map"].pop("pg_stats"), "pg dump: not the output"),
    (lambda d: d.__setitem__("df", [1, 2]), "df: not the output"),
    (lambda d: d["osd_dump"]["pools"][0].pop("size"), "osd dump: pool 1: missing field 'size'"),
    (lambda d: d["osd_dump"]["pools"][0].__setitem__("pg_num", "lots"),
     "osd dump: pool 1: field 'pg_num' is not a number"),
    (lambda d: d["pg_dump"]["pg_map"]["pg_stats"][0].__setitem__("pgid", "zz"),
     "pg dump: 'zz' is not a PG id"),
    (lambda d: d["osd_dump"]["osds"][0].__setitem__("osd", 99), "outside max_osd"),
    (lambda d: d["crush"]["buckets"][0]["items"][0].pop("weight"), "missing field 'weight'"),
])
def test_malformed_dumps_are_refused_with_a_sentence(
        dumps: Dict[str, Any], mutate: Any, message: str) -> None:
    d = copy.deepcopy(dumps)
    mutate(d)
    with pytest.raises(AdvisorError) as e:
        snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])
    assert e.value.code == -22
    assert message in e.value.message


def test_unknown_pool_is_enoent(snap: snapshot.Snapshot) -> None:
    with pytest.raises(AdvisorError) as e:
        snap.pool_by_name("nope")
    assert e.value.code == -2 and "nope" in e.value.message


def _columns_equal(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        a[k] == b[k] if k == "state" else np.array_equal(a[k], b[k]) for k in a)


def test_the_fast_pg_columns_are_the_checked_ones(dumps: Dict[str, Any]) -> None:
    stats = copy.deepcopy(dumps["pg_dump"]["pg_map"]["pg_stats"])
    # the fields a dump may leave out or null, in a few rows, and an EC hole
    stats[0].pop("acting")
    stats[1]["up_primary"] = None
    stats[2]["stat_sum"] = None
    stats[3].pop("log_size")
    stats[4].pop("state")
    stats[5]["up"] = [stats[5]["up"][0], 0x7FFFFFFF, stats[5]["up"][2]]
    fast = load_pgs.pg_columns_plain(stats)
    assert fast is not None
    assert _columns_equal(fast, load_pgs.pg_columns_checked(stats))
    assert fast["up"][5, 1] == 0x7FFFFFFF and fast["acting"][0].tolist() == [-1] * fast["acting"].shape[1]


@pytest.mark.parametrize("change", [
    lambda s: s.__setitem__("log_size", "12"),                    # a number as a string
    lambda s: s["stat_sum"].__setitem__("num_bytes", True),
    lambda s: s["stat_sum"].__setitem__("num_objects", -1),
    lambda s: s.__setitem__("up", [0, 1, 1 << 40]),
    lambda s: s.__setitem__("up", "0,1,2"),
    lambda s: s.__setitem__("pgid", "1.2.3"),
    lambda s: s.__setitem__("pgid", 7),
    lambda s: s.__setitem__("state", 3),
    lambda s: s.__setitem__("log_start", "16-194"),               # not EPOCH'VERSION
    lambda s: s.pop("up"),
])
def test_anything_not_plain_takes_the_checked_path(dumps: Dict[str, Any], change: Any) -> None:
    stats = copy.deepcopy(dumps["pg_dump"]["pg_map"]["pg_stats"])
    change(stats[7])
    assert load_pgs.pg_columns_plain(stats) is None
    try:        # which the careful loop either reads as Ceph means it or refuses by name
        c = load_pgs.pg_columns_checked(stats)
    except AdvisorError as e:
        assert e.message.startswith("pg dump: ")
    else:
        assert c["log_size"][7] == 12


def test_a_snapshots_memo_is_its_own(snap: snapshot.Snapshot) -> None:
    # one placer per snapshot, shared by its readers (CRUSH once); a changed copy starts
    # with a memo of its own, or it would read the original's CRUSH results and status
    import dataclasses
    from pg_advisor.crush.placement import Placer
    from pg_advisor.model.reuse import SnapshotReuse
    p = Placer.of(snap)
    assert Placer.of(snap) is p and snap.memo["placer"] is p
    other = dataclasses.replace(snap, flags=("noout",))
    assert other.memo == {} and Placer.of(other) is not p
    # the reuse: the same key gives the kept snapshot, another key (or none, or age) reads
    reuse = SnapshotReuse(max_age=60)
    loads, load = counted_copies(snap)
    a = reuse.get(key(1), load, 0.0)
    assert reuse.get(key(1), load, 30.0) is a and len(loads) == 1
    assert reuse.get(key(2), load, 31.0) is not a and len(loads) == 2
    assert reuse.get(key(2, "more bytes"), load, 31.5) is not a and len(loads) == 3
    assert reuse.get(None, load, 32.0) is not None and len(loads) == 4
    assert reuse.loads == len(loads) == 4


def test_a_new_maps_pg_stats_are_read_again_while_they_settle(snap: snapshot.Snapshot) -> None:
    # the PG stats lag a new map, and the PG summary in the key may not show it (a remap of
    # empty PGs, active+clean before and after): a status counted the old up sets for a
    # minute. A snapshot read within SETTLE of its map's first read is read again at
    # SETTLE_STEP; the first read of all is no new map
    from pg_advisor.model.reuse import SETTLE, SETTLE_STEP, SnapshotReuse
    reuse = SnapshotReuse(max_age=60)
    loads, load = counted_copies(snap)
    a = reuse.get(key(1), load, 0.0)
    assert reuse.get(key(1), load, 59.9) is a and len(loads) == 1
    b = reuse.get(key(2), load, 100.0)
    t, last = 100.0, b
    while t - 100.0 < SETTLE:
        assert reuse.get(key(2), load, t + SETTLE_STEP - 0.1) is last
        t += SETTLE_STEP
        again = reuse.get(key(2), load, t)
        assert again is not last
        last = again
    # read SETTLE after the map: it serves max_age
    assert reuse.get(key(2), load, t + 59.9) is last and reuse.get(key(2), load, t + 60.0) is not last
    assert len(loads) == 3 + int(SETTLE // SETTLE_STEP)
    # new stats under the same map do not start it again
    c = reuse.get(key(2, "s2"), load, t + 61.0)
    assert reuse.get(key(2, "s2"), load, t + 120.0) is c


def counted_copies(snap: snapshot.Snapshot) -> Tuple[List[int], Callable[[], snapshot.Snapshot]]:
    """A loader that reads a copy of `snap`, and the list it counts its reads in."""
    loads: List[int] = []

    def load() -> snapshot.Snapshot:
        loads.append(1)
        return dataclasses.replace(snap)
    return loads, load


def key(epoch: int, stats: str = "s", settings: str = "defaults") -> Any:
    from pg_advisor.model.reuse import ChangeKey
    return ChangeKey(map=("epoch", epoch), stats=stats, settings=settings)


def test_a_costly_read_is_taken_at_a_bounded_share_of_the_mgrs_time(snap: snapshot.Snapshot) -> None:
    # a read of 10,000 OSDs and 320,000 PGs costs some 6 s; a busy cluster changes its PG
    # stats every few seconds (each write), and its map often while it recovers: each read
    # at once would keep the mgr reading. Measured from the start of the last read:
    import dataclasses
    from pg_advisor.model.reuse import (IDLE_SHARE, MAP_LAG_MAX, MAP_SHARE, STATS_SHARE,
                                        SnapshotReuse)
    clock, loads = [0.0], []

    def slow() -> snapshot.Snapshot:
        clock[0] += 6.0
        loads.append(1)
        return dataclasses.replace(snap)
    reuse = SnapshotReuse(max_age=60, clock=lambda: clock[0])
    a = reuse.get(key(1), slow, 0.0)
    # new PG stats alone: read once 6 s are STATS_SHARE of the time since (120 s)
    due = 6.0 / STATS_SHARE
    assert reuse.get(key(1, "s2"), slow, due - 0.1) is a and len(loads) == 1
    b = reuse.get(key(1, "s2"), slow, due)
    assert b is not a and len(loads) == 2
    # a new map: MAP_SHARE's 24 s, but never later than MAP_LAG_MAX (15 s)
    due += min(6.0 / MAP_SHARE, MAP_LAG_MAX)
    assert reuse.get(key(2, "s2"), slow, due - 0.1) is b
    c = reuse.get(key(2, "s2"), slow, due)
    assert c is not b and len(loads) == 3
    # none (the key unreadable) counts as a new map
    assert reuse.get(None, slow, due + 1.0) is c and len(loads) == 3
    # a command about to change the cluster reads a change at once
    d = reuse.get(key(3, "s2"), slow, due + 2.0, fresh=True)
    assert d is not c and len(loads) == 4
    assert reuse.get(key(3, "s2"), slow, due + 3.0, fresh=True) is d, "fresh, but unchanged"
    # new settings (an option the operator set): at once
    now = key(3, "s2", "more PGs per OSD")
    d2 = reuse.get(now, slow, due + 8.0)
    assert d2 is not d and len(loads) == 5
    # d2 was read 6 s after map 3's first read: its PG stats may lag that map, so it is
    # read again as new PG stats are (6 s / STATS_SHARE); that read, 126 s after the map,
    # serves 6 s / IDLE_SHARE (300 s), not max_age
    again = due + 8.0 + 6.0 / STATS_SHARE
    assert reuse.get(now, slow, again - 0.1) is d2
    d3 = reuse.get(now, slow, again)
    assert d3 is not d2 and len(loads) == 6
    idle = again + 6.0 / IDLE_SHARE
    assert reuse.get(now, slow, idle - 0.1) is d3 and reuse.get(now, slow, idle) is not d3
    assert len(loads) == 7

    # a cheap read is never held back: a change is read at once
    def quick() -> snapshot.Snapshot:
        loads.append(1)
        return dataclasses.replace(snap)
    cheap = SnapshotReuse(max_age=60, clock=lambda: clock[0])
    cheap.get(key(1), quick, 0.0)
    e = cheap.get(key(1, "s2"), quick, 0.5)
    assert len(loads) == 9 and cheap.get(key(2, "s2"), quick, 1.0) is not e and len(loads) == 10


def test_a_lazy_caller_takes_the_kept_snapshot_of_a_costly_read_and_leaves_the_read_due(
        snap: snapshot.Snapshot) -> None:
    # a command that only looks does not wait 3.5-7 s for a read of 10,000 OSDs: it takes
    # the last snapshot and marks the read due; the next caller that is not lazy reads
    import dataclasses
    from pg_advisor.model.reuse import SnapshotReuse
    clock, loads = [0.0], []

    def read(cost: float) -> Any:
        def load() -> snapshot.Snapshot:
            clock[0] += cost
            loads.append(1)
            return dataclasses.replace(snap)
        return load
    reuse = SnapshotReuse(max_age=60, clock=lambda: clock[0])
    a = reuse.get(key(1), read(6.0), 0.0, lazy=True)       # nothing kept: it reads
    assert len(loads) == 1 and not reuse.due
    for t, k in ((1000.0, key(1)), (1001.0, key(2)), (1002.0, None)):   # old, a new map, no key
        assert reuse.get(k, read(6.0), t, lazy=True) is a and reuse.due
    assert len(loads) == 1
    b = reuse.get(key(2), read(6.0), 1003.0)
    assert b is not a and len(loads) == 2 and not reuse.due
    # fresh wins over lazy; a cheap read is never left for later
    assert reuse.get(key(3), read(0.1), 1004.0, fresh=True, lazy=True) is not b and len(loads) == 3
    assert reuse.get(key(4), read(0.1), 1005.0, lazy=True) is not b and len(loads) == 4


def test_a_refused_cluster_is_refused_from_memory_until_it_changes() -> None:
    # a setting the loader refuses (mon_max_pg_per_osd 10^8, say) fails every tick: the
    # refusal is kept under its key, not read again at full cost each time
    from pg_advisor.model.reuse import SnapshotReuse
    reuse, loads = SnapshotReuse(max_age=60), []

    def bad() -> snapshot.Snapshot:
        loads.append(1)
        raise AdvisorError.invalid("mon_max_pg_per_osd is 100000000")
    for t in (0.0, 1.0, 2.0):
        with pytest.raises(AdvisorError, match="100000000"):
            reuse.get(key(1), bad, t)
    assert len(loads) == 1
    with pytest.raises(AdvisorError):
        reuse.get(key(2), bad, 3.0)             # a new key: read again
    with pytest.raises(AdvisorError):
        reuse.get(None, bad, 4.0)                 # no key: always read
    with pytest.raises(AdvisorError):
        reuse.get(None, bad, 5.0)
    assert len(loads) == 4


def test_brief_pg_stats_become_a_pg_map_the_loader_reads(dumps: Dict[str, Any]) -> None:
    from pg_advisor.model.pg_brief import SUMS, brief_pg_map
    from . import mgr_stub
    pg = dumps["pg_dump"]
    brief = mgr_stub.pgs_brief(pg)
    progress = mgr_stub.pg_progress(pg)
    full = snapshot.load(dumps["osd_dump"], dumps["crush"], pg, dumps["df"])
    assert full.pgs is not None
    # both shapes of `pg dump pgs_brief` (a bare list, or under pg_stats)
    for doc in (brief, {"pg_stats": brief}):
        m = brief_pg_map(copy.deepcopy(doc), progress, {"osd_stats": []}, {"misplaced_objects": 7},
                         dumps["df"])
        snap = snapshot.load(dumps["osd_dump"], dumps["crush"], m, dumps["df"])
        assert snap.pgs is not None and not snap.pgs.logs and snap.misplaced_objects == 7
        assert np.array_equal(snap.pgs.up, full.pgs.up) and np.array_equal(snap.pgs.bytes, full.pgs.bytes)
        assert not snap.pgs.log_size.any() and not snap.pgs.split_bits.any()
    # each state one new string: the parsed ones would pin the memory of every row
    parsed = {id(r["state"]) for r in brief}
    assert snap.pgs is not None and snap.pgs.state == full.pgs.state
    assert not parsed & {id(x) for x in snap.pgs.state}
    assert len({id(x) for x in snap.pgs.state}) == len(set(snap.pgs.state))
    # a PG pg_progress does not list has no bytes; a pool df does not list has no objects
    gone = dict(progress, pgs={k: v for k, v in progress["pgs"].items() if k != brief[0]["pgid"]})
    odd = dict(gone, pgs=dict(gone["pgs"], **{brief[1]["pgid"]: {"num_bytes": "12"}}))
    m = brief_pg_map(copy.deepcopy(brief), odd, {}, {}, None)
    snap = snapshot.load(dumps["osd_dump"], dumps["crush"], m)
    assert snap.pgs is not None and not snap.pgs.objects.any()
    for pgid in (brief[0]["pgid"], brief[1]["pgid"]):
        assert snap.pgs.bytes[snap.pgs.rows_of([pgid])].tolist() == [0], pgid
    assert snap.pgs.bytes.sum() == full.pgs.bytes.sum() - full.pgs.bytes[full.pgs.rows_of(
        [brief[0]["pgid"], brief[1]["pgid"]])].sum()
    # columns that do not fit the rows are refused, not read past
    m[SUMS] = (m[SUMS][0][:-1], m[SUMS][1])
    with pytest.raises(AdvisorError, match="do not fit its rows"):
        snapshot.load(dumps["osd_dump"], dumps["crush"], m)
    # what is not the command's output is refused, by name, not guessed at
    with pytest.raises(ValueError, match="no list of PGs"):
        brief_pg_map({"pgs": []}, progress, {}, {}, None)
    bad: List[Any] = copy.deepcopy(brief)
    bad[3] = "1.3"
    with pytest.raises(AdvisorError, match="pg dump"):
        snapshot.load(dumps["osd_dump"], dumps["crush"], brief_pg_map(bad, progress, {}, {}, None))


def test_the_brief_text_is_parsed_a_chunk_at_a_time_as_whole(
        dumps: Dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # one json.loads of 320,000 rows held the mgr's GIL 0.9 s: the rows are parsed in
    # chunks with a pause between, and give exactly what one parse gives, or the text is
    # parsed whole where chunks cannot be cut cleanly
    import json
    from pg_advisor.model import pg_brief
    from . import mgr_stub
    rows = mgr_stub.pgs_brief(dumps["pg_dump"])
    monkeypatch.setattr(pg_brief, "CHUNK_BYTES", 300)      # a few rows a chunk
    for doc in ({"pg_ready": True, "pg_stats": rows}, rows, {"pg_stats": rows, "after": [1, [2]]},
                {"pg_stats": []}, [], {"pg_stats": [dict(rows[0], state="a},{b")] + rows}):
        for text in (json.dumps(doc, separators=(",", ":")), json.dumps(doc, indent=1)):
            pauses: List[int] = []
            assert pg_brief.parse_brief(text, lambda: pauses.append(1)) == doc
            if text.startswith('{"pg_ready"'):
                assert len(pauses) >= len(text) // 600, "not parsed in chunks"
    for bad in ('{"pg_stats":[{"pgid":"1.0"},{"pgid":', "", '{"pg_stats":[1,]}', "[[]"):
        with pytest.raises(ValueError):
            pg_brief.parse_brief(bad)


def test_two_threads_asking_at_once_share_one_read(snap: snapshot.Snapshot) -> None:
    # the background and a command missing the kept snapshot together: one reads, the
    # other waits for that read and takes it (at 320,000 PGs both read, 9-11 s each)
    import dataclasses
    import threading
    from pg_advisor.model.reuse import SnapshotReuse
    reuse = SnapshotReuse(max_age=60)
    started, release, loads = threading.Event(), threading.Event(), []

    def load() -> snapshot.Snapshot:
        loads.append(1)
        started.set()
        release.wait(10)
        return dataclasses.replace(snap)
    got: List[Any] = []
    first = threading.Thread(target=lambda: got.append(reuse.get(key(1), load, 0.0)))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: got.append(reuse.get(key(1), load, 0.5)))
    second.start()
    second.join(0.2)
    assert second.is_alive(), "the second caller did not wait for the read in progress"
    release.set()
    first.join(10)
    second.join(10)
    assert len(loads) == 1 and len(got) == 2 and got[0] is got[1]
