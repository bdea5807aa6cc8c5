"""Driving the real test cluster from pytest: start/stop through qa/cluster/vstart.sh, `ceph` calls."""
import json
import os
import re
import socket
import subprocess
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from .rados_client import Rados, Writer  # noqa: F401  (qa's one librados client)

HERE = Path(__file__).resolve().parent      # vstart.sh beside it
OPT = "mgr/pg_advisor/"      # the prefix of the module's options in `ceph config set mgr ...`
REPO = HERE.parents[1]
# the dumps the offline CLI reads: key -> (its flag, the `ceph` command)
DUMPS = {"osd_dump": ("--osdmap", "osd dump"), "crush": ("--crush", "osd crush dump"),
         "pg_dump": ("--pg-dump", "pg dump"), "df": ("--df", "df"),
         "autoscale": ("--autoscale-status", "osd pool autoscale-status")}


def free_port() -> int:
    """A loopback port nothing listens on (the kernel's pick: never the mon's 3300/6789)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    def __init__(self, directory: Path) -> None:
        self.dir = directory.resolve()     # the CEPH_CONF vstart.sh gives the daemons
        self.env = dict(os.environ, CEPH_CONF=str(self.dir / "ceph.conf"),
                        PG_ADVISOR_CLUSTER_DIR=str(self.dir))

    def vstart(self, action: str, *args: str) -> str:
        p = subprocess.run(["bash", str(HERE / "vstart.sh"), action, "--dir", str(self.dir), *args],
                           env=self.env, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"vstart.sh {action} failed ({p.returncode}):\n{p.stderr[-4000:]}")
        return p.stdout

    def run(self, *args: str, timeout: float = 60) -> Tuple[int, str, str]:
        """`ceph ARGS`: (exit code, stdout, stderr)."""
        p = subprocess.run(["ceph", *args], env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def ceph(self, *args: str) -> str:
        code, out, err = self.run(*args)
        if code != 0:
            raise RuntimeError(f"ceph {' '.join(args)} failed ({code}): {err.strip()}")
        return out

    def json(self, *args: str) -> Any:
        return json.loads(self.ceph(*args, "-f", "json"))

    def pool_id(self, pool: str) -> int:
        return int(next(p["pool"] for p in self.json("osd", "dump")["pools"] if p["pool_name"] == pool))

    def osd_ids(self, in_up: bool = False) -> List[int]:
        """The map's OSDs (with in_up, those in and up): not always six (a test may add some)."""
        return sorted(o["osd"] for o in self.json("osd", "dump")["osds"]
                      if not in_up or (o["in"] and o["up"]))

    def host_mates(self) -> Dict[int, List[int]]:
        """Each OSD -> the other OSDs of its CRUSH host (an upmap item keeping the failure domain)."""
        out: Dict[int, List[int]] = {}
        for n in self.json("osd", "tree")["nodes"]:
            if n["type"] == "host":
                kids = sorted(k for k in n.get("children", []) if k >= 0)
                out.update({k: [m for m in kids if m != k] for k in kids})
        return out

    def crush_weights(self) -> Dict[int, float]:
        """Each OSD's CRUSH weight, as `osd tree` shows it."""
        return {n["id"]: float(n["crush_weight"]) for n in self.json("osd", "tree")["nodes"] if n["id"] >= 0}

    def mon_commands(self, cmds: List[Dict[str, Any]]) -> List[Any]:
        """Mon commands over one rados connection (a `ceph` call costs ~0.3 s): JSON answers."""
        with Rados(self.env["CEPH_CONF"]) as r:
            return [r.command("mon", **dict(cmd, format="json")) for cmd in cmds]

    def pool_detail(self, pool: str) -> Dict[str, Any]:
        """The pool's entry in `osd pool ls detail` (pg_num, pg_placement_num, targets, ...)."""
        return next(p for p in self.json("osd", "pool", "ls", "detail") if p["pool_name"] == pool)

    def up_sets(self, pool: str) -> Dict[str, List[int]]:
        """Each PG's up set as the OSDMap has it now (`pg map`, not the PG stats that lag)."""
        pool_id = self.pool_id(pool)
        n = int(self.json("osd", "pool", "get", pool, "pg_num")["pg_num"])
        pgids = [f"{pool_id}.{i:x}" for i in range(n)]
        maps = self.mon_commands([{"prefix": "pg map", "pgid": p} for p in pgids])
        return {p: m["up"] for p, m in zip(pgids, maps)}

    def mappings(self, epoch: int, pool_id: int) -> Dict[str, Tuple[Tuple[int, ...], int]]:
        """Each PG of the pool -> (up set, acting primary) in map `epoch`, as osdmaptool maps it."""
        from pg_advisor_testkit.osdmaptool_output import of_epoch, parse
        text = of_epoch(self.ceph, epoch, self.dir / f"map.{epoch}", "--test-map-pgs-dump-all",
                        "--pool", str(pool_id))
        return {pg: (m.up, m.primary) for pg, m in parse(text).items()}

    def pg_temp(self, epoch: int, pgid: str) -> Optional[List[int]]:
        """The PG's pg_temp in map `epoch` (None: it has none)."""
        return next(([int(o) for o in t["osds"]] for t in self.json("osd", "dump", str(epoch))["pg_temp"]
                     if t["pgid"] == pgid), None)

    def primary_changes(self, pool_id: int, epochs: Iterable[int],
                        remapped_only: bool = False) -> List[Tuple[int, str, int, int]]:
        """Each change of a PG's acting primary in `epochs` (from the epoch before): (epoch,
        pgid, old, new). `remapped_only`: only PGs whose up set changed then, not a backfill's end."""
        seen: Dict[int, Dict[str, Tuple[Tuple[int, ...], int]]] = {}

        def at(e: int) -> Dict[str, Tuple[Tuple[int, ...], int]]:
            if e not in seen:
                seen[e] = self.mappings(e, pool_id)
            return seen[e]
        out: List[Tuple[int, str, int, int]] = []
        for e in epochs:
            prev, cur = at(e - 1), at(e)
            out += [(e, pg, prev[pg][1], p) for pg, (up, p) in sorted(cur.items())
                    if pg in prev and prev[pg][1] != p and (not remapped_only or prev[pg][0] != up)]
            seen.pop(e - 1, None)
        return out

    def dumps(self) -> Dict[str, Any]:
        """The dumps the offline CLI reads."""
        return {key: self.json(*cmd.split()) for key, (_, cmd) in DUMPS.items()}

    def fingerprint(self) -> Dict[str, Any]:
        """What a pg_advisor command could change (not the epoch: Ceph bumps that itself)."""
        d = self.json("osd", "dump")
        return {
            "pools": [{k: p[k] for k in ("pool_name", "pg_num", "pg_num_target", "pg_placement_num",
                                         "pg_placement_num_target", "size", "min_size",
                                         "crush_rule", "options", "pg_autoscale_mode")}
                      for p in d["pools"]],
            "pg_upmap": d["pg_upmap"], "pg_upmap_items": d["pg_upmap_items"],
            "pg_upmap_primaries": d.get("pg_upmap_primaries"),     # Reef on
            "osds": [(o["osd"], o["weight"], o["in"]) for o in d["osds"]],
            "flags": d["flags"],
            "config": self.json("config", "dump"),
        }

    def release(self) -> str:
        """The Ceph release the cluster's mon runs ('tentacle', 'pacific')."""
        version = next(iter(self.json("versions")["mon"]))
        m = re.search(r"\)\s+(\w+)\s+\(", version)
        if m is None:
            raise RuntimeError(f"no release name in {version!r}")
        return m.group(1)

    @contextmanager
    def config(self, who: str, key: str, value: str) -> Iterator[None]:
        """`ceph config set who key value` for a with-block, then set back (a running mgr module
        may not hear of a bare `config rm`) and removed."""
        before = self.ceph("config", "get", who, key).strip()
        self.ceph("config", "set", who, key, value)
        try:
            yield
        finally:
            self.run("config", "set", who, key, before)
            self.run("config", "rm", who, key)

    @contextmanager
    def options(self, who: str, values: Dict[str, Any]) -> Iterator[None]:
        """Several config() settings at once; a key under mgr without a slash is OPT + key."""
        with ExitStack() as stack:
            for key, value in values.items():
                full = OPT + key if who == "mgr" and "/" not in key else key
                stack.enter_context(self.config(who, full, str(value)))
            yield

    def advisor(self, *args: str) -> Any:
        """`ceph pg-advisor ARGS -f json`, parsed."""
        return self.json("pg-advisor", *args)

    def create_pool(self, name: str, pg_num: int, *kind: str, autoscale: bool = False,
                    application: Optional[str] = None) -> None:
        """`osd pool create NAME PG_NUM PG_NUM KIND...`, pg_autoscale_mode off unless asked."""
        self.ceph("osd", "pool", "create", name, str(pg_num), str(pg_num), *kind)
        if not autoscale:
            self.ceph("osd", "pool", "set", name, "pg_autoscale_mode", "off")
        if application:
            self.ceph("osd", "pool", "application", "enable", name, application)

    def remove_pool(self, name: str, wait: bool = True, timeout: float = 180) -> None:
        """The pool removed (if there), then every PG active+clean unless not `wait`."""
        self.run("osd", "pool", "rm", name, name, "--yes-i-really-really-mean-it")
        if wait:
            self.wait_clean(timeout)

    @contextmanager
    def pool(self, name: str, pg_num: int, *kind: str, autoscale: bool = False,
             application: Optional[str] = None, timeout: float = 180) -> Iterator[str]:
        """A pool (create_pool's arguments) for a with-block, removed after, clean within `timeout`."""
        self.create_pool(name, pg_num, *kind, autoscale=autoscale, application=application)
        try:
            yield name
        finally:
            self.remove_pool(name, timeout=timeout)

    def plan(self) -> Dict[str, Any]:
        """The plan `pg-advisor progress` shows ({}: none)."""
        return self.advisor("progress").get("plan") or {}

    def abort_plan(self) -> None:
        """Every plan that is open (running, paused or stopped) aborted."""
        for p in self.advisor("progress").get("plans") or []:
            if p["status"] in ("running", "paused", "stopped"):
                self.ceph("pg-advisor", "abort", "--plan", p["id"])

    @contextmanager
    def min_compat_client(self, release: str) -> Iterator[None]:
        """require_min_compat_client `release` for a with-block, then what it was (what only
        newer clients read, such as pg_upmap_primaries, must be gone by then)."""
        was = self.json("osd", "dump")["require_min_compat_client"]
        self.ceph("osd", "set-require-min-compat-client", release)
        try:
            yield
        finally:
            self.ceph("osd", "set-require-min-compat-client", was, "--yes-i-really-mean-it")

    def hand_primaries(self, pool: str, osd: int) -> int:
        """A pg-upmap-primary to `osd` for each PG of `pool` with `osd` past its first slot: how many."""
        cmds = [{"prefix": "osd pg-upmap-primary", "pgid": pgid, "id": osd}
                for pgid, up in self.up_sets(pool).items() if osd in up[1:]]
        self.mon_commands(cmds)
        return len(cmds)

    def rm_primaries(self) -> None:
        """Every pg_upmap_primary the map has, removed."""
        self.mon_commands([{"prefix": "osd rm-pg-upmap-primary", "pgid": e["pgid"]}
                           for e in self.json("osd", "dump")["pg_upmap_primaries"]])

    def wait_clean(self, timeout: float = 180, pool: Optional[str] = None) -> None:
        """All PGs active+clean, no pg_num/pgp_num change pending; with `pool` (few PGs: a `pg
        map` each), also its PGs' stats show the OSDMap's up and acting sets (they lag a remap)."""
        def settled() -> bool:
            pools = self.json("osd", "pool", "ls", "detail")
            if any(p["pg_num"] != p["pg_num_target"]
                   or p["pg_placement_num"] != p["pg_placement_num_target"] for p in pools):
                return False
            stats = self.json("pg", "dump")["pg_map"]["pg_stats"]
            want = sum(p["pg_num"] for p in pools)
            if len(stats) != want or not all(
                    s["state"].startswith("active+clean") and "remapped" not in s["state"]
                    for s in stats):
                return False
            if pool is None:
                return True
            seen = {s["pgid"]: (s["up"], s["acting"]) for s in stats}
            pool_id = self.pool_id(pool)
            n = next(p["pg_num"] for p in pools if p["pool_name"] == pool)
            for i in range(n):      # stop at the first not yet there
                m = self.json("pg", "map", f"{pool_id}.{i:x}")
                if seen.get(m["pgid"]) != (m["up"], m["acting"]) or m["up"] != m["acting"]:
                    return False
            return True
        wait_until(settled, timeout, "all PGs active+clean" + (f", {pool}'s as the OSDMap has them"
                                                               if pool else ""))


def wait_until(cond: Callable[[], bool], timeout: float, what: str, step: float = 1.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(step)


def dump_flags(d: Path, docs: Mapping[str, Any], keys: Iterable[str] = DUMPS) -> List[str]:
    """The dumps of `keys` that `docs` has, written as d/KEY.json: the offline CLI's flags."""
    flags: List[str] = []
    for key in (k for k in keys if k in docs):
        (d / f"{key}.json").write_text(json.dumps(docs[key]))
        flags += [DUMPS[key][0], str(d / f"{key}.json")]
    return flags


def offline(dumps: Dict[str, Any], tmp: Path, args: List[str]) -> subprocess.CompletedProcess:
    """Run `python3 -m pg_advisor` on dumps written to files, as an operator would."""
    return subprocess.run(["/usr/bin/python3", "-m", "pg_advisor", *dump_flags(tmp, dumps), *args],
                          cwd=REPO / "src", capture_output=True, text=True, timeout=120)
