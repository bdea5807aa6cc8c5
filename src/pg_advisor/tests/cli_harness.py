"""Runs the offline CLI and checks its contract on one input: each command exits 0 with
strict JSON, or 2 with one line on stderr; no traceback; its work within bounds counted
(model/work.py), never seconds; its memory bounded.

Two ways to run a command, one contract: `run_here` calls cli.main in this process (what
the fuzz corpus uses: no interpreter and numpy to start per case), `run_child` runs
`python3 -m pg_advisor` as a user does, for the entry point itself."""
import contextlib
import ctypes
import gc
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional

import pytest

from pg_advisor import cli
from pg_advisor.balance.balancer import WORK_MAX
from pg_advisor.model import work

from pg_advisor_testkit.dumps import DUMP_FILES

SRC = Path(__file__).resolve().parents[2]
# What one command may do on these dumps, counted (model/work.py), not timed: a loaded
# machine stretches seconds. CRUSH maps the fixture's few hundred replicas a handful of
# times; the balancer's bound is its own (WORK_MAX).
WORK_LIMIT = {"crush_draws": 10 ** 7, "crush_replicas": 10 ** 6, "balance_work": WORK_MAX}
HANG = 600                  # seconds after which a command is stopped as hung (a failure)
HUNG = -signal.SIGKILL      # the exit code a hung command is given
MEMORY_LIMIT = 1 << 30      # bytes of a child's peak RSS
# a child's RSS before it reads a dump (the interpreter, numpy, the package: 43 MiB
# measured), which a command run here does not allocate: its bound is the rest
START_RSS = 64 << 20
COMMANDS = [["status"], ["plan"], ["balance"], ["map"],
            ["simulate", "rbd", "--pg-num", "64", "--out", "0"]]

Docs = Dict[str, Any]


class Ran(NamedTuple):
    code: int               # the exit code; HUNG when stopped after HANG seconds
    out: str
    err: str
    counted: Dict[str, int]     # model/work.py's tally of the command
    memory: int             # peak bytes: the child's RSS, or what the command added to ours
    child: bool


Runner = Callable[[List[str]], Ran]


def write(tmp: Path, docs: Docs, raw: Optional[Dict[str, str]] = None) -> List[str]:
    """The dumps written to tmp (a `raw` text in place of a dump's JSON): their flags."""
    argv = []
    for key, flag in (("osd_dump", "--osdmap"), ("crush", "--crush"), ("pg_dump", "--pg-dump"),
                      ("df", "--df")):
        path = tmp / DUMP_FILES[key]
        text = (raw or {}).get(key)
        path.write_text(text if text is not None else json.dumps(docs[key]))
        argv += [flag, str(path)]
    return argv


class _Hung(Exception):
    pass


def _hung(signum: int, frame: Optional[FrameType]) -> None:
    raise _Hung()


_LIBC = ctypes.CDLL("libc.so.6")


@contextlib.contextmanager
def heap_set_aside() -> Iterator[None]:
    """What the process holds now set aside from the garbage collector (gc.freeze) until
    the end: run_here's collection before each command then walks what the commands and
    their tests left, not every object of the test session (0.15 s a command)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _status_bytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/self/status")


def run_here(argv: List[str]) -> Ran:
    """One offline command through cli.main in this process, as `python3 -m pg_advisor`
    runs it: stdout and stderr captured, the exit code returned, the work counted from
    zero. Its memory is read from the kernel as a child's is: this process's peak RSS
    (reset before, /proc/self/clear_refs) less its RSS at the start, freed memory handed
    back first (malloc_trim) so that the command cannot reuse it unseen; `check` bounds it
    by what a child has left past START_RSS. An exception that escapes main is its traceback on
    stderr, as the interpreter would print it."""
    out, err = io.StringIO(), io.StringIO()
    work.TALLY.clear()
    old = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(HANG)
    gc.collect()
    _LIBC.malloc_trim(0)
    start = _status_bytes("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")       # VmHWM := VmRSS
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
    except _Hung:
        code = HUNG
    except SystemExit as e:       # what argparse or a library might still do
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        err.write(traceback.format_exc())
        code = 1
    finally:
        memory = _status_bytes("VmHWM") - start
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return Ran(code, out.getvalue(), err.getvalue(), work.tally(), memory, False)


def run_child(argv: List[str]) -> Ran:
    """One offline command in a child process, as a user runs it; its peak RSS from the
    kernel."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.NamedTemporaryFile("r") as counts:
        t0 = time.monotonic()
        p = subprocess.Popen([sys.executable, "-m", "pg_advisor", *argv], cwd=SRC, stdout=out, stderr=err,
                             env=dict(os.environ, **{cli.WORK_FILE: counts.name}))
        # reaped here, not by Popen: wait4 gives the child's own peak RSS
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > HANG:
                os.kill(p.pid, signal.SIGKILL)
            time.sleep(0.01)
        p.returncode = os.waitstatus_to_exitcode(status)     # so Popen does not wait again
        out.seek(0)
        err.seek(0)
        counted = json.loads(counts.read() or "{}")
        return Ran(p.returncode, out.read(), err.read(), counted, int(usage.ru_maxrss) * 1024, True)


def check(cmd: List[str], ran: Ran, expect_error: Optional[str],
          work_limit: Optional[Dict[str, int]] = None) -> None:
    """The contract on one command's run: `expect_error` the start of its one line, or
    None for an answer."""
    what = f"{' '.join(cmd)}: exit {ran.code}, stderr {ran.err[-2000:]!r}"
    assert "Traceback" not in ran.err, what
    assert ran.code != HUNG, f"{what}: stopped after {HANG} s (a hang)"
    over = {k: v for k, v in ran.counted.items() if v > (work_limit or WORK_LIMIT).get(k, 0)}
    assert not over, f"{what}: work past its bound: {over}"
    limit = MEMORY_LIMIT if ran.child else MEMORY_LIMIT - START_RSS
    assert ran.memory < limit, f"{what}: peak memory {ran.memory >> 20} MiB"
    if expect_error is None:
        assert ran.code == 0 and ran.err == "", what
        # strict JSON: NaN or Infinity would be refused by every other JSON reader
        json.loads(ran.out, parse_constant=lambda c: pytest.fail(f"{cmd}: {c} in the JSON"))
    else:
        assert ran.code == 2, what
        assert ran.out == "", what
        lines = ran.err.splitlines()
        assert len(lines) == 1, what
        assert lines[0].startswith(f"pg_advisor: error: {expect_error}"), what
        assert len(lines[0]) < 400, what


def check_all(argv_base: List[str], expect_error: Optional[str],
              commands: Optional[List[List[str]]] = None,
              work_limit: Optional[Dict[str, int]] = None, run: Runner = run_here) -> List[str]:
    """Run every command (each in -f json); check the contract; return their stdouts.
    Children run three at a time; in this process one at a time, as the work tally and
    the memory traced are the process's own."""
    cmds = commands or COMMANDS

    def one(cmd: List[str]) -> Ran:
        return run(argv_base + cmd + ["-f", "json"])
    if run is run_here:
        results = [one(c) for c in cmds]
    else:
        with ThreadPoolExecutor(max_workers=3) as pool:
            results = list(pool.map(one, cmds))
    for cmd, ran in zip(cmds, results):
        check(cmd, ran, expect_error, work_limit)
    return [r.out for r in results]
