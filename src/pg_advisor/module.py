"""The MgrModule: what ceph-mgr loads, and where the mgr wing's parts meet (the composition
root: nothing imports it back). Thin: the module's options, read once per change
(`config_notify`); its commands, declared from commands/table.py (mgr/declare.py);
serve(), which hands the background to mgr/serve.py.

The parts it wires together, each in mgr/: read.py (the cluster through the mgr), mon.py
(the mon commands), commands.py (the commands the mgr answers itself), serve.py (the serve
loop), panel.py (the panel), progress.py (the plan's event in `ceph -s`); they see the
module through face.py's Protocol. Every decision lives in the layers they call; these
files only know the mgr's API.
"""
import errno
import threading
import time
import traceback
from typing import Any, Dict, List, Optional, Tuple

from mgr_module import MgrModule, NotifyType, Option

from .commands import table
from .commands.answers import Inputs
from .execute.context import Context
from .execute.driver import Driver
from .mgr import compat, mon, read
from .mgr.commands import LiveCommands
from .mgr.config import read_options
from .mgr.declare import CommandResult, declare
from .mgr.intents import Intents
from .mgr.panel import Panel
from .mgr.progress import PlanProgress
from .mgr.serve import MgrServe
from .model import options
from .model.errors import AdvisorError
from .model.snapshot import Snapshot

# the modes of Ceph's balancer that even PG counts with pg-upmap-items (Reef's upmap-read
# also evens primaries; read moves only primaries, crush-compat only weights)
BALANCER_EVENS_PGS = ("upmap", "upmap-read")


