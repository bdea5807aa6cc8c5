"""Every mon command pg_advisor sends, built here: one small function a command, each
returning the dict `MgrModule.mon_command` takes. The prefixes are named once, so code that
reads a command back (which answer belongs to a pg-temp, which to an item) compares names,
not strings spelled again."""
from typing import Any, Dict, Iterable, List, Sequence, Tuple

Command = Dict[str, Any]

POOL_SET = "osd pool set"
PG_UPMAP_ITEMS = "osd pg-upmap-items"
RM_PG_UPMAP_ITEMS = "osd rm-pg-upmap-items"
PG_UPMAP = "osd pg-upmap"
RM_PG_UPMAP = "osd rm-pg-upmap"
PG_UPMAP_PRIMARY = "osd pg-upmap-primary"
RM_PG_UPMAP_PRIMARY = "osd rm-pg-upmap-primary"
PG_TEMP = "osd pg-temp"
CRUSH_REWEIGHT = "osd crush reweight"


def pool_set(pool: str, var: str, val: int) -> Command:
    """`ceph osd pool set POOL VAR VAL` (pg_num, pgp_num, pgp_num_actual)."""
    return {"prefix": POOL_SET, "pool": pool, "var": var, "val": str(val)}


def upmap_items(pgid: str, pairs: Sequence[Tuple[int, int]]) -> Command:
    """A PG's pg-upmap-items, its (from, to) pairs in order; no pairs: their removal."""
    if not pairs:
        return {"prefix": RM_PG_UPMAP_ITEMS, "pgid": pgid}
    return {"prefix": PG_UPMAP_ITEMS, "pgid": pgid, "id": [int(x) for p in pairs for x in p]}


def items_commands(items: Dict[str, List[Tuple[int, int]]]) -> List[Command]:
    """upmap_items() for each PG of `items`, in their order."""
    return [upmap_items(pgid, pairs) for pgid, pairs in items.items()]


def upmap(pgid: str, osds: Iterable[int]) -> Command:
    """A full pg-upmap: the PG's whole up set."""
    return {"prefix": PG_UPMAP, "pgid": pgid, "id": [int(o) for o in osds]}


def rm_upmap(pgid: str) -> Command:
    return {"prefix": RM_PG_UPMAP, "pgid": pgid}


def upmap_primary(pgid: str, osd: int) -> Command:
    return {"prefix": PG_UPMAP_PRIMARY, "pgid": pgid, "id": int(osd)}


def rm_upmap_primary(pgid: str) -> Command:
    return {"prefix": RM_PG_UPMAP_PRIMARY, "pgid": pgid}


def pg_temp(pgid: str, osds: Iterable[int]) -> Command:
    return {"prefix": PG_TEMP, "pgid": pgid, "id": [int(o) for o in osds]}


def crush_reweight(osd: int, weight: float) -> Command:
    return {"prefix": CRUSH_REWEIGHT, "name": f"osd.{osd}", "weight": float(weight)}


# -- reads (the module's) --------------------------------------------------------------------

def pg_dump_brief() -> Command:
    """`ceph pg dump pgs_brief`: each PG's state, up and acting sets (model/pg_brief.py)."""
    return {"prefix": "pg dump", "dumpcontents": ["pgs_brief"], "format": "json"}


def config_dump() -> Command:
    """`ceph config dump`: the mon's config database, whose per-OSD, per-host and per-class
    entries (cephadm's memory autotune among them) give each OSD its settings."""
    return {"prefix": "config dump", "format": "json"}


def getcrushmap() -> Command:
    """`ceph osd getcrushmap`: the binary CRUSH map (sent through librados: mgr/crush_bin.py)."""
    return {"prefix": "osd getcrushmap"}


def osd_stat() -> Command:
    """`ceph osd stat`: the mon's OSDMap epoch now."""
    return {"prefix": "osd stat", "format": "json"}


def osd_tree_at(epoch: int) -> Command:
    """`ceph osd tree EPOCH`: the CRUSH tree of a past map epoch (the OSDs' CRUSH weights)."""
    return {"prefix": "osd tree", "epoch": int(epoch), "format": "json"}


def osd_dump_at(epoch: int) -> Command:
    """`ceph osd dump EPOCH`: the OSDMap of a past epoch (its upmap entries)."""
    return {"prefix": "osd dump", "epoch": int(epoch), "format": "json"}
