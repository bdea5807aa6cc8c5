"""CMakeLists.txt installs the module where ceph-mgr looks for modules."""
import subprocess
from pathlib import Path

from . import REPO


def test_cmake_install_into_a_prefix(tmp_path: Path) -> None:
    build, prefix = tmp_path / "build", tmp_path / "prefix"
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(build), f"-DCMAKE_INSTALL_PREFIX={prefix}"],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--install", str(build)], check=True, capture_output=True)
    mod = prefix / "share" / "ceph" / "mgr" / "pg_advisor"
    src = REPO / "src" / "pg_advisor"
    # every module file, subpackages (crush/) and the panel's page included, nothing of the tests
    want = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.suffix in (".py", ".html")
            and "tests" not in p.relative_to(src).parts}
    got = {p.relative_to(mod).as_posix() for p in mod.rglob("*") if p.suffix in (".py", ".html")}
    assert any("/" in w for w in want) and "panel/panel.html" in want and got == want, sorted(got ^ want)
    assert not (mod / "tests").exists() and not list(mod.rglob("__pycache__"))
    # the tests' shared helpers and dumps stay in the checkout
    assert not list(prefix.rglob("pg_advisor_testkit"))


def test_the_testing_doc_names_every_integration_test_file() -> None:
    doc = (REPO / "doc" / "testing.rst").read_text()
    files = sorted(p.name for p in (REPO / "qa").rglob("test_*.py"))
    assert files and [f for f in files if f"``{f}``" not in doc] == []
