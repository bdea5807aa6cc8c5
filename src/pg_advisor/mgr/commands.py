"""The commands the mgr answers itself, not as the offline CLI does: the ones that act on the
cluster or on the plan (`act_*`, most of them one Driver method) and the views of the plan
only the running module has (`show_*`). A command's entry in commands/table.py names its
method here (`live`); every other command is answered by its function of
commands/answers.py, the same one offline runs (`answer`).

A command that acts reads a fresh snapshot (its --dry-run a lazy one), then wakes the
background so that what follows (health, the plan's next tick) does not wait for it.
"""
import time
from typing import Any, Callable, Mapping

from ..balance.reweighted import weight_landing
from ..commands.table import Command, Values
from ..execute import operator_commands as ops
from ..execute.context import BalanceRequest
from ..model.snapshot import Snapshot
from .face import ModuleFace


Report = Mapping[str, Any]     # a command's report: JSON-able, read only


class LiveCommands:
    def __init__(self, mgr: ModuleFace) -> None:
        self.mgr = mgr

    def answer(self, cmd: Command, v: Values) -> Report:
        """Command `cmd` with its checked values, as its table entry says: by its method here,
        or as the offline CLI answers it (from a lazy snapshot)."""
        if cmd.live is not None:
            handler: Callable[[Values], Report] = getattr(self, cmd.live)
            return handler(v)
        return cmd.offline_answer(self.mgr.inputs(), v)

    def _snapshot_to_act(self, v: Values) -> Snapshot:
        """A command that acts reads every change at once; its --dry-run only looks."""
        return self.mgr.reader.take_snapshot(fresh=not v["dry_run"], lazy=bool(v["dry_run"]))

    def act_mode(self, v: Values) -> Report:
        if v["mode"] is not None:
            self.mgr.set_module_option("mode", v["mode"].value)
            ops.mode_set(self.mgr.driver.plans, v["mode"], time.time())
            self.mgr.config_notify()     # the new mode, for this answer and the next tick
        return {"mode": self.mgr.current_options().mode}

    def act_apply(self, v: Values) -> Report:
        ctx = self.mgr.context(self._snapshot_to_act(v))
        report = ops.apply(self.mgr.driver.plans, ctx, v["pool"], v["pg_num"], v["dry_run"])
        self.mgr.wake()
        return report

    def act_balance(self, v: Values) -> Report:
        """One bounded batch of pg-upmap-items toward each OSD's share (or only its dry run):
        one round, as the background's, within the misplaced budget."""
        ctx = self.mgr.context(self._snapshot_to_act(v))
        opts = ctx.opts
        # (table.check held --max-items to the option's bound: one round stays small)
        items = v["max_items"] if v["max_items"] is not None else opts.balance_max_items
        req = BalanceRequest([v["pool"]] if v["pool"] else None, items, v["mode"] or opts.balance_mode,
                             bool(v["dry_run"]))
        report = ops.balance(self.mgr.driver.plans, ctx, req)
        if not req.dry_run:
            self.mgr.wake()      # the background checks the round on the next map
        return report

    def act_read_balance(self, v: Values) -> Report:
        """One bounded batch of pg-upmap-primary changes (or only its dry run)."""
        ctx = self.mgr.context(self._snapshot_to_act(v))
        most = v["max_changes"] if v["max_changes"] is not None else ctx.opts.read_max_changes
        report = ops.read_balance(self.mgr.driver.plans, ctx, [v["pool"]] if v["pool"] else None, most,
                                  bool(v["dry_run"]))
        if not v["dry_run"]:
            self.mgr.wake()
        return report

    def act_pin_remapped(self, v: Values) -> Report:
        """The pins, sent; whether the next map holds them is the background's check (a
        `checked` event in the history; no wait for a map here)."""
        snap, dry_run = self._snapshot_to_act(v), v["dry_run"]
        report = ops.pin_remapped(self.mgr.driver.plans, self.mgr.context(snap), dry_run)
        if not dry_run and report.get("plan"):
            report["checked"] = ops.CHECKED
        self.mgr.wake()
        return report

    def act_crush_reweight(self, v: Values) -> Report:
        snap, dry_run = self._snapshot_to_act(v), v["dry_run"]
        weights = {int(o): float(v["weight"]) for o in v["osd"]}
        report = ops.crush_reweight(self.mgr.driver.plans, self.mgr.context(snap), weights, dry_run)
        if not dry_run and report.get("plan"):
            # every answer is in: the mon's epoch now has all that landed
            self.mgr.reader.wait_for_mon_map(snap.epoch)
            report["verified"] = ops.verify_pins(self.mgr.driver.plans, snap, time.time())
            report["weight_epoch"] = weight_landing(self.mgr.reader.past_map, snap.epoch,
                                                    self.mgr.get_osdmap().get_epoch(), weights, report)
        self.mgr.wake()
        return report

    def act_drain(self, v: Values) -> Report:
        ctx = self.mgr.context(self._snapshot_to_act(v))
        report = ops.drain(self.mgr.driver.plans, ctx, v["osd_or_bucket"], v["dry_run"], v["and_balance"])
        self.mgr.wake()
        return report

    def act_pause(self, v: Values) -> Report:
        plan = ops.pause(self.mgr.driver.plans, time.time(), v["plan"])
        self.mgr.wake()
        return self.mgr.driver.plan_report(plan)

    def act_resume(self, v: Values) -> Report:
        plan = ops.resume(self.mgr.driver.plans, time.time(), v["plan"])
        self.mgr.wake()
        return self.mgr.driver.plan_report(plan)

    def act_abort(self, v: Values) -> Report:
        driver = self.mgr.driver
        summary = ops.abort(driver.plans, self.mgr.context(self.mgr.reader.take_snapshot(fresh=True)),
                            v["plan"])
        # the event closed and the panel's copy new at once; health follows with the wake
        self.mgr.progress.update(self.mgr, driver.progress())
        self.mgr.panel.show_plan(*driver.plan_view())
        self.mgr.wake()
        return {"aborted": True, "summary": summary}

    def show_progress(self, v: Values) -> Report:
        return self.mgr.driver.plan_report(v["plan"])

    def show_history(self, v: Values) -> Report:
        return {"history": self.mgr.driver.history()}
