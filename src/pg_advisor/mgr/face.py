"""What the mgr's command handlers (commands.py) and its background (serve.py) ask
of the module (module.py's Module): its parts and a few calls, so that neither takes the
module whole nor imports it back (module.py makes them, and is where they meet)."""
import logging
from typing import Any, Dict, List, Protocol

from ..commands.answers import Inputs
from .intents import Intents
from .mon import OwnedItems
from ..execute.context import Context
from ..execute.driver import Driver
from .panel import Panel
from .progress import PlanProgress
from .read import MgrReader
from ..model.options import Options
from ..model.snapshot import Snapshot


class ModuleFace(Protocol):
    reader: MgrReader
    panel: Panel
    progress: PlanProgress
    owned: OwnedItems
    intents: Intents

    @property
    def log(self) -> logging.Logger: ...

    @property
    def driver(self) -> Driver: ...

    @property
    def option_errors(self) -> List[str]: ...

    def current_options(self) -> Options: ...

    def config_notify(self) -> None: ...

    def wake(self) -> None: ...

    def context(self, snap: Snapshot) -> Context: ...

    def inputs(self) -> Inputs: ...

    def balanced(self, opts: Options) -> bool: ...

    def cluster_ratio(self) -> float: ...

    # the MgrModule calls they make
    def set_module_option(self, key: str, val: Any) -> None: ...

    def get_osdmap(self) -> Any: ...

    def set_health_checks(self, checks: Dict[str, Any]) -> None: ...

    def set_uri(self, uri: str) -> None: ...

    def remote(self, module_name: str, method_name: str, *args: Any, **kwargs: Any) -> Any: ...
