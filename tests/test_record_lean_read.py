"""The lean read's shortcuts (statesnap.record.reader) answer as their regular expressions do.

Every test writes a start line and a test line, and the session end reads both back: the
plain-line check takes string methods before its regular expressions, and the start line's
pattern is possessive.  Each must give, on every line, what the plain expressions give.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from statesnap.record import reader
from statesnap.record.journal import FORMAT, RecordWriter, plain_test_line
from statesnap.record.reader import read_record

#: The start-line pattern as it was before it was made possessive: the reference.
START_REFERENCE = re.compile(r'\{"type":"start","index":(0|[1-9][0-9]*),"nodeid":'
                             r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"\}')


def reference_plain_index(text: str) -> int | None:
    """The plain-line check by its regular expressions only."""
    if not text.startswith('{"type":"test",') or reader._PLAIN_TAIL.search(text) is None:
        return None
    found = reader._INDEX.search(text)
    return int(found.group(1)) if found is not None else None


PHASES = '{"setup":"passed","call":"passed","teardown":"passed"}'
PLAIN = plain_test_line(7, '"t.py::a"', '"main"', "passed", PHASES, 0.25, None)

TEST_LINES = [
    PLAIN,
    plain_test_line(0, '"t.py::a"', '"main"', "passed", PHASES, 8.7e-05, None),
    plain_test_line(123456, '"t.py::a"', '"gw3"', "failed", PHASES, 1.5, '{"fds":12}'),
    plain_test_line(3, '"t.py::a"', '"main"', "passed", PHASES, 0.5, '{"fds":1,"threads":2}'),
    # Unicode decimal digits: \d takes them, and so must the shortcut.
    PLAIN.replace('"index":7', '"index":\u0661\u0662'),
    PLAIN.replace('"index":7', '"index":\u00b2'),  # a superscript: a digit, not a decimal
    PLAIN.replace('"index":7', '"index":-1'),
    PLAIN.replace('"index":7', '"index":'),
    PLAIN.replace('"index":7', '"index":7 '),
    PLAIN.replace('"index":7', '"index":"7"'),
    PLAIN.replace('"index":7,', '"index":7}'),
    # No digits at the head: the expression looks further on, and so must the check.
    PLAIN.replace('"index":7', '"index":x,"index":9'),
    '{"type":"test","index":5}',
    '{"type":"test","index":5"changes":[]}',
    '{"type":"test","index":12"changes":[]}',
    '{"type":"test","nodeid":"t.py::a","index":4,"changes":[]}',
    '{"type":"test","index":4,"changes":[1]}',
    '{"type":"test","index":4,"changes":[],"failure":{}}',
    '{"type":"test","index":4,"changes":[],"gauges":{"a":{}}}',
    '{"type":"test","index":4,"changes":[]} ',
    '{"type":"test","index":4,"changes":[]}}',
    '{"type":"start","index":4,"nodeid":"t.py::a"}',
    '{"type": "test", "index": 4, "changes": []}',
]


@pytest.mark.parametrize("text", TEST_LINES)
def test_the_plain_line_check_answers_as_its_expressions(text: str) -> None:
    assert reader._plain_test_index(text) == reference_plain_index(text)


def test_the_plain_line_check_finds_the_usual_lines() -> None:
    # The shortcut is taken where it matters: the writer's own lines are plain.
    assert reader._plain_test_index(PLAIN) == 7
    assert reader._plain_test_index(TEST_LINES[2]) == 123456


START_LINES = [
    '{"type":"start","index":0,"nodeid":"t.py::a"}',
    '{"type":"start","index":12,"nodeid":"tests/test_x.py::test_y[1-2]"}',
    '{"type":"start","index":01,"nodeid":"t.py::a"}',
    '{"type":"start","index":1,"nodeid":"t.py::\\q"}',
    '{"type":"start","index":1,"nodeid":"t.py::\\"quoted\\" \\\\ \\/ \\b\\f\\n\\r\\t"}',
    '{"type":"start","index":1,"nodeid":"t.py::\\u00e9\\u2028"}',
    '{"type":"start","index":1,"nodeid":"t.py::\\u00g9"}',
    '{"type":"start","index":1,"nodeid":"t.py::\\u00e"}',
    '{"type":"start","index":1,"nodeid":"t.py::\x01"}',
    '{"type":"start","index":1,"nodeid":"t.py::"a"}',
    '{"type":"start","index":1,"nodeid":"t.py::a\\"}',
    '{"type":"start","index":1,"nodeid":"t.py::a\\\\"}',
    '{"type":"start","index":1,"nodeid":"ünïcode ✓"}',
    '{"type":"start","index":1,"nodeid":""}',
    '{"type":"start","index":1,"nodeid":"t.py::a"} ',
    '{"type":"start","index":1,"nodeid":"t.py::a"}}',
]


@pytest.mark.parametrize("text", START_LINES)
def test_the_start_line_pattern_matches_as_before(text: str) -> None:
    now, before = reader._START.fullmatch(text), START_REFERENCE.fullmatch(text)
    assert (now is None) == (before is None)
    if now is not None and before is not None:
        assert now.group(1) == before.group(1)
        json.loads(text)  # what it lets through is JSON


def test_a_lean_read_of_the_writers_lines_is_the_whole_reads_less_the_plain(
        tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path)
    writer.write({"type": "header", "format": FORMAT, "worker": "main"})
    names = ["t.py::a", 't.py::b["x"]', "t.py::ü\\", "t.py::c"]
    for index, name in enumerate(names):
        writer.write_start(index, name)
        gauges = '{"fds":3}' if index == 1 else None
        writer.write_line(plain_test_line(index, json.dumps(name, ensure_ascii=False),
                                          '"main"', "passed", PHASES, 0.5, gauges))
    writer.write({"type": "test", "index": 4, "nodeid": "t.py::d", "worker": "main",
                  "outcome": "failed", "phases": {"call": "failed"}, "duration": 0.1,
                  "changes": [], "failure": {"phase": "call"}})
    writer.write_start(5, "t.py::dies")
    writer.close()
    lean, whole = read_record(path, skip_plain=True), read_record(path)
    assert [t.nodeid for t in whole.tests] == [*names, "t.py::d"]
    assert [t.nodeid for t in lean.tests] == ["t.py::d"]
    assert lean.running == whole.running == {"type": "start", "index": 5,
                                             "nodeid": "t.py::dies"}
