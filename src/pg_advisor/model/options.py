"""The module's options: one schema for the mgr (MODULE_OPTIONS), the CLI and validation.

Set live with `ceph config set mgr mgr/pg_advisor/NAME VALUE`; offline with --NAME.
"""
import enum
import math
import re
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union, cast

from .errors import AdvisorError

Value = Union[int, float, str, bool]


class Mode(enum.StrEnum):
    """What the module does in the background."""
    OFF = "off"            # nothing
    ADVISE = "advise"      # health warnings only
    AUTO = "auto"          # also apply the recommended pg_num changes


class AssumeBalanced(enum.StrEnum):
    """What sizing assumes of the PGs' spread."""
    AUTO = "auto"          # balanced when the upmap balancer is active
    YES = "yes"            # the balanced ideal
    NO = "no"              # CRUSH as it falls


class BalanceMode(enum.StrEnum):
    """What `balance` evens: PG counts only, or counts and then how full the OSDs are."""
    PGS = "pgs"
    BYTES = "bytes"


class FillLimit(enum.StrEnum):
    """The fullness past which no move sends a PG to an OSD: the cluster's nearfull_ratio,
    or its backfillfull_ratio (past which the OSD itself refuses the backfill)."""
    NEARFULL = "nearfull"
    BACKFILLFULL = "backfillfull"


@dataclass(frozen=True)
class Spec:
    name: str
    type: str                      # 'int' | 'float' | 'str' | 'bool'
    default: Value
    desc: str
    min: Optional[float] = None
    max: Optional[float] = None
    choices: Tuple[str, ...] = ()

    def mgr_option(self) -> Dict[str, Any]:
        """The dict mgr_module.Option takes (the mgr hands min/max to the mon, which checks them)."""
        o: Dict[str, Any] = {"name": self.name, "type": self.type, "default": self.default,
                             "desc": self.desc, "runtime": True}
        if self.min is not None:
            o["min"] = self.min
        if self.max is not None:
            o["max"] = self.max
        if self.choices:
            o["enum_allowed"] = list(self.choices)
        return o


def _opt(default: Value, desc: str, min: Optional[float] = None, max: Optional[float] = None,
         choices: Tuple[str, ...] = ()) -> Any:
    """One option's field: its default, and for the mgr and the checks its description,
    bounds and choices."""
    return field(default=default, metadata={"desc": desc, "min": min, "max": max, "choices": choices})


