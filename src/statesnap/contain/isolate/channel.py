"""What an isolated test's child process sends back, and how the parent reads it.

A file of JSON lines, flushed as each report is made, so a child that dies mid-test still leaves
the phases it finished.  The message kinds: docs/ARCHITECTURE.md ("Isolation").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import IO, Any

from statesnap.base.text import file_bytes
from statesnap.replay.procwait import Exit

# Taken at import (before the first test, statesnap.contain.isolate.plugin): the channel is
# written and read while the tests run, and a test may have left json's functions patched.
_ENCODE = json.JSONEncoder(default=repr, ensure_ascii=False).encode
_DECODE = json.JSONDecoder().decode
_DecodeError = json.JSONDecodeError


@dataclass
class ChildResult:
    """Everything the parent learnt about one isolated run."""

    reports: list[dict[str, Any]] = field(default_factory=list)
    phases: dict[str, str] = field(default_factory=dict)
    failure: dict[str, Any] | None = None
    #: The test's own changes, seen in the child (they died with it).
    changes: list[dict[str, Any]] = field(default_factory=list)
    #: Warnings the test emitted (:mod:`statesnap.contain.isolate.warnings` messages).
    warnings: list[dict[str, Any]] = field(default_factory=list)
    #: Probe errors in the child (``probe_error`` record lines, written by the parent).
    errors: list[dict[str, Any]] = field(default_factory=list)
    #: statesnap's own caught errors in the child (``where``, ``error``), for the record.
    internal_errors: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    exit: Exit = field(default_factory=Exit)
    #: ``pytest.exit`` called by the test: (message, return code).
    exit_request: tuple[str, int | None] | None = None
    #: statesnap's own failure in the child.
    internal: str | None = None
    #: What the child printed outside pytest's capture when it died (faulthandler, a log tail).
    crash_text: str = ""
    #: Exit statuses of a child that ended normally (a spawned pytest exits 1 when its test
    #: failed; a forked child always leaves with 0).
    ok_codes: tuple[int, ...] = (0,)

    @property
    def clean_exit(self) -> bool:
        e = self.exit
        return e.signal is None and not e.timed_out and e.code in self.ok_codes

    def whens(self) -> list[str]:
        return [str(r.get("when")) for r in self.reports]


def write_message(stream: IO[bytes], message: dict[str, Any]) -> None:
    """Append one message and flush it, so it survives the child's death."""
    stream.write(file_bytes(_ENCODE(message)) + b"\n")
    stream.flush()


def parse_messages(data: bytes, result: ChildResult) -> None:
    """Fold channel bytes into ``result``; a line cut short by a crash is ignored."""
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            msg = _DECODE(line.decode("utf-8", "replace"))
        except _DecodeError:
            continue
        if not isinstance(msg, dict):
            continue
        if "report" in msg:
            result.reports.append(msg["report"])
            result.phases = dict(msg.get("phases") or result.phases)
            if msg.get("failure") is not None:
                result.failure = msg["failure"]
        elif msg.get("done"):
            result.done = True
            result.changes = list(msg.get("changes") or [])
            result.errors = list(msg.get("errors") or [])
            result.internal_errors = [e for e in msg.get("internal_errors") or []
                                      if isinstance(e, dict)]
        elif "exit" in msg:
            code = msg.get("returncode")
            result.exit_request = (str(msg["exit"]), code if isinstance(code, int) else None)
        elif "warning" in msg:
            result.warnings.append(msg)
        elif "internal" in msg:
            result.internal = str(msg["internal"])


def read_tail(stream: IO[bytes], limit: int = 6000) -> str:
    """The last ``limit`` bytes of a file the child wrote, as text."""
    try:
        stream.seek(0, 2)
        size = stream.tell()
        stream.seek(max(0, size - limit))
        return stream.read().decode("utf-8", "replace").strip()
    except (OSError, ValueError):
        return ""
