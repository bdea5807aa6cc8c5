"""Offline entry point: the same views as the mgr commands, computed from JSON dumps.

    python3 -m pg_advisor --osdmap OSD_DUMP.json --crush CRUSH_DUMP.json \
        [--pg-dump PG_DUMP.json] [--df DF.json]
        [--autoscale-status AUTOSCALE.json | --autoscaler-release MAJOR] COMMAND ...

    COMMAND: status [POOL] | eval [POOL] | plan | balance [POOL] [--max-items N]
             [--mode pgs|bytes] | read-balance [POOL] [--max-changes N] | map [POOL]
             | simulate [POOL --pg-num N [--pgp-num M]] [--out-osd OSD]...
             [--reweight OSD --weight W] | simulate --add-host NAME --osds N --weight W
             | pin-remapped | crush-reweight --osd OSD... --weight W | drain TARGET [--and-balance]
             (each with -f plain|json|json-pretty; commands/table.py declares them all;
             offline, a command that writes only shows what it would do)
"""
import argparse
import enum
import functools
import gc
import json
import os
import sys
from typing import Any, Dict, List, NoReturn, Optional, TextIO

from .commands import bounds, table
from .commands.answers import Inputs
from .model import options, snapshot, work
from .model.errors import AdvisorError
from .render.format import FORMATS
from .render.views import show
from .sizing.ceph_autoscaler import Flavour, with_autoscale

EXIT_BAD_INPUT = 2
WORK_FILE = "PG_ADVISOR_WORK_FILE"     # where to write the work done (model/work.py)
# the largest dump read: `ceph pg dump -f json` of 320,000 PGs is ~100 MiB, and parsing
# takes several times the file's size in memory (the offline contract is under 1 GiB)
MAX_DUMP_BYTES = 160 << 20
POSITIONAL = "_given_in_place"    # argparse's name for a positional argument's value


def _parse(text: str) -> Any:
    """json.loads with the cyclic collector paused: while a big dump parses, the collector
    walks the growing result again and again (3/4 of the load of a dump of 200,000 upmap
    entries), and a parse makes no cycles for it to find. The offline CLI's own process
    only (the mgr module never imports this file); the collector's state is restored."""
    was = gc.isenabled()
    gc.disable()
    try:
        return json.loads(text)
    finally:
        if was:
            gc.enable()


def _read_bytes(path: str, flag: str) -> bytes:
    try:
        with open(path, "rb") as f:
            # a device or a pipe may never end, and JSON takes ~8x its size to parse: read at
            # most the bound, and refuse more before parsing any of it
            size = os.fstat(f.fileno()).st_size
            if size > MAX_DUMP_BYTES:
                raise AdvisorError.invalid(f"{flag} {path}: {size >> 20} MiB, more than the "
                                           f"{MAX_DUMP_BYTES >> 20} MiB a dump may be")
            data = f.read(MAX_DUMP_BYTES + 1)
            if len(data) > MAX_DUMP_BYTES:
                raise AdvisorError.invalid(f"{flag} {path}: more than the {MAX_DUMP_BYTES >> 20} MiB "
                                           f"a dump may be (it does not end)")
        return data
    except OSError as e:
        raise AdvisorError.invalid(f"{flag} {path}: {e.strerror or e}") from None


