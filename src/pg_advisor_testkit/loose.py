"""The status report as the tests take it apart: a plain document, which they index, edit
and build freely (a captured one, a hand-made one, one a test narrows); the module's own
readers take the typed StatusReport, and get it here by a cast."""
from typing import Any, Dict, Mapping, Optional, cast

from pg_advisor.analysis import health, status
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
