"""No function of the package (its tests aside) takes more than six parameters: past that, a
caller cannot tell one from another, and the parameters belong in a typed record of what
they are (balance/proposal.py's Aim and Limits). self and cls do not count; *args and
**kwargs count one each."""
import ast
from pathlib import Path
from typing import Dict, Iterator, Tuple

PACKAGE = Path(__file__).resolve().parents[1]
MAX_PARAMETERS = 6
Function = ast.FunctionDef | ast.AsyncFunctionDef


def parameters(fn: Function) -> int:
    a = fn.args
    named = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg not in ("self", "cls")]
    return len(named) + (a.vararg is not None) + (a.kwarg is not None)


def functions(tree: ast.AST, prefix: str = "") -> Iterator[Tuple[str, Function]]:
    """Every function with its qualified name (Class.method, outer.inner)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


def signatures() -> Dict[Tuple[str, str], int]:
    """(module, qualified name) -> parameters, for every function of the package."""
    out: Dict[Tuple[str, str], int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("tests/"):
            continue
        for name, fn in functions(ast.parse(path.read_text(), str(path))):
            out[(rel, name)] = parameters(fn)
    return out


def test_no_function_takes_more_than_six_parameters() -> None:
    seen = signatures()
    over = {k: n for k, n in seen.items() if n > MAX_PARAMETERS}
    # (the scan reads the package: the CRUSH mapper's chooses among what it counts)
    assert len(seen) > 500 and ("crush/mapper.py", "_choose_firstn") in seen
    assert not over, f"over {MAX_PARAMETERS} parameters (group them in a typed record): {over}"


def test_the_count() -> None:
    fn = ast.parse("def f(self, a, b=1, *c, d, **e): pass").body[0]
    assert isinstance(fn, ast.FunctionDef) and parameters(fn) == 5
