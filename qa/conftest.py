"""One real cluster per test session, started by qa/cluster/vstart.sh and stopped at the end."""
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

# the tests import the package from this checkout, as the mgr loads it from there
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from .cluster import Cluster  # noqa: E402

# The container image's test runs podman, which runs on the host only: qa/run-tests.sh runs it
# there (stage 1); inside the chroot (the integration run, `pytest qa`) it is not collected.
collect_ignore = ["container/test_image_host.py"] if Path("/etc/pg-advisor-tentacle").exists() else []


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


EVIL = "<img src=x onerror=alert(1)>"    # a pool name that is markup
PANEL_URL = "http://127.0.0.1:9285/"     # the panel at its default server_addr/server_port


@pytest.fixture
def evil_pool(cluster: Cluster) -> Iterator[Cluster]:
    """A pool whose name would run script if a page ever used it as markup."""
    with cluster.pool(EVIL, 8):
        yield cluster


# The files run in file-name order, whichever room holds them, but for test_expand_live.py,
# which adds two OSDs for good and so runs last, only for speed: the tests pass in any order
# (PG_ADVISOR_QA_ORDER=reverse runs them backwards; doc/testing.rst lists what that found).
LAST = ("test_expand_live.py",)


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    # stable: a file's tests keep their order
    def rank(item: pytest.Item) -> Tuple[int, str]:
        name = item.path.name
        return (LAST.index(name) + 1 if name in LAST else 0), name
    items.sort(key=rank)
    # the expansion test first, and how to check that no order dependence is back
    if os.environ.get("PG_ADVISOR_QA_ORDER") == "reverse":
        items.reverse()
