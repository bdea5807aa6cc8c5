"""One table of views: each command's report as plain text. The mgr commands (module.py)
and the offline CLI (cli.py) both answer through show(), so a report reads the same from
either, and -f json / json-pretty is the report itself."""
from typing import Any, Callable, Dict, Mapping, Optional

from .balance_text import balance_text, eval_text, read_balance_text
from .execute_text import apply_text, history_text, progress_text
from .expand_text import drain_text, pins_text, reweight_text
from .format import render
from .plan_text import plan_text
from .status_text import status_text
from .whatif_text import growth_text, map_text, simulate_text

Report = Mapping[str, Any]     # a command's report: JSON-able, read only


def _simulate(r: Report) -> str:
    # one command, two questions: a new host (analysis/growth.py) or a pool/OSD change (analysis/whatif.py)
    return growth_text(r) if "add_host" in r else simulate_text(r)


VIEWS: Dict[str, Callable[[Report], str]] = {
    "status": status_text,
    "plan": plan_text,
    "eval": eval_text,
    "balance": balance_text,
    "read-balance": read_balance_text,
    "map": map_text,
    "simulate": _simulate,
    "mode": lambda r: f"mode {r['mode']}",
    "apply": apply_text,
    "pin-remapped": pins_text,
    "drain": drain_text,
    "crush-reweight": reweight_text,
    "progress": progress_text,
    "history": history_text,
    "abort": lambda r: f"aborted: {r['summary']}",
}


def show(view: str, report: Report, fmt: Optional[str]) -> str:
    """The report in `fmt`: plain (the view's text), json or json-pretty. A command the
    background has not done yet (mgr/intents.py) answers the same way whatever it is."""
    if report.get("queued") is True:
        return render(report, fmt, queued_text)
    return render(report, fmt, VIEWS[view])


def queued_text(r: Report) -> str:
    return f"{r['command']}: queued as {r['intent']}; {r['checked']}"
