"""One real cluster per test session, started by qa/vstart.sh and stopped at the end."""
import os
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from .cluster import Cluster


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    directory = Path(os.environ.get("PG_ADVISOR_CLUSTER_DIR")
                     or tempfile.mkdtemp(prefix="pg-advisor-qa-"))
    c = Cluster(directory)
    c.vstart("start")
    try:
        yield c
    finally:
        if os.environ.get("PG_ADVISOR_KEEP_CLUSTER") != "1":
            c.vstart("stop")
