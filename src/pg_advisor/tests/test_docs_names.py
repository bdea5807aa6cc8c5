"""doc/design.rst and doc/contributing.rst walk the reader through the code by name: every
file and folder they name exists, every ``Class.member`` or ``module.name`` is defined
there, every other name of this code (CamelCase, snake_case, a ``prefix_*``) is defined
somewhere; so a rename that leaves the pages behind fails here."""
import ast
import re
from pathlib import Path
from typing import Dict, List, Set

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "src" / "pg_advisor"
TOKEN = re.compile(r"``([^`\s]+)``")      # (one with a space is a command line)
# what the pages cite that is Ceph's or Python's, not this code's
THEIRS = {"Protocol", "TYPE_CHECKING", "mgr_module", "pg_autoscaler", "upmap_max_deviation",
          "osd_max_pg_per_osd_hard_ratio", "target_max_misplaced_ratio", "CLIReadCommand",
          "CLIWriteCommand", "CLICommandBase.make_registry_subtype", "PgAdjustmentProgress",
          "Module.CLICommand"}


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
    """Module stem and class name -> the names defined at its top level; "" -> every string
    constant of the package (health check names, options' names) and the tests' names
    (the unit tests' and qa's)."""
    out: Dict[str, Set[str]] = {"": set()}
    for p in PACKAGE.rglob("*.py"):
        tree = ast.parse(p.read_text())
        if "tests" in p.relative_to(PACKAGE).parts:      # the tests: by their names alone
            out[""].update(_defined(tree.body))
            continue
        out.setdefault(p.stem, set()).update(_defined(tree.body))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, set()).update(_defined(node.body))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                out[""].add(node.value)
    for p in (ROOT / "qa").rglob("test_*.py"):        # the integration tests the pages cite
        out[""].update(_defined(ast.parse(p.read_text()).body))
    return out


def _path_exists(tok: str) -> bool:
    name = tok.rstrip("/")
    if any((base / name).exists() for base in (PACKAGE, PACKAGE / "tests", ROOT, ROOT / "src")):
        return True
    return any(str(p).endswith("/" + name) for p in (ROOT / "src").rglob(Path(name).name))


def faults(text: str, known: Dict[str, Set[str]]) -> List[str]:
    everything = set().union(*known.values()) | set(known)
    wrong = []
    for tok in sorted(set(TOKEN.findall(text))):
        t = tok[:-2] if tok.endswith("()") else tok.rstrip("=")
        if t in THEIRS or t.startswith(("/", "$", "-")):        # (a URL's path, a variable, a flag)
            continue
        if "/" in t or t.endswith(".py"):
            if not _path_exists(t):
                wrong.append(f"{tok}: no such file")
            continue
        m = re.fullmatch(r"(\w+)\.(\w+)", t)
        if m:
            owner, member = m.groups()
            if owner not in known:
                wrong.append(f"{tok}: no module or class {owner}")
            elif member not in known[owner]:
                wrong.append(f"{tok}: {owner} defines no {member}")
        elif re.fullmatch(r"\w+_\*", t):
            if not any(n.startswith(t[:-1]) for n in everything):
                wrong.append(f"{tok}: nothing is named so")
        elif re.fullmatch(r"[A-Za-z]\w*", t) and ("_" in t or t[0].isupper()) and t not in everything:
            wrong.append(f"{tok}: nothing is named so")
    return wrong


def test_the_walkthrough_names_what_the_code_has() -> None:
    known = index()
    for page in ("contributing.rst", "design.rst"):
        assert faults((ROOT / "doc" / page).read_text(), known) == [], page


def test_a_stale_name_is_found() -> None:
    known = index()
    assert "tick" in known["MgrServe"]
    assert faults("``MgrServe.tick`` ``mgr/serve.py`` ``table.check`` ``PlanService`` ``act_*``"
                  " ``PG_ADVISOR_OPTION_INVALID`` ``rules/``", known) == []
    assert faults("``MgrServe.loop`` ``nowhere/x.py`` ``table.nothing`` ``Gone.tick`` ``NoSuchClass``"
                  " ``nope_*`` ``gone/``", known) == [
        "Gone.tick: no module or class Gone", "MgrServe.loop: MgrServe defines no loop",
        "NoSuchClass: nothing is named so", "gone/: no such file", "nope_*: nothing is named so",
        "nowhere/x.py: no such file", "table.nothing: table defines no nothing"]
