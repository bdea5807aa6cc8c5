"""Every `pg-advisor` command, its arguments and their checks, declared once.

The mgr adapter (module.py) turns each live command into a `ceph pg-advisor ...` command,
the offline CLI (cli.py) each offline one into a subcommand of `python3 -m pg_advisor`,
and both check what they are given with `check` before any work: the two cannot drift
apart in a bound, a pairing or a default, since each is said here once.
"""
import enum
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple, Type, Union

from ..model.checks import MAX_OSD_CRUSH_WEIGHT
from ..model.errors import AdvisorError
from ..model.options import BY_NAME as BY_OPTION, INT_TEXT, BalanceMode, Mode
from . import answers
from .answers import Inputs, Report, Values
from .bounds import MAX_BALANCE_ITEMS, MAX_READ_CHANGES

# a number as text: ASCII, no spaces or underscores; nan and inf are refused by name below
FLOAT_TEXT = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\Z|-?(nan|inf|infinity)\Z", re.I)

INT_MAX = (1 << 63) - 1          # the mon carries a CephInt as int64; the core bounds each further
MAX_OUT_OSDS = 4096              # OSDs one simulate may mark out
MAX_OSD_ID = (1 << 31) - 1       # an OSD id is an int32 at the mon


Kind = Union[Type[str], Type[int], Type[float], Type[bool], Type[enum.Enum]]


@dataclass(frozen=True)
class Arg:
    name: str                     # as the mgr names it (`--pg-num` is `pg_num`)
    kind: Kind
    help: str
    positional: bool = False      # offline: given without a flag (live: either way)
    required: bool = False
    many: bool = False            # a list: `--out-osd 1 2` live, `--out-osd 1 --out 2` offline
    aliases: Tuple[str, ...] = ()  # more offline spellings
    low: Optional[float] = None   # bounds, inclusive
    high: Optional[float] = None
    live_high: Optional[float] = None   # a tighter bound in the mgr, whose work it shares
    metavar: Optional[str] = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Command:
    name: str
    view: str                     # the render/views view its report is shown with
    help: str
    args: Tuple[Arg, ...] = ()
    write: bool = False           # live: changes the cluster unless --dry-run
    offline: bool = True          # also a subcommand of the offline CLI (a dry run there)
    check: Optional[Callable[[Values], None]] = None     # checks across arguments
    # the one index of who answers: offline (and in the mgr, unless `live` names a
    # handler) the function of commands/answers.py; in the mgr, the LiveCommands method
    # (mgr/commands.py) named by `live`, for a command that acts or a view of the plan
    answer: Optional[Callable[[Inputs, Values], Report]] = None
    live: Optional[str] = None

    def arg(self, name: str) -> Arg:
        return next(a for a in self.args if a.name == name)

    def offline_answer(self, inputs: Inputs, values: Values) -> Report:
        """The report as the offline CLI gives it (a writing command's dry run)."""
        if self.answer is None:
            raise AdvisorError.invalid(f"{self.name} is answered only by the running module")
        return self.answer(inputs, values)


def _pool(help: str = "narrow the view to one pool") -> Arg:
    return Arg("pool", str, help, positional=True)


DRY_RUN = Arg("dry_run", bool, "only show what would be done")
PLAN = Arg("plan", str, "the plan's id (`ceph pg-advisor progress` lists them)", metavar="ID")


def _check_simulate(v: Values) -> None:
    if v.get("add_host") is not None:
        if any(v.get(k) for k in ("pool", "pg_num", "pgp_num", "out_osd", "reweight")):
            raise AdvisorError.invalid("--add-host is simulated on its own (no pool, out or reweight)")
        if v.get("osds") is None or v.get("weight") is None:
            raise AdvisorError.invalid("--add-host NAME goes with --osds N and --weight W (each OSD's "
                                       "CRUSH weight)")
        return
    if (v.get("reweight") is None) != (v.get("weight") is None):
        raise AdvisorError.invalid("--reweight OSD goes with --weight W")
    for k in ("osds", "device_class", "root", "backfill_mib_s"):
        if v.get(k) is not None:
            raise AdvisorError.invalid(f"--{k.replace('_', '-')} goes with --add-host")


def _check_apply(v: Values) -> None:
    if v.get("pg_num") is not None and v.get("pool") is None:
        raise AdvisorError.invalid("--pg-num needs --pool")


