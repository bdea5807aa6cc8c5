"""Headless Chromium for the panel's tests: a page's DOM read back, and the page's number
formats written the same way in Python, so that a test compares the page with the JSON."""
import math
import subprocess
import tempfile
from decimal import ROUND_HALF_UP, Decimal
from html.parser import HTMLParser
from typing import Any, Dict, List, Optional, Tuple

# the machine has no network: nothing in the background may try to reach it
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(*args: str, budget_ms: int = 8000) -> str:
    with tempfile.TemporaryDirectory(prefix="pga-chromium-") as profile:
        # virtual time: the page's timers run that long (fast-forwarded) before the dump
        p = subprocess.run(["chromium", *FLAGS, f"--virtual-time-budget={budget_ms}",
                            f"--user-data-dir={profile}", *args],
                           capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


class Tables(HTMLParser):
    """Rows of cell texts per table id, the titles of bars and lines per SVG id, every tag."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: Dict[str, List[List[str]]] = {}
        self.titles: Dict[str, List[Tuple[str, str]]] = {}    # svg id: [(rect|line, title)]
        self.texts: Dict[str, str] = {}                        # text of elements with an id
        self.attrs: Dict[str, Dict[str, str]] = {}             # any element's id: its attributes
        self.links: List[Tuple[str, str]] = []                 # (table id, href) of each link
        self.tags: List[str] = []
        self._table = self._svg = self._shape = self._id = ""
        self._text: List[str] = []
        self._in = ""

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Any]]) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        if a.get("id"):
            self.attrs[a["id"]] = {k: v or "" for k, v in a.items()}
        if tag == "a":
            self.links.append((self._table, a.get("href") or ""))
        if tag == "table":
            self._table = a.get("id") or ""
            self.tables[self._table] = []
        elif tag == "tr":
            self.tables.setdefault(self._table, []).append([])
        elif tag == "svg":
            self._svg = a.get("id") or ""
            self.titles[self._svg] = []
        elif tag in ("rect", "line"):
            self._shape = tag
        if tag in ("td", "th", "title") or (tag in ("p", "span") and a.get("id")):
            self._in, self._text, self._id = tag, [], a.get("id") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag != self._in:
            return
        text = "".join(self._text)
        if tag in ("td", "th"):
            self.tables[self._table][-1].append(text)
        elif tag == "title":
            if self._svg:
                self.titles[self._svg].append((self._shape, text))
        else:
            self.texts[self._id] = text
        self._in = ""

    def handle_data(self, data: str) -> None:
        if self._in:
            self._text.append(data)


def dom(url: str, budget_ms: int = 8000) -> Tables:
    (t := Tables()).feed(chromium("--dump-dom", url, budget_ms=budget_ms))
    return t


# -- the page's formats (panel.html: num, pct, bytes) -------------------------------------------

def fixed(v: float, digits: int) -> str:
    """JavaScript's v.toFixed(digits): the double's exact value, a tie away from zero, the
    sign kept when it rounds to zero ((-0.04).toFixed(1) is "-0.0"), none for -0."""
    q = Decimal(float(v) if v != 0 else 0.0).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{q:.{digits}f}"


def num(v: Optional[float]) -> str:
    """A count whole, anything else with one decimal."""
    return "-" if v is None else str(int(v)) if float(v).is_integer() else fixed(v, 1)


def pct(v: Optional[float]) -> str:
    return "-" if v is None else fixed(v, 1) + " %"


UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]


def size(v: Optional[float]) -> str:
    """Bytes in binary units, one decimal past bytes."""
    if v is None:
        return "-"
    x, i = abs(float(v)), 0
    while x >= 1024 and i < len(UNITS) - 1:
        x /= 1024
        i += 1
    # Math.round: halves up
    whole = str(math.floor(x + 0.5)) if i == 0 else fixed(x, 1)
    return ("-" if v < 0 else "") + whole + " " + UNITS[i]


def text(v: Any) -> str:
    """A value as the page writes it with String(): JavaScript prints 16.0 as 16."""
    return "-" if v is None else str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def histogram_counts(values: List[float], width: float, first: int) -> List[int]:
    """How the page bins `values` (its histogram(): bin floor(v / width) - first)."""
    n = math.floor(max(values) / width) - first + 1
    counts = [0] * n
    for v in values:
        counts[min(n - 1, math.floor(v / width) - first)] += 1
    return counts
