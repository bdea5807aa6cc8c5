"""Plain-text rendering of the `pin-remapped`, `crush-reweight` and `drain` reports."""
from typing import Any, List, Mapping

from .format import printable


def pins_text(r: Mapping[str, Any]) -> str:
    out: List[str] = []
    for pgid, pairs in sorted(r["items"].items()):
        items = " ".join(f"{a}->{b}" for a, b in pairs) or "(items removed)"
        out.append(f"{printable(pgid)}: {items}")
    for pgid, osds in sorted(r.get("full", {}).items()):
        out.append(f"{printable(pgid)}: pg-upmap {' '.join(str(o) for o in osds)} (its shards swap "
                   f"OSDs: no item list writes that)")
    out.append(f"{r['remapped']} PGs remapped: {r['pinned']} pinned onto the OSDs with their data, "
               f"{r['skipped']} left as they are")
    for why, n in sorted(r["skipped_reasons"].items()):
        out.append(f"  left: {n} PGs: {printable(why)}")
    out.extend(f"failed: {printable(f)}" for f in r.get("failed", []))
    v = r.get("verified")
    if v:
        out.append(f"checked against the map: {v['checked'] - v['mismatched']} of {v['checked']} "
                   f"pinned PGs are on their data")
        out.extend(f"  not: {printable(k)}: {printable(w)}" for k, w in sorted(v["mismatched_pgs"].items()))
    elif r.get("checked"):
        out.append(f"checked {r['checked']}")
    return "\n".join(out + [_outcome(r, "drains the pins")])


def reweight_text(r: Mapping[str, Any]) -> str:
    head = [f"{printable(k)}: CRUSH weight {w['from']:g} -> {w['to']:g}"
            for k, w in sorted(r["weights"].items())]
    head.append(f"{r['changed']} PGs change their up set with it; their pins go with the weight, "
                f"for one map epoch")
    if r["reordered"]:
        head.append(f"{r['reordered']} of them keep their OSDs in another order (no data moves; "
                    f"no item list writes an order): they peer once with the change")
    return "\n".join(head + [pins_text(r)])


def _outcome(r: Mapping[str, Any], does: str) -> str:
    """The last line: nothing set, or the plan that goes on."""
    if r.get("dry_run"):
        return "dry run: nothing was set"
    if r.get("plan"):
        return f"plan {r['plan']} {does} in balance rounds within the budget (`ceph pg-advisor progress`)"
    return "nothing to pin"


def drain_text(r: Mapping[str, Any]) -> str:
    osds = ", ".join(f"osd.{o}" for o in r["osds"])
    out = [f"drain {osds}: {r['replicas']} replicas of pools {', '.join(printable(p) for p in r['pools'])} "
           f"to move, {r['moves']} replica moves in all"
           + ("" if r.get("and_balance") or not r.get("forced") else
              f" ({r['forced']} of other replicas, that the rules force)")]
    dev = r.get("deviation")
    if dev:
        worst = [max([v[i] for v in dev["pools"].values()] + [0.0]) for i in (0, 1)]
        out.append(f"  the other OSDs' largest deviation from their share: {worst[0]:.2f} -> {worst[1]:.2f} "
                   f"in a pool, {dev['total'][0]:.2f} -> {dev['total'][1]:.2f} in total")
    for pool, why in sorted(r["uneven"].items()):
        out.append(f"  not reachable in pool {printable(pool)}: {printable(why)}")
    out.extend(f"note: {printable(n)}" for n in r["notes"])
    out.append(_outcome(r, "moves them"))
    if r.get("plan"):
        out.append("mark the OSDs out once it is done, then `ceph pg-advisor pin-remapped` keeps "
                   "the PGs CRUSH remaps where they are")
    return "\n".join(out)
