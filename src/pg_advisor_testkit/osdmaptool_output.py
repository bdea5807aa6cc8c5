"""Ceph's reference mapping: osdmaptool run on a map file, and its
`--test-map-pgs-dump-all` output parsed (every PG's raw, up and acting sets and primaries)."""
import re
import subprocess
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple, Union

LINE = re.compile(r"^(\d+\.[0-9a-f]+) raw \(\[([^\]]*)\], p(-?\d+)\) up \(\[([^\]]*)\], p(-?\d+)\) "
                  r"acting \(\[([^\]]*)\], p(-?\d+)\)", re.M)


class PgMapping(NamedTuple):
    raw: Tuple[int, ...]        # CRUSH's set, before upmaps and down OSDs
    raw_primary: int
    up: Tuple[int, ...]
    up_primary: int
    acting: Tuple[int, ...]     # pg_temp applied
    primary: int                # the acting primary (primary_temp applied)


def _osds(text: str) -> Tuple[int, ...]:
    return tuple(int(o) for o in text.split(",") if o)


def parse(text: str) -> Dict[str, PgMapping]:
    """pgid -> its mapping, for every PG line of the output."""
    return {m.group(1): PgMapping(_osds(m.group(2)), int(m.group(3)), _osds(m.group(4)), int(m.group(5)),
                                  _osds(m.group(6)), int(m.group(7)))
            for m in LINE.finditer(text)}


def parse_dump_all(text: str) -> Dict[str, Tuple[List[int], int]]:
    """pgid -> (up set, up primary)."""
    return {pg: (list(m.up), m.up_primary) for pg, m in parse(text).items()}


def run(*args: str, timeout: float = 900, env: Optional[Dict[str, str]] = None) -> str:
    """A tool's stdout; RuntimeError (with its stderr's tail) when it fails."""
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({p.returncode}): {p.stderr[-2000:]}")
    return p.stdout


def osdmaptool(osdmap: Union[str, Path], *args: str) -> str:
    return run("osdmaptool", str(osdmap), *args, timeout=300)


def dump_all(osdmap: Union[str, Path], *args: str) -> Dict[str, PgMapping]:
    """Every PG of the map file (`args`: e.g. --pool ID) as osdmaptool maps it."""
    return parse(osdmaptool(osdmap, *args, "--test-map-pgs-dump-all"))


def of_epoch(ceph: Callable[..., object], epoch: int, path: Path, *args: str) -> str:
    """osdmaptool's output (`args`) on a cluster's map `epoch`, which `ceph("osd", "getmap",
    ...)` writes to `path` for the call."""
    ceph("osd", "getmap", str(epoch), "-o", str(path))
    try:
        return osdmaptool(path, *args)
    finally:
        path.unlink()
