"""Benchmark: pg_advisor's balancer beside Ceph's own tools, on maps made by a throw-away mon, one run.

    PYTHONPATH=src /usr/bin/python3 -m qa.bench.balance [--only 60,1000,multi,10000,bytes]
                                                       [--only multi384,multi384rgw,4000]
                                                       [--tool-timeout 300] [--bytes-sigma 0.5]
    PYTHONPATH=src /usr/bin/python3 -m qa.bench.balance --mode read-ties [--only 60,1000,multi,10000]
    PYTHONPATH=src:. /usr/bin/python3 -m qa.bench.balance --mode drain [--only 384,384b,10000,10000s]
                                                       [--target osd.17] [--tool-timeout 300]
    bash qa/cluster/tentacle.sh exec env PYTHONPATH=src:. python3 -m qa.bench.balance ...   (Tentacle's tools)

Maps: qa/maps/monbuilt.py's cases. The columns and runs: doc/balance.rst.

--mode upmap (the default): `osdmaptool --upmap` at deviation 5 (Ceph's default) and 1, each
beside `balance` at that upmap_max_deviation ("items": PGs with item lists), every result
measured alike with pg_advisor's exact CRUSH; peak RSS is osdmaptool's
own, pg_advisor's this process's so far. "multi384" and "multi384rgw" not by default
(osdmaptool takes minutes there); "bytes": the 60-OSD map with lognormally spread PG sizes.

--mode read-ties: the balancer's read (primary) tie-break off and on; it never moves a PG,
nor a primary, for reads alone (balance/balancer.py). Over the replicated pools: the
primaries' largest and stdev of (primaries - fair share) per OSD and the worst pool's
read_balance_score; the count figures must be the same or better with it on.

--mode drain: `drain` per target, plain and with --and-balance, beside Ceph's path on the same
map file: `ceph osd crush reweight osd.N 0` per drained OSD (the mon's cleaning of the items,
as `osdmaptool --upmap-cleanup` says), then `osdmaptool --upmap` at deviation 5. Maps: "384",
monbuilt's "multi384"; "384b", the same evened by `balance` first (its items set by the mon);
"10000"; "10000s", qa/bench/large_inputs.py's 10000osd-stats (no map file: no Ceph path).
"""
import dataclasses
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from pg_advisor.analysis.growth import placer_after
from pg_advisor.analysis.read_balance import primaries, primary_share, read_balance_score
from pg_advisor.balance.balancer import Balancer
from pg_advisor.balance.budget import Guards, Limits
from pg_advisor.balance.drain import drain_osds, drain_report
from pg_advisor.balance.proposal import Aim, balance_report
from pg_advisor.balance.reweighted import with_crush_weights
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor.model.distribution import up_counts
from pg_advisor.model.options import BalanceMode
from pg_advisor.rules.legality import breaks
from pg_advisor_testkit.proposals import applied, changed_primaries, replica_moves

from ..cluster.ceph_release import print_ceph_version
from ..maps.crushgen import GeneratedMap, synthetic_pg_dump
from ..maps.monbuilt import build_case
from .common import Items, each_map, line, map_label, parser, self_peak_mib, table, timed, upmap
from .large_inputs import CASES as LARGE

COUNT_COLS = [("map", "<32"), ("balancer", "<30"), ("pool_dev", ">8.2f"), ("tot_dev", ">7.2f"),
              ("stdev", ">6.2f"), ("items", ">6"), ("moves", ">6"), ("bound", ">6"), ("broken", ">6"),
              ("prim", ">5"), ("seconds", ">8.2f"), ("peak MiB", ">8.0f"), ("status", "")]
FIGURES = ("pool_dev", "total_dev", "stdev", "items", "moves", "lower_bound", "broken", "primaries")
BYTES_COLS = [("balancer", "<40"), ("fullest", ">8.3f"), ("emptiest", ">8.3f"), ("items", ">6"),
              ("prim", ">5"), ("seconds", ">8.2f")]
READ_COLS = [("map", "<32"), ("balancer", "<32"), ("pool_dev", ">8.2f"), ("tot_dev", ">7.2f"),
             ("moves", ">6"), ("prim", ">5"), ("pri_max", ">7.2f"), ("pri_sd", ">6.2f"),
             ("score", ">6.2f"), ("seconds", ">8.2f")]
DRAIN_COLS = [("map", "<6"), ("drain", "<32"), ("replicas", ">8"), ("moves", ">6"), ("forced", ">6"),
              ("pool dev before", ">15.2f"), ("after", ">6.2f"), ("total before", ">12.2f"),
              ("after", ">6.2f"), ("uneven", ">6"), ("seconds", ">8.2f"), ("items", ">6"), ("broken", ">6"),
              ("net", ">6"), ("status", "")]