COMMANDS: Tuple[Command, ...] = (
    Command("status", "status", "Show pools, OSDs and how evenly PGs are spread over the OSDs",
            (_pool(),), answer=answers.answer_status),
    Command("eval", "eval", "Score the current PG distribution against each OSD's share",
            (_pool("only this pool"),), answer=answers.answer_eval),
    Command("plan", "plan", "List the pg_num changes pg_advisor recommends, in order, with their cost",
            answer=answers.answer_plan),
    Command("balance", "balance",
            "Compute pg-upmap-items toward each OSD's share and set a bounded batch of them "
            "(--dry-run: only show them; offline: always)",
            (_pool("only this pool"),
             Arg("max_items", int, "at most this many replica moves (default: the option "
                 "balance_max_items live, every move offline)", low=1, high=MAX_BALANCE_ITEMS,
                 live_high=BY_OPTION["balance_max_items"].max, metavar="N"),
             DRY_RUN,
             Arg("mode", BalanceMode, "pgs (counts) or bytes (counts, then fullness); "
                 "default: the option balance_mode")),
            write=True, answer=answers.answer_balance, live="act_balance"),
    Command("read-balance", "read-balance",
            "Even each replicated pool's primaries with pg-upmap-primary entries (no data "
            "moves; Reef on, require_min_compat_client reef) and set a bounded batch of them "
            "(--dry-run: only show them; offline: always)",
            (_pool("only this pool"),
             Arg("max_changes", int, "at most this many primary changes (default: the option "
                 "read_max_changes live, every change offline)", low=1, high=MAX_READ_CHANGES,
                 live_high=BY_OPTION["read_max_changes"].max, metavar="N"),
             DRY_RUN),
            write=True, answer=answers.answer_read_balance, live="act_read_balance"),
    Command("map", "map", "Show every PG's up set as CRUSH computes it", (_pool("only this pool"),),
            answer=answers.answer_map),
    Command("simulate", "simulate",
            "What a pg_num/pgp_num change (<pool> --pg-num N [--pgp-num M]), OSDs marked out "
            "(--out-osd OSD...), a reweight (--reweight OSD --weight W) or a new host "
            "(--add-host NAME --osds N --weight W [--device-class C] [--root R] "
            "[--backfill-mib-s RATE]) would do",
            (_pool("the pool whose pg_num/pgp_num changes"),
             Arg("pg_num", int, "new pg_num (pgp_num follows unless given)", metavar="N"),
             Arg("pgp_num", int, "new pgp_num", metavar="M"),
             # --out-osd is what the `ceph` CLI can carry (it keeps --out for --output-file)
             Arg("out_osd", int, "mark these OSDs out", many=True, aliases=("--out",),
                 metavar="OSD"),
             Arg("reweight", int, "set this OSD's reweight to --weight", metavar="OSD"),
             Arg("weight", float, "the reweight (0..1), or with --add-host each OSD's CRUSH weight",
                 metavar="W"),
             Arg("add_host", str, "a new host of --osds N OSDs of CRUSH weight --weight W each",
                 metavar="NAME"),
             Arg("osds", int, "with --add-host: how many OSDs", metavar="N"),
             Arg("device_class", str, "with --add-host (default: the most common)", metavar="CLASS"),
             Arg("root", str, "with --add-host: the bucket it goes under (default: default)"),
             Arg("backfill_mib_s", float, "with --add-host: backfill throughput, for a time estimate",
                 metavar="RATE")),
            check=_check_simulate, answer=answers.answer_simulate),
    Command("pin-remapped", "pin-remapped",
            "Map every remapped PG back onto the OSDs that hold its data (pg-upmap-items), then "
            "drain the pins in throttled balance rounds (--dry-run: only show them; offline: "
            "always; needs PG stats)", (DRY_RUN,), write=True,
            answer=answers.answer_pin_remapped, live="act_pin_remapped"),
    Command("crush-reweight", "crush-reweight",
            "Set the CRUSH weight of OSDs (--osd N... --weight W; e.g. OSDs started at "
            "osd_crush_initial_weight 0) together with the pins that keep every PG it remaps on "
            "the OSDs with its data, for one map epoch, then drain the pins in throttled balance "
            "rounds (--dry-run: only show it; offline: always; needs PG stats)",
            (Arg("osd", int, "the OSDs (ids)", required=True, many=True, low=0, high=MAX_OSD_ID,
                 metavar="OSD"),
             Arg("weight", float, "their new CRUSH weight", required=True, low=0, high=MAX_OSD_CRUSH_WEIGHT,
                 metavar="W"),
             DRY_RUN), write=True, answer=answers.answer_crush_reweight, live="act_crush_reweight"),
    # (not `target`: the ceph CLI keeps that name for itself, see test_module.py)
    Command("drain", "drain",
            "Empty an OSD (osd.N) or a CRUSH bucket such as a host through pg-upmap-items, in "
            "throttled balance rounds, before it is taken out: each replica there to the best "
            "legal destination, no other moved unless the rule forces it (--and-balance: even "
            "the pools it touches too; --dry-run: only show it; offline: always)",
            (Arg("osd_or_bucket", str, "osd.N, or a bucket name such as a host", positional=True,
                 required=True, metavar="TARGET"), DRY_RUN,
             Arg("and_balance", bool, "also even the pools the drain touches, as balance does "
                 "(default: only the drain's own moves)")), write=True,
            answer=answers.answer_drain, live="act_drain"),
    Command("mode", "mode", "Show or set what pg_advisor does in the background (off, advise: warn "
            "only, auto: apply recommended pg_num changes in throttled steps)",
            (Arg("mode", Mode, "off, advise or auto", positional=True),), write=True, offline=False,
            live="act_mode"),
    Command("apply", "apply", "Apply the recommended pg_num changes (or --pool P --pg-num N) in "
            "throttled steps (--dry-run: only show the steps)",
            (Arg("pool", str, "only this pool"), Arg("pg_num", int, "this pg_num", metavar="N"),
             DRY_RUN), write=True, offline=False, check=_check_apply, live="act_apply"),
    Command("pause", "progress", "Take no new step of a running plan (--plan ID; needed when "
            "several run)", (PLAN,), write=True, offline=False, live="act_pause"),
    Command("resume", "progress", "Continue a paused plan (--plan ID; needed when several are paused)",
            (PLAN,), write=True, offline=False, live="act_resume"),
    Command("abort", "abort", "Stop a plan (--plan ID; needed when several are open), leaving pg_num "
            "and pgp_num consistent; say what remains", (PLAN,), write=True, offline=False,
            live="act_abort"),
    Command("progress", "progress", "The plans: a line each, and one plan's steps and where it "
            "stands (--plan ID; default: the newest open one)", (PLAN,), offline=False,
            live="show_progress"),
    Command("history", "history", "The steps pg_advisor took (the last 200 events)", offline=False,
            live="show_history"),
)
BY_NAME: Dict[str, Command] = {c.name: c for c in COMMANDS}
OFFLINE = tuple(c for c in COMMANDS if c.offline)


