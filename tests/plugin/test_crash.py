"""A run that dies mid-test leaves a readable record (issue 2, "the record").

The interpreter really dies: a segfault through ctypes, and SIGKILL sent to itself.  The
record must then hold every finished test in order, with its changes, and name the test
that was running.  A record cut in the middle of a line is read too.
"""

from __future__ import annotations

import json
import signal

import pytest

from statesnap.record.journal import FORMAT
from statesnap.record.reader import RecordError, read_record

CRASH_SUITE = '''
import ctypes
import os
import signal


def test_first():
    pass


def test_leaks_before_the_crash():
    os.environ["CRASH_SUITE_LEAK"] = "yes"


def test_fails_before_the_crash():
    assert 2 + 2 == 5


def test_dies():
    {kill}


def test_never_runs():
    pass
'''

KILLS = [
    pytest.param("ctypes.string_at(0)", -signal.SIGSEGV, id="segfault"),
    pytest.param("os.kill(os.getpid(), signal.SIGKILL)", -signal.SIGKILL, id="sigkill"),
]


@pytest.mark.parametrize(("kill", "signum"), KILLS)
def test_crash_leaves_finished_tests_and_the_running_one(inner, pytester: pytest.Pytester,
                                                         kill: str, signum: int) -> None:
    pytester.makepyfile(test_crash_suite=CRASH_SUITE.format(kill=kill))
    # -p no:faulthandler: the segfault must kill the process, not be reported nicely.
    run = inner("-p", "no:faulthandler", "--statesnap-verify-budget", "0", subprocess=True)
    assert run.ret == signum
    record = run.record()
    assert record.crashed and record.footer is None
    assert record.order() == [
        "test_crash_suite.py::test_first",
        "test_crash_suite.py::test_leaks_before_the_crash",
        "test_crash_suite.py::test_fails_before_the_crash",
    ]
    assert [t.index for t in record.tests] == [0, 1, 2]
    assert [t.outcome for t in record.tests] == ["passed", "passed", "failed"]
    assert record.running is not None
    assert record.running["nodeid"] == "test_crash_suite.py::test_dies"
    assert record.running["index"] == 3
    leak = record.test_by_id("test_crash_suite.py::test_leaks_before_the_crash")
    assert leak is not None
    assert [(c.probe, c.key, c.after, c.phase) for c in leak.changes
            if c.probe == "env"] == [("env", "CRASH_SUITE_LEAK", "yes", "call")]
    failed = record.test_by_id("test_crash_suite.py::test_fails_before_the_crash")
    assert failed is not None and failed.failure is not None
    assert failed.failure["exc_type"] == "AssertionError"
    assert record.header["format"] == FORMAT


def test_segfault_with_faulthandler_on_is_recorded_too(inner, pytester: pytest.Pytester) -> None:
    """pytest's faulthandler prints the traceback and the process still dies: same record."""
    pytester.makepyfile(test_crash_suite=CRASH_SUITE.format(kill="ctypes.string_at(0)"))
    run = inner("--statesnap-verify-budget", "0", subprocess=True)
    assert run.ret == -signal.SIGSEGV
    record = run.record()
    assert len(record.tests) == 3
    assert record.running is not None
    assert record.running["nodeid"] == "test_crash_suite.py::test_dies"


