"""Turning report dicts into text: JSON for machines, aligned tables for people."""
import json
from typing import Any, List, Optional, Sequence

from .errors import AdvisorError

FORMATS = ("plain", "json", "json-pretty")


def check_format(fmt: Optional[str]) -> str:
    fmt = fmt or "plain"
    if fmt not in FORMATS:
        raise AdvisorError.invalid(f"unsupported format '{fmt}': use one of {', '.join(FORMATS)}")
    return fmt


def to_json(report: Any, pretty: bool = False) -> str:
    return json.dumps(report, indent=2 if pretty else None, sort_keys=True)


def human_bytes(n: Optional[int]) -> str:
    if n is None:
        return "-"
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(v) < 1024 or unit == "PiB":
            return f"{int(v)} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    raise AssertionError("unreachable")


def cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e-3 and v else f"{v:.2f}".rstrip("0").rstrip(".")
    return str(v)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned text columns, two spaces apart, header in capitals."""
    text: List[List[str]] = [[h.upper() for h in headers]] + [[cell(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in text) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in text)


def render(report: Any, fmt: Optional[str], plain: Any) -> str:
    """Format `report` as asked; `plain` is the text renderer for the default format."""
    fmt = check_format(fmt)
    if fmt == "plain":
        return str(plain(report))
    return to_json(report, pretty=fmt == "json-pretty")
