import json
import socket
from pathlib import Path
from typing import Any, Dict

import pytest

from pg_advisor import snapshot

FIXTURES = Path(__file__).parent / "fixtures"
CLUSTER6 = FIXTURES / "cluster6"
DUMP_FILES = {"osd_dump": "osd_dump.json", "crush": "crush_dump.json",
              "pg_dump": "pg_dump.json", "df": "df.json"}


def free_port() -> int:
    """A loopback port nothing listens on (the kernel's pick, released at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def read(name: str, where: Path = CLUSTER6) -> Any:
    return json.loads((where / name).read_text())


@pytest.fixture
def dumps() -> Dict[str, Any]:
    """The four dumps captured from a real 6-OSD cluster (see qa/capture_fixtures.sh)."""
    return {k: read(v) for k, v in DUMP_FILES.items()}


@pytest.fixture
def snap(dumps: Dict[str, Any]) -> snapshot.Snapshot:
    return snapshot.load(dumps["osd_dump"], dumps["crush"], dumps["pg_dump"], dumps["df"],
                         autoscale=read("autoscale_status.json"))
