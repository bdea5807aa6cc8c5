"""Turning report dicts into text: JSON for machines, aligned tables for people.

Strings from the cluster (pool, host, device class and rule names, and messages that carry
them) may hold any character. In plain text each goes through `printable` first, so it
stays on its line and cannot drive the operator's terminal (ANSI escapes, carriage
returns, bidi overrides); JSON escapes them itself.
"""
import json
import unicodedata
from typing import Any, List, Optional, Sequence

from ..model.errors import AdvisorError

FORMATS = ("plain", "json", "json-pretty")


def check_format(fmt: Optional[str]) -> str:
    fmt = fmt or "plain"
    if fmt not in FORMATS:
        raise AdvisorError.invalid(f"unsupported format '{fmt}': use one of {', '.join(FORMATS)}")
    return fmt


def to_json(report: Any, pretty: bool = False) -> str:
    return json.dumps(report, indent=2 if pretty else None, sort_keys=True)


def printable(text: object) -> str:
    """`text` (as str() has it) on one line of printable characters: a backslash and every
    character Python does not print (C0 and C1 controls, DEL, line and paragraph separators,
    format characters such as bidi overrides) escaped as repr escapes them (\\n, \\t, \\x1b,
    \\u202e), without repr's quotes. Printable text, wide characters included, stays as it is."""
    s = str(text)
    if s.isprintable() and "\\" not in s:
        return s           # the common case: a plain name
    return "".join("\\\\" if c == "\\" else c if c.isprintable() else repr(c)[1:-1] for c in s)


def display_width(s: str) -> int:
    """Terminal columns `s` takes (printable text): East Asian wide and full-width characters
    take two, combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in s)


def cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e-3 and v else f"{v:.2f}".rstrip("0").rstrip(".")
    return printable(v)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned text columns, two spaces apart, header in capitals; each row one line."""
    text: List[List[str]] = [[cell(h.upper()) for h in headers]] + [[cell(v) for v in r] for r in rows]
    widths = [max(display_width(r[i]) for r in text) for i in range(len(headers))]
    return "\n".join("  ".join(pad(c, w) for c, w in zip(r, widths)).rstrip() for r in text)


def pad(text: str, width: int) -> str:
    """`text` and spaces to fill `width` terminal columns (ljust counts characters)."""
    return text + " " * (width - display_width(text))


def render(report: Any, fmt: Optional[str], plain: Any) -> str:
    """Format `report` as asked; `plain` is the text renderer for the default format."""
    fmt = check_format(fmt)
    if fmt == "plain":
        return str(plain(report))
    return to_json(report, pretty=fmt == "json-pretty")
