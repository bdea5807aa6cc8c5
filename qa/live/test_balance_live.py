"""`ceph pg-advisor eval`, `ceph pg-advisor balance` and `ceph pg-advisor drain` in the real mgr."""
import time
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from pg_advisor.execute.priming import asked_acting
from pg_advisor_testkit.upmap_checker import check_up_set

from ..cluster import Cluster, wait_until
from ..maps.object_hash import object_ps


@pytest.fixture
def clean_upmaps(cluster: Cluster) -> Iterator[Cluster]:
    yield cluster
    for pg in [u["pgid"] for u in cluster.json("osd", "dump")["pg_upmap_items"]]:
        cluster.ceph("osd", "rm-pg-upmap-items", pg)
    cluster.ceph("balancer", "off")
    cluster.wait_clean()


@pytest.fixture
def logged_rbd(clean_upmaps: Cluster) -> Iterator[Cluster]:
    """rbd's even PGs with logs of 150 writes, its odd ones 40: past and below
    osd_async_recovery_min_cost (100), which decides the acting set a moved PG asks for."""
    import rados
    c = clean_upmaps
    pg_num = int(c.json("osd", "pool", "get", "rbd", "pg_num")["pg_num"])
    want = {ps: 150 if ps % 2 == 0 else 40 for ps in range(pg_num)}
    names = []
    i = 0
    while any(want.values()):
        name, i = f"logged{i}", i + 1
        ps = object_ps(name, pg_num)
        if want[ps]:
            want[ps] -= 1
            names.append(name)
    with rados.Rados(conffile=c.env["CEPH_CONF"]) as r, r.open_ioctx("rbd") as io:
        for name in names:
            io.write_full(name, b"x" * 4096)
    seen: list = []

    def settled() -> bool:
        seen.append(sorted((s["pgid"], s["log_size"]) for s in c.json("pg", "ls-by-pool", "rbd")["pg_stats"]))
        return len(seen) > 1 and seen[-1] == seen[-2]
    wait_until(settled, 60, "the PG stats to show the logs", step=6)
    yield c
    with rados.Rados(conffile=c.env["CEPH_CONF"]) as r, r.open_ioctx("rbd") as io:
        for name in names:
            io.remove_object(name)


def balance_checks(c: Cluster) -> List[str]:
    """The background's checks of `balance` rounds, oldest first (the history)."""
    return [h["detail"] for h in c.advisor("history")["history"]
            if h["event"] == "checked" and h["detail"].startswith("balance at epoch")]


