"""What the docs say that a test can check: the size limit on source files, the layer
list (the order test_layers.py enforces), the commands (commands/table.py's), the tests
each of design.rst's invariants names, and that each file opens with a sentence. Each
check reads its number or list from the file that says it, so a doc and the code cannot
drift apart unseen; each is tried once on an input broken on purpose."""
import ast
import re
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

from pg_advisor import cli
from pg_advisor.commands import table

ROOT = Path(__file__).resolve().parents[3]
README, DOC = ROOT / "README.md", ROOT / "doc"
# The files over the limit today, each with its size: it may shrink, never grow, and leaves
# this list once it is under the limit.
OVER_LIMIT: Dict[str, int] = {}


def line_limit(contributing: str) -> int:
    """The limit doc/contributing.rst states: "no source file is over N lines"."""
    found = re.findall(r"no source file is\s+over\s+(\d+)\s+lines", contributing)
    assert len(found) == 1, "doc/contributing.rst states the line limit once"
    return int(found[0])


def sizes() -> Dict[str, int]:
    """Lines of every .py file under src/ and qa/, by path from the top."""
    return {str(p.relative_to(ROOT)): len(p.read_text().splitlines())
            for top in ("src", "qa") for p in sorted((ROOT / top).rglob("*.py"))}


def size_faults(limit: int, lines: Dict[str, int], allowed: Dict[str, int]) -> List[str]:
    out = [f"{f}: {n} lines, over {limit}" for f, n in lines.items() if n > limit and f not in allowed]
    for f, n in allowed.items():
        if f not in lines or lines[f] <= limit:
            out.append(f"{f}: {lines.get(f, 0)} lines, within {limit}: off the list with it")
        elif lines[f] > n:
            out.append(f"{f}: grew from {n} to {lines[f]} lines")
    return out


def test_no_source_file_is_over_the_limit_the_docs_state() -> None:
    limit = line_limit((DOC / "contributing.rst").read_text())
    assert size_faults(limit, sizes(), OVER_LIMIT) == []


def test_the_size_check_fails_on_a_file_over_grown_or_listed_in_vain() -> None:
    assert line_limit("... no source file is over 480 lines.") == 480
    assert size_faults(500, {"a.py": 501, "b.py": 530, "c.py": 400}, {"b.py": 520, "c.py": 450}) == [
        "a.py: 501 lines, over 500", "b.py: grew from 520 to 530 lines",
        "c.py: 400 lines, within 500: off the list with it"]


def layers() -> Tuple[List[str], List[str]]:
    """test_layers.py's LAYERS, read from its source (a test file imports no other): the
    subpackages in order, and the adapters a doc names (not __init__ or __main__)."""
    tree = ast.parse((Path(__file__).parent / "test_layers.py").read_text())
    value = next(n.value for n in tree.body if isinstance(n, ast.AnnAssign)
                 and isinstance(n.target, ast.Name) and n.target.id == "LAYERS")
    assert value is not None
    table_ = ast.literal_eval(value)
    return [name for name, _ in table_[:-1]], [m for m in table_[-1][1] if not m.startswith("__")]


PACKAGE = Path(__file__).resolve().parents[1]


def listed(text: str, tick: str) -> Tuple[List[str], List[str]]:
    """The layers a passage names in order (`model/` in markdown, ``model/`` in rst) and
    the package's top-level modules it names after the last of them (`module.py`)."""
    q = re.escape(tick)
    dirs = [(m.start(), m.group(1)) for m in re.finditer(rf"{q}(\w+)/{q}", text)]
    after = text[dirs[-1][0]:] if dirs else text
    return [d for _, d in dirs], [m for m in re.findall(rf"{q}(\w+)\.py{q}", after)
                                  if (PACKAGE / f"{m}.py").is_file()]


def passage(path: Path, start: str, end: str) -> str:
    text = path.read_text()
    i = text.index(start)
    return text[i:text.index(end, i)]


PASSAGES = [   # where each doc lists the layers: from, to, and its quoting
    (README, "- `src/pg_advisor/`", "\n- `qa/`", "`"),
    (DOC / "testing.rst", "``test_layers.py`` holds", "fails when", "``"),
    (DOC / "design.rst", "\nThe layers\n", "\nInvariants\n", "``"),
]


@pytest.mark.parametrize("path, start, end, tick", PASSAGES, ids=[p[0].name for p in PASSAGES])
def test_the_docs_list_the_layers_test_layers_enforces_in_order(path: Path, start: str, end: str,
                                                                tick: str) -> None:
    assert listed(passage(path, start, end), tick) == layers()


