"""Offline entry point: the same views as the mgr commands, computed from JSON dumps.

    python3 -m pg_advisor --osdmap OSD_DUMP.json --crush CRUSH_DUMP.json \
        [--pg-dump PG_DUMP.json] [--df DF.json] [--autoscale-status AUTOSCALE.json] COMMAND ...

    COMMAND: status [POOL] | eval [POOL] | plan | balance | pin-remapped | drain TARGET | map [POOL]
             | simulate [POOL --pg-num N [--pgp-num M]]
             [--out OSD] [--reweight OSD WEIGHT]   (each with -f plain|json|json-pretty)
"""
import argparse
import json
import os
import sys
from typing import Any, Dict, List, NoReturn, Optional, TextIO

from .analysis.growth import growth_report
from .analysis.plan import plan_report
from .analysis.status import status_report
from .analysis.whatif import Change, pg_map, simulate
from .balance.drain import drain_report
from .balance.remapped import pin_remapped, pins_report
from .balance.report import balance_report, eval_report
from .execute.driver import misplaced_max
from .model import options, snapshot
from .model.errors import AdvisorError
from .render.format import FORMATS
from .render.views import show

EXIT_BAD_INPUT = 2
# the largest dump read: `ceph pg dump -f json` of 320,000 PGs is ~100 MiB, and parsing
# takes several times the file's size in memory (the offline contract is under 1 GiB)
MAX_DUMP_BYTES = 160 << 20
MAX_BALANCE_ITEMS = 1 << 20    # replica moves one offline balance may propose (and its default)


def _read_json(path: Optional[str], flag: str) -> Any:
    if path is None:
        return None
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
        return json.loads(data.decode("utf-8"))
    except OSError as e:
        raise AdvisorError.invalid(f"{flag} {path}: {e.strerror or e}") from None
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


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python3 -m pg_advisor",
        description="pg_advisor offline: PG sizing and balance views from Ceph JSON dumps.")
    p.add_argument("--osdmap", required=True, metavar="OSD_DUMP.json",
                   help="`ceph osd dump -f json` (or `osdmaptool MAP --dump json`)")
    p.add_argument("--crush", required=True, metavar="CRUSH_DUMP.json",
                   help="`ceph osd crush dump -f json` (or `crushtool -i CRUSH --dump`)")
    p.add_argument("--pg-dump", metavar="PG_DUMP.json", help="`ceph pg dump -f json`")
    p.add_argument("--df", metavar="DF.json", help="`ceph df -f json`")
    p.add_argument("--autoscale-status", metavar="AUTOSCALE.json",
                   help="`ceph osd pool autoscale-status -f json`, to show pg_autoscaler's pick")
    p.add_argument("--mon-max-pg-per-osd", type=int, default=250, metavar="N",
                   help="the cluster's mon_max_pg_per_osd (default 250, Pacific's default)")
    p.add_argument("--osd-memory-target", type=int, metavar="BYTES",
                   help="the OSDs' osd_memory_target (default 4 GiB)")
    p.add_argument("--target-max-misplaced-ratio", type=float, default=0.05, metavar="RATIO",
                   help="the cluster's target_max_misplaced_ratio: the misplaced budget when "
                        "--misplaced-budget is 0 (default 0.05, Ceph's default)")
    for spec in options.SPECS:
        if spec.name in ("sleep_interval", "refresh_interval"):
            continue
        p.add_argument("--" + spec.name.replace("_", "-"), dest="opt_" + spec.name,
                       metavar=spec.type.upper(), help=f"{spec.desc} (default {spec.default})")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    st = sub.add_parser("status", help="pools, OSDs and the PG distribution")
    st.add_argument("pool", nargs="?", help="narrow the view to one pool")
    st.add_argument("-f", "--format", choices=FORMATS, default="plain")
    ev = sub.add_parser("eval", help="how far each OSD is from its share, per pool and in total")
    ev.add_argument("pool", nargs="?", help="only this pool")
    ev.add_argument("-f", "--format", choices=FORMATS, default="plain")
    pl = sub.add_parser("plan", help="the pg_num changes pg_advisor would make, in order")
    pl.add_argument("-f", "--format", choices=FORMATS, default="plain")
    bl = sub.add_parser("balance", help="pg-upmap-items that bring every OSD to its share")
    bl.add_argument("--pool", action="append", help="only this pool (repeatable)")
    bl.add_argument("--max-items", type=int, default=MAX_BALANCE_ITEMS, metavar="N",
                    help="at most this many replica moves")
    bl.add_argument("--mode", help="pgs (counts) or bytes (counts, then fullness); "
                                   "default: --balance-mode")
    bl.add_argument("-f", "--format", choices=FORMATS, default="plain")
    pr = sub.add_parser("pin-remapped",
                        help="pg-upmap-items that map each remapped PG back onto the OSDs with "
                             "its data (needs --pg-dump)")
    pr.add_argument("-f", "--format", choices=FORMATS, default="plain")
    dr = sub.add_parser("drain", help="the moves that would empty an OSD or a CRUSH bucket")
    dr.add_argument("target", help="osd.N, or a bucket name such as a host")
    dr.add_argument("-f", "--format", choices=FORMATS, default="plain")
    mp = sub.add_parser("map", help="every PG's up set, computed with CRUSH")
    mp.add_argument("pool", nargs="?", help="only this pool")
    mp.add_argument("-f", "--format", choices=FORMATS, default="plain")
    sm = sub.add_parser("simulate", help="what a pg_num/pgp_num change, an OSD out or a "
                                         "reweight would do")
    sm.add_argument("pool", nargs="?", help="the pool whose pg_num/pgp_num changes")
    sm.add_argument("--pg-num", type=int, help="new pg_num (pgp_num follows unless given)")
    sm.add_argument("--pgp-num", type=int, help="new pgp_num")
    # --out-osd is the spelling the `ceph` CLI can carry (it takes --out for --output-file)
    sm.add_argument("--out", "--out-osd", dest="out", type=int, action="append", default=[],
                    metavar="OSD", help="mark this OSD out (repeatable)")
    sm.add_argument("--reweight", nargs=2, action="append", default=[], metavar=("OSD", "WEIGHT"),
                    help="set this OSD's reweight (repeatable)")
    sm.add_argument("--add-host", metavar="NAME", help="a new host of --osds N OSDs of CRUSH weight "
                                                       "--weight W each (on its own)")
    sm.add_argument("--osds", type=int, metavar="N", help="with --add-host: how many OSDs")
    sm.add_argument("--weight", type=float, metavar="W", help="with --add-host: each OSD's CRUSH weight")
    sm.add_argument("--device-class", metavar="CLASS", help="with --add-host (default: the most common)")
    sm.add_argument("--root", default="default", help="with --add-host: the bucket it goes under")
    sm.add_argument("--backfill-mib-s", type=float, metavar="RATE",
                    help="with --add-host: backfill throughput, for a time estimate")
    sm.add_argument("-f", "--format", choices=FORMATS, default="plain")
    return p


