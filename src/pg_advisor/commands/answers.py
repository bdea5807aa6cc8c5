"""The reports of the commands that only read: the same function answers `ceph pg-advisor X`
in the mgr and `python3 -m pg_advisor ... X` offline, from a snapshot and the options."""
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from ..analysis.growth import NewHost, growth_report
from ..analysis.plan import plan_report
from ..analysis.status import status_of, with_ours
from ..analysis.whatif import Change, pg_map, simulate
from ..balance.drain import drain_report
from ..balance.primaries import plan_primaries
from ..balance.read_report import read_report
from ..balance.remapped import pin_remapped, pins_report
from ..balance.budget import Guards, Limits
from ..balance.proposal import Aim, balance_report, eval_report
from ..balance.reweighted import reweight_pins, reweight_report
from ..model.errors import AdvisorError
from ..model.misplaced import MisplacedBudget, misplaced_max
from ..model.options import Options
from ..model.snapshot import Snapshot
from .bounds import MAX_BALANCE_ITEMS, MAX_READ_CHANGES

Report = Mapping[str, Any]     # a command's report: JSON-able, read only
Values = Dict[str, Any]     # a command's arguments, as table.check gives them
MIB = 1 << 20


@dataclass(frozen=True)
class Inputs:
    """What one command reads: the cluster as it is, the module's options, whether sizing
    assumes a balanced cluster, and the cluster's target_max_misplaced_ratio."""
    snap: Snapshot
    opts: Options
    balanced: bool
    cluster_ratio: float
    # how many of the map's item lists are pg_advisor's (the mgr's record; offline: unknown)
    owned: Optional[Callable[[Mapping[str, Sequence[Tuple[int, int]]]], int]] = None


def answer_status(i: Inputs, v: Values) -> Report:
    report = status_of(i.snap, v["pool"], i.opts, i.balanced)
    return with_ours(report, i.owned(i.snap.pg_upmap_items)) if i.owned is not None else report


def answer_eval(i: Inputs, v: Values) -> Report:
    return eval_report(i.snap, [v["pool"]] if v["pool"] else None)


def answer_plan(i: Inputs, v: Values) -> Report:
    return plan_report(i.snap, i.opts, i.balanced)


def answer_map(i: Inputs, v: Values) -> Report:
    """Every PG's up set ("pgs", the shape of the mgr's map_pool_pgs_up) beside the pools
    set aside and why ("not_mapped"); refused (exit 2) when pools were set aside and none
    is answered."""
    pgs = pg_map(i.snap, v["pool"])
    aside = [] if v["pool"] else [{"pool": p.name, "pool_id": p.id, "reason": why}
                                  for p, why in i.snap.unmapped]
    if aside and not i.snap.pools:
        raise AdvisorError.invalid("no pool mapped: " + "; ".join(
            f"pool '{a['pool']}': {a['reason']}" for a in aside))
    return {"pgs": pgs, "not_mapped": aside}


def answer_simulate(i: Inputs, v: Values) -> Report:
    if v["add_host"] is not None:
        rate = v["backfill_mib_s"] * MIB if v["backfill_mib_s"] is not None else None
        host = NewHost(v["add_host"], v["osds"], v["weight"], v["device_class"], v["root"] or "default")
        return growth_report(i.snap, host, misplaced_max(i.opts, i.cluster_ratio), rate)
    reweight = {v["reweight"]: v["weight"]} if v["reweight"] is not None else {}
    return simulate(i.snap, Change(pool=v["pool"], pg_num=v["pg_num"], pgp_num=v["pgp_num"],
                                   out=tuple(v["out_osd"] or ()), reweight=reweight))


# offline, the writing commands answer with their dry run
def answer_balance(i: Inputs, v: Values) -> Report:
    aim = Aim([v["pool"]] if v["pool"] else None, v["mode"] or i.opts.balance_mode, i.opts.balance_min_gain)
    limits = Limits(v["max_items"] or MAX_BALANCE_ITEMS,
                    MisplacedBudget.from_options(i.snap, i.opts, i.cluster_ratio), guards=Guards.of(i.opts))
    report = balance_report(i.snap, aim, limits)
    report["dry_run"] = True
    return report


def answer_read_balance(i: Inputs, v: Values) -> Report:
    plan = plan_primaries(i.snap, [v["pool"]] if v["pool"] else None,
                          max_changes=v["max_changes"] or MAX_READ_CHANGES)
    return dict(read_report(i.snap, plan), dry_run=True)


def answer_pin_remapped(i: Inputs, v: Values) -> Report:
    return dict(pins_report(i.snap, pin_remapped(i.snap)), dry_run=True)


def answer_crush_reweight(i: Inputs, v: Values) -> Report:
    weights = {int(o): float(v["weight"]) for o in v["osd"]}
    return dict(reweight_report(i.snap, reweight_pins(i.snap, weights)), dry_run=True)


def answer_drain(i: Inputs, v: Values) -> Report:
    return dict(drain_report(i.snap, v["osd_or_bucket"], v["and_balance"], Guards.of(i.opts)),
                dry_run=True)
