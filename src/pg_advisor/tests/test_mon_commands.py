"""Every mon command is built in one module (model/mon_commands.py) and every health check in
one (model/health_checks.py): the rest of the code calls them, and spells neither a
command's prefix nor a check's name."""
import re
from pathlib import Path
from typing import List

from pg_advisor.model import health_checks as hc
from pg_advisor.model import mon_commands as mc

PACKAGE = Path(__file__).resolve().parents[1]


def _sources() -> List[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "tests" not in p.relative_to(PACKAGE).parts]


def test_no_command_is_built_outside_its_module() -> None:
    built = re.compile(r"""["']prefix["']\s*:""")
    where = [str(p.relative_to(PACKAGE)) for p in _sources() if built.search(p.read_text())]
    assert where == ["model/mon_commands.py"]


def test_no_health_check_is_named_outside_its_module() -> None:
    names = set(re.findall(r"PG_ADVISOR_[A-Z_]+", (PACKAGE / "model" / "health_checks.py").read_text()))
    assert len(names) == 16
    named = re.compile("[\"']({})[\"']".format("|".join(sorted(names))))
    where = [str(p.relative_to(PACKAGE)) for p in _sources() if named.search(p.read_text())]
    assert where == ["model/health_checks.py"]


def test_the_commands_are_what_the_mon_takes() -> None:
    assert mc.pool_set("rbd", "pgp_num", 64) == {"prefix": "osd pool set", "pool": "rbd", "var": "pgp_num",
                                                 "val": "64"}
    assert mc.upmap_items("1.a", [(1, 2), (3, 4)]) == {"prefix": "osd pg-upmap-items", "pgid": "1.a",
                                                       "id": [1, 2, 3, 4]}
    assert mc.upmap_items("1.a", []) == {"prefix": "osd rm-pg-upmap-items", "pgid": "1.a"}
    both = [mc.upmap_items("1.a", []), mc.upmap_items("1.b", [(0, 5)])]
    assert mc.items_commands({"1.a": [], "1.b": [(0, 5)]}) == both
    assert mc.upmap("2.0", [3, 1, 2]) == {"prefix": "osd pg-upmap", "pgid": "2.0", "id": [3, 1, 2]}
    assert mc.rm_upmap("2.0") == {"prefix": "osd rm-pg-upmap", "pgid": "2.0"}
    assert mc.upmap_primary("1.f", 4) == {"prefix": "osd pg-upmap-primary", "pgid": "1.f", "id": 4}
    assert mc.rm_upmap_primary("1.f") == {"prefix": "osd rm-pg-upmap-primary", "pgid": "1.f"}
    assert mc.pg_temp("1.0", [2, 0]) == {"prefix": "osd pg-temp", "pgid": "1.0", "id": [2, 0]}
    assert mc.crush_reweight(7, 0.5) == {"prefix": "osd crush reweight", "name": "osd.7", "weight": 0.5}
    assert mc.pg_dump_brief()["dumpcontents"] == ["pgs_brief"] and mc.osd_stat()["prefix"] == "osd stat"


def test_a_check_counts_its_detail_unless_told() -> None:
    assert hc.check("s", ["a", "b"]) == {"severity": "warning", "summary": "s", "count": 2,
                                         "detail": ["a", "b"]}
    assert hc.upmap_mismatch("p1", 7, ["x"])["PG_ADVISOR_UPMAP_MISMATCH"]["count"] == 7
    assert hc.option_invalid(["mode: 'x'"]) == {"PG_ADVISOR_OPTION_INVALID": {
        "severity": "warning", "count": 1, "detail": ["mode: 'x'"],
        "summary": "pg_advisor ignores 1 option value(s): mode: 'x'"}}
    assert hc.status_failed("boom")["PG_ADVISOR_STATUS_FAILED"]["summary"] == \
        "pg_advisor cannot compute its status: boom"
