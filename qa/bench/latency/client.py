"""One measuring client of the latency bench, in a process of its own (its GIL not the bench's
nor the other client's, no pg_advisor on its path): --depth ops in flight on the objects
lat{i} with i % C == K (16 blocks of 4 KiB, fill()'s version 0), 4 KiB and 64 KiB reads and
writes, none on a busy object, every read checked against each block's last version. On
"stop" on stdin: every object read back, a row per op saved (start, end, ok, its KINDS
index, i) and one JSON line printed (ops, failed, mismatches, unknown: last write failed).
"""
import argparse
import json
import random
import sys
import threading
import time
from typing import Any, List, Optional, Set

import numpy as np

from ...cluster.rados_client import Rados, fill as write_all, payload

BLOCK = 4096
BLOCKS = 16
OBJECT = BLOCK * BLOCKS
KINDS = ("read4k", "read64k", "write4k", "write64k")


def name(i: int) -> str:
    return f"lat{i}"


def block(i: int, b: int, v: int) -> bytes:
    """Block b of object i at version v: distinct for every triple."""
    return payload(f"{name(i)}/{b}", v, BLOCK)


def whole(i: int, versions: np.ndarray) -> bytes:
    return b"".join(block(i, b, int(v)) for b, v in enumerate(versions))


def fill(conffile: str, pool: str, objects: int) -> None:
    """Every object at version 0."""
    zero = np.zeros(BLOCKS, np.int64)
    errors = write_all(conffile, pool, ((name(i), whole(i, zero)) for i in range(objects)))
    if errors:
        raise RuntimeError(f"fill: {len(errors)} writes failed ({errors[0]})")


class Client:
    def __init__(self, io: Any, owned: List[int], depth: int, seed: int, rate: float = 0.0) -> None:
        self.io = io
        self.gap = 1.0 / rate if rate > 0 else 0.0     # s between issues; 0: as fast as the depth allows
        self.owned = owned
        self.rng = random.Random(seed)
        self.versions = np.zeros((len(owned), BLOCKS), np.int64)
        self.unknown: Set[int] = set()        # index into owned: its last write failed
        self.busy: Set[int] = set()
        self.slots = threading.Semaphore(depth)
        self.lock = threading.Lock()
        self.rows: List[List[float]] = []
        self.mismatches: List[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        next_at = time.monotonic()
        while not self.stop.is_set():
            if self.gap:
                next_at = max(next_at + self.gap, time.monotonic() - 1.0)   # no catch-up burst
                self.stop.wait(max(0.0, next_at - time.monotonic()))
            if not self.slots.acquire(timeout=0.5):
                continue
            with self.lock:
                k = self.rng.randrange(len(self.owned))
                while k in self.busy:
                    k = self.rng.randrange(len(self.owned))
                self.busy.add(k)
                kind = self.rng.randrange(len(KINDS))
                b = self.rng.randrange(BLOCKS)
                v = int(self.versions[k].max()) + 1
            self._issue(k, kind, b, v)

    def _issue(self, k: int, kind: int, b: int, v: int) -> None:
        i, t0 = self.owned[k], time.monotonic()
        write, small = kind >= 2, kind % 2 == 0          # KINDS' order
        off, length = (b * BLOCK, BLOCK) if small else (0, OBJECT)

        def finish(ok: bool, problem: str = "") -> None:
            with self.lock:
                self.rows.append([t0, time.monotonic(), 1.0 if ok else 0.0, float(kind), float(i)])
                self.busy.discard(k)
                if problem:
                    self.mismatches.append(problem)
                if write and not ok:
                    self.unknown.add(k)
            self.slots.release()

        with self.lock:
            if write:    # the model takes the write now: no other op on the object until it completes
                self.versions[k, b if small else slice(None)] = v
            data = block(i, b, int(self.versions[k, b])) if small else whole(i, self.versions[k])
        if write:
            self.io.aio_write(name(i), data, off, oncomplete=lambda c: finish(c.get_return_value() >= 0))
            return

        def read(c: Any, got: Optional[bytes]) -> None:
            ok = c.get_return_value() >= 0
            finish(ok, f"{name(i)} {KINDS[kind]} at {off}" if ok and k not in self.unknown and got != data
                   else "")
        self.io.aio_read(name(i), length, off, oncomplete=read)

    def read_back(self) -> None:
        for k, i in enumerate(self.owned):
            try:
                if k not in self.unknown and self.io.read(name(i), OBJECT, 0) != whole(i, self.versions[k]):
                    self.mismatches.append(f"{name(i)} read back differs")
            except Exception as e:    # a lost object is what the check reports
                self.mismatches.append(f"{name(i)} read back: {e!r}")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    for opt in ("--conf", "--pool", "--out"):
        ap.add_argument(opt, required=True)
    for opt in ("--objects", "--client", "--clients"):
        ap.add_argument(opt, type=int, required=True)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rate", type=float, default=0.0, help="ops a second at most (0: no limit)")
    a = ap.parse_args(argv)
    owned = list(range(a.client, a.objects, a.clients))
    # an op that waits 300 s fails (and is counted) rather than hanging the bench
    with Rados(a.conf, op_timeout=300) as r, r.ioctx(a.pool) as io:
        c = Client(io, owned, a.depth, a.seed * 1000 + a.client, a.rate)
        t = threading.Thread(target=c.run, daemon=True)
        t.start()
        print("ready", flush=True)
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        c.stop.set()
        t.join(60)
        for _ in range(a.depth):        # every op in flight answered (or failed)
            c.slots.acquire(timeout=330)
        c.read_back()
    rows = np.array(c.rows, dtype=np.float64).reshape(-1, 5)
    np.save(a.out, rows)
    print(json.dumps({"ops": len(rows), "failed": int((rows[:, 2] == 0).sum()),
                      "mismatches": c.mismatches[:20], "mismatch_count": len(c.mismatches),
                      "unknown": len(c.unknown)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
