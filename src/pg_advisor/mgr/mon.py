"""The mon commands themselves, through the mgr: one waited for, one sent without waiting,
a burst that the mon takes into one map epoch; and Ceph's own mapping of a PG in the
mgr's OSDMap."""
import errno
import json
import time
from typing import Any, Callable, Dict, List, Tuple

from mgr_module import MgrModule
from mgr_module import CommandResult as MonResult

BURST_WAIT = 120.0  # seconds a burst's commands may take to answer, all together


def json_command(cmd: Dict[str, Any]) -> Dict[str, Any]:
    """A mon command as the module sends it: its answer in JSON."""
    return dict(cmd, format="json")


def send(mgr: MgrModule, cmd: Dict[str, Any]) -> Tuple[int, str]:
    """One mon command, waited for: (code, error)."""
    code, _, err = mgr.mon_command(json_command(cmd))
    return code, err


Wait = Callable[[float], Tuple[int, str]]     # waits up to so many seconds for an answer


def send_nowait(mgr: MgrModule, cmd: Dict[str, Any]) -> Wait:
    """Send a mon command without waiting; the function returned waits for its answer."""
    result = MonResult("")
    mgr.send_command(result, "mon", "", json.dumps(json_command(cmd)), "")

    def wait(seconds: float) -> Tuple[int, str]:
        if not result.ev.wait(seconds):
            return -errno.ETIMEDOUT, f"no answer from the mon within {BURST_WAIT:g} s"
        code, _, err = result.wait()
        return code, err
    return wait


def burst(send_one: Callable[[Dict[str, Any]], Wait],
          cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
    """Send commands together, in order, none waiting for the one before (no thread
    each: a weight change and its hundreds of pins go out as one), so that the mon takes
    them into one map epoch; answers in the same order. `send_one` is send_nowait's kind.
    One deadline for the whole burst: a mon that stops answering holds the caller (and
    the plan's lock) BURST_WAIT seconds, not that for each command."""
    waits = [send_one(c) for c in cmds]
    deadline = time.monotonic() + BURST_WAIT
    return [w(max(0.0, deadline - time.monotonic())) for w in waits]


def mon_mapping(osdmap: Any, pgid: str) -> Dict[str, Any]:
    """A PG's mapping ("up", "up_primary", "acting", ...) computed by Ceph itself, in the
    mgr's OSDMap."""
    head, tail = pgid.split(".")
    return dict(osdmap.pg_to_up_acting_osds(int(head), int(tail, 16)))
