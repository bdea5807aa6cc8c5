"""CMakeLists.txt installs the module where ceph-mgr looks for modules."""
import subprocess
from pathlib import Path

from .cluster import REPO


def test_cmake_install_into_a_prefix(tmp_path: Path) -> None:
    build, prefix = tmp_path / "build", tmp_path / "prefix"
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(build), f"-DCMAKE_INSTALL_PREFIX={prefix}"],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--install", str(build)], check=True, capture_output=True)
    mod = prefix / "share" / "ceph" / "mgr" / "pg_advisor"
    src = REPO / "src" / "pg_advisor"
    want = {p.name for p in src.glob("*.py")}
    assert want and {p.name for p in mod.glob("*.py")} == want
    assert not (mod / "tests").exists() and not list(mod.rglob("__pycache__"))
