"""Plain-text rendering of apply, progress and history."""
import datetime
from typing import Any, List, Mapping

from ..model.units import human_bytes
from .format import printable, table

SHOWN = 10      # PGs named in a line


def apply_text(r: Mapping[str, Any]) -> str:
    # free text that may carry names or the cluster's messages: escaped (cells are, by cell())
    out: List[str] = [f"{printable(p)}: pg_num -> {n}" for p, n in r["targets"].items()]
    out.append(table(["step", "does"], [[i + 1, s["description"]] for i, s in enumerate(r["steps"])]))
    out.append("dry run: nothing started" if r["dry_run"]
               else f"plan {printable(r['plan'])} started: `ceph pg-advisor progress` follows it")
    return "\n".join(out)


def progress_text(r: Mapping[str, Any]) -> str:
    plan = r["plan"]
    out: List[str] = [f"waiting for the background: {c['command']} (queued as {c['intent']}) "
                      f"for {c['waiting_seconds']:.0f} s" for c in r.get("commands_waiting") or ()]
    if plan is None:
        return "\n".join(out + ["no plan has run"])
    if len(r.get("plans") or ()) > 1:       # side by side: a line each, then the one shown
        rows = [[p["id"], p["source"], p["status"], f"{p['step']}/{p['steps']}", _pools(p),
                 (p["blockers"] or [p["waiting"] or ""])[0]] for p in r["plans"]]
        out.append(table(["plan", "source", "status", "step", "pools", "waiting or blocked"], rows))
        out.append("")
    out.append(f"plan {printable(plan['id'])} ({printable(plan['source'])}): {printable(plan['status'])}, "
               f"step {min(plan['next'] + 1, len(r['steps']))} of {len(r['steps'])}")
    out.extend(f"blocked: {printable(b)}" for b in plan["blockers"])
    if plan.get("waiting"):
        out.append(f"waiting: {printable(plan['waiting'])}")
    if plan.get("last_error"):
        out.append(f"last error ({plan['attempts']} attempts): {printable(plan['last_error'])}")
    if plan.get("mismatched"):
        out.append(f"{plan['mismatched']} PGs not where their items should put them:")
        out.extend(f"  {printable(m)}" for m in plan["mismatch_detail"])
    out.extend(_checks_text(r))
    b = r.get("backfill")
    if b:
        rate = (f"{human_bytes(int(b['rate']))}/s over the last {b['measured_over']:.0f} s"
                if b["rate"] else "rate not measured yet")
        eta = f", done in about {_duration(b['eta_seconds'])}" if b["eta_seconds"] else ""
        out.append(f"backfill: {human_bytes(b['bytes_left'])} left to copy (at most), {rate}{eta}")
    out.append(table(["step", "state", "does"],
                     [[i + 1, s["state"], s["description"]] for i, s in enumerate(r["steps"])]))
    return "\n".join(out)


def _checks_text(r: Mapping[str, Any]) -> List[str]:
    """What the background found of the plan's pins and of a crush-reweight's weights."""
    out = []
    v = r.get("pins_checked")
    if v:
        out.append(f"pins checked against the map: {v['checked'] - v['mismatched']} of {v['checked']} "
                   f"PGs on their data")
    landed = r.get("weight_landed")
    if landed and landed["epoch"] is not None:
        missed = landed["missed"]
        named = " ".join(printable(m) for m in missed[:SHOWN])
        out.append(f"the weights landed in map epoch {landed['epoch']}; {len(missed)} pins missed it"
                   + (f" (those PGs peered as after pin-remapped): {named}" if missed else ""))
    elif landed:
        out.append("the weights' map epoch was not found among the next few: the pins are not checked "
                   "against it")
    return out


def _pools(p: Mapping[str, Any]) -> str:
    if p["drain"]:
        return f"drains {len(p['drain'])} OSDs"
    names = p["pools"]
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _duration(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s" if m else f"{s} s"


def history_text(r: Mapping[str, Any]) -> str:
    if not r["history"]:
        return "no history yet"
    return table(["time", "plan", "event", "detail"],
                 [[datetime.datetime.fromtimestamp(h["time"]).strftime("%Y-%m-%d %H:%M:%S"),
                   h["plan"] or "-", h["event"], h["detail"]] for h in r["history"]])
