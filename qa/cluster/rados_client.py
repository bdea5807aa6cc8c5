"""qa's one librados client (the system Python's `rados`): a connection and its commands,
bounded aio writes, checkable payloads, and `Writer`, a test's background writes."""
import hashlib
import json
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

if TYPE_CHECKING:
    from . import Cluster


def payload(name: str, version: int, size: int) -> bytes:
    """One version of an object's content, from its name and version."""
    seed = hashlib.sha256(f"{name}:{version}".encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


class Rados:
    """One connection. `op_timeout`: an op unanswered that long fails rather than hang its caller."""

    def __init__(self, conffile: str, op_timeout: int = 0, conf: Optional[Dict[str, str]] = None,
                 connect_timeout: int = 0) -> None:
        import rados
        opts = dict(conf or {})
        if op_timeout:
            opts.update(rados_osd_op_timeout=str(op_timeout), rados_mon_op_timeout=str(op_timeout))
        self.rados = rados.Rados(conffile=conffile, conf=opts)
        self.rados.connect(**({"timeout": connect_timeout} if connect_timeout else {}))

    def ioctx(self, pool: str) -> Any:
        return self.rados.open_ioctx(pool)

    def raw(self, to: Union[str, int], prefix: str, timeout: float = 60,
            **args: Any) -> Tuple[int, bytes, str]:
        """A command to "mon", "mgr" or an OSD (its id): (code, output, error text)."""
        cmd, t = json.dumps({"prefix": prefix, **args}), int(timeout)
        if to == "mon":
            return self.rados.mon_command(cmd, b"", timeout=t)
        if to == "mgr":
            return self.rados.mgr_command(cmd, b"", timeout=t)
        return self.rados.osd_command(int(to), cmd, b"", timeout=t)

    def command(self, to: Union[str, int], prefix: str, timeout: float = 60, **args: Any) -> Any:
        """raw()'s output as JSON (None if empty); RuntimeError if the command failed."""
        code, out, err = self.raw(to, prefix, timeout, **args)
        if code != 0:
            raise RuntimeError(f"{to}: {prefix} {args} failed ({code}): {err}")
        return json.loads(out) if out.strip() else None

    def json(self, to: Union[str, int], prefix: str, **args: Any) -> Any:
        """command() with its output asked for as JSON."""
        return self.command(to, prefix, format="json", **args)

    def shutdown(self) -> None:
        self.rados.shutdown()

    def __enter__(self) -> "Rados":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


class InFlight:
    """Aio write_fulls, at most `depth` in flight; (start, end, ok) to `record`; failed codes kept."""

    def __init__(self, io: Any, depth: int,
                 record: Optional[Callable[[float, float, bool], None]] = None) -> None:
        self.io, self.record = io, record
        self.slots = threading.Semaphore(depth)
        self.failed: List[int] = []

    def write_full(self, name: str, data: bytes, timeout: Optional[float] = None) -> bool:
        """Issued once a slot is free (False: none was within `timeout`)."""
        if not self.slots.acquire(timeout=timeout):
            return False
        t0 = time.monotonic()

        def done(c: Any) -> None:
            ret = c.get_return_value()
            if ret < 0:
                self.failed.append(ret)
            if self.record is not None:
                self.record(t0, time.monotonic(), ret >= 0)
            self.slots.release()
        self.io.aio_write_full(name, data, oncomplete=done)
        return True

    def flush(self) -> None:
        """Until every write issued has answered."""
        self.io.aio_flush()


def fill(conffile: str, pool: str, objects: Iterable[Tuple[str, bytes]], depth: int = 64) -> List[int]:
    """Each (name, data) written, `depth` at a time: the codes of the writes that failed."""
    with Rados(conffile) as r, r.ioctx(pool) as io:
        w = InFlight(io, depth)
        for name, data in objects:
            w.write_full(name, data)
        w.flush()
    return w.failed


class Writer:
    """Small objects written throughout a with-block, in a thread of its own; outcomes kept."""

    def __init__(self, c: "Cluster", pool: str) -> None:
        self.client = Rados(c.env["CEPH_CONF"])
        self.io = self.client.ioctx(pool)
        self.ok = 0
        self.failed: List[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        i = 0
        while not self.stop.is_set():
            try:
                self.io.write_full(f"w{i}", b"x" * 4096)
                self.ok += 1
            except Exception as e:   # any failure is what the test counts
                self.failed.append(repr(e))
            i += 1

    def __enter__(self) -> "Writer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join(60)
        self.io.close()
        self.client.shutdown()
