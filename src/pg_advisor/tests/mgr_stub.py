"""A small stand-in for `ceph_module`, the C++ side of ceph-mgr, for unit tests only.

`mgr_module` (shipped by Ceph in /usr/share/ceph/mgr) imports `ceph_module`, which only
exists inside a running ceph-mgr. This stand-in answers the calls our Module makes from
a dict of documents, so the adapter can be tested against captured dumps. It never
stands in for the integration tests, which use the real mgr.
"""
import sys
import types
from collections import UserDict
from typing import Any, Callable, Dict, List, Optional

MGR_PATH = "/usr/share/ceph/mgr"


class ModuleOptions(UserDict):
    """(module, option) -> value, as `ceph config set mgr mgr/MODULE/OPTION` leaves them: each
    change is followed by `notify`, as ceph-mgr follows one with each module's config_notify."""

    def __init__(self, notify: Callable[[], None]) -> None:
        self.notify = notify
        super().__init__()

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        self.notify()

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self.notify()


class FakeMgr:
    """What the fake C++ side serves: `get()` documents, config options, the KV store."""

    def __init__(self, docs: Dict[str, Any], options: Optional[Dict[str, Any]] = None) -> None:
        self.docs = docs
        self.options = {"debug_mgr": "0/5", "log_file": "/dev/null", "mon_max_pg_per_osd": 250,
                        "target_max_misplaced_ratio": 0.05,
                        **(options or {})}
        self.store: Dict[str, str] = {}
        self.modules: List[Any] = []         # the modules made over it, told of option changes
        self.module_options = ModuleOptions(self._notify)
        self.health: Dict[str, Any] = {}
        self.log: list = []
        self.uri = ""
        # get(name), get_ceph_option("option " + name), get_module_option("module_option " + name)
        # calls ("module_option balancer/mode": another module's)
        self.reads: Dict[str, int] = {}
        self.told_epoch: Any = None          # the osd_map epoch the modules were last told of

    def _notify(self) -> None:
        for m in self.modules:
            m._config_notify()


def pg_status(pg_dump: Any) -> Dict[str, Any]:
    """What the mgr's get('pg_status') gives (PGMapDigest::print_summary), from a pg dump."""
    pg_map = pg_dump.get("pg_map", pg_dump)
    states: Dict[str, int] = {}
    for st in pg_map["pg_stats"]:
        states[st["state"]] = states.get(st["state"], 0) + 1
    total = pg_map.get("pg_stats_sum", {}).get("stat_sum", {})
    return {"pgs_by_state": [{"state_name": k, "count": v} for k, v in sorted(states.items())],
            "num_pgs": len(pg_map["pg_stats"]), "num_objects": total.get("num_objects", 0),
            "data_bytes": total.get("num_bytes", 0)}


def pg_progress(pg_dump: Any) -> Dict[str, Any]:
    """What get('pg_progress') gives (PGMap::dump_pg_progress, then pg_ready)."""
    pg_map = pg_dump.get("pg_map", pg_dump)
    return {"pgs": {st["pgid"]: {"num_bytes_recovered": 0, "num_bytes": st["stat_sum"]["num_bytes"],
                                 "reported_epoch": 1, "state": st["state"]}
                    for st in pg_map["pg_stats"]}, "pg_ready": True}


def pgs_brief(pg_dump: Any) -> List[Dict[str, Any]]:
    """What `pg dump pgs_brief -f json` gives (PGMap::dump_pg_stats brief rows)."""
    pg_map = pg_dump.get("pg_map", pg_dump)
    return [{k: st[k] for k in ("pgid", "state", "up", "up_primary", "acting", "acting_primary")}
            for st in pg_map["pg_stats"]]


