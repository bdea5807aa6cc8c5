"""The commands the mgr answers itself, not as the offline CLI does: the ones that act on the
cluster or on the plan (`act_*`, most of them one Driver method) and the views of the plan
only the running module has (`show_*`). A command's entry in commands/table.py names its
method here (`live`); every other command is answered by its function of
commands/answers.py, the same one offline runs (`answer`).

A command that acts is done by the serve thread on a fresh snapshot (intents.py: the
handler waits at most `command_wait` for it); its --dry-run answers here from a lazy one.
"""
import time
from typing import Any, Callable, Mapping

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

    def _act(self, v: Values, name: str, act: Callable[[Snapshot], Report]) -> Report:
        """A dry run answers here, from the last snapshot (it only looks). The command itself
        is the serve thread's, on a fresh snapshot (intents.py): this handler waits at most
        `command_wait` seconds for its report (none where a costly read comes first), else
        answers that it is queued."""
        if v.get("dry_run"):
            return act(self.mgr.reader.take_snapshot(lazy=True))
        intents = self.mgr.intents
        intent = intents.put(name, act, time.time())
        self.mgr.wake()
        # the handler runs on this module's own thread for commands and notifications (the
        # mgr's finisher): where the serve thread must first read a big cluster, waiting
        # would hold `status` and the map's notify behind that read, so the answer is
        # "queued" at once
        wait = 0 if self.mgr.reader.fresh_read_costly() else self.mgr.current_options().command_wait
        return intents.answer(intent, wait)

    def act_mode(self, v: Values) -> Report:
        if v["mode"] is not None:
            self.mgr.set_module_option("mode", v["mode"].value)
            ops.mode_set(self.mgr.driver.plans, v["mode"], time.time())
            self.mgr.config_notify()     # the new mode, for this answer and the next tick
        return {"mode": self.mgr.current_options().mode}

    def act_apply(self, v: Values) -> Report:
        def _apply(snap: Snapshot) -> Report:
            return ops.apply(self.mgr.driver.plans, self.mgr.context(snap), v["pool"], v["pg_num"],
                             v["dry_run"])
        return self._act(v, "apply", _apply)

    def act_balance(self, v: Values) -> Report:
        """One bounded batch of pg-upmap-items toward each OSD's share (or only its dry run):
        one round, as the background's, within the misplaced budget; checked by the
        background on the next map."""
        def _balance(snap: Snapshot) -> Report:
            ctx = self.mgr.context(snap)
            opts = ctx.opts
            # (table.check held --max-items to the option's bound: one round stays small)
            items = v["max_items"] if v["max_items"] is not None else opts.balance_max_items
            req = BalanceRequest([v["pool"]] if v["pool"] else None, items,
                                 v["mode"] or opts.balance_mode, bool(v["dry_run"]))
            return ops.balance(self.mgr.driver.plans, ctx, req)
        return self._act(v, "balance", _balance)

    def act_read_balance(self, v: Values) -> Report:
        """One bounded batch of pg-upmap-primary changes (or only its dry run)."""
        def _read_balance(snap: Snapshot) -> Report:
            ctx = self.mgr.context(snap)
            most = v["max_changes"] if v["max_changes"] is not None else ctx.opts.read_max_changes
            return ops.read_balance(self.mgr.driver.plans, ctx, [v["pool"]] if v["pool"] else None, most,
                                    bool(v["dry_run"]))
        return self._act(v, "read-balance", _read_balance)

    def act_pin_remapped(self, v: Values) -> Report:
        """The pins, sent; whether the next map holds them is the background's check (a
        `checked` event in the history)."""
        def _pin_remapped(snap: Snapshot) -> Report:
            report = ops.pin_remapped(self.mgr.driver.plans, self.mgr.context(snap), v["dry_run"])
            if not v["dry_run"] and report.get("plan"):
                report["checked"] = ops.CHECKED
            return report
        return self._act(v, "pin-remapped", _pin_remapped)

    def act_crush_reweight(self, v: Values) -> Report:
        weights = {int(o): float(v["weight"]) for o in v["osd"]}

        def _crush_reweight(snap: Snapshot) -> Report:
            report = ops.crush_reweight(self.mgr.driver.plans, self.mgr.context(snap), weights, v["dry_run"])
            if not v["dry_run"] and report.get("plan"):
                # no wait for a map: the background checks the pins on the first map that may
                # hold them, and finds the epoch the weights landed in (serve.check_landing);
                # `progress` and the history say what each found
                ops.find_landing(self.mgr.driver.plans, snap.epoch, weights, report, time.time())
                report["checked"] = ops.CHECKED
            return report
        return self._act(v, "crush-reweight", _crush_reweight)

    def act_drain(self, v: Values) -> Report:
        def _drain(snap: Snapshot) -> Report:
            return ops.drain(self.mgr.driver.plans, self.mgr.context(snap), v["osd_or_bucket"],
                             v["dry_run"], v["and_balance"])
        return self._act(v, "drain", _drain)

    def act_pause(self, v: Values) -> Report:
        plan = ops.pause(self.mgr.driver.plans, time.time(), v["plan"])
        self.mgr.wake()
        return self.mgr.driver.plan_report(plan)

    def act_resume(self, v: Values) -> Report:
        plan = ops.resume(self.mgr.driver.plans, time.time(), v["plan"])
        self.mgr.wake()
        return self.mgr.driver.plan_report(plan)

    def act_abort(self, v: Values) -> Report:
        def _abort(snap: Snapshot) -> Report:
            driver = self.mgr.driver
            summary = ops.abort(driver.plans, self.mgr.context(snap), v["plan"])
            # the event closed and the panel's copy new at once; health follows
            self.mgr.progress.update(self.mgr, driver.progress())
            self.mgr.panel.show_plan(*driver.plan_view())
            return {"aborted": True, "summary": summary}
        return self._act(v, "abort", _abort)

    def show_progress(self, v: Values) -> Report:
        report = self.mgr.driver.plan_report(v["plan"])
        report["commands_waiting"] = self.mgr.intents.listed(time.time())
        return report

    def show_history(self, v: Values) -> Report:
        return {"history": self.mgr.driver.history()}
