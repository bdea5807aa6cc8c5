"""Offline entry point: the same views as the mgr commands, computed from JSON dumps.

    python3 -m pg_advisor --osdmap OSD_DUMP.json --crush CRUSH_DUMP.json \
        [--pg-dump PG_DUMP.json] [--df DF.json] status [POOL] [-f json]
"""
import argparse
import json
import sys
from typing import Any, List, Optional, TextIO

from . import snapshot
from .errors import AdvisorError
from .render import FORMATS, render
from .status import status_report
from .status_text import status_text

EXIT_BAD_INPUT = 2


def _read_json(path: Optional[str], flag: str) -> Any:
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise AdvisorError.invalid(f"{flag} {path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AdvisorError.invalid(f"{flag} {path}: not valid JSON ({e})") from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m pg_advisor",
        description="pg_advisor offline: PG sizing and balance views from Ceph JSON dumps.")
    p.add_argument("--osdmap", required=True, metavar="OSD_DUMP.json",
                   help="`ceph osd dump -f json` (or `osdmaptool MAP --dump json`)")
    p.add_argument("--crush", required=True, metavar="CRUSH_DUMP.json",
                   help="`ceph osd crush dump -f json` (or `crushtool -i CRUSH --dump`)")
    p.add_argument("--pg-dump", metavar="PG_DUMP.json", help="`ceph pg dump -f json`")
    p.add_argument("--df", metavar="DF.json", help="`ceph df -f json`")
    p.add_argument("--mon-max-pg-per-osd", type=int, default=250, metavar="N",
                   help="the cluster's mon_max_pg_per_osd (default 250, Pacific's default)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    st = sub.add_parser("status", help="pools, OSDs and the PG distribution")
    st.add_argument("pool", nargs="?", help="narrow the view to one pool")
    st.add_argument("-f", "--format", choices=FORMATS, default="plain")
    return p


def run(argv: List[str], out: TextIO) -> int:
    args = build_parser().parse_args(argv)
    snap = snapshot.load(
        _read_json(args.osdmap, "--osdmap"), _read_json(args.crush, "--crush"),
        _read_json(args.pg_dump, "--pg-dump"), _read_json(args.df, "--df"),
        mon_max_pg_per_osd=args.mon_max_pg_per_osd)
    if args.command == "status":
        report = status_report(snap, args.pool)
        out.write(render(report, args.format, status_text) + "\n")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv, sys.stdout)
    except AdvisorError as e:
        print(f"pg_advisor: error: {e.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