class Module(MgrModule):
    # filled by MgrModule._register_commands from the declarations (the command table) below
    COMMANDS: List[Dict[str, Any]] = []
    CLICommand = compat.REGISTRY     # where Tentacle's mgr finds them (Pacific: unused)
    MODULE_OPTIONS = [Option(**o) for o in options.mgr_options()]
    NATIVE_OPTIONS = list(read.NATIVE_OPTIONS)
    NOTIFY_TYPES = [NotifyType.osd_map]      # a new map: its epoch is asked once (mgr/epoch.py)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wake = threading.Event()   # set to run the background now (options changed, shutdown)
        # (the options, what is wrong with them): replaced whole, read by any thread
        self._options = read_options(self.get_module_option)
        self._driver: Optional[Driver] = None
        self._driver_made = threading.Lock()    # the serve thread and a command may both ask first
        self.reader = read.MgrReader(self, self.current_options, self.wake)
        self.panel = Panel()
        self.progress = PlanProgress()
        self.commands = LiveCommands(self)
        self.intents = Intents()     # commands that act, for the serve thread (mgr/intents.py)
        self.background = MgrServe(self, self._wake)
        # the item lists pg_advisor set (status's count of them): told by send and burst
        self.owned = mon.OwnedItems(self.get_store_prefix, self.set_store)

    # -- the options -----------------------------------------------------------------------------

    def current_options(self) -> options.Options:
        """The module's options as last read (at start, then on each config_notify)."""
        return self._options[0]

    @property
    def option_errors(self) -> List[str]:
        """The option values the mon let through that fall back to their defaults."""
        return self._options[1]

    def config_notify(self) -> None:
        """The mgr's call after a setting changed: the options read again, and applied at
        once (a new sleep_interval, say) by waking the background."""
        self._options = read_options(self.get_module_option)
        self.wake()

    def wake(self) -> None:
        self._wake.set()

    def notify(self, notify_type: Any, notify_id: str) -> None:
        """The mgr's word of a new cluster map: only the OSDMap's matters here (NOTIFY_TYPES;
        a mgr that sends all types sends the others too)."""
        if str(getattr(notify_type, "value", notify_type)) == "osd_map":
            self.reader.maps.map_changed()

    # -- what a command or a tick reads ----------------------------------------------------------

    def balancer_active(self) -> bool:
        return str(self.get_module_option_ex("balancer", "active", False)).lower() in ("true", "1")

    def balanced(self, opts: options.Options) -> bool:
        """Size against the balanced ideal when told to, or when the upmap balancer runs."""
        if opts.assume_balanced is not options.AssumeBalanced.AUTO:
            return opts.assume_balanced is options.AssumeBalanced.YES
        return (self.balancer_active()
                and self.get_module_option_ex("balancer", "mode", "upmap") in BALANCER_EVENS_PGS)

    def cluster_ratio(self) -> float:
        return float(self.get_ceph_option("target_max_misplaced_ratio"))

    def context(self, snap: Snapshot) -> Context:
        """What a command or a tick acts on: `snap` and all else read from the mgr now."""
        opts = self.current_options()
        return Context(snap, opts, self.cluster_ratio(), time.time(), self.send, self.burst,
                       self.balanced(opts), self.balancer_active(), self.reader.mon_epoch)

    def inputs(self) -> Inputs:
        opts = self.current_options()
        return Inputs(self.reader.take_snapshot(lazy=True), opts, self.balanced(opts), self.cluster_ratio(),
                      self.owned.ours)

    # -- the mon (mgr/mon.py): what the Driver sends through -------------------------------------

    def send(self, cmd: Dict[str, Any]) -> Tuple[int, str]:
        out = mon.send(self, cmd)
        self._record([cmd], [out])
        return out

    def send_nowait(self, cmd: Dict[str, Any]) -> mon.Wait:
        return mon.send_nowait(self, cmd)

    def burst(self, cmds: List[Dict[str, Any]]) -> List[Tuple[int, str]]:
        out = mon.burst(self.send_nowait, cmds)
        self._record(cmds, out)
        return out

    def _record(self, cmds: List[Dict[str, Any]], results: List[Tuple[int, str]]) -> None:
        """What the mon took, for the count of pg_advisor's item lists: a failure here only
        loses the count, never the commands' answers."""
        try:
            self.owned.sent(cmds, results)
        except Exception as e:      # (a store the mgr cannot write, a bug)
            self.log.warning("pg_advisor: the record of its item lists not kept: %s", e)

    @property
    def driver(self) -> Driver:
        """The one Driver, made at first use (the store is readable only once the module
        runs): two made at once would each load the plan, and one's changes be lost."""
        if self._driver is None:
            with self._driver_made:
                if self._driver is None:
                    driver = Driver(self.get_store, self.set_store, time.time())
                    driver.map_with(self.reader.mon_up_sets)
                    self._driver = driver
        return self._driver

    # -- commands --------------------------------------------------------------------------------

    def _handle_command(self, inbuf: Optional[str], cmd: Dict[str, Any]) -> Any:
        """The mgr's entry for every command: MgrModule dispatches to the declarations; a
        bug must not take the mgr down, so it becomes an error that says what failed. The
        arguments are checked first: the mgr's own cast would fail on a value the `ceph`
        CLI never sends (a raw mon command can), as an internal error."""
        known = table.BY_NAME.get(str(cmd.get("prefix", "")).removeprefix("pg-advisor "))
        if known is not None:
            try:
                table.check(known, {a.name: cmd[a.name] for a in known.args if a.name in cmd}, live=True)
            except AdvisorError as e:
                return e.code, "", e.message
        try:
            return super()._handle_command(inbuf or "", cmd)
        except Exception as e:
            self.log.error("pg_advisor: %s failed: %s", cmd.get("prefix"), traceback.format_exc())
            return -errno.EIO, "", f"internal error in {cmd.get('prefix')}: {e}"

    def handle_command(self, inbuf: Optional[str], cmd: Dict[str, Any]) -> CommandResult:
        """A prefix none of the declarations has (MgrModule sends it here)."""
        return -errno.EINVAL, "", f"unknown command '{cmd.get('prefix')}'"

    # -- lifecycle -------------------------------------------------------------------------------

    def serve(self) -> None:
        self.background.serve()

    def shutdown(self) -> None:
        self.background.shutdown()
        super().shutdown()      # MgrModule's: closes the librados handle (mgr/crush_bin.py), if opened


for _cmd in table.COMMANDS:
    declare(_cmd)
