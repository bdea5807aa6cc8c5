"""Shared fakes of the unit tests: the mon's pool targets and upmap items as a small
simulation (FakeCeph), a plan store in memory, and plans to run against them."""
import copy
import json
import pickle
from typing import Any, Dict, List, Mapping, Optional, Tuple, TypeVar

import pytest

from pg_advisor.crush import placement
from pg_advisor.crush.placement import Placer
from pg_advisor.model import snapshot
from pg_advisor.execute.executor import Executor
from pg_advisor.execute.pacing import Pacing
from pg_advisor.execute.steps import StepPlanner, Throttles, balance_step
from pg_advisor.execute.plan_state import Source
from pg_advisor.execute.context import Context, Tick
from pg_advisor.execute.rounds import Burst, Send
from pg_advisor.model.options import Options, make

OPEN = Pacing(misplaced_max=0.05, interval=0.0, window_begin="00:00", window_end="00:00", window_days="")
T = Throttles(misplaced_max=0.05, max_splitting=16, max_backfills_per_osd=2)


V = TypeVar("V")


def clone(value: V) -> V:
    """A deep copy of plain data (dumps, a stored state): a pickle round trip, some 5x
    faster than copy.deepcopy on the fixture's dumps."""
    copied: V = pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
    return copied


def tick_of(snap: snapshot.Snapshot, pacing: Pacing, send: Send, now: float,
            burst: Optional[Burst] = None) -> Tick:
    """The executor's tick on these pieces: `burst` sends commands together (by default they
    go one after another through `send`)."""
    return Tick(snap, pacing, now, burst or (lambda cmds: [send(c) for c in cmds]))


class FakeCeph:
    """Pool targets as the mon keeps them, and actuals that follow one `settle()` later.

    Setting pg_num drags pgp_num's target along when the two targets are equal, as the
    Pacific mon does."""

    def __init__(self, dumps: Dict[str, Any]) -> None:
        self.dumps = clone(dumps)
        self.sent: List[Dict[str, Any]] = []
        self.fail: Optional[str] = None

    def pool(self, name: str) -> Dict[str, Any]:
        return next(p for p in self.dumps["osd_dump"]["pools"] if p["pool_name"] == name)

    def send(self, cmd: Dict[str, Any]) -> Tuple[int, str]:
        self.sent.append(cmd)
        if self.fail:
            return -1, self.fail
        self.dumps["osd_dump"]["epoch"] += 1     # each change a new map, as the mon makes
        items = self.dumps["osd_dump"]["pg_upmap_items"]
        if cmd["prefix"] == "osd pg-temp":
            return 0, ""
        if cmd["prefix"] in ("osd pg-upmap-primary", "osd rm-pg-upmap-primary"):
            return self._primary(cmd)
        if cmd["prefix"] in ("osd pg-upmap-items", "osd rm-pg-upmap-items"):
            items[:] = [u for u in items if u["pgid"] != cmd["pgid"]]
            ids = cmd.get("id", [])
            if ids:
                pairs = zip(ids[0::2], ids[1::2])
                items.append({"pgid": cmd["pgid"], "mappings": [{"from": a, "to": b} for a, b in pairs]})
            return 0, ""
        p = self.pool(cmd["pool"])
        val = int(cmd["val"])
        if cmd["var"] == "pgp_num_actual":
            p["pg_placement_num"] = val
        elif cmd["var"] == "pg_num":
            if p["pg_num_target"] == p["pg_placement_num_target"]:
                p["pg_placement_num_target"] = val
            p["pg_num_target"] = val
        else:
            p["pg_placement_num_target"] = val
        return 0, ""

    def _primary(self, cmd: Dict[str, Any]) -> Tuple[int, str]:
        """A pg_upmap_primary set or removed, with the mon's gate on the clients (its other
        checks, on the acting set, are left to the live tests)."""
        osd_dump = self.dumps["osd_dump"]
        if osd_dump.get("require_min_compat_client") not in ("reef", "squid", "tentacle"):
            return -1, "min_compat_client luminous < reef, which is required for pg-upmap-primary"
        entries = osd_dump.setdefault("pg_upmap_primaries", [])
        entries[:] = [u for u in entries if u["pgid"] != cmd["pgid"]]
        if cmd["prefix"] == "osd pg-upmap-primary":
            entries.append({"pgid": cmd["pgid"], "primary_osd": int(cmd["id"])})
        return 0, ""

    def settle(self, report: bool = True) -> None:
        """The mon reaches the targets; with `report`, the OSDs report the new PGs and the
        data has moved: every PG active+clean on the OSDs the map puts it on."""
        for p in self.dumps["osd_dump"]["pools"]:
            p["pg_num"], p["pg_placement_num"] = p["pg_num_target"], p["pg_placement_num_target"]
        if report:
            self.report_children()
            self.backfill()

    def backfill(self) -> None:
        """Each PG's stats at its up set in the map now (the exact model's), clean."""
        snap = self.snap()
        placer = Placer.of(snap)
        stats = {s["pgid"]: s for s in self.dumps["pg_dump"]["pg_map"]["pg_stats"]}
        for pool in snap.pools:
            m = placer.map_pool(pool)
            for i in range(m.ps.size):
                s = stats.get(m.pgid(i))
                if s is not None:
                    up = m.up[i].tolist()
                    if pool.type == "replicated":
                        up = [o for o in up if o >= 0]
                    s["up"], s["acting"], s["state"] = up, list(up), "active+clean"
                    s["up_primary"] = s["acting_primary"] = int(m.up_primary[i])

    def report_children(self) -> None:
        """Stats for the PGs a split made: born on their parent's OSDs, clean, as Ceph reports
        them (the parent's seed is the child's without its highest bit)."""
        stats = self.dumps["pg_dump"]["pg_map"]["pg_stats"]
        by_id = {s["pgid"]: s for s in stats}
        for p in self.dumps["osd_dump"]["pools"]:
            for ps in range(p["pg_num"]):
                parent = by_id.get(f"{p['pool']}.{ps & ~(1 << max(0, ps.bit_length() - 1)):x}")
                if f"{p['pool']}.{ps:x}" not in by_id and parent is not None:   # a split's child
                    child = dict(copy.deepcopy(parent), pgid=f"{p['pool']}.{ps:x}")
                    stats.append(child)
                    by_id[child["pgid"]] = child

    def snap(self) -> snapshot.Snapshot:
        d = self.dumps
        return snapshot.load(d["osd_dump"], d["crush"], d["pg_dump"], d["df"])


