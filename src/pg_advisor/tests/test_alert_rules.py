"""The alert rules (monitoring/pg_advisor_alerts.yml) in Ceph's style: every alert has the
labels and annotations ceph-mixin's have, and names only series /metrics serves (what each
alert does is tested by promtool: monitoring/tests/test_alerts.yml, tox env promtool)."""
import re
from pathlib import Path
from typing import Any, Dict, List

import yaml

from pg_advisor.panel.metrics import FAMILIES

MONITORING = Path(__file__).resolve().parents[3] / "monitoring"


def rules() -> List[Dict[str, Any]]:
    doc = yaml.safe_load((MONITORING / "pg_advisor_alerts.yml").read_text())
    return [r for g in doc["groups"] for r in g["rules"]]


def test_every_alert_carries_what_cephs_alerts_carry() -> None:
    rs = rules()
    assert len(rs) == 6
    for r in rs:
        assert re.fullmatch(r"PgAdvisor[A-Za-z]+", r["alert"]), r["alert"]
        assert r["labels"]["severity"] in ("warning", "critical") and r["labels"]["type"] == "ceph_default"
        assert set(r["annotations"]) == {"summary", "description", "documentation"}, r["alert"]
        doc = r["annotations"]["documentation"].split()[-1]
        assert (MONITORING.parent / doc).is_file(), doc
        assert re.fullmatch(r"\d+[mh]", r["for"]), r["alert"]


def test_the_alerts_use_only_series_the_module_serves() -> None:
    for r in rules():
        names = set(re.findall(r"\bpg_advisor_[a-z_]+", r["expr"]))
        assert names and names <= set(FAMILIES), (r["alert"], names - set(FAMILIES))


def test_every_alert_has_promtool_cases() -> None:
    tests = yaml.safe_load((MONITORING / "tests" / "test_alerts.yml").read_text())["tests"]
    fired = {a["alertname"] for t in tests for a in t["alert_rule_test"] if a["exp_alerts"]}
    silent = {a["alertname"] for t in tests for a in t["alert_rule_test"] if not a["exp_alerts"]}
    names = {r["alert"] for r in rules()}
    assert fired == names and silent == names
