"""Parsing Ceph's reference mapping: `osdmaptool MAP --test-map-pgs-dump-all` output."""
import re
from typing import Dict, List, Tuple

UP_RE = re.compile(r"^(\d+\.[0-9a-f]+) raw \(\[[^\]]*\], p-?\d+\) up \(\[([^\]]*)\], p(-?\d+)\)")


def parse_dump_all(text: str) -> Dict[str, Tuple[List[int], int]]:
    """pgid -> (up set, up primary)."""
    ref = {}
    for line in text.splitlines():
        m = UP_RE.match(line)
        if m:
            ref[m.group(1)] = ([int(v) for v in m.group(2).split(",") if v], int(m.group(3)))
    return ref
