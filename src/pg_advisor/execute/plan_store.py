"""How a plan is kept in the mgr store, so that a new mgr resumes it.

- Small entries: the mon refuses a config-key value over mon_config_key_max_entry_size
  (64 KiB in Pacific), and the mgr only logs that refusal, so a big plan would silently
  not be kept. The steps (fixed when the plan starts) go in chunks written once; the
  state that changes as the plan runs is a few hundred bytes; the history is trimmed to
  fit.
- Written only when a value changed: a blocked plan polled every 2 s writes nothing.
- Read back in the current layout (a plan an older pg_advisor stored is migrated first:
  plan_migrations.py), with every field checked: the store may hold anything (a hand
  edit, a newer version). What cannot be read is kept aside under CORRUPT_KEY and
  reported; it never stops the module, and `abort` clears it.

No mgr calls here: the module hands in functions that read and write its store.
"""
import dataclasses
import json
import math
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..balance.remapped import FULL_MAX
from .history import Event
from .plan_migrations import STATE_VERSION, Unreadable, migrate
from .plan_state import Phase, PlanState, Source, Status
from .steps import PlanStep

STATE_KEY, HISTORY_KEY, STEPS_KEY, CORRUPT_KEY = "exec_state", "exec_history", "exec_steps", "exec_corrupt"
PINS_KEY = "exec_pins"       # pin-remapped's items, in chunks written once, as the steps
PLAN_KEY = "exec_plan"       # exec_plan.<id>: one plan's state
INDEX_VERSION = 4            # exec_state as the index of the plans (3 and below: one plan)
INDEX_MAX = 16               # plans an index may name (executor.py keeps fewer)
PLAN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")     # as a key's part
ENTRY_MAX = 60000            # bytes per store entry, below the mon's 65536
STEPS_PER_CHUNK = 150        # a step is ~250 bytes of JSON
PINS_PER_CHUNK = 300         # a PG's pins are at most ~180 bytes of JSON (EC 8+3, all shards)
MAX_PINS = 1 << 20
MAX_STEPS = 1 << 18          # more than any pg_num change within mon_max_pool_pg_num needs
READ_MAX = 1 << 20           # a stored value longer than this is not parsed at all
# what the state entry holds, from PlanState's own fields (plan_state.py says where each is
# kept): not the steps and pins (in chunks apart) nor what is recomputed
VOLATILE = tuple(f.name for f in dataclasses.fields(PlanState)
                 if f.metadata.get("stored") in ("apart", "never"))
STORE_OWN = ("version", "steps_count", "pins_count")       # the store's own fields

MISMATCH_SHOWN = 10          # mismatched PGs named in the state (all are counted)
PGID = re.compile(r"[0-9]{1,10}\.[0-9a-f]{1,8}\Z")

Load = Callable[[str], Optional[str]]
Save = Callable[[str, Optional[str]], None]


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _up_sets(v: Any) -> bool:
    """pgid -> an up set (OSD ids, CRUSH_ITEM_NONE for an EC hole), as the state keeps them."""
    return isinstance(v, dict) and all(
        isinstance(k, str) and PGID.match(k) is not None and isinstance(o, list) and 0 < len(o) <= 256
        and all(_int(x) and 0 <= x <= 0x7FFFFFFF for x in o) for k, o in v.items())


# field -> check; every field of a state of the current layout, nothing else
_STATE_FIELDS: Dict[str, Callable[[Any], bool]] = {
    "version": lambda v: v == STATE_VERSION,
    "id": lambda v: isinstance(v, str) and 0 < len(v) <= 64,
    "source": lambda v: v in tuple(Source),
    "created": _number,
    "next": lambda v: _int(v) and v >= 0,
    "phase": lambda v: v in tuple(Phase),
    "status": lambda v: v in tuple(Status),
    # none: every pool of the plan was deleted (executor._drop)
    "pools": lambda v: isinstance(v, dict) and len(v) <= 4096 and all(
        isinstance(k, str) and isinstance(p, dict) and set(p) == {"id", "start", "goal", "expect"}
        and all(_int(p[f]) for f in ("id", "start", "goal"))
        and isinstance(p["expect"], list) and len(p["expect"]) == 2 and all(_int(x) for x in p["expect"])
        for k, p in v.items()),
    "steps_count": lambda v: _int(v) and 0 < v <= MAX_STEPS,
    "issued_at": lambda v: v is None or _number(v),
    "last_step_at": lambda v: v is None or _number(v),
    "retry_at": lambda v: v is None or _number(v),
    "attempts": lambda v: _int(v) and v >= 0,
    "last_error": lambda v: v is None or isinstance(v, str),
    "stopped_why": lambda v: v is None or isinstance(v, str),
    "rounds": lambda v: _int(v) and v >= 0,
    "round": lambda v: v is None or (isinstance(v, dict)
                                     and set(v) - {"want", "topology"} == {"epoch", "items"}
                                     and _int(v["epoch"]) and isinstance(v["items"], dict)
                                     and _up_sets(v.get("want", {}))
                                     and isinstance(v.get("topology", ""), str)
                                     and len(v.get("topology", "")) <= 64),
    "pins_count": lambda v: _int(v) and 0 <= v <= MAX_PINS,
    "pins_left": lambda v: _int(v) and 0 <= v <= MAX_PINS,
    "drain": lambda v: isinstance(v, list) and len(v) <= 4096
    and all(_int(x) and 0 <= x < 1 << 24 for x in v),
    "and_balance": lambda v: isinstance(v, bool),
    "mismatched": lambda v: _int(v) and v >= 0,
    "full_pins": lambda v: _up_sets(v) and len(v) <= FULL_MAX,
    "mismatch_detail": lambda v: isinstance(v, list) and len(v) <= MISMATCH_SHOWN
    and all(isinstance(x, str) for x in v),
}
_EVENT_FIELDS = {"time": _number, "plan": lambda v: v is None or isinstance(v, str),
                 "event": lambda v: isinstance(v, str), "detail": lambda v: isinstance(v, str)}