@dataclass(frozen=True)
class Options:
    """Every option with its type: the one schema. SPECS (the mgr's MODULE_OPTIONS, the
    CLI's flags, coerce's checks) is derived from these fields."""
    target_pgs_per_osd: int = _opt(
        0, "PG replicas per OSD to aim for when sizing pools (0: the cluster's "
        "mon_target_pg_per_osd)", 0, 1000)
    min_pgs_per_pool: int = _opt(32, "pg_num floor for near-empty pools", 1, 4096)
    empty_pool_share: float = _opt(
        0.01, "a pool with less than this share of its subtree's data counts as near-empty", 0.0, 0.5)
    pg_per_osd_headroom: float = _opt(
        0.2, "keep the predicted max PGs on any OSD this fraction below mon_max_pg_per_osd", 0.0, 0.9)
    merge_threshold: float = _opt(
        3.0, "without PG-count or memory pressure, merge a pool only once its ideal pg_num is below "
        "1/this of its pg_num (pg_autoscaler's threshold)", 2.0, 64.0)
    hysteresis: float = _opt(
        0.25, "octaves beyond the rounding midpoint before pg_num grows (0.25: x1.68)",
        0.0, 1.0)
    pg_memory_fraction: float = _opt(
        0.25, "share of osd_memory_target PG logs and PG state may take", 0.01, 1.0)
    bytes_per_log_entry: int = _opt(550, "memory of one PG log entry (calibrated)", 1, 1 << 20)
    bytes_per_log_dup: int = _opt(140, "memory of one PG log dup entry (calibrated)", 0, 1 << 20)
    bytes_per_pg: int = _opt(12000, "fixed memory of one PG on an OSD (calibrated)", 0, 1 << 30)
    assume_balanced: AssumeBalanced = _opt(
        AssumeBalanced.AUTO, "size against the balanced ideal (yes), CRUSH as it falls (no), or yes "
        "when the upmap balancer is active (auto)")
    sleep_interval: int = _opt(60, "seconds between health evaluations", 1, 86400)
    refresh_interval: int = _opt(
        10, "seconds between two computations of the status the panel and /metrics serve", 1, 3600)
    pg_stats_full_max: int = _opt(
        10000, "PGs up to which the mgr reads every PG's full stats (the PG map as Python objects, "
        "some 20 KiB and 0.1 ms of the mgr's GIL a PG); above it the brief stats (state, up, "
        "acting, bytes), which lack the PG logs", 0, 1 << 22)
    server_addr: str = _opt("127.0.0.1", "address the panel's HTTP server listens on")
    server_port: int = _opt(9285, "port of the panel's HTTP server", 1, 65535)
    mode: Mode = _opt(
        Mode.ADVISE, "off: nothing in the background; advise: health warnings only; auto: also apply the "
        "recommended pg_num changes in throttled steps")
    misplaced_budget: float = _opt(
        0.0, "fraction of object copies a plan may have misplaced at once (0: the cluster's "
        "target_max_misplaced_ratio)", 0.0, 1.0)
    max_pgs_splitting: int = _opt(
        0, "PGs one step may split or merge (0: the cluster's mgr_max_pg_num_change, and a split "
        "no further than the next pgp_num step can place within the misplaced budget and "
        "max_backfills_per_osd)", 0, 4096)
    max_backfills_per_osd: int = _opt(
        0, "PGs a plan may have moving into or out of a single OSD (0: 8 x the lowest "
        "osd_max_backfills of the OSDs that are in)", 0, 1024)
    split_pinning: bool = _opt(
        True, "pin split PGs where their data is (upmap items in the same epoch as pgp_num) and "
        "release them by balance rounds, instead of letting them move at once")
    prime_pg_temp: bool = _opt(
        True, "with each PG's upmap items, and for each PG a pgp_num step remaps, set a pg_temp "
        "onto the OSDs that hold its data, in the same map epoch (as the mon does when an "
        "OSD fails): the PG peers once and keeps its primary while it backfills, instead of "
        "moving its primary to an OSD without the data and back an epoch later")
    pin_on_change: bool = _opt(
        False, "mode auto: when an OSDMap change (OSDs added, out, reweighted) leaves more misplaced "
        "than the budget, pin the remapped PGs onto their data and drain them in throttled "
        "balance rounds, as `ceph pg-advisor pin-remapped` does")
    step_interval: int = _opt(10, "seconds at least between two steps of a plan", 0, 86400)
    poll_interval: int = _opt(2, "seconds between checks while a plan runs", 1, 600)
    command_wait: int = _opt(
        20, "seconds a command that acts (apply, drain, balance, ...) waits for the background to "
        "act on it; past it the command answers that it is queued, and `history` gives the outcome", 0, 600)
    window_begin: str = _opt("00:00", "plans take steps from this time of day (HH:MM, local)")
    window_end: str = _opt(
        "00:00", "until this time of day (HH:MM; equal to window_begin: all day; earlier: past midnight)")
    window_days: str = _opt("", "on these days only (e.g. mon,tue,sat; empty: every day)")
    balance_max_items: int = _opt(10, "replica moves one `balance` round may set", 1, 10000)
    balance_mode: BalanceMode = _opt(
        BalanceMode.BYTES,
        "balance PG counts only (pgs), or counts and then how full the OSDs are (bytes)")
    balance_min_gain: float = _opt(
        0.005, "bytes mode: a move must bring the fullest OSD down (or the emptiest up) by this "
        "fraction of the mean fullness", 0.0001, 1.0)
    fill_limit: FillLimit = _opt(
        FillLimit.NEARFULL, "no move sends a PG to an OSD that would pass the cluster's nearfull_ratio "
        "(nearfull) or backfillfull_ratio (backfillfull), counting what already backfills into it")
    upmap_max_deviation: int = _opt(
        1, "balance moves no replica for an OSD within this many PGs of its share, in a pool and in "
        "total (1: within floor and ceiling of the share; Ceph's balancer's option of that name is "
        "5 by default): a larger one leaves fewer pg_upmap_items in the map", 1, 1000)
    max_upmap_items: int = _opt(
        10000, "PGs with pg_upmap_items the OSDMap may hold: past it balance rounds and drains set no new "
        "item list, only change or remove those there (each is in every OSDMap the mons build, "
        "check and send; 0: no bound)", 0, 1 << 24)
    read_balance: bool = _opt(
        False, "mode auto: once the balance rounds leave nothing to move, even each replicated "
        "pool's primaries with pg-upmap-primary entries, read_max_changes a round (Reef on, "
        "require_min_compat_client reef; no data moves)")
    read_max_changes: int = _opt(
        128, "primary changes (pg-upmap-primary entries set or removed) one `read-balance` may "
        "make; each re-peers its PG", 1, 10000)

    def __post_init__(self) -> None:
        # a choice given as its text (Options(mode="auto")) is its member: `is Mode.AUTO`
        # holds however the options were made (an unknown text raises ValueError)
        for f in fields(self):
            if isinstance(f.type, type) and issubclass(f.type, enum.Enum):
                object.__setattr__(self, f.name, f.type(getattr(self, f.name)))


