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
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

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
    assert imported(PACKAGE / "model" / "snapshot.py") == ["model"] * 10
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


# -- the structure's figures: rooms, arrows, floors ------------------------------------------------

def room_of(path: Path, root: Path = PACKAGE) -> Optional[str]:
    """A file's room: its subpackage, or the top-level module itself (None: the package's
    __init__ and __main__, which only start it, and the tests)."""
    parts = path.relative_to(root).parts
    if parts[0] == "tests" or parts[0] in ("__init__.py", "__main__.py"):
        return None
    return parts[0].removesuffix(".py")


def room_arrows(root: Path = PACKAGE) -> Set[Tuple[str, str]]:
    """Each room that imports from another (TYPE_CHECKING imports included), once."""
    out: Set[Tuple[str, str]] = set()
    for f in root.rglob("*.py"):
        a = room_of(f, root)
        if a is None:
            continue
        for g in module_imports(f, root):
            b = room_of(g, root)
            if b is not None and b != a:
                out.add((a, b))
    return out


def _reach(arrows: Set[Tuple[str, str]]) -> Dict[str, Set[str]]:
    """Each room -> the rooms its imports lead to, directly or not."""
    rooms = {r for a in arrows for r in a}
    reach = {a: {b for x, b in arrows if x == a} for a in rooms}
    changed = True
    while changed:
        changed = False
        for a in rooms:
            more = set().union(*(reach[b] for b in reach[a])) - reach[a]
            if more:
                reach[a] |= more
                changed = True
    return reach


def _circle(reach: Dict[str, Set[str]]) -> Dict[str, FrozenSet[str]]:
    """Each room -> the rooms it imports round with (itself alone if none)."""
    return {a: frozenset({a} | {b for b in reach[a] if a in reach[b]}) for a in reach}


def floors(arrows: Set[Tuple[str, str]]) -> int:
    """Rooms on the longest chain of imports (rooms that import one another round count
    as one)."""
    circle = _circle(_reach(arrows))
    below: Dict[FrozenSet[str], Set[FrozenSet[str]]] = {c: set() for c in circle.values()}
    for a, b in arrows:
        if circle[a] != circle[b]:
            below[circle[a]].add(circle[b])
    memo: Dict[FrozenSet[str], int] = {}

    def height(c: FrozenSet[str]) -> int:
        if c not in memo:
            memo[c] = 1 + max((height(b) for b in below[c]), default=0)
        return memo[c]
    return max((height(c) for c in below), default=0)


def structure(root: Path = PACKAGE) -> Dict[str, Any]:
    """The figures the issues give of the package's structure, TYPE_CHECKING imports
    included; upward arrows against the LAYERS table of `root`'s own test_layers.py."""
    tree = ast.parse((root / "tests" / "test_layers.py").read_text())
    table = ast.literal_eval(next(n.value for n in tree.body if isinstance(n, ast.AnnAssign)
                                  and isinstance(n.target, ast.Name) and n.target.id == "LAYERS"
                                  and n.value is not None))
    layer = {m: i for i, (_, mods) in enumerate(table) for m in mods}
    arrows = room_arrows(root)
    rooms = {room_of(f, root) for f in root.rglob("*.py")} - {None}
    # an arrow up: to a later layer, or back to a room that imports this one (rooms that
    # import one another round: of a circle's arrows, those beyond the fewest that join it)
    circle = _circle(_reach(arrows))
    circles_of_rooms = {c for c in circle.values() if len(c) > 1}
    back = sum(sum(1 for a, b in arrows if a in c and b in c) - (len(c) - 1) for c in circles_of_rooms)
    return {"rooms": len(rooms), "arrows": len(arrows), "floors": floors(arrows),
            "upward arrows": back + sum(1 for a, b in arrows if layer.get(b, -1) > layer.get(a, -1)),
            "circles of rooms": len(circles_of_rooms), "circles of files": len(circles(root))}


def test_the_structure_has_no_upward_arrow_and_its_figures_add_up() -> None:
    s = structure()
    assert s["upward arrows"] == 0 and s["circles of files"] == 0 and s["circles of rooms"] == 0
    assert s["rooms"] == len(LAYERS) - 1 + len(ADAPTERS) - 2      # __init__ and __main__ aside
    assert 2 <= s["floors"] <= s["rooms"] and s["arrows"] >= s["rooms"] - 1


def test_the_floors_count_the_longest_chain() -> None:
    assert floors({("a", "b"), ("b", "c"), ("a", "c")}) == 3
    assert floors({("a", "b"), ("b", "a"), ("b", "c")}) == 2     # a circle counts as one floor
    assert floors(set()) == 0


if __name__ == "__main__":      # python3 src/pg_advisor/tests/test_layers.py [PACKAGE_DIR]
    import sys
    print(structure(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else PACKAGE))
