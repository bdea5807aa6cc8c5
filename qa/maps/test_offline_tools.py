"""The offline CLI reads what Ceph's offline tools print, not only what `ceph` prints."""
import json
import subprocess
from pathlib import Path

from ..cluster import REPO


def test_osdmaptool_and_crushtool_dumps(tmp_path: Path) -> None:
    om, cr = tmp_path / "osdmap", tmp_path / "crush"
    subprocess.run(["osdmaptool", "--createsimple", "12", "--with-default-pool", str(om)],
                   check=True, capture_output=True)
    subprocess.run(["osdmaptool", str(om), "--export-crush", str(cr)], check=True,
                   capture_output=True)
    (tmp_path / "osd.json").write_text(subprocess.run(
        ["osdmaptool", str(om), "--dump", "json"], check=True, capture_output=True,
        text=True).stdout)
    (tmp_path / "crush.json").write_text(subprocess.run(
        ["crushtool", "-i", str(cr), "--dump"], check=True, capture_output=True, text=True).stdout)
    p = subprocess.run(["/usr/bin/python3", "-m", "pg_advisor",
                        "--osdmap", str(tmp_path / "osd.json"),
                        "--crush", str(tmp_path / "crush.json"), "status", "-f", "json"],
                       cwd=REPO / "src", capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    raw = json.loads((tmp_path / "osd.json").read_text())
    assert [(x["name"], x["pg_num"]) for x in r["pools"]] == [
        (q["pool_name"], q["pg_num"]) for q in raw["pools"]]
    assert r["pools"][0]["crush_rule_name"] == "replicated_rule"