DRAIN_CASE = {"384": "multi384", "384b": "multi384", "10000": "10000", "10000s": "10000osd-stats"}
ONLY = {"upmap": "60,1000,multi,10000,bytes", "read-ties": "60,1000,multi,10000", "drain": "384,384b"}


def spread(states: List[Any], ups: List[np.ndarray], n: int) -> Tuple[float, float, float]:
    """(largest deviation from an OSD's share in any pool, the same of the OSDs' totals, the
    totals' deviations' stdev) of the pools' up sets `ups`, against the states' shares."""
    total, share = np.zeros(n), np.zeros(n)
    pool_dev = 0.0
    for st, up in zip(states, ups):
        c = up_counts(up, n)
        pool_dev = max(pool_dev, float(np.abs(c - st.share)[st.share > 0].max()))
        total += c
        share += st.share
    live = share > 0
    return pool_dev, float(np.abs(total - share)[live].max()), float((total - share)[live].std())


def measure(snap: snapshot.Snapshot, items: Items) -> Dict[str, Any]:
    pl0, pl1 = Placer(snap), Placer(applied(snap, items))
    b = Balancer(snap, pl0)
    moves, broken, prim = 0, 0, 0
    ups: List[np.ndarray] = []
    for st in b.states:
        m0, m1 = pl0.map_pool(st.pool), pl1.map_pool(st.pool)
        # PGs whose primary the items change: each drops the client ops in flight at the old
        # primary when its backfill ends (a client then waits objecter_timeout to resend)
        prim += int(((m0.up_primary != m1.up_primary) & (m0.up_primary >= 0)).sum())
        # sets that break the rule's counts (osdmaptool checks fewer of them than the rule means)
        broken += int((breaks(st.shape, b.anc, m1.up) & ~breaks(st.shape, b.anc, st.raw)).sum())
        ups.append(m1.up)
        moves += replica_moves(st.pool.type, m0.up, m1.up)
    pool_dev, total_dev, stdev = spread(b.states, ups, snap.osds.count)
    return {"pool_dev": pool_dev, "total_dev": total_dev, "stdev": stdev,
            "items": sum(1 for v in items.values() if v), "moves": moves,
            "lower_bound": b.lower_bound(), "broken": broken, "primaries": prim}


def advised(b: Balancer) -> Tuple[Items, float]:
    """The items a run of `b` sets, and its seconds."""
    res, dt = timed(b.run)
    assert all(res.items.values()), "a fresh map has no items to remove"
    return {k: tuple(v) for k, v in res.items.items()}, dt


def count_rows(gm: GeneratedMap, limit: float) -> List[List[Any]]:
    snap = snapshot.load(*gm.dumps())
    label = map_label(gm.num_osds, snap)
    m = measure(snap, {})
    rows: List[List[Any]] = [[label, "CRUSH alone", *(m[k] for k in FIGURES), 0.0, None, ""]]
    for dev in (5, 1):
        items, run = upmap(gm, dev, gm.path.parent / f"up{dev}", limit)
        m = measure(snap, items)
        rows.append([label, f"osdmaptool --upmap-deviation {dev}", *(m[k] for k in FIGURES), run.seconds,
                     run.peak_mib, run.status])
        # the same evenness asked of pg_advisor (upmap_max_deviation), no bound on the lists
        items, dt = advised(Balancer(snap, limits=Limits(guards=Guards(deviation=dev))))
        m = measure(snap, items)
        rows.append([label, f"pg_advisor deviation {dev}", *(m[k] for k in FIGURES), dt, self_peak_mib(),
                     "done"])
    return rows


def fullness(snap: snapshot.Snapshot, items: Items, sizes: Dict[str, int]) -> Tuple[float, float]:
    used = np.zeros(snap.osds.count)
    pl = Placer(applied(snap, items))
    for pool in snap.pools:
        m = pl.map_pool(pool)
        for r in range(m.up.shape[0]):
            used[m.up_list(r)] += sizes[m.pgid(r)]
    live = used[snap.osds.crush_weight > 0]
    return float(live.max() / live.mean()), float(live.min() / live.mean())


def bytes_rows(gm: GeneratedMap, limit: float, sigma: float) -> List[List[Any]]:
    osd_dump, crush = gm.dumps()
    pg_dump = synthetic_pg_dump(snapshot.load(osd_dump, crush), sigma)
    sizes = {s["pgid"]: s["stat_sum"]["num_bytes"] for s in pg_dump["pg_stats"]}
    snap = snapshot.load(osd_dump, crush, pg_dump)
    out: List[List[Any]] = [["CRUSH alone", *fullness(snap, {}, sizes), 0, 0, 0.0]]
    items, run = upmap(gm, 1, gm.path.parent / "upbytes", limit)
    out.append(["osdmaptool --upmap-deviation 1", *fullness(snap, items, sizes), len(items),
                changed_primaries(snap, items), run.seconds])
    for mode in BalanceMode:
        r, dt = timed(lambda: balance_report(snap, Aim(mode=mode)))
        got: Items = {k: tuple((int(p[0]), int(p[1])) for p in v) for k, v in r["items"].items() if v}
        out.append([f"pg_advisor --mode {mode} ({r['moves']} moves)", *fullness(snap, got, sizes),
                    len(got), changed_primaries(snap, got), dt])
    return out


