"""Stored plans of an older layout, brought to the current one (as cephadm's migrations.py
does for its specs): each step takes one version to the next, and a plan read back runs
them in order, so that a mgr upgraded mid-plan resumes the plan instead of setting it aside.

- Layout 1 (pg_advisor before 2026-11-23): one `exec_state` entry with the steps inline,
  no version, and each pool as [pg_num at the start, goal]. Its steps name their pool's
  id; the targets the plan last set on a pool are those of its last step taken. A guess
  that misses (a step set half-way before the upgrade) is safe: the executor finds targets
  it did not expect and stops the plan for the operator, sending nothing.
- Layout 2 (version 2): the steps and pins in chunks apart, the state small. Fields came
  later without a new version (pins, full pins, drain, and_balance, mismatches); a state
  without them had them at their defaults.
- Layout 3 (version 3, now): layout 2 with every field present.

A version above the current one (a newer pg_advisor, then a downgrade) is not guessed at:
the store sets it aside as unreadable, and `abort` clears it.
"""
import dataclasses
from typing import Any, Callable, Dict, List, Optional, Tuple

from .plan_state import PlanState

STATE_VERSION = 3


class Unreadable(ValueError):
    """A stored value that is not a plan this version can run."""


Doc = Dict[str, Any]


def _v1_to_v2(doc: Doc) -> Tuple[Doc, Optional[List[Any]]]:
    steps = doc.get("steps")
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise Unreadable("exec_state of layout 1 has no steps")
    nxt, phase = doc.get("next"), doc.get("phase")
    if not isinstance(nxt, int) or isinstance(nxt, bool) or not 0 <= nxt <= len(steps):
        raise Unreadable("exec_state of layout 1: the next step is not one of its steps")
    taken = steps[:nxt + 1] if phase == "issued" else steps[:nxt]
    pools: Dict[str, Any] = {}
    for name, span in (doc.get("pools") or {}).items():
        if not (isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) for x in span)):
            raise Unreadable(f"exec_state of layout 1: pool {str(name)[:40]} is not [start, goal]")
        mine = [s for s in steps if s.get("pool") == name]
        if not mine or not isinstance(mine[0].get("pool_id"), int):
            raise Unreadable(f"exec_state of layout 1: no step names pool {str(name)[:40]}'s id")
        first = mine[0]
        # before its first step the pool was at pg_num start (and pgp_num, which a pg_num
        # step leaves as it was)
        expect = [span[0], first["pgp_num"] if first.get("kind") == "pg_num" else span[0]]
        last = [s for s in taken if s.get("pool") == name and s.get("kind") != "balance"]
        if last:
            expect = [last[-1]["pg_num"], last[-1]["pgp_num"]]
        pools[name] = {"id": first["pool_id"], "start": span[0], "goal": span[1], "expect": expect}
    out = {k: v for k, v in doc.items() if k not in ("steps", "blockers", "waiting", "items")}
    out.update(version=2, pools=pools, steps_count=len(steps), rounds=doc.get("rounds", 0), round=None,
               stopped_why=doc.get("stopped_why"))
    return out, steps


def _later_defaults() -> Doc:
    """The fields layout 2 gained without a new version, at their defaults (fresh each time:
    some are lists and dicts)."""
    return {f.name: f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            for f in dataclasses.fields(PlanState) if f.metadata.get("stored") == "optional"}


def _v2_to_v3(doc: Doc) -> Doc:
    return {**_later_defaults(), "pins_count": 0, **doc, "version": 3}


STEPS: Dict[int, Callable[[Doc], Doc]] = {2: _v2_to_v3}


def migrate(doc: Any) -> Tuple[Doc, Optional[List[Any]]]:
    """`doc` (a stored exec_state) in the current layout, and its steps when its layout kept
    them inline (else None: they are in their chunks); Unreadable if no step leads there."""
    if not isinstance(doc, dict):
        raise Unreadable(f"exec_state is a {type(doc).__name__}, not a plan")
    version = doc.get("version", 1)
    inline: Optional[List[Any]] = None
    if version == 1 and "version" not in doc:
        doc, inline = _v1_to_v2(doc)
        version = 2
    while isinstance(version, int) and version in STEPS:
        doc = STEPS[version](doc)
        version = doc["version"]
    if version != STATE_VERSION:
        raise Unreadable(f"exec_state is of version {version!r}, not {STATE_VERSION} or an older one "
                         f"(written by another pg_advisor)")
    return doc, inline