def test_eval_dry_run_and_a_bounded_round(logged_rbd: Cluster) -> None:
    c = logged_rbd
    c.wait_clean()
    before = c.advisor("eval")
    assert before["score"] > 1
    fp = c.fingerprint()
    dry = c.advisor("balance", "--dry-run")
    assert dry["commands"] and "applied" not in dry
    assert c.fingerprint() == fp
    osd_dump = c.json("osd", "dump")
    epoch = osd_dump["epoch"]
    min_size = {p["pool"]: p["min_size"] for p in osd_dump["pools"]}
    stats = {s["pgid"]: s for s in c.json("pg", "ls")["pg_stats"]}
    checks_before = len(balance_checks(c))
    done = c.advisor("balance", "--max-items", "3")
    assert done["applied"] == len(done["items"]) and done["failed"] == [] and done["moves"] <= 3
    # the command waited for no map; the background checks the next one, in the history
    n = len(done["items"])
    wait_until(lambda: len(balance_checks(c)) > checks_before, 120, "the round's check in the history")
    check = balance_checks(c)[-1]
    assert f"the items of {n} of {n} PGs kept" in check and "not where" not in check, check
    # prime_pg_temp (on by default): in the epoch that brings a PG's items, its pg_temp is
    # the acting set its primary will ask for (none where that is the up set), so it peers
    # once; no other pg_temp follows until its new OSD has the data
    c.wait_clean()
    primed: Dict[str, Any] = {}
    for e in range(epoch + 1, c.json("osd", "dump")["epoch"] + 1):
        d = c.json("osd", "dump", str(e))
        temps = {t["pgid"]: t["osds"] for t in d["pg_temp"]}
        for u in d["pg_upmap_items"]:
            if u["pgid"] in done["items"] and u["pgid"] not in primed:
                primed[u["pgid"]] = temps.get(u["pgid"])
        for pg, temp in primed.items():
            assert temps.get(pg) in (None, temp), (e, pg, temps.get(pg), temp)
    assert set(primed) == set(done["items"])
    for pg, temp in primed.items():
        s = stats[pg]
        want = asked_acting(s["acting"], c.json("pg", "map", pg)["up"], s["log_start"] == "0'0",
                            s["log_size"], min_size[int(pg.split(".")[0])])
        print(f"{pg} acting {s['acting']} log {s['log_start']} +{s['log_size']}: primed {temp}")
        assert temp == want, (pg, s["acting"], s["log_start"], s["log_size"], temp)
    kept = {u["pgid"]: [[m["from"], m["to"]] for m in u["mappings"]]
            for u in c.json("osd", "dump")["pg_upmap_items"]}
    for pgid, pairs in done["items"].items():
        assert kept.get(pgid, []) == pairs
    # the mon's up sets for those PGs pass the independent checker
    osd_dump, crush = c.json("osd", "dump"), c.json("osd", "crush", "dump")
    pools = {p["pool"]: p for p in osd_dump["pools"]}
    for pgid in done["items"]:
        up = c.json("pg", "map", pgid)["up"]
        assert not check_up_set(osd_dump, crush, pools[int(pgid.split(".")[0])], up), pgid
    c.wait_clean()
    wait_until(lambda: c.advisor("eval")["score"] <= before["score"], 30, "the score not to get worse")
    # status counts the lists this round set among pg_advisor's (mgr/mon.OwnedItems), within
    # the map's; its snapshot shows the new map within a minute
    set_ = sum(1 for pairs in done["items"].values() if pairs)

    def entries() -> Dict[str, Any]:
        return c.advisor("status")["cluster"]["upmap_entries"]
    wait_until(lambda: entries()["pg_upmap_items_ours"] >= set_, 90, "status to count the round's lists")
    held, in_map = entries(), len(c.json("osd", "dump")["pg_upmap_items"])
    assert held["pg_upmap_items_ours"] <= held["pg_upmap_items"] == in_map


@pytest.mark.parametrize("args, code, message", [
    (["--max-items", "0"], 22, "--max-items must be within 1..10000, not 0"),
    (["--max-items", "10001"], 22, "--max-items must be within 1..10000, not 10001"),
    (["--pool", "nosuchpool"], 2, "does not exist"),
])
def test_bad_balance_arguments(clean_upmaps: Cluster, args: Any, code: int, message: str) -> None:
    fp = clean_upmaps.fingerprint()
    got, _, err = clean_upmaps.run("pg-advisor", "balance", *args)
    assert got == code and message in err
    assert clean_upmaps.fingerprint() == fp


def test_never_fights_the_builtin_balancer(clean_upmaps: Cluster) -> None:
    c = clean_upmaps
    c.ceph("balancer", "mode", "upmap")
    c.ceph("balancer", "on")
    fp = c.fingerprint()
    got, _, err = c.run("pg-advisor", "balance")
    assert got == 16 and "built-in balancer is active" in err
    # the built-in balancer may itself move PGs meanwhile: compare only what we could set
    assert c.fingerprint()["pools"] == fp["pools"]


@pytest.fixture
def skewed_pool(clean_upmaps: Cluster) -> Iterator[Cluster]:
    """A pool whose PGs differ in size: objects of lognormally spread sizes."""
    import random

    import rados   # the system Python's binding, as the mgr's
    c = clean_upmaps
    seen: list = []

    def settled() -> bool:
        """Every object counted, and each PG's bytes as they were one read earlier, more
        than a stats report (mgr_stats_period, 5 s) ago: the proposal and the check after
        it must see the same sizes."""
        mine = _pool_sums(c.json("pg", "dump")["pg_map"], pool_id)
        seen.append(mine)
        return (sum(m["num_objects"] for m in mine.values()) == 300 and len(seen) > 1
                and seen[-2] == mine)
    with c.pool("skewed", 16):
        c.wait_clean()
        rnd = random.Random(7)
        with rados.Rados(conffile=c.env["CEPH_CONF"]) as r, r.open_ioctx("skewed") as io:
            for i in range(300):
                io.write_full(f"obj{i}", b"x" * int(min(rnd.lognormvariate(10.5, 1.2), 4 << 20)))
        pool_id = c.pool_id("skewed")
        wait_until(settled, 90, "PG stats to count the objects and settle", step=6)
        yield c