class BaseMgrModule:
    fake: FakeMgr = FakeMgr({})

    def __init__(self, py_modules_ptr: Any, this_ptr: Any) -> None:
        self.fake.modules.append(self)

    def _tell_new_map(self) -> None:
        """As ceph-mgr tells its modules of a new OSDMap (notify "osd_map") soon after it
        has one: here on the module's next read of anything."""
        doc = self.fake.docs.get("osd_map")
        epoch = doc.get("epoch") if isinstance(doc, dict) else None
        if epoch != self.fake.told_epoch:
            self.fake.told_epoch = epoch
            for m in self.fake.modules:
                m.notify("osd_map", "")

    def _ceph_get(self, name: str) -> Any:
        self._tell_new_map()
        self.fake.reads[name] = self.fake.reads.get(name, 0) + 1
        if name == "pg_status" and name not in self.fake.docs:
            return pg_status(self.fake.docs["pg_dump"])
        if name == "pg_progress" and name not in self.fake.docs:
            return pg_progress(self.fake.docs["pg_dump"])
        if name == "osd_stats" and name not in self.fake.docs:
            pg_map = self.fake.docs["pg_dump"].get("pg_map", self.fake.docs["pg_dump"])
            return {"osd_stats": pg_map.get("osd_stats", [])}
        return self.fake.docs[name]

    def _ceph_get_option(self, key: str) -> Any:
        self.fake.reads["option " + key] = self.fake.reads.get("option " + key, 0) + 1
        return self.fake.options.get(key)

    def _ceph_get_module_option(self, module: str, key: str, prefix: Optional[str] = None) -> Any:
        name = "module_option " + (key if module == "pg_advisor" else f"{module}/{key}")
        self.fake.reads[name] = self.fake.reads.get(name, 0) + 1
        return self.fake.module_options.get((module, key))

    def _ceph_get_version(self) -> str:
        return "16.2.15"

    def _ceph_get_release_name(self) -> str:
        return "pacific"

    def _ceph_get_mgr_id(self) -> str:
        return "x"

    def _ceph_log(self, *args: Any) -> None:
        self.fake.log.append(args)

    def _ceph_cluster_log(self, *args: Any) -> None:
        self.fake.log.append(args)

    def _ceph_get_store(self, key: str) -> Optional[str]:
        return self.fake.store.get(key)

    def _ceph_get_store_prefix(self, prefix: str) -> Dict[str, str]:
        return {k: v for k, v in self.fake.store.items() if k.startswith(prefix)}

    def _ceph_set_store(self, key: str, value: Optional[str]) -> None:
        if value is None:
            self.fake.store.pop(key, None)
        else:
            self.fake.store[key] = value

    def _ceph_set_health_checks(self, checks: Any) -> None:
        self.fake.health = checks

    def _ceph_set_uri(self, uri: str) -> None:
        self.fake.uri = uri

    def _ceph_get_osdmap(self) -> "FakeOSDMap":
        self.fake.reads["get_osdmap"] = self.fake.reads.get("get_osdmap", 0) + 1
        return FakeOSDMap(self.fake.docs)


class FakeOSDMap:
    """The mgr's OSDMap handle over the fake's osd_map document: its epoch, and each PG's up
    set from pg_advisor's own CRUSH model (checked against osdmaptool in qa/; here it only
    stands in for Ceph's C++ so the module's write commands can be run in unit tests)."""

    def __init__(self, docs: Dict[str, Any]) -> None:
        self.docs = docs
        self._placer: Any = None

    def get_epoch(self) -> int:
        return int(self.docs["osd_map"]["epoch"])

    def pg_to_up_acting_osds(self, pool_id: int, ps: int) -> Dict[str, Any]:
        from pg_advisor.crush.placement import Placer
        from pg_advisor.model import snapshot
        if self._placer is None:
            self._placer = Placer(snapshot.load(self.docs["osd_map"], self.docs["osd_map_crush"], None, None))
        up = self._placer.up_sets([f"{pool_id}.{ps:x}"]).get(f"{pool_id}.{ps:x}", [])
        return {"up": up, "acting": up, "up_primary": up[0] if up else -1,
                "acting_primary": up[0] if up else -1}


class _Opaque:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


def install() -> None:
    """Make `import mgr_module` work outside the mgr (idempotent)."""
    if "ceph_module" not in sys.modules:
        m = types.ModuleType("ceph_module")
        m.BaseMgrModule = BaseMgrModule  # type: ignore[attr-defined]
        for name in ("BaseMgrStandbyModule", "BasePyOSDMap", "BasePyOSDMapIncremental",
                     "BasePyCRUSH"):
            setattr(m, name, type(name, (_Opaque,), {}))
        sys.modules["ceph_module"] = m
    if MGR_PATH not in sys.path:
        sys.path.append(MGR_PATH)
