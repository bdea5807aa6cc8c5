"""What the benchmarks share: their command line, a command timed in a process of its own
(wall time, peak RSS, a time limit), osdmaptool on a built map and its pg-upmap-items, the
offline CLI on dumps, and the tables they print."""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, TypeVar

from pg_advisor.model import snapshot

from ..cluster import dump_flags
from ..maps.crushgen import GeneratedMap

SRC = Path(__file__).resolve().parents[2] / "src"
T = TypeVar("T")
Items = Dict[str, Tuple[Tuple[int, int], ...]]     # pgid -> pg-upmap-items pairs (empty: removed)
# the mon commands osdmaptool writes (--upmap: items, --read: primary)
COMMAND_RE = re.compile(r"^ceph osd (rm-)?pg-upmap-(items|primary) (\S+)(.*)$", re.M)
ASSERT_RE = re.compile(r"FAILED ceph_assert\(.*\)")


def parser(doc: Optional[str], **options: Any) -> argparse.ArgumentParser:
    """A benchmark's command line: its docstring's first paragraph, and per keyword an
    option (--tool-timeout for tool_timeout) of that default, or (default, help), and of its
    type (None: str; False: a flag)."""
    ap = argparse.ArgumentParser(description=" ".join((doc or "").split("\n\n")[0].split()))
    for key, value in options.items():
        default, text = value if isinstance(value, tuple) else (value, HELP.get(key))
        kind: Dict[str, Any] = {"action": "store_true"} if default is False else \
            {"default": default, "type": str if default is None else type(default)}
        ap.add_argument("--" + key.replace("_", "-"), help=text, **kind)
    return ap


HELP = {"only": "comma-separated, of those the docstring names", "hosts": "hosts per rack",
        "tool_timeout": "seconds one osdmaptool run may take",
        "variants": "even (as CRUSH leaves it), uneven, or both",
        "bytes_sigma": "spread of the PG sizes on the bytes map (lognormal sigma)",
        "pg_bits": "createsimple: pgp_num = OSDs << this (not past pg_num: 10,000 << 3 = 80,000)"}


def timed(f: Callable[[], T]) -> Tuple[T, float]:
    """f()'s result and wall seconds."""
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def self_peak_mib() -> float:
    """This process's peak RSS so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Run:
    """One command run in a process of its own."""
    code: int
    out: str
    err: str
    seconds: float
    peak_mib: float
    limit: float
    killed: bool        # at the time limit

    @property
    def status(self) -> str:
        if self.killed:
            return f"hit the {self.limit:.0f} s limit"
        if self.code:
            failed = ASSERT_RE.search(self.out + self.err)
            return f"exit {self.code} after {self.seconds:.1f} s: " + \
                (failed.group(0) if failed else (self.err or self.out)[-200:])
        return "done"

    def ok(self) -> "Run":
        """This run, or RuntimeError if it failed."""
        if self.code:
            raise RuntimeError(f"failed: {self.status}")
        return self


# Linux carries a process's peak RSS over fork and exec, so a child of this (big) process
# would report at least this one's: a small python forks the command, kills it past the
# limit (0: none) and writes the command's own rusage (wait4) to the fd it is given
_WRAP = """import os, signal, sys, time
res, limit = int(sys.argv[1]), float(sys.argv[2])
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[3], sys.argv[3:])
killed = []
signal.signal(signal.SIGALRM, lambda *_: killed.append(os.kill(pid, 9)))
signal.setitimer(signal.ITIMER_REAL, limit)
_, status, usage = os.wait4(pid, 0)
os.write(res, b"%d %d %f %d" % (os.waitstatus_to_exitcode(status), usage.ru_maxrss,
                                time.monotonic() - t0, len(killed)))
