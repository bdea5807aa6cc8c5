"""doc/contributing.rst walks a tick and a command through the code by name: every file it
names exists and every ``Class.member`` or ``module.name`` it names is defined there, so
a rename that leaves the walkthrough behind fails here."""
import ast
import re
from pathlib import Path
from typing import Dict, List, Set

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "src" / "pg_advisor"
TOKEN = re.compile(r"``([^`\s]+)``")


def _defined(body: List[ast.stmt]) -> Set[str]:
    names: Set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def index() -> Dict[str, Set[str]]:
    """Module stem and class name -> the names defined at its top level."""
    out: Dict[str, Set[str]] = {}
    for p in PACKAGE.rglob("*.py"):
        if "tests" in p.relative_to(PACKAGE).parts:
            continue
        tree = ast.parse(p.read_text())
        out.setdefault(p.stem, set()).update(_defined(tree.body))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, set()).update(_defined(node.body))
    return out


def faults(text: str, known: Dict[str, Set[str]]) -> List[str]:
    wrong = []
    for tok in TOKEN.findall(text):
        if tok.endswith(".py"):
            where = [PACKAGE / tok, PACKAGE / "tests" / tok, ROOT / tok]
            if not any(w.exists() for w in where) and not list(PACKAGE.rglob(Path(tok).name)):
                wrong.append(f"{tok}: no such file")
            continue
        m = re.fullmatch(r"(\w+)\.(\w+)(\(\))?", tok)
        if m and m.group(1) in known and m.group(2) not in known[m.group(1)]:
            wrong.append(f"{tok}: {m.group(1)} defines no {m.group(2)}")
    return wrong


def test_the_walkthrough_names_what_the_code_has() -> None:
    text = (ROOT / "doc" / "contributing.rst").read_text()
    assert faults(text, index()) == []


def test_a_stale_name_is_found() -> None:
    known = index()
    assert "tick" in known["MgrServe"]
    assert faults("``MgrServe.tick`` ``mgr/serve.py`` ``table.check``", known) == []
    assert faults("``MgrServe.loop`` ``nowhere/x.py`` ``table.nothing``", known) == [
        "MgrServe.loop: MgrServe defines no loop", "nowhere/x.py: no such file",
        "table.nothing: table defines no nothing"]
