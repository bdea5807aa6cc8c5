"""The layers of doc/design.rst, checked on the imports: data flows one way. Each layer is a
subpackage (the adapters, which talk to the mgr and the shell, are the package's top-level
modules); a module may import from its own layer and the ones before it, never from a
later one (the core never reaches the mgr adapter or the views). This table, not prose in
docstrings, is where the order is said.

model/ holds the PG counts (distribution.py) as well as the snapshot: sizing needs them and
the status report (analysis/) needs sizing, so sizing sits between the two."""
import ast
from pathlib import Path
from typing import Dict, List, Tuple

PACKAGE = Path(__file__).resolve().parents[1]

LAYERS: List[Tuple[str, Tuple[str, ...]]] = [
    ("model", ("model",)),
    ("crush", ("crush",)),
    ("sizing", ("sizing",)),
    ("analysis", ("analysis",)),
    ("balance", ("balance",)),
    ("execute", ("execute",)),
    ("render", ("render",)),
    ("panel", ("panel",)),
    ("commands", ("commands",)),
    ("adapters", ("module", "mgr_commands", "mgr_serve", "mgr_read", "mgr_panel", "mgr_progress",
                  "mgr_compat", "cli", "__main__", "__init__")),
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
    assert {"model", "render", "commands", "execute"} <= set(imported(PACKAGE / "module.py"))
