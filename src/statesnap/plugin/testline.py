"""Each test's line of the record: its outcome over its phases, changes, failure, gauges and
what features added; most tests (nothing but the outcome) get a line formatted by hand.

The core keeps :meth:`TestLines.write` as its own bound method: no extra call per test.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from statesnap.plugin.run import RunState, TestState
from statesnap.record.gauges import Gauges
from statesnap.record.journal import dumps, encode_string, plain_test_line
from statesnap.state.diff import Change


class TestLines:
    """Writes the record's test lines of one session."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self, run: RunState) -> None:
        self.run = run
        self._gauges = Gauges()
        self._worker_json: str = encode_string(run.worker)
        #: ``(overall outcome, JSON)`` of each distinct set of phase outcomes.
        self._phase_texts: dict[tuple[tuple[str, str], ...], tuple[str, str]] = {}

    def write(self, item: pytest.Item, index: int, nodeid_json: str, duration: float,
              changes: Sequence[Change], restored: list[str], test: TestState) -> None:
        run = self.run
        assert run.writer is not None and run.tracker is not None
        assert run.snapshotter is not None
        phases, failure, extra = test.phases, test.failure, test.fields
        gauges = self._gauges.of(run.tracker.current, run.snapshotter.probes)
        run.tests_written += 1
        if failure is None and not restored and not extra:
            # Most tests: nothing but the outcome (and the changes, as in every test of a
            # suite whose autouse fixture resets a setting), formatted by hand around the
            # changes' JSON.  The aliases lines the changes need go first (record/journal.py).
            changes_json = dumps(run.writer.change_dicts(changes)) if changes else "[]"
            outcome, phases_json = self._phase_text(phases)
            run.writer.write_line(plain_test_line(
                index, nodeid_json, self._worker_json, outcome, phases_json,
                round(duration, 6), gauges[1], changes_json))
            return
        change_dicts = run.writer.change_dicts(changes)
        entry: dict[str, Any] = {
            "type": "test",
            "index": index,
            "nodeid": item.nodeid,
            "worker": run.worker,
            "outcome": overall(phases),
            "phases": phases,
            "duration": round(duration, 6),
            "changes": change_dicts,
        }
        if failure is not None:
            entry["failure"] = failure
            run.failures_written += 1
        if restored:
            entry["restored"] = restored
        if gauges[0]:
            entry["gauges"] = gauges[0]
        entry.update(extra)
        run.writer.write(entry)

    def _phase_text(self, phases: dict[str, str]) -> tuple[str, str]:
        """The overall outcome and the JSON text of ``phases``; a run has few distinct ones."""
        key = tuple(phases.items())
        known = self._phase_texts.get(key)
        if known is None:
            known = self._phase_texts[key] = (overall(phases), dumps(phases))
        return known


def overall(phases: dict[str, str]) -> str:
    """A test's outcome from its phases' outcomes, as pytest's summary counts it."""
    setup = phases.get("setup")
    call = phases.get("call")
    teardown = phases.get("teardown")
    if setup == "failed":
        return "error"
    if setup in ("skipped", "xfailed"):
        return str(setup)
    if call is not None and call != "passed":
        return "failed" if call == "failed" else call
    if teardown == "failed":
        return "error"
    return call or setup or "unknown"