def _pool_sums(pg_map: Dict[str, Any], pool_id: int) -> Dict[str, Dict[str, int]]:
    """Each of the pool's PGs' stat_sum, by pgid."""
    return {s["pgid"]: s["stat_sum"] for s in pg_map["pg_stats"]
            if int(s["pgid"].split(".")[0]) == pool_id}


def _pool_bytes(pg_map: Dict[str, Any], pool_id: int) -> Dict[str, int]:
    return {pgid: m["num_bytes"] for pgid, m in _pool_sums(pg_map, pool_id).items()}


def test_bytes_mode_on_the_real_cluster(skewed_pool: Cluster) -> None:
    c = skewed_pool
    pool_id = c.pool_id("skewed")

    def propose(mode: str) -> Any:
        return c.advisor("balance", "--pool", "skewed", "--mode", mode, "--max-items", "200", "--dry-run")
    # a round is bounded by the misplaced ratio (0.05 lets ~2 of these PGs move): lift it
    with c.config("mgr", "target_max_misplaced_ratio", "1"):
        pgs, byt = propose("pgs"), propose("bytes")
        assert byt["fullness"]["after"]["max_ratio"] < pgs["fullness"]["after"]["max_ratio"]
        assert byt["fullness"]["before"]["basis"] == "osd size"
        sizes = _pool_bytes(c.json("pg", "dump")["pg_map"], pool_id)
        done = c.advisor("balance", "--pool", "skewed", "--mode", "bytes", "--max-items", "200")
    assert done["failed"] == [] and done["applied"] == len(done["items"])
    c.wait_clean(pool="skewed")
    # fullness measured from the mon's up sets and the PG stats, not from our mapping
    pg_map = c.json("pg", "dump")["pg_map"]
    now = _pool_bytes(pg_map, pool_id)
    assert now == sizes, {k: (sizes.get(k), v) for k, v in now.items() if sizes.get(k) != v}
    used: Dict[int, int] = {}
    for pgid, n in now.items():
        for o in c.json("pg", "map", pgid)["up"]:
            used[o] = used.get(o, 0) + n
    size = {s["osd"]: s["kb"] * 1024 for s in pg_map["osd_stats"]}
    ratio = {o: used.get(o, 0) / size[o] for o in size}
    mean = sum(used.values()) / sum(size.values())
    assert abs(max(ratio.values()) / mean - done["fullness"]["after"]["max_ratio"]) < 0.01, \
        ({o: round(r / mean, 4) for o, r in ratio.items()}, done["fullness"], done["items"])
    assert max(ratio.values()) / mean < pgs["fullness"]["after"]["max_ratio"]


def test_no_pg_goes_to_an_osd_past_the_nearfull_ratio(skewed_pool: Cluster) -> None:
    """With nearfull_ratio set just under the usage of the fullest OSD the plain proposal
    sends PGs to, no PG goes to any OSD at or past it, and the notes name that OSD."""
    c = skewed_pool

    def onto() -> Tuple[Any, set]:
        r = c.advisor("balance", "--pool", "skewed", "--max-items", "200", "--dry-run")
        return r, {pair[1] for pairs in r["items"].values() for pair in pairs}   # (no items before)
    with c.config("mgr", "target_max_misplaced_ratio", "1"):
        _, plain = onto()
        assert plain
        used = {n["id"]: n["kb_used"] / n["kb"] for n in c.json("osd", "df")["nodes"]}
        hot = max(plain, key=lambda o: used[o])
        ratio = used[hot] - 0.0005
        past = {o for o, u in used.items() if u >= ratio}
        try:
            c.ceph("osd", "set-nearfull-ratio", f"{ratio:.6f}")
            spaced, got = onto()
        finally:
            c.ceph("osd", "set-nearfull-ratio", "0.85")
    assert not got & past, (sorted(got & past), ratio, used)
    note = next(n for n in spaced["notes"] if "take no PG" in n)
    assert f"osd.{hot} (" in note and "nearfull_ratio" in note, note