def acting_sets(snap: snapshot.Snapshot) -> Dict[str, List[int]]:
    """pgid -> the OSDs the PG stats say hold its data."""
    assert snap.pgs is not None
    return {f"{p}.{s:x}": [o for o in row if o >= 0] for p, s, row in
            zip(snap.pgs.pool.tolist(), snap.pgs.ps.tolist(), snap.pgs.acting.tolist())}


def stored_plan(kv: Mapping[str, Optional[str]]) -> Dict[str, Any]:
    """The newest plan's state entry, as a store of plans side by side keeps it (the index
    in exec_state names the plans)."""
    index = json.loads(str(kv["exec_state"]))
    out: Dict[str, Any] = json.loads(str(kv[f"exec_plan.{index['plans'][-1]}"]))
    return out


class Store:
    def __init__(self) -> None:
        self.plans: List[Dict[str, Any]] = []
        self.history: List[Dict[str, Any]] = []
        self.saves: List[Dict[str, Any]] = []     # the newest plan as each save left it

    @property
    def state(self) -> Optional[Dict[str, Any]]:
        """The newest plan saved."""
        return self.plans[-1] if self.plans else None

    def save(self, plans: List[Dict[str, Any]], history: List[Dict[str, Any]]) -> None:
        self.plans, self.history = clone(plans), list(history)
        self.saves.append(clone(plans[-1]) if plans else {})


def start(ceph: FakeCeph, store: Store, target: int, pool: str = "rbd") -> Executor:
    snap = ceph.snap()
    p = snap.pool_by_name(pool)
    ex = Executor([], [], store.save)
    ex.start(StepPlanner(snap, T).plan(p, target), [p], Source.APPLY, 0.0)
    return ex


def run(ex: Executor, ceph: FakeCeph, pacing: Pacing = OPEN, ticks: int = 200) -> None:
    for i in range(ticks):
        ex.tick(tick_of(ceph.snap(), pacing, ceph.send, float(i)))
        ceph.settle()
        if not ex.active:
            return


def balance_plan(ceph: FakeCeph, store: Store) -> Executor:
    """A plan of one balance step on rbd (at most 10 PGs a round)."""
    snap = ceph.snap()
    rbd = snap.pool_by_name("rbd")
    ex = Executor([], [], store.save)
    ex.start([balance_step(rbd, rbd.pg_num, rbd.pgp_num, 10, 1.0)], [rbd], Source.APPLY, 0.0)
    return ex


