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
    def __init__(self, load: Load, save: Save) -> None:
        self._load, self._save = load, save
        self._written: Dict[str, Optional[str]] = {}   # key -> the value last written or read
        self._chunks = 0
        self._pin_chunks = 0
        self.error: Optional[str] = None     # what could not be read, until cleared

    def _get(self, key: str) -> Optional[str]:
        raw = self._load(key)
        self._written[key] = raw
        return raw

    def _put(self, key: str, value: Optional[str]) -> None:
        if self._written.get(key, "\0unknown") != value:
            self._save(key, value)
            self._written[key] = value

    def read(self, now: float) -> Tuple[Optional[Dict[str, Any]], List[Dict[str, Any]]]:
        """(state with its steps, or None; history). An unreadable state is set aside and
        `error` says what it was; an unreadable history starts again with that event."""
        state: Optional[Dict[str, Any]] = None
        history: List[Dict[str, Any]] = []
        problems = []
        try:
            history = check_history(_parse(self._get(HISTORY_KEY), HISTORY_KEY))
        except Unreadable as e:
            problems.append(str(e))
            history = [{"time": now, "plan": None, "event": Event.RESET.value,
                        "detail": f"the stored history was unreadable and is kept aside in "
                                  f"{CORRUPT_KEY}: {e}"}]
        try:
            doc = _parse(self._get(STATE_KEY), STATE_KEY)
            if doc is not None:
                current, inline = migrate(doc)
                st = check_state(current)
                chunks = self._read_chunks(STEPS_KEY, st["steps_count"], STEPS_PER_CHUNK) if inline is None \
                    else [{"plan": st["id"], "part": 0, "steps": inline}]
                st["steps"] = check_steps(chunks, st["id"], st["steps_count"])
                if inline is not None:
                    chunks = []      # none stored yet: the next write stores them
                pin_chunks = self._read_chunks(PINS_KEY, st["pins_count"], PINS_PER_CHUNK)
                st["pins"] = check_pins(pin_chunks, st["id"], st["pins_count"])
                for k in STORE_OWN:
                    del st[k]
                self._chunks, self._pin_chunks = len(chunks), len(pin_chunks)
                state = st
        except Unreadable as e:
            problems.append(str(e))
            self.error = f"the stored plan is unreadable ({e}); `ceph pg-advisor abort` clears it"
        if problems:     # keep what was there for a post-mortem (one entry, cut to fit)
            kept = {k: (self._written.get(k) or "")[:ENTRY_MAX // 16] for k in (STATE_KEY, HISTORY_KEY)}
            self._put(CORRUPT_KEY, json.dumps({"problems": problems, "values": kept}))
        return state, history

    def write(self, state: Optional[Dict[str, Any]], history: List[Dict[str, Any]]) -> None:
        """Store what changed: the steps first (once per plan), then the state that names them."""
        if state is not None:
            steps = state["steps"]
            self._chunks = self._write_chunks(STEPS_KEY, state["id"], "steps", [
                steps[i:i + STEPS_PER_CHUNK] for i in range(0, len(steps), STEPS_PER_CHUNK)], self._chunks)
            pins = sorted((state.get("pins") or {}).items())
            self._pin_chunks = self._write_chunks(PINS_KEY, state["id"], "pins", [
                dict(pins[i:i + PINS_PER_CHUNK]) for i in range(0, len(pins), PINS_PER_CHUNK)],
                self._pin_chunks)
            doc = {k: v for k, v in state.items() if k not in VOLATILE}
            doc["version"], doc["steps_count"], doc["pins_count"] = STATE_VERSION, len(steps), len(pins)
            self._put(STATE_KEY, json.dumps(doc, sort_keys=True))
        else:
            self._put(STATE_KEY, None)
        self._put(HISTORY_KEY, _fit(history))

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
        """Forget an unreadable plan (`abort`): the state key goes; the copy set aside stays."""
        self._put(STATE_KEY, None)
        for i in range(self._chunks):
            self._put(f"{STEPS_KEY}.{i}", None)
        for i in range(self._pin_chunks):
            self._put(f"{PINS_KEY}.{i}", None)
        self._chunks = self._pin_chunks = 0
        self.error = None
