"""The report of a read balance (balance/primaries.py): per pool its primaries' maximum
and read_balance score before and after, and the commands, as `read-balance` shows them."""
from typing import Any, Dict

from ..model.mon_commands import PG_UPMAP_PRIMARY
from ..model.snapshot import Snapshot
from .primaries import ReadPlan, allows_primaries


def command_text(cmd: Dict[str, Any]) -> str:
    """A mon command of the plan as an operator would type it."""
    if cmd["prefix"] == PG_UPMAP_PRIMARY:
        return f"ceph osd pg-upmap-primary {cmd['pgid']} {cmd['id']}"
    return f"ceph {cmd['prefix']} {cmd['pgid']}"


def read_report(snap: Snapshot, plan: ReadPlan) -> Dict[str, Any]:
    return {
        "allowed": allows_primaries(snap.require_min_compat_client),
        "require_min_compat_client": snap.require_min_compat_client or None,
        "pools": plan.pools,
        "changes": len(plan.changes),
        "cleanup": len(plan.cleanup),
        "commands": [command_text(c) for c in plan.commands()],
        "notes": plan.notes,
    }
