"""Every health check pg_advisor raises (what `ceph health detail` shows for it), built here:
one function a check, each returning {name: check} in the form `set_health_checks` takes,
so that callers merge them with `dict.update`. The sizing checks (analysis/health.py picks
them from the status report), the plan's (execute/driver.py) and the module's own all
come from here: low in the layers, for each of them."""
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

Check = Dict[str, Any]
Checks = Dict[str, Check]
MIB = 1 << 20


def check(summary: str, detail: Sequence[Any], count: Optional[int] = None,
          severity: str = "warning") -> Check:
    """One check: `count` defaults to the lines of detail."""
    return {"severity": severity, "summary": summary,
            "count": len(detail) if count is None else count, "detail": list(detail)}


def merge(into: Checks, more: Checks) -> None:
    """Add `more` to `into` (several plans may raise one check): the first summary stays,
    the details and counts add up."""
    for name, c in more.items():
        had = into.get(name)
        if had is None:
            into[name] = c
            continue
        into[name] = dict(had, count=had["count"] + c["count"], detail=had["detail"] + c["detail"],
                          summary=f"{had['summary']} (and more: see the detail)"
                          if not had["summary"].endswith("(and more: see the detail)") else had["summary"])


# -- sizing (from the status report) ---------------------------------------------------------

def too_few_pgs(recommendations: List[str]) -> Checks:
    return {"PG_ADVISOR_TOO_FEW_PGS": check(
        f"{len(recommendations)} pool(s) have fewer PGs than pg_advisor recommends", recommendations)}


def too_many_pgs(recommendations: List[str]) -> Checks:
    return {"PG_ADVISOR_TOO_MANY_PGS": check(
        f"{len(recommendations)} pool(s) have more PGs than pg_advisor recommends", recommendations)}


def pool_not_mapped(lines: List[str]) -> Checks:
    return {"PG_ADVISOR_POOL_NOT_MAPPED": check(
        f"{len(lines)} pool(s) pg_advisor cannot map: no sizing, balance or what-if for them", lines)}


def pg_per_osd_limit(limit: int, mon_max: int, crowded: Dict[int, int]) -> Checks:
    """`crowded`: OSD id -> the PGs it holds, over `limit`."""
    return {"PG_ADVISOR_PG_PER_OSD_LIMIT": check(
        f"{len(crowded)} OSD(s) hold more than {limit} PGs (mon_max_pg_per_osd {mon_max} less headroom)",
        [f"osd.{o} holds {n} PGs" for o, n in crowded.items()])}


def osd_memory(heavy: Mapping[int, Tuple[float, float, float, float, float]]) -> Checks:
    """`heavy`: OSD id -> (PG memory now, with full PG logs, at the recovery peak, the
    steady budget, the peak budget), one of them over its budget."""
    return {"PG_ADVISOR_OSD_MEMORY": check(
        f"{len(heavy)} OSD(s) may need more PG memory than their osd_memory_target leaves",
        [f"osd.{o}: PG memory {now / MIB:.0f} MiB now, up to {steady / MIB:.0f} MiB with full PG logs "
         f"(budget {budget / MIB:.0f} MiB), {peak / MIB:.0f} MiB while recovering (room "
         f"{room / MIB:.0f} MiB)" for o, (now, steady, peak, budget, room) in heavy.items()])}


def target_overcommitted(lines: Sequence[str]) -> Checks:
    """Pool targets promising more than their root holds, as pg_autoscaler's
    POOL_TARGET_SIZE_*_OVERCOMMITTED, where pg_autoscaler does not say it itself."""
    return {"PG_ADVISOR_TARGET_OVERCOMMITTED": check(
        f"{len(lines)} CRUSH root(s) have overcommitted pool targets", lines)}


def overlapping_roots(lines: Sequence[str]) -> Checks:
    """Pools pg_autoscaler manages or warns on, on roots that overlap, where a change is
    due: pg_autoscaler skips them."""
    return {"PG_ADVISOR_OVERLAPPING_ROOTS": check(
        f"{len(lines)} pair(s) of CRUSH roots share OSDs: pg_autoscaler does not scale their pools",
        lines)}


# -- the plan (execute/driver.py) ------------------------------------------------------------

def plan_error(why: str) -> Checks:
    return {"PG_ADVISOR_PLAN_ERROR": check(f"pg_advisor cannot advance or start a plan: {why}", [why])}


def upmap_mismatch(plan: str, mismatched: int, detail: Sequence[str]) -> Checks:
    return {"PG_ADVISOR_UPMAP_MISMATCH": check(
        f"pg_advisor plan {plan}: {mismatched} PGs are not where the items it set should have put them",
        detail, count=mismatched)}


def pinned(plan: str, status: str, left: int, pinned: int) -> Checks:
    return {"PG_ADVISOR_PINNED": check(
        f"pg_advisor: {left} PGs pinned onto their old OSDs wait for the drain (`ceph pg-advisor progress`)",
        [f"plan {plan} ({status}): {left} of {pinned} PGs pinned by pin-remapped still hold their items"],
        count=left)}


def plan_stopped(plan: str, why: Optional[str]) -> Checks:
    return {"PG_ADVISOR_PLAN_STOPPED": check(
        f"pg_advisor plan {plan} stopped: {why}; `ceph pg-advisor abort` ends it", [why], count=1)}


def blocked(plan: str, blockers: Sequence[str]) -> Checks:
    return {"PG_ADVISOR_BLOCKED": check(f"pg_advisor plan {plan} is blocked: {blockers[0]}", blockers)}


def conflict(conflicts: Sequence[str]) -> Checks:
    """The other party is named, so the operator can choose."""
    return {"PG_ADVISOR_CONFLICT": check(f"pg_advisor does not fight Ceph: {conflicts[0]}", conflicts)}


def step_failed(plan: str, step: int, attempts: int, error: str) -> Checks:
    return {"PG_ADVISOR_STEP_FAILED": check(
        f"pg_advisor plan {plan} step {step} failed {attempts} time(s); retrying", [error], count=1)}


# -- the background (mgr/serve.py) --------------------------------------------------------

def status_failed(why: str) -> Checks:
    """The status could not be computed: an operator must see it, not only the mgr log."""
    return {"PG_ADVISOR_STATUS_FAILED": check(f"pg_advisor cannot compute its status: {why}", [why])}


def option_invalid(errors: Sequence[str]) -> Checks:
    return {"PG_ADVISOR_OPTION_INVALID": check(
        f"pg_advisor ignores {len(errors)} option value(s): {errors[0]}", errors)}