def test_the_layer_check_fails_on_a_layer_left_out_or_out_of_order() -> None:
    subpackages, adapters = layers()
    good = " → ".join(f"`{d}/`" for d in subpackages) + ", then " + ", ".join(f"`{a}.py`" for a in adapters)
    assert listed(good, "`") == (subpackages, adapters)
    assert listed(good.replace("`sizing/` → ", ""), "`")[0] != subpackages
    swapped = good.replace("`render/`", "`@/`").replace("`panel/`", "`render/`").replace("`@/`", "`panel/`")
    assert listed(swapped, "`")[0] != subpackages
    assert listed(good.replace("`cli.py`", "cli"), "`")[1] != adapters


def documented(name: str, text: str) -> bool:
    """A command named as the docs name one: `ceph pg-advisor NAME`, `NAME` or ``NAME``."""
    n = re.escape(name)
    return re.search(rf"pg-advisor {n}(?![\w-])|`{n}`", text) is not None


def cli_commands(doc: str) -> List[str]:
    """The commands cli.py's docstring lists after COMMAND:, each after a `|` outside
    brackets and parentheses (`[--mode pgs|bytes]` is an argument's)."""
    block = doc[doc.index("COMMAND:") + len("COMMAND:"):]
    while True:
        flat = re.sub(r"\[[^][]*\]|\([^()]*\)", "", block)
        if flat == block:
            break
        block = flat
    return [part.split()[0] for part in block.split("|") if part.split()]


def test_every_command_is_in_the_docs_and_every_offline_one_in_the_cli_usage() -> None:
    text = README.read_text() + "".join(p.read_text() for p in sorted(DOC.glob("*.rst")))
    assert [c.name for c in table.COMMANDS if not documented(c.name, text)] == []
    assert cli.__doc__ is not None
    assert sorted(set(cli_commands(cli.__doc__))) == sorted(c.name for c in table.OFFLINE)


def test_the_command_checks_fail_on_a_command_left_out() -> None:
    assert documented("drain", "`ceph pg-advisor drain osd.3`") and documented("resume", "`resume`")
    assert not documented("read", "ceph pg-advisor read-balance") and not documented("drain", "drains")
    assert cli_commands("COMMAND: status [POOL [--x a|b]] | crush-reweight --osd N\n  | map\n"
                        "  (each with -f plain|json)") == ["status", "crush-reweight", "map"]


def named_tests(text: str) -> List[str]:
    return re.findall(r"``(test_\w+)``", text)


def defined_tests() -> Set[str]:
    """The names of every test function under src/ and qa/."""
    names: Set[str] = set()
    for p in list((ROOT / "src").rglob("test_*.py")) + list((ROOT / "qa").rglob("test_*.py")):
        names |= {n.name for n in ast.walk(ast.parse(p.read_text()))
                  if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    return names


def unchecked(block: str, have: Set[str]) -> List[str]:
    """Each invariant of `block` (design.rst's list) that names no test, or a test that
    does not exist."""
    out = []
    for item in block.split("\n- ")[1:]:
        named = named_tests(item)
        if not named or not set(named) <= have:
            out.append(item[:80] + (f": {sorted(set(named) - have)}" if named else ": names no test"))
    return out


def test_each_invariant_names_tests_that_exist() -> None:
    # design.rst's invariants, each with the tests that check it: a renamed or removed
    # test leaves its invariant unchecked, and this says so
    block = passage(DOC / "design.rst", "\nInvariants\n", "\nThe anchors")
    have = defined_tests()
    assert block.count("\n- ") >= 7 and unchecked(block, have) == []
    broken = block.replace("``test_malformed_dump``", "``test_no_such_test``", 1)
    assert broken != block and len(unchecked(broken, have)) == 1
    assert len(unchecked(block + "\n- a rule no test checks\n", have)) == 1


def without_opening_sentence(paths: List[Path]) -> List[Path]:
    """The files of `paths` with code that open with no docstring (an empty file is none)."""
    return [p for p in paths if p.read_text().strip() and not ast.get_docstring(ast.parse(p.read_text()))]


def test_each_file_opens_with_a_sentence_on_its_job(tmp_path: Path) -> None:
    # contributing.rst: "Each file opens with a sentence on its one job"
    assert "Each file opens with a sentence on its one job" in (DOC / "contributing.rst").read_text()
    files = sorted(list((ROOT / "src").rglob("*.py")) + list((ROOT / "qa").rglob("*.py")))
    assert [str(p.relative_to(ROOT)) for p in without_opening_sentence(files)] == []
    empty, code = tmp_path / "empty.py", tmp_path / "code.py"
    empty.write_text("\n")
    code.write_text("import os\n")
    assert without_opening_sentence([empty, code]) == [code]