def _read_json(path: Optional[str], flag: str) -> Any:
    if path is None:
        return None
    data = _read_bytes(path, flag)
    try:
        return _parse(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:   # JSONDecodeError, or an int of 4300+ digits
        raise AdvisorError.invalid(f"{flag} {path}: not valid JSON ({e})") from None
    except RecursionError:
        # json recurses per level; no Ceph dump nests more than a dozen levels
        raise AdvisorError.invalid(f"{flag} {path}: JSON nested too deeply") from None


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is an AdvisorError: one line on stderr and exit 2, like
    every other refusal (argparse would print the usage text first)."""

    def error(self, message: str) -> NoReturn:
        raise AdvisorError.invalid(f"{message} (`python3 -m pg_advisor --help` shows the usage)")


@functools.lru_cache(maxsize=1)
def build_parser() -> argparse.ArgumentParser:
    """The parser, built once a process (a parse keeps nothing in it): the tests run main
    some 600 times in theirs, and each build took some 7 ms, most of it argparse asking
    gettext for its message catalogue per argument."""
    p = _Parser(
        prog="python3 -m pg_advisor", allow_abbrev=False,
        description="pg_advisor offline: PG sizing and balance views from Ceph JSON dumps.")
    p.add_argument("--osdmap", required=True, metavar="OSD_DUMP.json",
                   help="`ceph osd dump -f json` (or `osdmaptool MAP --dump json`)")
    p.add_argument("--crush", required=True, metavar="CRUSH_DUMP.json",
                   help="`ceph osd crush dump -f json` (or `crushtool -i CRUSH --dump`)")
    p.add_argument("--crush-bin", metavar="CRUSHMAP",
                   help="the binary CRUSH map (`ceph osd getcrushmap -o CRUSHMAP`) of the same "
                        "map as --crush: the straws and tree node weights Ceph stored, which the "
                        "dump does not show")
    p.add_argument("--pg-dump", metavar="PG_DUMP.json", help="`ceph pg dump -f json`")
    p.add_argument("--df", metavar="DF.json", help="`ceph df -f json`")
    p.add_argument("--autoscale-status", metavar="AUTOSCALE.json",
                   help="`ceph osd pool autoscale-status -f json`, to show pg_autoscaler's pick")
    p.add_argument("--autoscaler-release", type=int, metavar="MAJOR",
                   help="without --autoscale-status, compute pg_autoscaler's pick by its rules in "
                        "this Ceph release (16: Pacific; 17 and later: as Tentacle, 20)")
    p.add_argument("--mon-max-pg-per-osd", type=int, default=snapshot.CONFIG_DEFAULTS["mon_max_pg_per_osd"],
                   metavar="N", help="the cluster's mon_max_pg_per_osd (default "
                   f"{snapshot.CONFIG_DEFAULTS['mon_max_pg_per_osd']}, Pacific's default)")
    p.add_argument("--osd-memory-target", type=int, metavar="BYTES",
                   help="the OSDs' osd_memory_target (default 4 GiB)")
    p.add_argument("--mon-target-pg-per-osd", type=int, metavar="N",
                   help="the cluster's mon_target_pg_per_osd: the PGs per OSD sizing aims at unless "
                        "--target-pgs-per-osd is given (default 100, Tentacle's default)")
    p.add_argument("--mgr-max-pg-num-change", type=int, metavar="N",
                   help="the cluster's mgr_max_pg_num_change: the most PGs one pg_num step of a "
                        "split takes (default 128, Ceph's default)")
    p.add_argument("--config-dump", metavar="CONFIG_DUMP.json",
                   help="`ceph config dump -f json`: each OSD's own osd_memory_target and PG-log "
                        "settings (per OSD, host or class; cephadm's autotune)")
    p.add_argument("--target-max-misplaced-ratio", type=float, default=0.05, metavar="RATIO",
                   help="the cluster's target_max_misplaced_ratio: the misplaced budget when "
                        "--misplaced-budget is 0 (default 0.05, Ceph's default)")
    p.add_argument("--max-pgs", type=int, default=bounds.MAX_PGS, metavar="N",
                   help=f"refuse dumps whose pools hold more PGs than this (default {bounds.MAX_PGS:,}: "
                        "what is mapped within the offline contract)")
    p.add_argument("--max-sparse-cells", type=int, default=bounds.MAX_SPARSE_CELLS, metavar="N",
                   help="refuse maps where the OSD ids holding no OSD (below the highest) x the "
                        f"pools pass this (default {bounds.MAX_SPARSE_CELLS:,})")
    p.add_argument("--max-sparse-work", type=int, default=bounds.MAX_SPARSE_WORK, metavar="N",
                   help="balance and drain: refuse maps where the OSD ids holding no OSD (below "
                        "the highest id) x the PG replicas pass this (default "
                        f"{bounds.MAX_SPARSE_WORK:,})")
    for spec in options.SPECS:
        if spec.name in ("sleep_interval", "refresh_interval"):
            continue
        p.add_argument("--" + spec.name.replace("_", "-"), dest="opt_" + spec.name,
                       metavar=spec.type.upper(), help=f"{spec.desc} (default {spec.default})")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for cmd in table.OFFLINE:
        # no abbreviations: a command's --osd would be taken for --osdmap or refused as
        # ambiguous beside --osd-memory-target
        sp = sub.add_parser(cmd.name, help=cmd.help, allow_abbrev=False)
        for arg in cmd.args:
            _add(sp, arg)       # --dry-run too: offline every command is one
        sp.add_argument("-f", "--format", choices=FORMATS, default="plain")
    return p


def _add(sp: argparse.ArgumentParser, arg: table.Arg) -> None:
    """One argument of the table as argparse takes it: values stay text here, typed and
    bounded by table.check as the mgr's are. As with the `ceph` CLI, a positional one may
    also be given by name (`balance rbd` or `balance --pool rbd`)."""
    kw: Dict[str, Any] = {"help": arg.help, "dest": arg.name}
    if isinstance(arg.kind, type) and issubclass(arg.kind, enum.Enum):
        kw["metavar"] = "|".join(str(m.value) for m in arg.kind)
    elif arg.metavar:
        kw["metavar"] = arg.metavar
    if arg.kind is bool:
        sp.add_argument(arg.flag, action="store_const", const=True, dest=arg.name, help=arg.help)
        return
    if arg.positional:
        sp.add_argument(arg.name + POSITIONAL, nargs="?", help=arg.help,
                        metavar=kw.get("metavar", arg.name.upper()))
        kw["help"] = argparse.SUPPRESS
    if arg.many:        # `--osd 4 5` as the ceph CLI takes it, or `--osd 4 --osd 5`
        kw["nargs"] = "+"
    sp.add_argument(arg.flag, *arg.aliases, action="extend" if arg.many else "store", **kw)


def _values(cmd: table.Command, args: argparse.Namespace) -> Dict[str, Any]:
    """What was given for each of the command's arguments (None where nothing was)."""
    out: Dict[str, Any] = {}
    for a in cmd.args:
        named, placed = getattr(args, a.name, None), getattr(args, a.name + POSITIONAL, None)
        if named is not None and placed is not None and named != placed:
            raise AdvisorError.invalid(f"{a.name} given twice: {placed!r} and {a.flag} {named!r}")
        out[a.name] = named if named is not None else placed
    return out


def run(argv: List[str], out: TextIO) -> int:
    args = build_parser().parse_args(argv)
    cmd = table.BY_NAME[args.command]
    values = table.check(cmd, _values(cmd, args))
    opts = options.make({s.name: getattr(args, "opt_" + s.name, None) for s in options.SPECS})
    # offline nothing runs in a window, but a flag given must still be a window
    options.check_window(opts.window_begin, opts.window_end, opts.window_days)
    if not 0 < args.target_max_misplaced_ratio <= 1:     # NaN too
        raise AdvisorError.invalid(f"--target-max-misplaced-ratio must be within (0, 1], "
                                   f"not {args.target_max_misplaced_ratio}")
    if args.autoscaler_release is not None and (args.autoscale_status is not None
                                                or not 1 <= args.autoscaler_release <= 99):
        raise AdvisorError.invalid("--autoscaler-release takes a release number (16, 20) and "
                                   "no --autoscale-status")
    bounds.check_flags((args.max_pgs, args.max_sparse_cells, args.max_sparse_work),
                       ("--max-pgs", "--max-sparse-cells", "--max-sparse-work"))
    snap = snapshot.load(
        _read_json(args.osdmap, "--osdmap"), _read_json(args.crush, "--crush"),
        _read_json(args.pg_dump, "--pg-dump"), _read_json(args.df, "--df"),
        autoscale=_read_json(args.autoscale_status, "--autoscale-status"),
        settings=snapshot.Settings(mon_max_pg_per_osd=args.mon_max_pg_per_osd,
                                   config={"osd_memory_target": args.osd_memory_target,
                                           "mon_target_pg_per_osd": args.mon_target_pg_per_osd,
                                           "mgr_max_pg_num_change": args.mgr_max_pg_num_change},
                                   config_dump=_read_json(args.config_dump, "--config-dump"),
                                   crush_binary=_read_bytes(args.crush_bin, "--crush-bin")
                                   if args.crush_bin else None))
    if args.autoscaler_release is not None:
        snap = with_autoscale(snap, Flavour.of_release(args.autoscaler_release))
    bounds.check(cmd.name, snap, args.max_pgs, args.max_sparse_cells, args.max_sparse_work)
    # offline there is no balancer to ask: 'auto' means CRUSH as it falls
    inputs = Inputs(snap, opts, opts.assume_balanced is options.AssumeBalanced.YES,
                    args.target_max_misplaced_ratio)
    out.write(show(cmd.view, cmd.offline_answer(inputs, values), args.format) + "\n")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv, sys.stdout)
    except AdvisorError as e:
        print(f"pg_advisor: error: {e.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        if os.environ.get(WORK_FILE):      # what the command did, for tests that bound it
            with open(os.environ[WORK_FILE], "w") as f:
                json.dump(work.tally(), f)