def crush_runs(monkeypatch: pytest.MonkeyPatch) -> List[int]:
    """The inputs of each CRUSH run the placers make from now on, as they make them."""
    runs: List[int] = []
    real = placement.do_rule

    def counted(*a: Any, **kw: Any) -> Any:
        runs.append(a[2].size)
        return real(*a, **kw)
    monkeypatch.setattr(placement, "do_rule", counted)
    return runs


def calls(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> List[Tuple[Any, ...]]:
    """The arguments of each call to owner.name from now on (the call goes through)."""
    seen: List[Tuple[Any, ...]] = []
    real = getattr(owner, name)

    def counted(*a: Any, **kw: Any) -> Any:
        seen.append(a)
        return real(*a, **kw)
    monkeypatch.setattr(owner, name, counted)
    return seen


def context(ceph: FakeCeph, opts: Optional[Options] = None, now: float = 0.0, ratio: float = 0.05,
            snap: Optional[snapshot.Snapshot] = None, **kw: Any) -> Context:
    """What the module would hand the Driver: the fake's snapshot (or `snap`), the options
    (defaults if None), target_max_misplaced_ratio `ratio`, the time and the fake's send."""
    return Context(snap if snap is not None else ceph.snap(), opts if opts is not None else make({}), ratio,
                   now, ceph.send, **kw)


# status fields added since live_status.json was captured (read balance; the rule-limited
# target, and the distribution's target_max_deviation): not in it
ADDED_SINCE_CAPTURE = {"osds": {"primaries", "primary_share", "pg_target", "pg_target_by_pool"},
                       "pools": {"read_balance", "pressing", "not_mapped"}}
SIZING_SINCE_CAPTURE = {"osds": {"pgs_recommended", "pg_memory_peak", "pg_memory_budget", "pg_memory_steady",
                                 "pg_memory_peak_budget", "pg_memory_now"},
                        "pools": {"recommended_pg_num", "recommendation", "reasons", "data_share",
                                  "sizing", "automatic", "moved_bytes_estimate", "autoscaler_mode",
                                  "autoscaler_difference"}}
SIZING_NOTES = ("overlapping roots ", "pools ", "no pool's usage is known")
for _section, _fields in SIZING_SINCE_CAPTURE.items():
    ADDED_SINCE_CAPTURE[_section] = ADDED_SINCE_CAPTURE[_section] | _fields


def as_captured(doc: Dict[str, Any]) -> Dict[str, Any]:
    """A status as live_status.json has it: each field added since the capture is checked
    to be there, then left out; so are the sizing figures, whose model changed since
    (issue 56: one budget per OSD, unknown is not empty, merges only when they pay; the
    memory constants calibrated on BlueStore), and the live tests check against the mgr's
    own (pg_memory_now against each OSD's dump_mempools)."""
    out = dict(doc)
    for section, added in ADDED_SINCE_CAPTURE.items():
        assert all(added <= set(row) for row in doc[section]), section
        out[section] = [{k: v for k, v in row.items() if k not in added} for row in doc[section]]
    dist = dict(doc["distribution"])
    rows = dist["pools"] + ([dist["total"]] if dist["total"] is not None else [])
    assert all("target_max_deviation" in r for r in rows)
    dist["pools"] = [{k: v for k, v in r.items() if k != "target_max_deviation"} for r in dist["pools"]]
    if dist["total"] is not None:
        dist["total"] = {k: v for k, v in dist["total"].items() if k != "target_max_deviation"}
    out["distribution"] = dist
    assert set(doc["backfill"]) >= {"waiting_pgs", "osd_max_backfills", "full_osds"}
    del out["backfill"]               # added since the capture, as the cluster's upmap entries
    assert set(doc["space"]) == {"fill_limit", "ratio", "osds", "osds_total"}
    del out["space"]
    assert set(doc["cluster"]["upmap_entries"]) == {"pg_upmap_items", "pg_upmap_items_pairs", "pg_upmap",
                                                    "pg_upmap_primaries", "pg_upmap_items_ours"}
    out["cluster"] = {k: v for k, v in doc["cluster"].items() if k != "upmap_entries"}
    return without_sizing(out)


def without_sizing(doc: Dict[str, Any]) -> Dict[str, Any]:
    """The status without its sizing figures (SIZING_SINCE_CAPTURE, cluster.sizing)."""
    out = dict(doc)
    for section, fields in SIZING_SINCE_CAPTURE.items():
        out[section] = [{k: v for k, v in row.items() if k not in fields} for row in doc[section]]
    out["cluster"] = {k: v for k, v in doc["cluster"].items() if k != "sizing"}
    out.pop("autoscaler_silent", None)
    out["notes"] = [n for n in doc["notes"] if not n.startswith(SIZING_NOTES)]
    return out