def test_record_cut_mid_line_is_read(inner, pytester: pytest.Pytester, tmp_path) -> None:
    """The process died while writing a line: that line is dropped and the record says so."""
    pytester.makepyfile(test_crash_suite=CRASH_SUITE.format(kill="pass"))
    run = inner("--statesnap-verify-budget", "0")
    full = run.record_path.read_text(encoding="utf-8")
    lines = full.splitlines(keepends=True)
    kinds = [json.loads(line)["type"] for line in lines]
    last_test = max(i for i, k in enumerate(kinds) if k == "test")
    # Keep everything before the last test line, and half of that line.
    cut = "".join(lines[:last_test]) + lines[last_test][: len(lines[last_test]) // 2]
    path = tmp_path / "cut.jsonl"
    path.write_text(cut, encoding="utf-8")

    record = read_record(path)
    assert record.truncated
    assert record.crashed
    complete = read_record(run.record_path)
    assert not complete.truncated and not complete.crashed
    assert record.order() == complete.order()[:-1]
    # The cut line's test had started: it is the one that was running.
    assert record.running is not None
    assert record.running["nodeid"] == complete.order()[-1]


def test_record_cut_inside_the_header_is_a_clear_error(inner, pytester: pytest.Pytester,
                                                       tmp_path) -> None:
    pytester.makepyfile(test_crash_suite=CRASH_SUITE.format(kill="pass"))
    run = inner("--statesnap-verify-budget", "0")
    header = run.record_path.read_text(encoding="utf-8").splitlines()[0]
    path = tmp_path / "cut.jsonl"
    path.write_text(header[:40], encoding="utf-8")
    with pytest.raises(RecordError) as excinfo:
        read_record(path)
    message = str(excinfo.value)
    assert "\n" not in message
    assert str(path) in message and "header" in message


def test_a_crashed_lane_of_a_merged_record_keeps_its_running_test(tmp_path) -> None:
    # Lanes of an xdist run reuse indexes: gw1 finishing its test 1 must not hide that gw0
    # died while running its own test 1.
    def line(**obj) -> str:
        return json.dumps(obj)

    merged = tmp_path / "merged.jsonl"
    merged.write_text("\n".join([
        line(type="header", format=1, worker="main", lanes=[{"worker": "gw0"},
                                                           {"worker": "gw1"}]),
        line(type="lane", worker="gw0", header={"type": "header", "format": 1}),
        line(type="start", index=0, nodeid="t.py::a"),
        line(type="test", index=0, nodeid="t.py::a", worker="gw0", outcome="passed",
             phases={"call": "passed"}, duration=0.0, changes=[]),
        line(type="start", index=1, nodeid="t.py::dies"),
        line(type="lane", worker="gw1", header={"type": "header", "format": 1}),
        line(type="start", index=0, nodeid="t.py::b"),
        line(type="test", index=0, nodeid="t.py::b", worker="gw1", outcome="passed",
             phases={"call": "passed"}, duration=0.0, changes=[]),
        line(type="start", index=1, nodeid="t.py::c"),
        line(type="test", index=1, nodeid="t.py::c", worker="gw1", outcome="passed",
             phases={"call": "passed"}, duration=0.0, changes=[]),
        line(type="footer"),
    ]) + "\n", encoding="utf-8")
    record = read_record(merged)
    assert record.running is not None and record.running["nodeid"] == "t.py::dies"
    assert len(record.tests) == 3
    assert read_record(merged, skip_plain=True).running["nodeid"] == "t.py::dies"


def test_skip_plain_keeps_what_the_session_end_needs(tmp_path) -> None:
    # Written the way the plugin writes (RecordWriter): plain lines are skipped unparsed;
    # lines with changes, a failure or an extra field are kept, and so is a crash.
    from statesnap.record.journal import RecordWriter

    path = tmp_path / "run.jsonl"
    w = RecordWriter(path)
    w.write({"type": "header", "format": 1, "worker": "main"})
    base = {"type": "test", "worker": "main", "outcome": "passed",
            "phases": {"call": "passed"}, "duration": 0.0}
    lines = [
        {"changes": [], "gauges": {"fds": 4.0}},
        {"changes": [{"probe": "env", "key": "K", "change": "added", "before": None,
                      "after": "1", "severity": 3}], "gauges": {"fds": 4.0}},
        {"changes": []},
        {"changes": [], "gauges": {"fds": 4.0}, "reruns": 2},
        {"changes": [], "failure": {"phase": "call", "message": "x"}},
    ]
    for i, extra in enumerate(lines):
        w.write_start(i, f"t.py::t{i}")
        w.write({**base, "index": i, "nodeid": f"t.py::t{i}", **extra})
    w.write_start(5, "t.py::dies")
    w.close()
    full = read_record(path)
    lean = read_record(path, skip_plain=True)
    assert [t.index for t in full.tests] == [0, 1, 2, 3, 4]
    assert [t.index for t in lean.tests] == [1, 3, 4]
    assert lean.running is not None and lean.running["nodeid"] == "t.py::dies"
    assert full.running == lean.running


@pytest.mark.parametrize("gauges", [None, {"fds": 4.0, "native threads": 0.0}])
@pytest.mark.parametrize("nodeid", ["t.py::t0", 't.py::test_x["quoted" ünïcode\\]'])
def test_hand_formatted_test_line_is_what_dumps_writes(nodeid, gauges) -> None:
    # Most test lines are formatted by hand (record.plain_test_line); they must be the very
    # text json would make of the same entry, or readers and the plain-line check drift.
    from statesnap.record.journal import dumps, encode_string, plain_test_line

    phases = {"setup": "passed", "call": "failed", "teardown": "passed"}
    entry = {"type": "test", "index": 7, "nodeid": nodeid, "worker": "gw1",
             "outcome": "failed", "phases": phases, "duration": 0.000123, "changes": []}
    if gauges is not None:
        entry["gauges"] = gauges
    line = plain_test_line(7, encode_string(nodeid), encode_string("gw1"), "failed",
                           dumps(phases), 0.000123, None if gauges is None else dumps(gauges))
    assert line == dumps(entry)
    assert json.loads(line) == entry
