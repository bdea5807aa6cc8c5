"""One table of commands (commands/table.py) serves the mgr and the offline CLI: the same
commands, arguments, bounds and answers, whichever way a user asks."""
import io
import json
import re
from typing import Any, Dict, List, Tuple

import pytest

from pg_advisor import cli
from pg_advisor.commands import table
from pg_advisor.model.errors import AdvisorError
from pg_advisor.module import Module

from . import mgr_stub
from .conftest import cmd
from .test_cli import BASE


def _live() -> Dict[str, List[str]]:
    """`ceph pg-advisor NAME` -> its argument names, as the mgr declares them."""
    out = {}
    for c in Module.COMMANDS:
        name = c["cmd"].split(" name=")[0].removeprefix("pg-advisor ")
        out[name] = [n for n in re.findall(r"name=(\w+)", c["cmd"]) if n != "format"]
    return out


def _offline_flags() -> Dict[str, List[str]]:
    """offline subcommand -> the long options its parser takes (-f excepted)."""
    sub = next(a for a in cli.build_parser()._actions if a.dest == "command")
    parsers: Dict[str, Any] = dict(sub.choices or {})
    return {name: sorted(o for a in p._actions for o in a.option_strings
                         if o.startswith("--") and o not in ("--help", "--format"))
            for name, p in parsers.items()}


def test_both_adapters_declare_what_the_table_says() -> None:
    live = _live()
    assert live == {c.name: [a.name for a in c.args] for c in table.COMMANDS}
    offline = _offline_flags()
    assert sorted(offline) == sorted(c.name for c in table.OFFLINE)
    for c in table.OFFLINE:
        want = sorted([a.flag for a in c.args] + [x for a in c.args for x in a.aliases])
        assert offline[c.name] == want, c.name
    # eval is offline too, and --backfill-mib-s is checked the same both ways (the misplaced
    # budget, from the options or the cluster's ratio, too: see the same-report test)
    assert "eval" in offline and "backfill_mib_s" in live["simulate"]


def _offline(argv: List[str], ratio: float = 0.05) -> Tuple[int, Any, str]:
    out = io.StringIO()
    try:
        cli.run(BASE + ["--target-max-misplaced-ratio", str(ratio)] + argv + ["-f", "json"], out)
    except AdvisorError as e:
        return e.code, None, e.message
    return 0, json.loads(out.getvalue()), ""


# (command, live keywords, offline argv): the same question put both ways
SAME = [
    ("balance", {"mode": "xml", "dry_run": True}, ["balance", "--mode", "xml"]),
    ("balance", {"pool": "nope", "dry_run": True}, ["balance", "nope"]),
    ("simulate", {"add_host": "h9", "osds": 2, "weight": 1.0, "backfill_mib_s": float("nan")},
     ["simulate", "--add-host", "h9", "--osds", "2", "--weight", "1", "--backfill-mib-s", "nan"]),
    ("simulate", {"add_host": "h9", "osds": 2, "weight": 1.0, "backfill_mib_s": -1.0},
     ["simulate", "--add-host", "h9", "--osds", "2", "--weight", "1", "--backfill-mib-s", "-1"]),
    ("simulate", {"add_host": "h9", "osds": 2}, ["simulate", "--add-host", "h9", "--osds", "2"]),
    ("simulate", {"reweight": 1}, ["simulate", "--reweight", "1"]),
    ("simulate", {"osds": 2}, ["simulate", "--osds", "2"]),
    ("simulate", {"out_osd": [99]}, ["simulate", "--out-osd", "99"]),
    ("simulate", {"pool": "rbd", "pg_num": 10 ** 12}, ["simulate", "rbd", "--pg-num", str(10 ** 12)]),
    ("drain", {"osd_or_bucket": "osd.99", "dry_run": True}, ["drain", "osd.99"]),
    ("eval", {"pool": "nope"}, ["eval", "nope"]),
]


@pytest.mark.parametrize("name, kw, argv", SAME, ids=[f"{s[0]}-{i}" for i, s in enumerate(SAME)])
def test_a_bad_argument_gets_the_same_answer_both_ways(module: Module, name: str, kw: Dict[str, Any],
                                                       argv: List[str]) -> None:
    code, _, err = cmd(module, name, **kw)
    code_off, _, err_off = _offline(argv)
    assert code != 0 and err, (code, err)
    assert (code, err) == (code_off, err_off)