def _one(arg: Arg, value: Any, live: bool) -> Any:
    """One value of `arg`, typed and within its bounds, or an AdvisorError."""
    flag = arg.flag
    if arg.kind is bool:
        if isinstance(value, bool):
            return value
        raise AdvisorError.invalid(f"{flag} takes no value, not {value!r}")
    if isinstance(arg.kind, type) and issubclass(arg.kind, enum.Enum):
        try:
            return arg.kind(value.value if isinstance(value, enum.Enum) else value)
        except ValueError:
            choices = ", ".join(str(m.value) for m in arg.kind)
            raise AdvisorError.invalid(f"{flag} must be one of {choices}, not {str(value)!r}") from None
    if arg.kind is str:
        return str(value)
    try:
        if isinstance(value, str) and not (INT_TEXT if arg.kind is int else FLOAT_TEXT).match(value):
            raise ValueError        # int() and float() take "3_2", " 32 " and other digits
        if arg.kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            number: Union[int, float] = int(value)
        else:
            number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise AdvisorError.invalid(f"{flag} takes {'an integer' if arg.kind is int else 'a number'}, "
                                   f"not {str(value)[:40]!r}") from None
    if isinstance(number, float) and not math.isfinite(number):
        raise AdvisorError.invalid(f"{flag} must be a finite number, not {number}")
    low = arg.low if arg.low is not None else (-INT_MAX - 1 if arg.kind is int else None)
    high = arg.high if arg.high is not None else (INT_MAX if arg.kind is int else None)
    if live and arg.live_high is not None:
        high = arg.live_high
    if (low is not None and number < low) or (high is not None and number > high):
        raise AdvisorError.invalid(f"{flag} must be within {_text(low)}..{_text(high)}, "
                                   f"not {_text(number)}")
    return number


def _text(x: Optional[float]) -> str:
    if x is None:
        return "any"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def check(cmd: Command, given: Values, live: bool = False) -> Values:
    """The arguments of `cmd`, each typed and within its bounds (absent ones None, flags
    False), checked together; an AdvisorError names the first wrong one. Nothing runs
    before this, so a bad argument changes nothing. `live`: asked of the mgr, where some
    bounds are tighter (its work shares the mgr with every other module)."""
    unknown = sorted(set(given) - {a.name for a in cmd.args})
    if unknown:
        raise AdvisorError.invalid(f"{cmd.name} takes no argument {unknown[0]!r}")
    out: Values = {}
    for arg in cmd.args:
        value = given.get(arg.name)
        if value is None or (arg.many and value == []):
            if arg.required:
                raise AdvisorError.invalid(f"{cmd.name} needs {arg.metavar or arg.name}")
            out[arg.name] = False if arg.kind is bool else None
        elif arg.many:
            items = list(value) if isinstance(value, (list, tuple)) else [value]
            if len(items) > MAX_OUT_OSDS:
                raise AdvisorError.invalid(f"{arg.flag}: at most {MAX_OUT_OSDS} values, not {len(items)}")
            out[arg.name] = [_one(arg, v, live) for v in items]
        else:
            out[arg.name] = _one(arg, value, live)
    if cmd.check is not None:
        cmd.check(out)
    return out
