"""The layers of doc/design.rst, checked on the imports: data flows one way. Each layer is a
subpackage (the adapters, which talk to the mgr and the shell, are the package's top-level
modules); a module may import from its own layer and the ones before it, never from a
later one (the core never reaches the mgr adapter or the views). This table, not prose in
docstrings, is where the order is said.

model/ holds the data: the snapshot, a rule's steps as the loader typed them, the PG
counts (distribution.py). rules/ answers what a CRUSH rule allows (its reach, a pool's
share, a replica's legal replacements), right above the data, since sizing, the
analysis and the balancer all ask it."""
import ast
from pathlib import Path
from typing import Dict, List, Tuple

PACKAGE = Path(__file__).resolve().parents[1]

LAYERS: List[Tuple[str, Tuple[str, ...]]] = [
    ("model", ("model",)),
    ("rules", ("rules",)),
    ("crush", ("crush",)),
    ("sizing", ("sizing",)),
    ("analysis", ("analysis",)),
    ("balance", ("balance",)),
    ("execute", ("execute",)),
    ("render", ("render",)),
    ("panel", ("panel",)),
    ("commands", ("commands",)),
    ("mgr", ("mgr",)),
    ("adapters", ("module", "cli", "__main__", "__init__")),
]
ADAPTERS = LAYERS[-1][1]
LAYER_OF: Dict[str, int] = {m: i for i, (_, mods) in enumerate(LAYERS) for m in mods}


def module_name(path: Path) -> str:
    """The top-level name within the package: 'crush' for crush/mapper.py."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imported(path: Path) -> List[str]:
    """The package's own modules `path` imports (top-level names)."""
    out: List[str] = []
    rel = path.relative_to(PACKAGE)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            # `from .x import` within the package; `from . import x` names the modules
            base = list(rel.parts[:-1])[:len(rel.parts) - node.level]
            parts = base + (node.module.split(".") if node.module else [])
            if parts:
                out.append(parts[0])
            else:
                out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pg_advisor"):
            out.append((node.module or "").split(".")[1])
    return out


def sources() -> List[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "tests" not in p.relative_to(PACKAGE).parts]


def test_every_module_has_a_layer() -> None:
    assert sorted({module_name(p) for p in sources()} - set(LAYER_OF)) == []


def test_only_the_adapters_are_top_level() -> None:
    # a new core module dropped beside module.py would join the adapters' layer unseen
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert top == sorted(ADAPTERS)
    for _, packages in LAYERS[:-1]:
        for pkg in packages:
            assert (PACKAGE / pkg / "__init__.py").is_file(), pkg


def test_imports_go_to_the_same_or_an_earlier_layer() -> None:
    wrong = []
    for p in sources():
        me = module_name(p)
        for other in imported(p):
            if other != me and LAYER_OF[other] > LAYER_OF[me]:
                wrong.append(f"{p.relative_to(PACKAGE)} ({LAYERS[LAYER_OF[me]][0]}) imports {other} "
                             f"({LAYERS[LAYER_OF[other]][0]})")
    assert wrong == []


def test_the_import_reader_sees_each_form_of_import() -> None:
    # `from .x import`, `from ..x import` (in crush/), `from . import x`: a reader that
    # missed one would pass the check above on nothing
    assert imported(PACKAGE / "model" / "snapshot.py") == ["model"] * 9
    assert set(imported(PACKAGE / "crush" / "mapper.py")) == {"model", "crush"}
    assert {"model", "mgr", "commands", "execute"} <= set(imported(PACKAGE / "module.py"))


def module_imports(path: Path, root: Path = PACKAGE) -> List[Path]:
    """The package's own files `path` imports, `if TYPE_CHECKING:` blocks included (a
    circle closed there is hidden from the interpreter, not from the reader)."""
    out: List[Path] = []
    here = path.relative_to(root).parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = list(here)[:len(here) - (node.level - 1)]
        elif (node.module or "").split(".")[0] == root.name:
            base = []
        else:
            continue
        parts = base + [p for p in (node.module or "").split(".") if p and p != root.name]
        for name in [a.name for a in node.names]:
            # `from .x import y`: y when x is a package holding a module y, else x's module
            for cand in (parts + [name], parts):
                f = root.joinpath(*cand)
                hit = f.with_suffix(".py") if f.with_suffix(".py").is_file() else \
                    f / "__init__.py" if (f / "__init__.py").is_file() else None
                if hit is not None:
                    out.append(hit)
                    break
    return [p for p in out if p != path]


def circles(root: Path = PACKAGE) -> List[List[str]]:
    """Each set of files that import one another round (Tarjan's strongly connected
    components of more than one file)."""
    files = [p for p in sorted(root.rglob("*.py")) if "tests" not in p.relative_to(root).parts]
    graph = {p: sorted(set(module_imports(p, root))) for p in files}
    index: Dict[Path, int] = {}
    low: Dict[Path, int] = {}
    stack: List[Path] = []
    on: Dict[Path, bool] = {}
    found: List[List[str]] = []

    def visit(v: Path) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on[v] = True
        for w in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif on.get(w):
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on[w] = False
                comp.append(str(w.relative_to(root)))
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for f in files:
        if f not in index:
            visit(f)
    return sorted(found)


def test_no_files_import_one_another_round() -> None:
    # a helper that takes its caller whole (a round the executor, a handler the module)
    # closes a circle through a TYPE_CHECKING import: a change to the caller can break it
    assert circles() == []


def test_the_circle_finder_sees_a_circle_closed_for_the_type_checker(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "core").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "rounds.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .runner import Runner\n")
    (pkg / "core" / "runner.py").write_text("from . import rounds\nfrom ..top import x\n")
    (pkg / "top.py").write_text("from pkg.core.runner import Runner\n")
    assert circles(pkg) == [["core/rounds.py", "core/runner.py", "top.py"]]
    # and the package's own forms: `from .model import health_checks as x`, a face, not the module
    got = module_imports(PACKAGE / "mgr" / "serve.py")
    assert PACKAGE / "mgr" / "face.py" in got and PACKAGE / "module.py" not in got
    assert PACKAGE / "model" / "health_checks.py" in got


def test_only_the_mgr_wing_knows_the_mgr() -> None:
    # ceph-mgr's API (mgr_module) is known to mgr/ and to module.py, its composition root;
    # and nothing imports module.py back (but the package's __init__, which ceph-mgr loads)
    knows = sorted(str(p.relative_to(PACKAGE)) for p in sources()
                   if any(isinstance(n, (ast.Import, ast.ImportFrom)) and "mgr_module" in ast.dump(n)
                          for n in ast.walk(ast.parse(p.read_text()))))
    assert knows and all(k == "module.py" or k.startswith("mgr/") for k in knows), knows
    assert [str(p.relative_to(PACKAGE)) for p in sources()
            if PACKAGE / "module.py" in module_imports(p)] == ["__init__.py"]