@pytest.mark.parametrize("name, kw, argv", [
    ("simulate", {"add_host": "h9", "osds": 2, "weight": 0.001, "backfill_mib_s": 10.0},
     ["simulate", "--add-host", "h9", "--osds", "2", "--weight", "0.001", "--backfill-mib-s", "10"]),
    ("simulate", {"out_osd": [1, 2]}, ["simulate", "--out-osd", "1", "--out", "2"]),
    ("simulate", {"reweight": 1, "weight": 0.5}, ["simulate", "--reweight", "1", "--weight", "0.5"]),
    ("eval", {"pool": "rbd"}, ["eval", "--pool", "rbd"]),
    ("drain", {"osd_or_bucket": "osd.0", "dry_run": True}, ["drain", "osd.0"]),
    ("pin-remapped", {"dry_run": True}, ["pin-remapped"]),
    # many values after one flag, as the ceph CLI takes them; --osd is no abbreviation of --osdmap
    ("simulate", {"out_osd": [1, 2]}, ["simulate", "--out-osd", "1", "2"]),
    ("crush-reweight", {"osd": [4, 5], "weight": 0.5, "dry_run": True},
     ["crush-reweight", "--osd", "4", "5", "--weight", "0.5"]),
    # one round within the same misplaced budget both ways (live, --max-items is bounded by
    # the option balance_max_items; offline every move is proposed unless it is given)
    ("balance", {"max_items": 50, "dry_run": True}, ["balance", "--max-items", "50"]),
    ("balance", {"pool": "rbd", "mode": "pgs", "max_items": 3, "dry_run": True},
     ["balance", "rbd", "--mode", "pgs", "--max-items", "3"]),
])
def test_a_good_question_gets_the_same_report_both_ways(module: Module, name: str, kw: Dict[str, Any],
                                                        argv: List[str]) -> None:
    # the module's stub hands out the same captured cluster the CLI reads; the misplaced
    # budget falls back to the cluster's target_max_misplaced_ratio both ways
    mgr_stub.BaseMgrModule.fake.options["target_max_misplaced_ratio"] = 0.01
    code, live, err = cmd(module, name, **kw)
    code_off, offline, err_off = _offline(argv, 0.01)
    assert code == 0 and code_off == 0, (err, err_off)
    assert live == offline


def test_check_types_bounds_and_pairs() -> None:
    sim = table.BY_NAME["simulate"]
    v = table.check(sim, {"out_osd": ["3", 4]})
    assert v["out_osd"] == [3, 4] and v["pool"] is None and v["add_host"] is None
    cases: List[Tuple[Dict[str, Any], str]] = [
            ({"pg_num": "32.5"}, "--pg-num takes an integer, not '32.5'"),
            ({"pg_num": 32.5}, "--pg-num takes an integer"),
            ({"weight": "inf", "reweight": 1}, "--weight must be a finite number"),
            ({"out_osd": list(range(table.MAX_OUT_OSDS + 1))}, "--out-osd: at most 4096 values"),
            ({"frob": 1}, "simulate takes no argument 'frob'"),
            ({"device_class": "ssd"}, "--device-class goes with --add-host")]
    for given, message in cases:
        with pytest.raises(AdvisorError) as e:
            table.check(sim, given)
        assert e.value.message.startswith(message), e.value.message
    bal = table.BY_NAME["balance"]
    assert table.check(bal, {"mode": "pgs"})["mode"] is table.BalanceMode.PGS
    with pytest.raises(AdvisorError, match="--mode must be one of pgs, bytes, not 'xml'"):
        table.check(bal, {"mode": "xml"})
    with pytest.raises(AdvisorError, match=r"--max-items must be within 1..1048576, not 0"):
        table.check(bal, {"max_items": 0})
    # the mgr holds one round to the option's bound; offline a balance may propose all moves
    assert table.check(bal, {"max_items": 20000})["max_items"] == 20000
    with pytest.raises(AdvisorError, match=r"--max-items must be within 1..10000, not 20000"):
        table.check(bal, {"max_items": 20000}, live=True)
    with pytest.raises(AdvisorError, match="drain needs TARGET"):
        table.check(table.BY_NAME["drain"], {})


def test_every_command_has_one_answer() -> None:
    # the table is the one index: an entry names its live handler (a LiveCommands method,
    # mgr/commands.py) or is answered in the mgr as offline does (its answer function)
    from pg_advisor.mgr.commands import LiveCommands
    for c in table.COMMANDS:
        acts = c.live is not None
        assert acts or c.answer is not None, c.name
        assert c.offline <= (c.answer is not None), c.name      # offline needs an answer
        assert not (c.write and not acts), c.name               # a write acts in the mgr
        if acts:
            assert callable(getattr(LiveCommands, str(c.live), None)), c.live
    # and every handler there is named by one entry: none left unreachable
    handlers = sorted(n for n in vars(LiveCommands) if n.startswith(("act_", "show_")))
    assert sorted(str(c.live) for c in table.COMMANDS if c.live) == handlers


def test_a_command_only_the_mgr_answers_is_refused_offline() -> None:
    with pytest.raises(AdvisorError, match="only by the running module"):
        table.BY_NAME["pause"].offline_answer(None, {})  # type: ignore[arg-type]
