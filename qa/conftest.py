"""One real cluster per test session, started by qa/vstart.sh and stopped at the end."""
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator, List

import pytest

# the tests import the package from this checkout, as the mgr loads it from there
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from .cluster import Cluster  # noqa: E402


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
    cluster.ceph("osd", "pool", "create", EVIL, "8", "8")
    yield cluster
    cluster.ceph("osd", "pool", "rm", EVIL, EVIL, "--yes-i-really-really-mean-it")
    cluster.wait_clean()


# The order the tests have run in for many CI runs: test_sizing_live.py first, the files
# that restart daemons, churn pools or add OSDs last. Known order dependences:
# - test_sizing_live.py compares each OSD's PG memory with the model, which reads low for
#   PGs split since their last writes (each child gets all of its parent's dups,
#   pg_log_t::split_out_child, while the model gives it its share of the writes): run
#   after the other files' splits it read 22-32 % low on every OSD.
# - Two reverse runs (PG_ADVISOR_QA_ORDER=reverse) passed everything else, but a forward
#   run with test_execute_live.py before test_vstart.py failed once in each: the
#   start-twice check found an old daemon pid still answering kill -0 (the OSD that
#   test_execute_live.py stops and restarts by hand), and the pinned split saw 15 of 16
#   pins at once. Not yet understood, so those files keep their place after test_vstart.py.
# test_expand_live.py adds two OSDs for good: last.
FIRST = ("test_sizing_live.py",)
LAST = ("test_execute_live.py", "test_hardening_live.py", "test_panel_browser.py", "test_panel_live.py",
        "test_expand_live.py")


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    # stable: the rest keep their order
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return -1 if name in FIRST else LAST.index(name) + 1 if name in LAST else 0
    items.sort(key=rank)
    # PG_ADVISOR_QA_ORDER=reverse runs every test in the opposite order (the expansion test
    # first, the memory check last): how the order dependence above was found, and how to
    # check that it is gone
    if os.environ.get("PG_ADVISOR_QA_ORDER") == "reverse":
        items.reverse()
