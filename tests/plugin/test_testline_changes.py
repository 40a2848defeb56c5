"""A test line whose only extra is its changes is formatted around them by hand: the same text
``dumps`` makes of the entry, in a real run and for changes of every shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from statesnap.record import journal
from statesnap.record.journal import dumps, encode_string, plain_test_line

SUITE = '''
import os

import pytest


@pytest.fixture(autouse=True)
def _reset():
    # An autouse reset to a new value before every test: each test's one change.
    os.environ["TESTLINE_MODE"] = f"reset {os.environ.get('TESTLINE_N', '0')}"
    os.environ["TESTLINE_N"] = str(int(os.environ.get("TESTLINE_N", "0")) + 1)


def test_reset_only():
    pass


def test_changes_ünïcode():
    os.environ["TESTLINE_OTHER"] = "x\\n\\"quoted\\" …"


def test_fails_with_a_change():
    assert 0


def test_clean_of_its_own():
    pass
'''

#: The general path's key order (plugin/testline.py ``entry``).
ORDER = ("type", "index", "nodeid", "worker", "outcome", "phases", "duration", "changes",
         "failure", "restored", "gauges")


def _as_written(data: dict[str, Any]) -> str:
    return dumps({k: data[k] for k in ORDER if k in data}
                 | {k: v for k, v in data.items() if k not in ORDER})


def test_lines_with_changes_are_what_dumps_writes_and_skip_it(
        inner, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[str] = []
    real = journal.RecordWriter.write

    def counted(self: journal.RecordWriter, obj: Any) -> None:
        encoded.append(str(obj.get("type")))
        real(self, obj)

    monkeypatch.setattr(journal.RecordWriter, "write", counted)
    pytester.makepyfile(test_testline_suite=SUITE)
    run = inner("--statesnap-verify-budget", "0")
    lines = [line for line in run.record_path.read_text(encoding="utf-8").splitlines()
             if line.startswith('{"type":"test"')]
    assert len(lines) == 4
    with_changes = 0
    for line in lines:
        data = json.loads(line)
        assert line == _as_written(data)
        with_changes += bool(data["changes"])
    assert with_changes == 4  # the reset moves the environment in every test
    # Only the failing test's line went through dumps(entry); the other three were made
    # around their changes.
    assert encoded.count("test") == 1
    record = run.record()
    assert [t.nodeid.rsplit("::", 1)[1] for t in record.tests] == [
        "test_reset_only", "test_changes_ünïcode", "test_fails_with_a_change",
        "test_clean_of_its_own"]
    other = [c for c in record.tests[1].changes if c.key == "TESTLINE_OTHER"]
    assert [c.after for c in other] == ['x\n"quoted" …']


@pytest.mark.parametrize("gauges", [None, {"fds": 4.0, "native threads": 0.0}])
def test_a_hand_made_line_with_changes_is_what_dumps_writes(gauges: Any, tmp_path: Path
                                                            ) -> None:
    nodeid = 't.py::test_x["quoted" ünïcode\\]'
    phases = {"setup": "passed", "call": "passed", "teardown": "passed"}
    changes: list[dict[str, Any]] = [
        {"probe": "attributes", "key": "m:_CONFIG", "change": "changed",
         "after": "<_Configuration {…} (511 chars)> #1 ~ab eq~cd", "phase": "setup",
         "fixture": "_reset", "scope": "function", "severity": 1, "chained": True},
        {"probe": "env", "key": "X", "change": "added", "before": None, "after": "1\t\u2028",
         "severity": 3, "then": {"before": "0", "phase": "call"}},
        # Values the encoder's default turns into JSON: a tuple, a set, a path, an object.
        {"probe": "p", "key": "odd", "change": "changed", "before": (1, 2),
         "after": {"s": frozenset({3}), "p": tmp_path, "o": object}, "severity": 2},
    ]
    entry: dict[str, Any] = {"type": "test", "index": 12, "nodeid": nodeid, "worker": "gw1",
                             "outcome": "passed", "phases": phases, "duration": 0.000123,
                             "changes": changes}
    if gauges is not None:
        entry["gauges"] = gauges
    line = plain_test_line(12, encode_string(nodeid), encode_string("gw1"), "passed",
                           dumps(phases), 0.000123, None if gauges is None else dumps(gauges),
                           dumps(changes))
    assert line == dumps(entry)