"""


def _text(f: IO[bytes]) -> str:
    f.seek(0)
    return f.read().decode(errors="replace")


def measured(argv: Sequence[str], limit: float = 0.0) -> Run:
    """`argv` as a process of its own, pg_advisor's src on its PYTHONPATH."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryFile() as res:
        subprocess.run([sys.executable, "-c", _WRAP, str(res.fileno()), str(limit), *argv],
                       stdin=subprocess.DEVNULL, stdout=out, stderr=err, pass_fds=(res.fileno(),),
                       env={**os.environ, "PYTHONPATH": str(SRC)})
        code, kib, secs, killed = _text(res).split()
        return Run(int(code), _text(out), _text(err), float(secs), int(kib) / 1024, limit, killed != "0")


def osdmaptool(gm: GeneratedMap, *args: str, limit: float = 0.0) -> Run:
    """osdmaptool on `gm`'s map in its state (GeneratedMap.state_args)."""
    return measured(["osdmaptool", str(gm.path), *gm.state_args(), *args], limit)


def upmap(gm: GeneratedMap, deviation: Optional[int], out: Path, limit: float) -> Tuple[Items, Run]:
    """osdmaptool --upmap at `deviation` (None: --upmap-cleanup alone) on `gm`: the items
    its commands set (empty where it removes a PG's), and the run. Both first clean the
    map's items as the mon does after a change (OSDMap::clean_pg_upmaps), writing
    rm-pg-upmap-items (and a PG's items left) before any new ones."""
    args = ["--upmap-cleanup", str(out)] if deviation is None else \
        ["--upmap", str(out), "--upmap-deviation", str(deviation), "--upmap-max", "1000000"]
    run = osdmaptool(gm, *args, limit=limit)
    if run.code and not run.killed:
        raise RuntimeError(f"osdmaptool {' '.join(args)}: {run.status}")
    items: Items = {}
    for m in COMMAND_RE.finditer(out.read_text() if out.exists() else ""):
        v = [int(x) for x in m.group(4).split()]
        items[m.group(3)] = () if m.group(1) else tuple(zip(v[0::2], v[1::2]))
    return items, run


def write_dumps(d: Path, docs: Mapping[str, Any]) -> List[str]:
    """qa.cluster.dump_flags of the dumps in `docs` a benchmark passes: osd_dump, crush, pg_dump."""
    return dump_flags(d, docs, ("osd_dump", "crush", "pg_dump"))


def cli(flags: Sequence[str], *args: str) -> Run:
    """The offline CLI as a user runs it: `python3 -m pg_advisor FLAGS ARGS`."""
    return measured([sys.executable, "-m", "pg_advisor", *flags, *args])


def each_map(names: Iterable[str], prefix: str, rows: Callable[[str, Path], List[T]]) -> List[T]:
    """rows(name, a temporary directory of its own) of each name, joined."""
    out: List[T] = []
    for name in names:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            out += rows(name, Path(tmp))
    return out


def map_label(num_osds: int, snap: snapshot.Snapshot) -> str:
    n = len(snap.pools)
    return f"{num_osds} OSDs, {n} pool{'s' if n > 1 else ''}, {sum(p.pg_num for p in snap.pools)} PGs"


# ---- tables: a column is (title, format spec of its values, e.g. "<30", ">8.2f"); the
# title and a value given as text (None: "-") take the spec's alignment and width ----

Col = Tuple[str, str]
_SPEC = re.compile(r"([<>^]?\d*)(.*)")


def cell(v: Any, spec: str) -> str:
    m = _SPEC.fullmatch(spec)
    assert m is not None, spec
    box, fmt = m.groups()
    return format("-" if v is None else v if isinstance(v, str) else format(v, fmt), box)


def line(cols: Sequence[Col], values: Sequence[Any]) -> None:
    print(" ".join(cell(v, spec) for (_, spec), v in zip(cols, values)).rstrip(), flush=True)


def table(cols: Sequence[Col], rows: Iterable[Sequence[Any]]) -> None:
    """The titles, then the rows (none: the titles, for rows printed as they come)."""
    for r in [[title for title, _ in cols], *rows]:
        line(cols, r)