def _parse(raw: Optional[str], key: str) -> Any:
    if raw is None:
        return None
    if len(raw) > READ_MAX:
        raise Unreadable(f"{key} is {len(raw)} bytes, more than any plan of pg_advisor's")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise Unreadable(f"{key} is not JSON ({type(e).__name__}: {str(e)[:80]})") from None


def check_state(doc: Dict[str, Any]) -> Dict[str, Any]:
    """The state (migrated to the current layout) as it must be; Unreadable with the first
    field that is not."""
    missing = sorted(set(_STATE_FIELDS) - set(doc))
    extra = sorted(set(doc) - set(_STATE_FIELDS))
    if missing or extra:
        raise Unreadable(f"exec_state lacks {missing} / has unknown {extra}")
    bad = [k for k, ok in _STATE_FIELDS.items() if not ok(doc[k])]
    if bad:
        raise Unreadable(f"exec_state field '{bad[0]}' is malformed: {str(doc[bad[0]])[:80]}")
    if doc["next"] > doc["steps_count"]:
        raise Unreadable("exec_state: the next step is past the last one")
    return doc


def _joined(chunks: List[Any], plan: str, key: str, field: str, kind: type) -> List[Any]:
    """The `field` of each chunk of `key`, in order, each checked to be of `plan`."""
    out = []
    for i, c in enumerate(chunks):
        if not (isinstance(c, dict) and c.get("plan") == plan and c.get("part") == i
                and isinstance(c.get(field), kind)):
            raise Unreadable(f"{key}.{i} does not belong to plan {plan}")
        out.append(c[field])
    return out


def check_steps(chunks: List[Any], plan: str, count: int) -> List[Dict[str, Any]]:
    parts = _joined(chunks, plan, STEPS_KEY, "steps", list)
    steps: List[Dict[str, Any]] = [s for part in parts for s in part]
    if len(steps) != count:
        raise Unreadable(f"plan {plan} has {len(steps)} stored steps, not {count}")
    for s in steps:
        try:
            step = PlanStep.from_json(s)
        except (TypeError, ValueError) as e:     # a field missing or unknown, a kind no step has
            raise Unreadable(f"a stored step is malformed: {e}") from None
        if not all(
                _int(getattr(step, f)) for f in ("pool_id", "pg_num", "pgp_num")):
            raise Unreadable(f"a stored step is malformed: {str(s)[:80]}")
    return steps


def check_pins(chunks: List[Any], plan: str, count: int) -> Dict[str, List[List[int]]]:
    pins: Dict[str, List[List[int]]] = {}
    for part in _joined(chunks, plan, PINS_KEY, "pins", dict):
        pins.update(part)
    if len(pins) != count:
        raise Unreadable(f"plan {plan} has {len(pins)} stored pins, not {count}")
    for k, v in pins.items():
        if not (isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 and all(_int(x) for x in p)
                                            for p in v)):
            raise Unreadable(f"the stored pins of {k[:40]} are malformed")
    return pins


def check_history(doc: Any) -> List[Dict[str, Any]]:
    if doc is None:
        return []
    if not isinstance(doc, list) or not all(
            isinstance(e, dict) and set(e) == set(_EVENT_FIELDS)
            and all(ok(e[k]) for k, ok in _EVENT_FIELDS.items()) for e in doc):
        raise Unreadable("exec_history is not a list of events")
    return doc


