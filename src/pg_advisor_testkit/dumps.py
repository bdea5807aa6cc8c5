"""The captured clusters' dumps in fixtures/: cluster6 (a real 6-OSD cluster,
qa/cluster/capture_fixtures.sh), msr (Tentacle's tools on an msr rule, qa/maps/msr_maps.py)
and the clusters a run found a bug on (gzipped, read_case)."""
import gzip
import json
from pathlib import Path
from typing import Any, Dict

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CLUSTER6 = FIXTURES / "cluster6"
DUMP_FILES = {"osd_dump": "osd_dump.json", "crush": "crush_dump.json",
              "pg_dump": "pg_dump.json", "df": "df.json"}


def read(name: str, where: Path = CLUSTER6) -> Any:
    return json.loads((where / name).read_text())


def read_case(name: str) -> Dict[str, Any]:
    """The four dumps of a cluster a run found a bug on, kept in fixtures/NAME as gzipped
    JSON (PG stats cut to the fields the snapshot reads)."""
    return {k: json.loads(gzip.decompress((FIXTURES / name / f"{f}.gz").read_bytes()))
            for k, f in DUMP_FILES.items()}
