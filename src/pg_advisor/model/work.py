"""Work this process has done, counted where the costly loops are: CRUSH's draws and
replicas (crush/mapper.py) and the balancer's units (balance/balancer.py: its states and
legality checks). What tests bound instead of seconds, which a loaded machine stretches;
the offline CLI writes it to $PG_ADVISOR_WORK_FILE when that is set."""
import collections
from typing import Dict

TALLY: "collections.Counter[str]" = collections.Counter()


def count(kind: str, n: int) -> None:
    TALLY[kind] += n


def tally() -> Dict[str, int]:
    return dict(TALLY)