def primary_spread(snap: snapshot.Snapshot) -> Dict[str, float]:
    """The replicated pools' primaries against their fair share, per OSD, and the worst
    pool's score (1.0 is perfect)."""
    n = snap.osds.count
    held, share = np.zeros(n), np.zeros(n)
    scores = []
    for p in snap.pools:
        if p.type != "replicated":
            continue
        held += primaries(snap, p)
        share += primary_share(snap, p)
        r = read_balance_score(snap, p)
        if r is not None and r.get("score_stable") is not None:
            scores.append(float(r["score_stable"]))
    dev = (held - share)[share > 0]
    return {"max": float(np.abs(dev).max()) if dev.size else 0.0,
            "stdev": float(dev.std()) if dev.size else 0.0,
            "score": max(scores) if scores else float("nan")}


def read_rows(name: str, tmp: Path) -> List[List[Any]]:
    gm = build_case(tmp, name)
    snap = snapshot.load(*gm.dumps())
    label = map_label(gm.num_osds, snap)

    def row(who: str, items: Items, dt: float) -> List[Any]:
        m, s = measure(snap, items), primary_spread(applied(snap, items))
        return [label, who, m["pool_dev"], m["total_dev"], m["moves"], m["primaries"], s["max"], s["stdev"],
                s["score"], dt]
    out = [row("CRUSH alone", {}, 0.0)]
    for on in (False, True):
        b = Balancer(snap)
        b.primaries.read_ties = on
        out.append(row(f"pg_advisor, read tie-break {'on' if on else 'off'}", *advised(b)))
    return out


def drain_map(tmp: Path, case: str) -> Tuple[Optional[GeneratedMap], snapshot.Snapshot]:
    if case in LARGE:
        _, d = LARGE[case](tmp)
        return None, snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"])
    gm = build_case(tmp / case, case)
    return gm, snapshot.load(*gm.dumps())


def mapped_off(a: Placer, b: Placer, snap: snapshot.Snapshot) -> int:
    """PGs the two map otherwise."""
    return sum(int((a.map_pool(p).up != b.map_pool(p).up).any(axis=1).sum()) for p in snap.pools)


def balanced(tmp: Path, case: str, snap: snapshot.Snapshot) -> Tuple[GeneratedMap, snapshot.Snapshot]:
    """The map evened by `balance`, its items set by the mon in a map file of its own (for
    osdmaptool), checked to map every PG as the items applied to `snap` do."""
    res = Balancer(snap).run()
    gm = build_case(tmp / f"{case}-balanced", case, res.items)
    got = snapshot.load(*gm.dumps())
    off = mapped_off(Placer(applied(snap, res.items)), Placer(got), snap)
    if off:
        raise RuntimeError(f"the mon's map with the balance items maps {off} PGs otherwise than the items")
    return gm, got


def worst(dev: Dict[str, Any], at: int) -> float:
    return max([v[at] for v in dev["pools"].values()] + [0.0])


def drain_row(snap: snapshot.Snapshot, target: str, and_balance: bool) -> List[Any]:
    r, dt = timed(lambda: drain_report(snap, target, and_balance))
    d = r["deviation"]
    m = measure(snap, r["items"])      # the same legality check as Ceph's path gets
    return [target + (" --and-balance" if and_balance else ""), r["replicas"], r["moves"], r["forced"],
            worst(d, 0), worst(d, 1), d["total"][0], d["total"][1], len(r["uneven"]), dt,
            m["items"], m["broken"], r["moves"], ""]


