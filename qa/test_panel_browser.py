"""The panel rendered by headless Chromium from the module in the real mgr: its numbers are
the JSON status's, and a hostile pool name stays text. A screenshot is kept."""
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from .cluster import Cluster, wait_until
from .conftest import EVIL

URL = "http://127.0.0.1:9285/"
# the machine has no network: nothing in the background may try to reach it
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=8000"]


def chromium(*args: str) -> str:
    with tempfile.TemporaryDirectory(prefix="pga-chromium-") as profile:
        p = subprocess.run(["chromium", *FLAGS, f"--user-data-dir={profile}", *args],
                           capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


class Tables(HTMLParser):
    """Rows of cell texts per table id, and every element tag seen."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: Dict[str, List[List[str]]] = {}
        self.tags: List[str] = []
        self._table = ""
        self._cell: List[str] = []
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Any]]) -> None:
        self.tags.append(tag)
        if tag == "table":
            self._table = dict(attrs).get("id") or ""
            self.tables[self._table] = []
        elif tag == "tr":
            self.tables.setdefault(self._table, []).append([])
        elif tag in ("td", "th"):
            self._in_cell, self._cell = True, []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self.tables[self._table][-1].append("".join(self._cell))
            self._in_cell = False

    def handle_data(self, data: str) -> None:
        if self._in_cell:
            self._cell.append(data)


def rendered() -> Tables:
    t = Tables()
    t.feed(chromium("--dump-dom", URL))
    return t


def api_status() -> Dict[str, Any]:
    with urllib.request.urlopen(URL + "api/status", timeout=30) as r:
        doc: Dict[str, Any] = json.loads(r.read())
    return doc


def text(v: Any) -> str:
    """A value as the page writes it: JavaScript prints 16.0 as 16."""
    if v is None:
        return "-"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


@pytest.fixture
def panel(cluster: Cluster) -> Iterator[Cluster]:
    wait_until(lambda: cluster.json("mgr", "services").get("pg_advisor") == URL, 60, "the panel")
    yield cluster


def test_rendered_numbers_are_the_status(panel: Cluster, tmp_path: Path) -> None:
    for _ in range(5):       # stats move: a render and the JSON read just after must agree
        page, st = rendered(), api_status()
        pools = [[p["name"], text(p["pg_num"]), text(p["recommended_pg_num"]),
                  text(p["autoscaler_pg_num"]), text(p["stored"]), text(p["recommendation"])]
                 for p in st["pools"]]
        osds = [[f"osd.{o['id']}", text(o["host"]), text(o["pgs"]), text(o["pg_share"]),
                 text(o["bytes_used"]), text(o["pg_memory_now"]), text(o["pg_memory_steady"])]
                for o in st["osds"] if o["pgs"] is not None]
        if page.tables.get("pools", [])[1:] == pools and page.tables.get("osds", [])[1:] == osds:
            break
        time.sleep(2)
    assert page.tables["pools"][1:] == pools
    assert page.tables["osds"][1:] == osds
    assert page.tags.count("rect") == len(osds)          # one bar per OSD in the chart
    shot = Path(os.environ.get("PG_ADVISOR_ARTIFACTS", tmp_path)) / "panel.png"
    chromium("--window-size=1200,1400", f"--screenshot={shot}", URL)
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


def test_a_hostile_pool_name_does_not_execute(panel: Cluster, evil_pool: Cluster) -> None:
    wait_until(lambda: any(p["name"] == EVIL for p in api_status()["pools"]), 60, "the pool")
    page = rendered()
    assert EVIL in [row[0] for row in page.tables["pools"][1:]]   # shown, as text
    assert "img" not in page.tags                                  # never as an element
