"""The layers of DESIGN.md, checked on the imports: data flows one way. Each module of the
package is in one layer; it may import from its own layer and the ones before it, never
from a later one (the core never reaches the mgr adapter or the views). This table, not
prose in docstrings, is where a module's layer is said."""
import ast
from pathlib import Path
from typing import Dict, List, Tuple

PACKAGE = Path(__file__).resolve().parents[1]

LAYERS: List[Tuple[str, Tuple[str, ...]]] = [
    ("model", ("constants", "errors", "options", "memory", "render", "snapshot")),
    ("crush", ("crush",)),
    ("analysis", ("distribution", "legality", "limits", "gates", "priming", "share", "whatif", "growth",
                  "sizing", "plan", "status")),
    ("balance", ("balance", "balance_bytes", "balance_report", "remapped", "drain")),
    ("execute", ("steps", "plan_state", "plan_store", "execute", "driver")),
    ("views", ("balance_text", "execute_text", "expand_text", "plan_text", "status_text", "whatif_text",
               "views", "health", "panel")),
    ("adapters", ("http_server", "cli", "module", "__main__", "__init__")),
]
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
    assert {"errors", "constants"} <= set(imported(PACKAGE / "snapshot.py"))
    assert {"constants", "errors", "crush"} <= set(imported(PACKAGE / "crush" / "mapper.py"))
    assert {"options", "snapshot", "views"} <= set(imported(PACKAGE / "module.py"))