def _fit(history: List[Dict[str, Any]]) -> str:
    """The newest events that fit one entry."""
    text = json.dumps(history)
    while len(text) > ENTRY_MAX and history:
        history = history[max(1, len(history) // 10):]
        text = json.dumps(history)
    return text


class PlanStore:
    """The plans side by side: `exec_state` is the index (INDEX_VERSION, the plans' ids in
    the order they started), each plan's state in `exec_plan.<id>` and its steps and pins in
    chunks `exec_steps.<id>.N` and `exec_pins.<id>.N`. A store of one plan (layouts 1-3:
    `exec_state` is the plan, its chunks `exec_steps.N`) is read as that plan, and its
    entries move to the new keys at the next write. A plan that cannot be read is set
    aside (the others run on); `abort` forgets it."""

    def __init__(self, load: Load, save: Save) -> None:
        self._load, self._save = load, save
        self._written: Dict[str, Optional[str]] = {}   # key -> the value last written or read
        self._chunks: Dict[str, Tuple[int, int]] = {}  # plan -> (step chunks, pin chunks) stored
        self._legacy: Optional[Tuple[int, int]] = None   # a one-plan store's chunks, to remove
        self._lost: List[str] = []           # plans of the index that could not be read
        self.error: Optional[str] = None     # what could not be read, until cleared

    def _get(self, key: str) -> Optional[str]:
        raw = self._load(key)
        self._written[key] = raw
        return raw

    def _put(self, key: str, value: Optional[str]) -> None:
        if self._written.get(key, "\0unknown") != value:
            self._save(key, value)
            self._written[key] = value

    def read(self, now: float) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
        """(the plans with their steps, oldest first; history). What is unreadable is set
        aside and `error` says what it was; an unreadable history starts again with that
        event."""
        history: List[Dict[str, Any]] = []
        problems: List[str] = []
        try:
            history = check_history(_parse(self._get(HISTORY_KEY), HISTORY_KEY))
        except Unreadable as e:
            problems.append(str(e))
            history = [{"time": now, "plan": None, "event": Event.RESET.value,
                        "detail": f"the stored history was unreadable and is kept aside in "
                                  f"{CORRUPT_KEY}: {e}"}]
        plans: List[Dict[str, Any]] = []
        try:
            doc = _parse(self._get(STATE_KEY), STATE_KEY)
            if isinstance(doc, dict) and doc.get("version") == INDEX_VERSION:
                for plan in check_index(doc):
                    try:
                        plans.append(self._read_plan(plan))
                    except Unreadable as e:
                        problems.append(str(e))
                        self._lost.append(plan)
            elif doc is not None:
                plans.append(self._read_one(doc))
        except Unreadable as e:
            problems.append(str(e))
            self._lost.append("")
        if self._lost:
            self.error = f"a stored plan is unreadable ({problems[-1]}); `ceph pg-advisor abort` clears it"
        if problems:     # keep what was there for a post-mortem (one entry, cut to fit)
            keys = [STATE_KEY, HISTORY_KEY] + [f"{PLAN_KEY}.{p}" for p in self._lost if p][:6]
            kept = {k: (self._written.get(k) or "")[:ENTRY_MAX // 16] for k in keys}
            self._put(CORRUPT_KEY, json.dumps({"problems": problems[:8], "values": kept}))
        return plans, history

    def _read_plan(self, plan: str) -> Dict[str, Any]:
        """One plan of the index, with its steps and pins."""
        key = f"{PLAN_KEY}.{plan}"
        doc = _parse(self._get(key), key)
        if doc is None:
            raise Unreadable(f"{key} is missing")
        current, _ = migrate(doc)
        st = check_state(current)
        if st["id"] != plan:
            raise Unreadable(f"{key} holds plan {st['id']}")
        steps = self._read_chunks(f"{STEPS_KEY}.{plan}", st["steps_count"], STEPS_PER_CHUNK)
        pins = self._read_chunks(f"{PINS_KEY}.{plan}", st["pins_count"], PINS_PER_CHUNK)
        self._chunks[plan] = (len(steps), len(pins))
        return _whole(st, steps, pins)

    def _read_one(self, doc: Any) -> Dict[str, Any]:
        """The plan of a one-plan store (layouts 1 to 3), its chunks under the old keys."""
        current, inline = migrate(doc)
        st = check_state(current)
        steps = self._read_chunks(STEPS_KEY, st["steps_count"], STEPS_PER_CHUNK) if inline is None \
            else [{"plan": st["id"], "part": 0, "steps": inline}]
        pins = self._read_chunks(PINS_KEY, st["pins_count"], PINS_PER_CHUNK)
        self._legacy = (0 if inline is not None else len(steps), len(pins))
        return _whole(st, steps, pins)

    def write(self, plans: List[Dict[str, Any]], history: List[Dict[str, Any]]) -> None:
        """Store what changed: each plan's steps first (once per plan), then its state, then
        the index that names them; the entries of plans no longer kept go last."""
        ids = [st["id"] for st in plans]
        for st in plans:
            self._write_plan(st)
        if "" not in self._lost:     # an index that could not be read stays for `abort`
            named = ids + self._lost
            self._put(STATE_KEY, json.dumps({"version": INDEX_VERSION, "plans": named}) if named else None)
        for plan in sorted(set(self._chunks) - set(ids)):
            self._forget(plan)
        if self._legacy is not None:
            self._drop_chunks(STEPS_KEY, self._legacy[0])
            self._drop_chunks(PINS_KEY, self._legacy[1])
            self._legacy = None
        self._put(HISTORY_KEY, _fit(history))

    def _write_plan(self, state: Dict[str, Any]) -> None:
        plan = state["id"]
        had = self._chunks.get(plan, (0, 0))
        steps = state["steps"]
        n_steps = self._write_chunks(f"{STEPS_KEY}.{plan}", plan, "steps", [
            steps[i:i + STEPS_PER_CHUNK] for i in range(0, len(steps), STEPS_PER_CHUNK)], had[0])
        pins = sorted((state.get("pins") or {}).items())
        n_pins = self._write_chunks(f"{PINS_KEY}.{plan}", plan, "pins", [
            dict(pins[i:i + PINS_PER_CHUNK]) for i in range(0, len(pins), PINS_PER_CHUNK)], had[1])
        self._chunks[plan] = (n_steps, n_pins)
        doc = {k: v for k, v in state.items() if k not in VOLATILE}
        doc["version"], doc["steps_count"], doc["pins_count"] = STATE_VERSION, len(steps), len(pins)
        self._put(f"{PLAN_KEY}.{plan}", json.dumps(doc, sort_keys=True))

    def _forget(self, plan: str) -> None:
        """A plan no longer kept: its entries removed (after the index that named it)."""
        n_steps, n_pins = self._chunks.pop(plan, (0, 0))
        self._put(f"{PLAN_KEY}.{plan}", None)
        self._drop_chunks(f"{STEPS_KEY}.{plan}", n_steps)
        self._drop_chunks(f"{PINS_KEY}.{plan}", n_pins)

    def _drop_chunks(self, key: str, count: int) -> None:
        for i in range(count):
            self._put(f"{key}.{i}", None)

    def _write_chunks(self, key: str, plan: str, field: str, parts: List[Any], had: int) -> int:
        """`parts` in entries key.0, key.1, ... each naming `plan` (written once a plan: an
        unchanged chunk is not written again); the `had` - len(parts) a longer plan left
        after them removed. How many there are now."""
        for i, part in enumerate(parts):
            self._put(f"{key}.{i}", json.dumps({"plan": plan, "part": i, field: part}, sort_keys=True))
        for i in range(len(parts), had):
            self._put(f"{key}.{i}", None)
        return len(parts)

    def _read_chunks(self, key: str, count: int, per_chunk: int) -> List[Any]:
        """The chunks _write_chunks wrote for `count` things, parsed (unchecked)."""
        return [_parse(self._get(f"{key}.{i}"), f"{key}.{i}") for i in range(-(-count // per_chunk))]

    def clear(self) -> None:
        """Forget the plans that could not be read (`abort`): their entries and their place
        in the index go; the copy set aside stays. (An unreadable plan's chunks are not
        known: a chunk left behind is never read, as no index names its plan.)"""
        lost, self._lost = [p for p in self._lost if p], []
        for plan in lost:
            self._put(f"{PLAN_KEY}.{plan}", None)
        ids = [p for p in self._index_ids() if p not in lost]
        self._put(STATE_KEY, json.dumps({"version": INDEX_VERSION, "plans": ids}) if ids else None)
        self.error = None

    def _index_ids(self) -> List[str]:
        """The ids the index as last written or read names (none when it is not an index)."""
        try:
            doc = json.loads(self._written.get(STATE_KEY) or "null")
            return check_index(doc) if isinstance(doc, dict) and doc.get("version") == INDEX_VERSION else []
        except (ValueError, RecursionError):
            return []


def check_index(doc: Dict[str, Any]) -> List[str]:
    plans = doc.get("plans")
    if set(doc) != {"version", "plans"} or not isinstance(plans, list) or len(plans) > INDEX_MAX or not all(
            isinstance(p, str) and PLAN_ID.match(p) for p in plans) or len(set(plans)) != len(plans):
        raise Unreadable("exec_state is not an index of plans")
    return plans


def _whole(st: Dict[str, Any], steps: List[Any], pins: List[Any]) -> Dict[str, Any]:
    """A checked state with its steps and pins (from their chunks) joined in."""
    st["steps"] = check_steps(steps, st["id"], st["steps_count"])
    st["pins"] = check_pins(pins, st["id"], st["pins_count"])
    for k in STORE_OWN:
        del st[k]
    return st
