"""Each OSD's own settings through the module: the mon's config database read by the mgr
(model/osd_config.py resolves it), its values in the status's per-OSD memory budgets."""
import json
from typing import Any, Dict, List, Tuple

from pg_advisor.module import Module


def test_each_osd_s_own_memory_target_is_read_from_the_config_dump(module: Module,
                                                                   monkeypatch: Any) -> None:
    # cephadm's autotune sets osd_memory_target per host; one OSD set by hand; the mon's
    # config database is asked once a minute at most, not at every read
    asked: List[Dict[str, Any]] = []
    dump = [{"section": "osd", "name": "osd_memory_target", "value": "2147483648",
             "mask": "host:host1", "location_type": "host", "location_value": "host1"},
            {"section": "osd.0", "name": "osd_memory_target", "value": "3G"},
            {"section": "mgr", "name": "osd_memory_target", "value": "1"}]

    def mon_command(c: Dict[str, Any], inbuf: Any = None) -> Tuple[int, str, str]:
        asked.append(c)
        return 0, json.dumps(dump), ""
    monkeypatch.setattr(module, "mon_command", mon_command)
    snap = module.reader.take_snapshot(fresh=True)
    want = [3 << 30 if o == 0 else 2 << 30 if snap.osds.host[o] == "host1" else 4 << 30
            for o in range(snap.osds.count)]
    assert snap.osd_config["osd_memory_target"].tolist() == want and (2 << 30) in want
    module.reader.take_snapshot(fresh=True)
    assert [c["prefix"] for c in asked] == ["config dump"]
    # the status's per-OSD budgets follow: a quarter of each OSD's own target
    code, out, _ = module._handle_command(None, {"prefix": "pg-advisor status", "format": "json"})
    budgets = {o["id"]: o["pg_memory_budget"] for o in json.loads(out)["osds"]}
    assert code == 0 and budgets == {o: int(0.25 * w) for o, w in enumerate(want)}
