"""The thrasher's client: writes and reads objects in each pool throughout, checking every
read against what it last wrote, and times every op. One thread per pool, each with a fixed
set of objects it overwrites with new versions, so the object count stays put (the misplaced
allowance scales with objects); `fill`'s larger objects are read back at the end too."""
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from ..cluster.rados_client import InFlight, Rados, payload

# an op unanswered this long fails, to be counted: far above any stall a healthy cluster shows
OP_TIMEOUT = 300


@dataclass
class PoolLoad:
    pool: str
    objects: int
    ok: int = 0
    failed: List[str] = field(default_factory=list)
    longest: float = 0.0                  # the slowest op, seconds
    longest_at: float = 0.0
    # name -> (version, size) it holds; a failed write leaves both versions possible
    versions: Dict[str, Tuple[int, int]] = field(default_factory=dict)
    unsure: Dict[str, Set[Tuple[int, int]]] = field(default_factory=dict)


class Client:
    """Writers and readers over the given pools on connection `rados` (made with OP_TIMEOUT),
    `rate` ops a second per pool at most (memstore keeps the OSDs' PG logs in RAM:
    unthrottled, they outgrow the machine)."""

    def __init__(self, rados: Rados, pools: List[str], objects: int, seed: int, rate: float) -> None:
        self.rados = rados
        self.loads = {p: PoolLoad(p, objects) for p in pools}
        self.fills: Dict[str, Dict[str, Tuple[int, int]]] = {p: {} for p in pools}
        self.fill_failed: List[str] = []
        self.seed, self.rate = seed, rate
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(self.loads[p], i), daemon=True)
                        for i, p in enumerate(pools)]
        self.lock = threading.Lock()

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _op(self, load: PoolLoad, what: str, name: str, fn: Any, *args: Any) -> Any:
        """fn(name, *args), timed and counted; None if it failed."""
        t0 = time.monotonic()
        try:
            out = fn(name, *args)
        except Exception as e:     # any failure is what the run counts
            load.failed.append(f"{what} {load.pool}/{name}: {e!r}")
            return None
        finally:
            took = time.monotonic() - t0
            if took > load.longest:
                load.longest, load.longest_at = took, time.time()
        load.ok += 1
        return True if out is None else out

    def _run(self, load: PoolLoad, index: int) -> None:
        rng = random.Random(self.seed * 1000 + index)
        names = [f"obj-{i}" for i in range(load.objects)]
        todo = list(names)              # first every object once, then overwrites and checked reads
        next_at = time.monotonic()
        with self.rados.ioctx(load.pool) as io:
            while not self.stop.is_set():
                next_at += 1.0 / self.rate
                time.sleep(max(0.0, next_at - time.monotonic()))
                name = todo.pop() if todo else rng.choice(names)
                if todo or name not in load.versions or rng.random() < 0.5:
                    old = load.versions.get(name)
                    new = load.versions[name] = ((old[0] if old else 0) + 1, rng.choice((4096, 16384, 65536)))
                    if self._op(load, "write", name, io.write_full, payload(name, *new)):
                        load.unsure.pop(name, None)
                    else:    # it may or may not have been applied: either version may be read
                        load.unsure.setdefault(name, set()).update({new} | ({old} if old else set()))
                    continue
                got = self._op(load, "read", name, io.read, 1 << 20)
                problem = got is not None and check(name, got, load.versions[name], load.unsure.get(name))
                if problem:
                    load.failed.append(f"read {load.pool}/{name}: {problem}")

    def fill(self, pool: str, count: int, size: int) -> None:
        """Write `count` objects of `size` bytes into `pool` (in the caller's thread)."""
        with self.lock:
            names = [f"fill-{len(self.fills[pool]) + i}" for i in range(count)]
            self.fills[pool].update((name, (1, size)) for name in names)
        with self.rados.ioctx(pool) as io:
            writes = InFlight(io, 4)
            for name in names:
                writes.write_full(name, payload(name, 1, size))
            writes.flush()
        self.fill_failed += [f"fill {pool}: a write failed ({code})" for code in writes.failed]

    def finish(self) -> List[str]:
        """Stop the load, then read back every object the run wrote: the problems found."""
        self.stop.set()
        for t in self.threads:
            t.join(OP_TIMEOUT + 60)
        problems: List[str] = []
        for pool, load in self.loads.items():
            with self.rados.ioctx(pool) as io:
                for name, version in sorted({**load.versions, **self.fills[pool]}.items()):
                    try:
                        problem = check(name, io.read(name, 1 << 22), version, load.unsure.get(name))
                    except Exception as e:
                        problem = repr(e)
                    if problem:
                        problems.append(f"final read {pool}/{name}: {problem}")
        return problems

    def figures(self) -> Dict[str, Any]:
        # when the slowest op ended (UTC, as the log's start line): to find the action behind it
        return {p: {"ok": ld.ok, "failed": len(ld.failed), "longest_op_s": round(ld.longest, 2),
                    "longest_op_ended": time.strftime("%H:%M:%S", time.gmtime(ld.longest_at)),
                    "fill_objects": len(self.fills[p])}
                for p, ld in self.loads.items()}

    def failures(self) -> List[str]:
        return [f for ld in self.loads.values() for f in ld.failed] + self.fill_failed


def check(name: str, got: bytes, version: Tuple[int, int],
          unsure: Optional[Set[Tuple[int, int]]]) -> str:
    """'' if `got` is the version written last (or, after a failed write, one of those it
    may hold); else what is wrong."""
    for v, size in sorted(unsure or {version}):
        if got == payload(name, v, size):
            return ""
    return f"{len(got)} bytes that are not version {version[0]} ({version[1]} bytes)"
