"""What differs between the ceph-mgr Python APIs pg_advisor runs on, said once.

Commands: Pacific 16.2 keeps one registry for every module (`CLICommand`, with the
decorators `CLIReadCommand`/`CLIWriteCommand`). Tentacle 20.2 removed those: each module
makes a registry class of its own (`CLICommandBase.make_registry_subtype`) whose `.Read`
and `.Write` declare a handler, and sets it as its MgrModule's `CLICommand`, which the mgr
reads to list and to dispatch the module's commands.
"""
from typing import Any, Callable

import mgr_module

Handler = Callable[..., Any]

if hasattr(getattr(mgr_module, "CLICommandBase", None), "make_registry_subtype"):
    # Tentacle and later: a registry of our own (MgrModule subclasses name it CLICommand)
    REGISTRY: Any = mgr_module.CLICommandBase.make_registry_subtype("PgAdvisorCLICommand")
    _read: Callable[[str], Callable[[Handler], Handler]] = REGISTRY.Read
    _write: Callable[[str], Callable[[Handler], Handler]] = REGISTRY.Write
else:
    # Pacific: the mgr's one registry, found through the module's name at load time
    REGISTRY = mgr_module.CLICommand
    _read = mgr_module.CLIReadCommand
    _write = mgr_module.CLIWriteCommand


def register(prefix: str, handler: Handler, write: bool) -> None:
    """Declare `handler` as the command `prefix` in the running Ceph's registry: its
    arguments are read from its signature, its help from its docstring."""
    (_write if write else _read)(prefix)(handler)
