"""A command that acts is done by the serve thread, as cephadm's are: its handler records
what the operator asked (an intent), wakes the background and waits at most `command_wait`
seconds for the answer. Past that it answers that the command is queued, and the outcome
goes to the history. So no handler reads the cluster or waits for a map: on a big cluster a
fresh read takes tens of seconds, and the serve thread does it once per change for every
command queued.

Intents live in memory only: a command whose handler has not answered fails with its mgr,
as the operator sees; one answered "queued" and not yet done when the mgr fails over is lost
with it, and `history` has no outcome for it (the operator asks again).
"""
import threading
import uuid
from typing import Any, Callable, Dict, List, Mapping, Optional

from ..model.errors import AdvisorError
from ..model.snapshot import Snapshot

Report = Mapping[str, Any]
Act = Callable[[Snapshot], Report]

QUEUE_MAX = 16        # intents waiting at once: more get EBUSY (each may cost a read)
QUEUED = "the background acts on it once it has read the cluster; `history` gives the outcome"


class Intent:
    """One command to act: what it does on a fresh snapshot (`act`), and its outcome."""

    def __init__(self, name: str, act: Act, made: float) -> None:
        self.id = uuid.uuid4().hex[:8]
        self.name, self.act, self.made = name, act, made
        self.done = threading.Event()
        self.report: Optional[Report] = None
        self.error: Optional[Exception] = None     # raised again in the handler's thread
        self.answered = False     # the handler answered "queued": the outcome goes to the history

    def result(self) -> Report:
        if self.error is not None:
            raise self.error
        assert self.report is not None
        return self.report

    def outcome(self) -> str:
        """One line for the history: what the command did, or why not."""
        what = f"{self.name} (queued as {self.id})"
        if isinstance(self.error, AdvisorError):
            return f"{what} refused: {self.error.message}"
        if self.error is not None:
            return f"{what} failed: {type(self.error).__name__}: {self.error} (the mgr log has the traceback)"
        plan = (self.report or {}).get("plan")
        return f"{what} done" + (f": plan {plan}" if plan else "")


class Intents:
    """The queue between the command handlers and the serve thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: List[Intent] = []
        self._closed: Optional[str] = None     # why no intent is taken any more

    def put(self, name: str, act: Act, now: float) -> Intent:
        with self._lock:
            if self._closed is not None:
                raise AdvisorError.busy(f"not done: {self._closed}")
            if len(self._queue) >= QUEUE_MAX:
                raise AdvisorError.busy(f"not done: {len(self._queue)} commands already wait for the "
                                        f"background; try again once they are done (`history`)")
            intent = Intent(name, act, now)
            self._queue.append(intent)
            return intent

    @property
    def waiting(self) -> bool:
        with self._lock:
            return bool(self._queue)

    def listed(self, now: float) -> List[Dict[str, Any]]:
        """The commands waiting for the serve thread (`progress`): one it has taken is done
        within its tick."""
        with self._lock:
            return [{"intent": i.id, "command": i.name, "waiting_seconds": round(now - i.made, 1)}
                    for i in self._queue]

    def take(self) -> List[Intent]:
        """The intents waiting now, oldest first, for the serve thread (those put while it
        acts on them wait for its next tick: the plans' ticks are not held off)."""
        with self._lock:
            out, self._queue = self._queue, []
            return out

    def finish(self, intent: Intent, report: Optional[Report], error: Optional[Exception]) -> bool:
        """The serve thread's outcome; True if the handler has answered "queued" already (the
        outcome is then for the history)."""
        with self._lock:
            intent.report, intent.error = report, error
            intent.done.set()
            return intent.answered

    def answer(self, intent: Intent, seconds: float) -> Report:
        """The command's report, if the serve thread has it within `seconds`; else the
        answer that it is queued."""
        if not intent.done.wait(seconds):
            with self._lock:
                if not intent.done.is_set():
                    intent.answered = True
                    return {"queued": True, "intent": intent.id, "command": intent.name,
                            "checked": QUEUED}
        return intent.result()

    def close(self, why: str) -> None:
        """The module stops: every intent not yet done is refused with `why`, and no new one
        is taken."""
        with self._lock:
            self._closed = why
            left, self._queue = self._queue, []
        for intent in left:
            self.finish(intent, None, AdvisorError.busy(f"not done: {why}"))
