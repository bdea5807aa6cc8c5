"""The reports (status, balance, eval) as the tests take them apart: plain documents, which
they index, edit and build freely (a captured one, a hand-made one, one a test narrows); the
module's own readers take the typed reports, and get them here by a cast."""
from typing import Any, Dict, Mapping, Optional, cast

from pg_advisor.analysis import health, status
from pg_advisor.balance import proposal
from pg_advisor.analysis.status_types import StatusReport
from pg_advisor.model.health_checks import Checks
from pg_advisor.panel import metrics as metrics_module


def status_report(*args: Any, **kwargs: Any) -> Dict[str, Any]:
    return cast(Dict[str, Any], status.status_report(*args, **kwargs))


def status_of(*args: Any, **kwargs: Any) -> Dict[str, Any]:
    return cast(Dict[str, Any], status.status_of(*args, **kwargs))


def typed(doc: Mapping[str, Any]) -> StatusReport:
    return cast(StatusReport, doc)


def health_checks(report: Mapping[str, Any]) -> Checks:
    return health.health_checks(typed(report))


def metrics(report: Mapping[str, Any], progress: Dict[str, Any],
            served: Optional[Dict[str, Any]] = None) -> str:
    return metrics_module.metrics(typed(report), progress, served)


def balance_report(*args: Any, **kwargs: Any) -> Dict[str, Any]:
    """balance/proposal.py's report (a typed BalanceRun) as a plain document."""
    return cast(Dict[str, Any], proposal.balance_report(*args, **kwargs))


def eval_report(*args: Any, **kwargs: Any) -> Dict[str, Any]:
    return cast(Dict[str, Any], proposal.eval_report(*args, **kwargs))
