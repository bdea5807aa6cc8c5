"""The walk a reader takes from a command's handler to the mon: the package's files on the
call stack each time `ceph pg-advisor balance` sends a mon command (the issue of the third
floor plan: a balance command entered 18 files on its way, climbing back up 10 times)."""
import traceback
from pathlib import Path
from typing import Any, Dict, List, Set, Tuple

from .conftest import cmd
from .test_layers import LAYER_OF, PACKAGE, module_name

MOST_FILES = 10


def walk_of_balance(wired: Any) -> Tuple[Set[str], int, int]:
    """(the files, the most climbs on one stack, the sends) of one balance command: a climb
    is a call from a file into a file of an earlier layer than its caller's... read the other
    way, a callee in a later layer than its caller (a callback up the stack)."""
    m, ceph, refresh = wired
    files: Set[str] = set()
    climbs = [0]
    sends = [0]

    def send(c: Dict[str, Any]) -> Any:
        stack = [Path(f.filename).resolve() for f in traceback.extract_stack()]
        ours = [p for p in stack if PACKAGE in p.parents and "tests" not in p.relative_to(PACKAGE).parts]
        seen: List[Path] = []
        for p in ours:       # the callers' order, each file once where it is entered
            if not seen or seen[-1] != p:
                seen.append(p)
        files.update(str(p.relative_to(PACKAGE)) for p in seen)
        layers = [LAYER_OF[module_name(p)] for p in seen]
        climbs[0] = max(climbs[0], sum(1 for a, b in zip(layers, layers[1:]) if b > a))
        sends[0] += 1
        out = ceph.send(c)
        refresh()
        return out
    setattr(m, "send", send)
    setattr(m, "send_nowait", lambda c: (lambda r: lambda seconds: r)(send(c)))
    code, r, err = cmd(m, "balance")
    assert code == 0 and r["applied"] > 0, err
    return files, climbs[0], sends[0]


def test_a_balance_command_reaches_the_mon_through_few_files(wired: Any) -> None:
    files, climbs, sends = walk_of_balance(wired)
    assert sends > 0
    # the handler's own file and the mon's are on the way: the walk was seen whole
    assert {"mgr/commands.py", "module.py"} <= files, sorted(files)
    assert len(files) <= MOST_FILES, sorted(files)
