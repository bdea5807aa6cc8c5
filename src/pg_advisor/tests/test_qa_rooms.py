"""qa/ keeps to its rooms (qa/README.md): every module in a room the README names, none
over 500 lines, no function over six parameters, and neither qa/ nor the shared testkit
imports the unit tests (what both use lives in src/pg_advisor_testkit)."""
import ast
import re
from pathlib import Path
from typing import List

from .test_signatures import MAX_PARAMETERS, functions, parameters

REPO = Path(__file__).resolve().parents[3]
QA = REPO / "qa"
TESTKIT = REPO / "src" / "pg_advisor_testkit"
MAX_LINES = 500


def unit_test_imports(path: Path, root: Path = REPO) -> List[str]:
    """Where one file imports pg_advisor.tests or anything in it: "file:line: name"."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" if node.module == "pg_advisor" else node.module
                     for a in node.names]
        else:
            continue
        out += [f"{path.relative_to(root)}:{node.lineno}: {n}" for n in dict.fromkeys(names)
                if n == "pg_advisor.tests" or n.startswith("pg_advisor.tests.")]
    return out


def qa_modules() -> List[Path]:
    return sorted(QA.rglob("*.py"))


def test_qa_and_the_testkit_import_nothing_from_the_unit_tests() -> None:
    files = qa_modules() + sorted(TESTKIT.rglob("*.py"))
    assert len(files) > 40
    assert [hit for f in files for hit in unit_test_imports(f)] == []


def test_the_scan_sees_every_spelling_of_the_import(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("import pg_advisor.tests.fakes\nfrom pg_advisor.tests import conftest, fakes\n"
                 "from pg_advisor import model, tests\nfrom pg_advisor.model import snapshot\n"
                 "from pg_advisor_testkit import dumps\n")
    assert unit_test_imports(f, tmp_path) == [
        "m.py:1: pg_advisor.tests.fakes", "m.py:2: pg_advisor.tests", "m.py:3: pg_advisor.tests"]


def test_every_qa_module_is_in_a_room_the_readme_names() -> None:
    readme = (QA / "README.md").read_text()
    rooms = {p.relative_to(QA).parts[0] for p in qa_modules() if len(p.relative_to(QA).parts) > 1}
    loose = sorted(p.name for p in QA.glob("*.py"))
    assert loose == ["__init__.py", "conftest.py"]
    assert rooms and [r for r in sorted(rooms) if not re.search(rf"^- `{r}/`", readme, re.M)] == []
    # each room is a package, so `python3 -m qa.ROOM.NAME` and pytest's imports find it
    assert [r for r in sorted(rooms) if not (QA / r / "__init__.py").exists()] == []


def test_no_qa_module_is_over_500_lines() -> None:
    sizes = {str(p.relative_to(REPO)): len(p.read_text().splitlines()) for p in qa_modules()}
    assert [f"{f}: {n}" for f, n in sorted(sizes.items()) if n > MAX_LINES] == []


def test_no_qa_function_takes_more_than_six_parameters() -> None:
    # the package's rule (test_signatures.py), counted alike: what a
    # benchmark or a map maker takes past six goes in a typed record of what it is
    seen, over = 0, []
    for path in qa_modules():
        for name, fn in functions(ast.parse(path.read_text(), str(path))):
            seen += 1
            if parameters(fn) > MAX_PARAMETERS:
                over.append(f"{path.relative_to(REPO)}: {name} ({parameters(fn)})")
    assert seen > 500 and over == []
