"""What a replay child inherits from the process that starts it, put back as recorded.

Replays start in a fresh interpreter, but exec keeps the umask, the signal mask, ignored
signals and a pending alarm of the (polluted) parent session.  The record says what these were
before the first test changed them; :class:`Inherited` reads that, and the trampoline restores
it in front of the replay's interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from statesnap.record.journal import Record

#: Run in front of a replay's interpreter when the recorded run changed state that survives
#: fork and exec (blocked signals, ignored signals, a pending alarm): put it back, then exec.
TRAMPOLINE = """\
import json, os, signal, sys
spec = json.loads(sys.argv[1])
if spec.get("cancel_timer"):
    signal.setitimer(signal.ITIMER_REAL, 0)
if "blocked" in spec:
    signal.pthread_sigmask(signal.SIG_SETMASK,
                           [getattr(signal, n) for n in spec["blocked"] if hasattr(signal, n)])
for name in spec.get("default", []):
    if hasattr(signal, name):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
os.execv(sys.argv[2], sys.argv[2:])
"""


@dataclass
class Inherited:
    """Process state a child inherits from its parent that the recorded run changed.

    Replays start in a fresh interpreter, but a fresh interpreter still inherits the umask,
    the signal mask, ignored signals and a pending ``ITIMER_REAL`` from the process that
    starts it (the polluted session, at verification time).  The record says what these were
    before the first test changed them, and each replay starts from that.
    """

    umask: int | None = None
    blocked: list[str] | None = None
    cancel_timer: bool = False
    default: list[str] = field(default_factory=list)

    @classmethod
    def from_record(cls, record: Record) -> Inherited:
        first: dict[str, Any] = {}
        seen: dict[str, set[str]] = {}
        for ch in [*record.collection, *(c for t in sorted(record.tests, key=lambda t: t.index)
                                         for c in t.changes)]:
            if ch.probe != "process":
                continue
            first.setdefault(ch.key, ch.before)
            seen.setdefault(ch.key, set()).add(str(ch.after))
        out = cls()
        umask = first.get("umask")
        if isinstance(umask, str):
            try:
                out.umask = int(umask, 8)
            except ValueError:
                pass
        blocked = first.get("signal.blocked")
        if isinstance(blocked, list):
            out.blocked = [str(n) for n in blocked]
        out.cancel_timer = first.get("signal.ITIMER_REAL") == "off"
        out.default = sorted(k.removeprefix("signal.") for k, v in first.items()
                             if k.startswith("signal.SIG") and v == "default"
                             and "ignore" in seen.get(k, ()))
        return out

    def trampoline(self) -> dict[str, Any] | None:
        spec: dict[str, Any] = {}
        if self.blocked is not None:
            spec["blocked"] = self.blocked
        if self.cancel_timer:
            spec["cancel_timer"] = True
        if self.default:
            spec["default"] = self.default
        return spec or None