def test_unknown_mode_is_refused(clean_upmaps: Cluster) -> None:
    fp = clean_upmaps.fingerprint()
    got, _, err = clean_upmaps.run("pg-advisor", "balance", "--mode", "weight")
    assert got == 22 and "weight" in err
    assert clean_upmaps.fingerprint() == fp


def _up_sets(c: Cluster) -> Tuple[int, Dict[str, List[int]]]:
    """(epoch, each PG's up set in that OSDMap), by Cluster.up_sets (the mon's map, not the
    PG stats, which for a while after a remap still show the old OSDs: a set read from them
    would count moves the drain did not make)."""
    pools = [p["pool_name"] for p in c.json("osd", "dump")["pools"]]
    for _ in range(10):       # read again if a new map came in meanwhile (a clean cluster's won't)
        epoch = c.json("osd", "dump")["epoch"]
        ups = {pg: list(up) for pool in pools for pg, up in c.up_sets(pool).items()}
        if c.json("osd", "dump")["epoch"] == epoch:
            return epoch, ups
    raise AssertionError("the OSDMap changed during each of 10 reads of the up sets")


def test_a_drain_moves_what_it_drains_counted_from_the_mons_epochs(clean_upmaps: Cluster) -> None:
    """`drain osd.N` as a plan: the OSD empty at the end, and the replica moves, counted
    from the items the mon's epochs carry (each PG's up set before the first and after the
    last), at most 1.1 x the replicas there plus what the rules force (the dry run's)."""
    c = clean_upmaps
    c.wait_clean()
    with c.options("mgr", {"step_interval": 1, "poll_interval": 1}):
        osd_dump = c.json("osd", "dump")
        osd = max(o["osd"] for o in osd_dump["osds"] if o["in"] and o["up"])
        epoch0, before = _up_sets(c)
        dry = c.advisor("drain", f"osd.{osd}", "--dry-run")
        assert dry["replicas"] > 0 and dry["left"] == 0 and not dry["and_balance"], dry
        r = c.advisor("drain", f"osd.{osd}")
        assert r["plan"], r

        def done() -> bool:
            p = c.plan()
            assert p.get("status") in ("running", "done"), p
            return p.get("status") == "done"
        wait_until(done, 300, "the drain plan to end", step=2)
        c.wait_clean()
        time.sleep(2)
        epoch1, after = _up_sets(c)
        # the PGs whose items some epoch between changed: the drain's, and only theirs moved
        touched = set()
        last: Dict[str, Any] = {}
        for e in range(epoch0, epoch1 + 1):
            items = {u["pgid"]: u["mappings"] for u in c.json("osd", "dump", str(e))["pg_upmap_items"]}
            if e > epoch0:
                touched |= {k for k in set(items) | set(last) if items.get(k) != last.get(k)}
            last = items
        pools = {p["pool"]: p for p in c.json("osd", "dump")["pools"]}
        moves = 0
        for pgid, up in after.items():
            old = before.get(pgid, up)
            if pools[int(pgid.split(".")[0])]["type"] == 1:
                n = len(set(up) - set(old))
            else:
                n = sum(1 for a, b in zip(old, up) if a != b)
            assert n == 0 or pgid in touched, (pgid, old, up)
            moves += n
        held = sum(up.count(osd) for up in after.values())
        print(f"drain osd.{osd}: {dry['replicas']} replicas, {dry['moves']} moves proposed "
              f"({dry['forced']} forced), {moves} replica moves in the mon's epochs "
              f"{epoch0}..{epoch1}, {len(touched)} PGs' items changed; osd.{osd} holds {held}")
        assert held == 0
        assert dry["replicas"] <= moves <= 1.1 * dry["replicas"] + dry["forced"], (moves, dry)