def _spec(f: Any) -> Spec:
    """An option's spec from its field; an enum's is a string option of its values."""
    if issubclass(f.type, enum.Enum):
        meta: Dict[str, Any] = {**f.metadata, "choices": tuple(m.value for m in f.type)}
        return Spec(f.name, "str", f.default.value, **meta)
    return Spec(f.name, f.type.__name__, cast(Value, f.default), **f.metadata)


SPECS: Tuple[Spec, ...] = tuple(_spec(f) for f in fields(Options))
# options whose values are an enum's: coerce() returns its members
ENUMS: Dict[str, Any] = {f.name: f.type for f in fields(Options) if issubclass(f.type, enum.Enum)}

BY_NAME = {s.name: s for s in SPECS}
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
INT_TEXT = re.compile(r"-?[0-9]+\Z")        # ASCII digits only: int() takes "3_2" and " 32 "
_HHMM = re.compile(r"([0-9]{1,2}):([0-9]{2})\Z")


def minutes(hhmm: str, name: str) -> int:
    """Minutes into the day of a time HH:MM (24:00 is the end of the day)."""
    m = _HHMM.match(hhmm)
    v = int(m.group(1)) * 60 + int(m.group(2)) if m else -1
    if not (m and int(m.group(2)) < 60 and 0 <= v <= 24 * 60):
        raise AdvisorError.invalid(f"option {name}: '{hhmm}' is not a time HH:MM")
    return v


def check_window(begin: str, end: str, days: str) -> None:
    """Refuse a malformed time window. Not part of coerce(): in the mgr an option that
    fails coerce() falls back to its default, and the default window is all day: a plan
    must stop on a bad window instead (execute/pacing.py check_pacing), not run around the clock."""
    minutes(begin, "window_begin")
    minutes(end, "window_end")
    weekdays(days)


def weekdays(text: str) -> List[str]:
    """The days of window_days ("" is every day)."""
    days = [d for d in text.replace(" ", "").split(",") if d]
    bad = [d for d in days if d not in WEEKDAYS]
    if bad:
        raise AdvisorError.invalid(f"option window_days: '{bad[0]}' is not one of {','.join(WEEKDAYS)}")
    return days


def coerce(name: str, raw: Any) -> Value:
    """Parse and check one option value; AdvisorError(EINVAL) with a sentence if bad."""
    spec = BY_NAME.get(name)
    if spec is None:
        raise AdvisorError.invalid(f"unknown option '{name}'")
    try:
        if spec.type == "int":
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()) \
                    or (isinstance(raw, str) and not INT_TEXT.match(raw)):
                raise ValueError
            v: Value = int(raw)
        elif spec.type == "float":
            v = float(raw)
            if not math.isfinite(v):    # nan passes every min/max comparison below
                raise AdvisorError.invalid(f"option {name}: {raw!r} is not a finite number")
        elif spec.type == "bool":
            if not isinstance(raw, bool) and str(raw).lower() not in TRUE + FALSE:
                raise ValueError
            v = raw if isinstance(raw, bool) else str(raw).lower() in TRUE
        else:
            v = str(raw)
    except (TypeError, ValueError):
        raise AdvisorError.invalid(f"option {name}: '{raw}' is not a{'n' if spec.type == 'int' else ''}"
                                   f" {spec.type}") from None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if spec.min is not None and v < spec.min or spec.max is not None and v > spec.max:
            raise AdvisorError.invalid(f"option {name}: {v} is outside {spec.min}..{spec.max}")
    if spec.choices and v not in spec.choices:
        raise AdvisorError.invalid(f"option {name}: '{v}' is not one of {', '.join(spec.choices)}")
    kind = ENUMS.get(name)
    return kind(v) if kind is not None else v


def make(overrides: Optional[Mapping[str, Any]] = None) -> Options:
    """Defaults with `overrides` applied and checked (None values are ignored)."""
    checked: Dict[str, Any] = {k: coerce(k, raw) for k, raw in (overrides or {}).items() if raw is not None}
    return Options(**checked)


def mgr_options() -> List[Dict[str, Any]]:
    return [s.mgr_option() for s in SPECS]
