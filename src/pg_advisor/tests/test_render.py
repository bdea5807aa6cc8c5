"""Plain text with hostile names from the cluster: one line per row, columns aligned, no
control character reaching the terminal."""
import dataclasses
import unicodedata
from typing import Any, Dict, List

import pytest

from pg_advisor.model import snapshot
from pg_advisor.render.execute_text import progress_text
from pg_advisor.render.format import cell, printable, table
from pg_advisor_testkit.loose import status_report
from pg_advisor.render.status_text import status_text

HOSTILE = "a\nb\x1b[31mred\tc\r"
HOSTILE_SHOWN = "a\\nb\\x1b[31mred\\tc\\r"


@pytest.mark.parametrize("raw, shown", [
    ("rbd", "rbd"),
    (HOSTILE, HOSTILE_SHOWN),
    ("\x00\x07\x7f", "\\x00\\x07\\x7f"),                         # C0, DEL
    ("\x85\x9b31m", "\\x85\\x9b31m"),                            # C1: NEL, CSI
    ("x\u2028y\u202egnp.exe", "x\\u2028y\\u202egnp.exe"),         # line separator, bidi override
    ("back\\slash", "back\\\\slash"),     # doubled: an escape in the output is never the name's text
    ("池 é 😀", "池 é 😀"),                                       # printable, wide or not: as is
])
def test_printable_escapes_what_a_terminal_would_act_on(raw: str, shown: str) -> None:
    assert printable(raw) == shown
    assert cell(raw) == shown


def columns(s: str) -> int:
    """Terminal columns, computed apart from render's own helper."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in s)


def column_starts(line: str) -> List[int]:
    """The terminal column each word of a header line starts at (headers have no spaces)."""
    return [columns(line[:i]) for i, c in enumerate(line) if c != " " and (i == 0 or line[i - 1] == " ")]


def cells(row: str, starts: List[int]) -> List[str]:
    """`row` cut at the header's terminal columns; each piece but the last ends in the two
    spaces between columns when the row is aligned."""
    out, cur, col, k = [], "", 0, 1
    for c in row:
        if k < len(starts) and col >= starts[k]:
            assert col == starts[k], f"a character straddles column {starts[k]}: {row!r}"
            out.append(cur)
            cur, k = "", k + 1
        cur += c
        col += columns(c)
    return out + [cur]


def check_table(lines: List[str], title: str, n_rows: int) -> List[List[str]]:
    """The table under `title`: its header and exactly `n_rows` rows, each on one line with
    every column starting where the header's does; returns the stripped cells."""
    at = lines.index(title) + 1
    header, rows = lines[at], lines[at + 1: at + 1 + n_rows]
    starts = column_starts(header)
    assert len(rows) == n_rows
    out = []
    for row in rows:
        parts = cells(row, starts)
        assert len(parts) == len(starts), row
        for p in parts[:-1]:
            assert p.endswith("  ") and not p.startswith(" "), (p, row)
        out.append([p.strip() for p in parts])
    return out


def hostile_report(snap: snapshot.Snapshot, name: str, host: str, device_class: str) -> Dict[str, Any]:
    pools = (dataclasses.replace(snap.pools[0], name=name),) + snap.pools[1:]
    r = status_report(dataclasses.replace(snap, pools=pools))
    r["osds"][0]["host"], r["osds"][0]["device_class"] = host, device_class
    return r


def test_status_with_a_hostile_pool_name_keeps_its_tables(snap: snapshot.Snapshot) -> None:
    r = hostile_report(snap, HOSTILE, "h\x1b]0;pwned\x07", "c\x9b2J")
    text = status_text(r)
    assert "\x1b" not in text and "\r" not in text and "\x9b" not in text
    lines = text.split("\n")
    for line in lines:                                   # nothing but printable text on a line
        assert line.isprintable(), repr(line)
    pools = check_table(lines, "POOLS", len(r["pools"]))
    assert pools[0][1] == HOSTILE_SHOWN
    osds = check_table(lines, "OSDS", len(r["osds"]))
    assert osds[0][1:3] == ["h\\x1b]0;pwned\\x07", "c\\x9b2J"]
    assert f"{HOSTILE_SHOWN}=" in osds[0][9]             # pgs_by_pool names the pool
    spread = check_table(lines, "PGS PER OSD (deviation is from each OSD's weight-proportional share)",
                         len(r["distribution"]["pools"]) + 1)
    assert spread[0][0] == HOSTILE_SHOWN
    # the free-text recommendation names the pool too: escaped, on its own line
    assert any(line.startswith(f"  {HOSTILE_SHOWN}") for line in lines)


def test_wide_names_keep_the_columns_aligned(snap: snapshot.Snapshot) -> None:
    r = hostile_report(snap, "プール池", "ホスト", "é😀")
    lines = status_text(r).split("\n")
    assert check_table(lines, "POOLS", len(r["pools"]))[0][1] == "プール池"
    assert check_table(lines, "OSDS", len(r["osds"]))[0][1:3] == ["ホスト", "é😀"]


def test_tables_and_free_text_of_a_plan_escape_their_names() -> None:
    report = {"plan": {"id": 3, "source": "cli", "status": "running", "next": 0,
                       "blockers": [f"pool {HOSTILE} is degraded"], "waiting": f"{HOSTILE}\n",
                       "attempts": 1, "last_error": "boom\x1b[2J"},
              "steps": [{"state": "todo", "description": f"pool {HOSTILE} pg_num 8 -> 16"}]}
    lines = progress_text(report).split("\n")
    assert all(line.isprintable() for line in lines)
    assert f"blocked: pool {HOSTILE_SHOWN} is degraded" in lines
    assert f"waiting: {HOSTILE_SHOWN}\\n" in lines
    assert "last error (1 attempts): boom\\x1b[2J" in lines
    steps = check_table(lines, lines[3], 1)            # the table follows the last-error line
    assert steps == [["1", "todo", f"pool {HOSTILE_SHOWN} pg_num 8 -> 16"]]


def test_table_pads_by_terminal_columns() -> None:
    text = table(["name", "n"], [["池池", 1], ["ab", 22]])
    starts = {tuple(column_starts(line)) for line in text.split("\n")}
    assert starts == {(0, 6)}
