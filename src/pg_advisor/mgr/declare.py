"""Each command of commands/table.py declared as `ceph pg-advisor NAME` in the running Ceph's
registry (compat.py), its reply the report in the format asked."""
import inspect
from typing import Any, List, Optional, Protocol, Tuple

from ..commands import table
from ..model.errors import AdvisorError
from ..render.format import check_format
from ..render.views import show
from . import compat
from .commands import LiveCommands

CommandResult = Tuple[int, str, str]


class Answers(Protocol):
    """The module, as a declared command's reply sees it (the registry passes it as self)."""
    commands: LiveCommands


def declare(cmd: table.Command) -> None:
    """Declare `ceph pg-advisor NAME` from its entry in the command table, the upstream way
    (the registry reads the arguments from the typed signature, the help from the
    docstring), with `-f` as an argument as pg_autoscaler declares it. The reply is
    the report in the format asked (`views.show`), or an AdvisorError's code and message.
    The format and the arguments are checked (table.check, as offline) before anything
    runs, so a bad one changes nothing."""
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    for arg in cmd.args:
        kind: Any = arg.kind
        if arg.many:
            kind = List[kind]    # Ceph's n=N
        if arg.required:
            params.append(P(arg.name, P.POSITIONAL_OR_KEYWORD, annotation=kind))
        elif arg.kind is bool:
            params.append(P(arg.name, P.POSITIONAL_OR_KEYWORD, default=False, annotation=bool))
        else:
            params.append(P(arg.name, P.POSITIONAL_OR_KEYWORD, default=None, annotation=Optional[kind]))
    params.append(P("format", P.POSITIONAL_OR_KEYWORD, default="plain", annotation=str))

    def reply(self: Answers, format: str = "plain", **given: Any) -> CommandResult:
        try:
            checked = check_format(format)
            report = self.commands.answer(cmd, table.check(cmd, given, live=True))
            return 0, show(cmd.view, report, checked), ""
        except AdvisorError as e:
            return e.code, "", e.message
    setattr(reply, "__signature__", inspect.Signature(params, return_annotation=CommandResult))
    reply.__doc__ = cmd.help
    reply.__name__ = reply.__qualname__ = "_cmd_" + cmd.name.replace("-", "_")
    compat.register("pg-advisor " + cmd.name, reply, cmd.write)