def _reweights(pairs: List[List[str]]) -> Dict[int, float]:
    out = {}
    for osd, w in pairs:
        try:
            out[int(osd)] = float(w)
        except ValueError:
            raise AdvisorError.invalid(f"--reweight takes an OSD id and a weight, not '{osd} {w}'") from None
    return out


def run(argv: List[str], out: TextIO) -> int:
    args = build_parser().parse_args(argv)
    opts = options.make({s.name: getattr(args, "opt_" + s.name, None) for s in options.SPECS})
    # offline nothing runs in a window, but a flag given must still be a window
    options.check_window(str(opts.window_begin), str(opts.window_end), str(opts.window_days))
    if not 0 < args.target_max_misplaced_ratio <= 1:     # NaN too
        raise AdvisorError.invalid(f"--target-max-misplaced-ratio must be within (0, 1], "
                                   f"not {args.target_max_misplaced_ratio}")
    snap = snapshot.load(
        _read_json(args.osdmap, "--osdmap"), _read_json(args.crush, "--crush"),
        _read_json(args.pg_dump, "--pg-dump"), _read_json(args.df, "--df"),
        mon_max_pg_per_osd=args.mon_max_pg_per_osd,
        config={"osd_memory_target": args.osd_memory_target},
        autoscale=_read_json(args.autoscale_status, "--autoscale-status"))
    # offline there is no balancer to ask: 'auto' means CRUSH as it falls
    balanced = opts.assume_balanced == "yes"
    if args.command == "status":
        out.write(show("status", status_report(snap, args.pool, opts, balanced), args.format) + "\n")
    elif args.command == "eval":
        out.write(show("eval", eval_report(snap, [args.pool] if args.pool else None), args.format) + "\n")
    elif args.command == "plan":
        out.write(show("plan", plan_report(snap, opts, balanced), args.format) + "\n")
    elif args.command == "balance":
        if not 1 <= args.max_items <= MAX_BALANCE_ITEMS:
            raise AdvisorError.invalid(f"--max-items must be within 1..{MAX_BALANCE_ITEMS}, "
                                       f"not {args.max_items}")
        report = balance_report(snap, args.pool, args.max_items, args.mode or opts.balance_mode,
                                min_gain=opts.balance_min_gain)
        out.write(show("balance", report, args.format) + "\n")
    elif args.command == "pin-remapped":
        report = pins_report(snap, pin_remapped(snap))
        report["dry_run"] = True
        out.write(show("pin-remapped", report, args.format) + "\n")
    elif args.command == "drain":
        out.write(show("drain", drain_report(snap, args.target), args.format) + "\n")
    elif args.command == "map":
        out.write(show("map", pg_map(snap, args.pool), args.format) + "\n")
    elif args.command == "simulate" and args.add_host is not None:
        if args.pool or args.pg_num is not None or args.pgp_num is not None or args.out or args.reweight:
            raise AdvisorError.invalid("--add-host is simulated on its own (no pool, out or reweight)")
        if args.osds is None or args.weight is None:
            raise AdvisorError.invalid("--add-host NAME goes with --osds N and --weight W")
        rate = args.backfill_mib_s * (1 << 20) if args.backfill_mib_s is not None else None
        report = growth_report(snap, args.add_host, args.osds, args.weight, args.device_class, args.root,
                               misplaced_max(opts, args.target_max_misplaced_ratio), rate)
        out.write(show("simulate", report, args.format) + "\n")
    elif args.command == "simulate":
        change = Change(pool=args.pool, pg_num=args.pg_num, pgp_num=args.pgp_num,
                        out=tuple(args.out), reweight=_reweights(args.reweight))
        out.write(show("simulate", simulate(snap, change), args.format) + "\n")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv, sys.stdout)
    except AdvisorError as e:
        print(f"pg_advisor: error: {e.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
