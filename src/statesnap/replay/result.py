"""What one replay did: the outcomes its child's record gives, or why it could not run.

The child writes a record of its own (:mod:`statesnap.record.reader` reads it back): a test
that was running when the child died is ``crashed``; a child that ran nothing says why in its
output, and :func:`error_line` finds the line that says it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statesnap.record.reader import RecordError, read_record
from statesnap.record.signature import CRASH, Signature


@dataclass
class ReplayResult:
    """What one replay did."""

    order: list[str]
    outcomes: dict[str, str] = field(default_factory=dict)
    failures: dict[str, dict[str, Any]] = field(default_factory=dict)
    returncode: int | None = None
    log: Path | None = None
    record: Path | None = None
    timed_out: bool = False
    timeout: float = 0.0
    duration: float = 0.0
    #: Why the replay could not run at all (usage error, missing ids, no interpreter).
    error: str | None = None
    restored: list[str] = field(default_factory=list)
    #: The child's user + system CPU seconds, where known (a replay forked from a warm
    #: parent: statesnap.replay.warm).
    cpu: float | None = None

    def failed(self, nodeid: str) -> bool:
        """Failed or errored in setup or call, or was running when the child died."""
        return self.outcomes.get(nodeid) in ("failed", "error", "crashed")

    def passed(self, nodeid: str) -> bool:
        return self.outcomes.get(nodeid) == "passed"

    def exc_type(self, nodeid: str) -> str | None:
        if self.outcomes.get(nodeid) == "crashed":
            return "crash"
        f = self.failures.get(nodeid)
        return None if f is None else f.get("exc_type")

    def signature(self, nodeid: str) -> Signature:
        """The failure signature of ``nodeid`` in this replay (statesnap.record.signature)."""
        if self.outcomes.get(nodeid) == "crashed":
            return Signature(CRASH)
        return Signature.of(self.failures.get(nodeid))


def read_back(result: ReplayResult) -> None:
    """Fill in ``result`` from the child's record: outcomes, failures, keys restored, the
    test that was running if the child died, or else why it could not run."""
    assert result.record is not None and result.log is not None
    try:
        child = read_record(result.record)
    except RecordError:
        if not result.timed_out:
            result.error = error_line(result.log)
        return
    for t in child.tests:
        result.outcomes[t.nodeid] = "failed" if t.failed else t.outcome
        if t.failure is not None:
            result.failures[t.nodeid] = t.failure
        result.restored += list(t.extra.get("restored") or [])
    if child.running is not None and not result.timed_out:
        result.outcomes[str(child.running["nodeid"])] = "crashed"
    if result.returncode in (3, 4) and not child.tests and child.running is None:
        result.error = error_line(result.log)


def error_line(log: Path) -> str:
    """The line of a child's output that says why it could not run."""
    try:
        lines = [ln.strip() for ln in log.read_text("utf-8", "replace").splitlines()]
    except OSError:
        return "no output"
    lines = [ln for ln in lines if ln and not ln.startswith(("$ ", "#"))]
    for i, ln in enumerate(lines):
        if ln.startswith("ERROR: usage:"):
            # argparse's usage line, then the line that says what was wrong.
            said = [x for x in lines[i + 1:] if "error:" in x]
            return said[0] if said else ln
    for prefix in ("ERROR:", "E   ", "INTERNALERROR>"):
        found = [ln for ln in lines if ln.startswith(prefix)]
        if found:
            return found[0] if prefix == "ERROR:" else found[-1]
    return " / ".join(lines[-2:]) or "no output"
