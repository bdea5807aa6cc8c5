"""The walk a reader takes from a command's handler to the mon: the issue of the third floor
plan found a balance command's entering 18 files. Measured here on `ceph pg-advisor balance`
through the module: from the handler (LiveCommands.act_balance, through the serve thread's
run_intents) down to each mon command,
the files of the functions on that path, and of every function those call on the way (a
reader following the path opens them)."""
import sys
from types import CodeType, FrameType
from typing import Any, Dict, List, Optional, Set, Tuple

from .conftest import cmd
from .test_layers import PACKAGE

# 10 while the handler did the command itself; the handoff to the serve thread (issue 58:
# no handler reads the cluster) adds the three files a reader follows it through:
# mgr/intents.py (the queue), mgr/serve.py (run_intents) and mgr/read.py (its fresh read)
MOST_FILES = 13
HANDLER = "act_balance"


def _ours(code: CodeType) -> Optional[str]:
    """The package file of `code`, relative; None for a test's or another library's."""
    path = code.co_filename
    root = str(PACKAGE) + "/"
    if not path.startswith(root) or path.startswith(root + "tests/"):
        return None
    return path[len(root):]


def walk_of_balance(wired: Any) -> Tuple[Set[str], Set[str], int]:
    """(the files on the path from the handler to the mon, those and the files of what the
    path's functions call, the mon commands sent) of one balance command."""
    m, ceph, refresh = wired
    calls: List[Tuple[CodeType, CodeType]] = []      # (caller, callee), in the package
    path: Set[CodeType] = set()
    sends = [0]

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not _ours(frame.f_code):
            return
        # the caller is the nearest of the package's frames: a call through a library's
        # (contextlib's for a `with`, a sort's key) is the package function's own
        caller = frame.f_back
        while caller is not None and not _ours(caller.f_code):
            caller = caller.f_back
        if caller is not None:
            calls.append((caller.f_code, frame.f_code))

    def send(c: Dict[str, Any]) -> Any:
        f: Optional[FrameType] = sys._getframe(1)
        chain: List[CodeType] = []
        while f is not None:
            if _ours(f.f_code):
                chain.append(f.f_code)
            if f.f_code.co_name == HANDLER:
                path.update(chain)
                break
            f = f.f_back
        sends[0] += 1
        out = ceph.send(c)
        refresh()
        return out
    setattr(m, "send", send)
    setattr(m, "send_nowait", lambda c: (lambda r: lambda seconds: r)(send(c)))
    was = sys.getprofile()
    sys.setprofile(profile)
    try:
        code, r, err = cmd(m, "balance")
    finally:
        sys.setprofile(was)
    assert code == 0 and r["applied"] > 0, err
    on_path = {str(_ours(c)) for c in path}
    walk = on_path | {str(_ours(b)) for a, b in calls if a in path}
    return on_path, walk, sends[0]


def test_a_balance_command_reaches_the_mon_through_few_files(wired: Any) -> None:
    on_path, walk, sends = walk_of_balance(wired)
    assert sends > 0
    # the walk was seen whole: from the handler's file to the mon's
    assert {"mgr/commands.py", "mgr/mon.py", "execute/operator_commands.py"} <= on_path, sorted(on_path)
    assert len(walk) <= MOST_FILES, sorted(walk)