def ceph_rows(gm: GeneratedMap, snap: snapshot.Snapshot, target: str, limit: float) -> List[List[Any]]:
    """`ceph osd crush reweight` to 0 of the target's OSDs, then `osdmaptool --upmap`."""
    osds = drain_osds(snap, target)
    zero = {o: 0.0 for o in osds}
    gm0 = dataclasses.replace(gm, crush_weights={**gm.crush_weights, **zero})
    tag = target.replace(".", "")
    cleaned, run = upmap(gm0, None, gm.path.parent / f"clean-{tag}", limit)
    assert run.status == "done", run.status
    crushed = applied(snapshot.load(*gm0.dumps()), cleaned)     # as the mon leaves it after the change
    # pg_advisor's own model of the change and of the mon's cleaning agrees on every PG
    pc = Placer(crushed)
    off = mapped_off(placer_after(with_crush_weights(snap, zero)), pc, snap)
    assert not off, f"{target}: the model of the reweight maps {off} PGs otherwise than Ceph"
    states = Balancer(crushed).states
    p0 = Placer(snap)
    ups = [p0.map_pool(st.pool).up for st in states]
    replicas = int(sum(np.isin(up, osds).sum() for up in ups))
    crush_moves = sum(replica_moves(st.pool.type, up, pc.map_pool(st.pool).up) for st, up in zip(states, ups))
    # the deviations of the pools the drain touches, as drain_report's
    touched = [st for st, up in zip(states, ups) if np.isin(up, osds).any()]

    def devs(pl: Placer) -> Tuple[float, float, float]:
        return spread(touched, [pl.map_pool(st.pool).up for st in touched], snap.osds.count)
    before = devs(p0)
    alone = measure(crushed, {})
    items, run = upmap(gm0, 5, gm.path.parent / f"up5-{tag}", limit)
    after = measure(crushed, items)
    # the PGs whose items osdmaptool's balancing sets (not those its cleaning restates)
    after["items"] = sum(1 for k, v in items.items() if v and tuple(v) != crushed.pg_upmap_items.get(k))
    final = Placer(applied(crushed, items))
    # a replica CRUSH moves and an item moves back is in `moves` twice, once in `net`
    net = sum(replica_moves(st.pool.type, up, final.map_pool(st.pool).up) for st, up in zip(states, ups))
    rows = []
    for label, moves, m, dev, secs, n, status in (
            (f"{target} crush reweight 0", crush_moves, alone, devs(pc), None, crush_moves, ""),
            (f"{target} + osdmaptool dev 5", crush_moves + after["moves"], after, devs(final), run.seconds,
             net, run.status)):
        rows.append([label, replicas, moves, moves - replicas, before[0], dev[0], before[1], dev[1], None,
                     secs, m["items"], m["broken"], n, status])
    return rows


def drain(only: List[str], targets: List[str], limit: float) -> None:
    table(DRAIN_COLS, [])
    with tempfile.TemporaryDirectory(prefix="drain-bench-") as d:
        built: Dict[str, Tuple[Optional[GeneratedMap], snapshot.Snapshot]] = {}
        for name in only:
            case = DRAIN_CASE[name]
            if case not in built:
                built[case], secs = timed(lambda: drain_map(Path(d) / case, case))
                print(f"# {case}: built in {secs:.0f} s")
            gm, snap = built[case]
            if name == "384b":
                (gm, snap), secs = timed(lambda: balanced(Path(d), case, snap))
                print(f"# {case} balanced, its items set by a mon: {secs:.0f} s")
            for t in targets:
                for both in (False, True):
                    line(DRAIN_COLS, [name, *drain_row(snap, t, both)])
                if gm is not None:
                    for v in ceph_rows(gm, snap, t, limit):
                        line(DRAIN_COLS, [name, *v])


def main(argv: Optional[List[str]] = None) -> int:
    ap = parser(__doc__, only=None, tool_timeout=300.0, bytes_sigma=0.5)
    ap.add_argument("--mode", choices=ONLY, default="upmap",
                    help="upmap: beside osdmaptool --upmap; read-ties: the primary tie-break off and on; "
                         "drain: beside Ceph's path (each its own --only default)")
    ap.add_argument("--target", action="append", help="drain: osd.N or a bucket (default: osd.17 and host1)")
    args = ap.parse_args(argv)
    names = (args.only or ONLY[args.mode]).split(",")
    if args.mode == "read-ties":
        rows = each_map(names, "pga-read-", read_rows)
        table(READ_COLS, rows)
        return 0
    print_ceph_version()      # osdmaptool's and the throw-away mons' (no cluster runs)
    if args.mode == "drain":
        drain(names, args.target or ["osd.17", "host1"], args.tool_timeout)
        return 0
    rows = each_map([n for n in names if n != "bytes"], "pga-bal-",
                    lambda name, tmp: count_rows(build_case(tmp, name), args.tool_timeout))
    byte_rows = each_map([n for n in names if n == "bytes"][:1], "pga-bal-", lambda _, tmp: bytes_rows(
        build_case(tmp, "60"), args.tool_timeout, args.bytes_sigma))
    if rows:
        table(COUNT_COLS, rows)
    if byte_rows:
        print(f"\n60 OSDs, 2048 PGs of lognormal(0, {args.bytes_sigma}) sizes: OSD fullness against the mean")
        table(BYTES_COLS, byte_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
