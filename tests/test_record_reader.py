"""The record reader on real records: a cut last line is the only corruption it forgives.

A process killed mid-write leaves its last line cut; that record is read, marked truncated.
Any other corrupt line (in the middle, or a last line that is whole but wrong) means the
record is not what statesnap wrote, and reading it raises :class:`RecordError` naming the
line: silently dropping the rest would hide tests, and with them polluters.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from statesnap.base.atomic import write_atomic
from statesnap.record.journal import (
    FORMAT,
    READABLE_FORMATS,
    RecordWriter,
    TestEntry,
    append_lines,
    dumps,
    plain_test_line,
)
from statesnap.record.reader import RecordError, read_record

SAMPLE = Path(__file__).resolve().parent.parent / "snapshots" / "records" / "format1-sample.jsonl"


def _lines() -> list[str]:
    return SAMPLE.read_text(encoding="utf-8").splitlines()


def _write(tmp_path: Path, lines: list[str], end: str = "\n") -> Path:
    path = tmp_path / "record.jsonl"
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return path


def test_the_golden_record_reads_whole() -> None:
    record = read_record(SAMPLE)
    assert not record.truncated and not record.crashed and record.running is None
    assert record.header["format"] == 1 and record.worker == "main"
    kinds = [json.loads(x)["type"] for x in _lines()]
    assert len(record.tests) == kinds.count("test") > 3
    assert record.order() == [t.nodeid for t in record.tests]
    first = record.tests[0]
    assert record.test_by_id(first.nodeid) is first
    assert record.test_by_id("".join(list(first.nodeid))) is first  # equal, not the same
    assert all(record.test_by_id(t.nodeid) is t for t in record.tests)
    assert record.test_by_id("nope::nothing") is None


def test_a_cut_last_line_is_forgiven_and_marked(tmp_path: Path) -> None:
    lines = _lines()
    last_test = max(i for i, x in enumerate(lines) if json.loads(x)["type"] == "test")
    cut = [*lines[:last_test], lines[last_test][: len(lines[last_test]) // 2]]
    record = read_record(_write(tmp_path, cut, end=""))
    assert record.truncated and record.crashed
    whole = read_record(SAMPLE)
    assert record.order() == whole.order()[:-1] or len(record.tests) < len(whole.tests)
    # Its start line was read: the cut test is the one that was running.
    assert record.running is not None
    assert record.running["nodeid"] == json.loads(lines[last_test])["nodeid"]


@pytest.mark.parametrize("end", ["\n", ""], ids=["newline-at-end", "no-newline-at-end"])
@pytest.mark.parametrize("where", ["second", "middle", "before_last"])
def test_a_corrupt_line_that_is_not_the_last_raises(tmp_path: Path, where: str,
                                                    end: str) -> None:
    lines = _lines()
    at = {"second": 1, "middle": len(lines) // 2, "before_last": len(lines) - 2}[where]
    lines[at] = lines[at][: len(lines[at]) // 2]  # the same damage as a cut, not at the end
    # Whether the last line ends with its newline or not, only the last line can be a cut.
    path = _write(tmp_path, lines, end=end)
    with pytest.raises(RecordError, match="not a statesnap record line") as excinfo:
        read_record(path)
    assert excinfo.value.line == at + 1
    assert str(excinfo.value).startswith(f"{path}:{at + 1}: ")
    with pytest.raises(RecordError):
        read_record(path, skip_plain=True)


def test_a_whole_last_line_that_is_corrupt_raises(tmp_path: Path) -> None:
    # It ends with its newline: the writer finished it, so it is not a cut.
    lines = [*_lines()[:-1], "{not json"]
    with pytest.raises(RecordError) as excinfo:
        read_record(_write(tmp_path, lines))
    assert excinfo.value.line == len(lines)


@pytest.mark.parametrize(("text", "message", "line"), [
    ('{"type":"header","format":1,"wor', "truncated inside its header line", 1),
    ('{"type":"test","index":0}\n', "first line is no header", 1),
    ('{"type":"footer","exitstatus":0}\n', "first line is no header", 1),
    ('{"type":"header","format":99}\n', "unknown record format 99", 1),
    ('{"type":"header"}\n', "unknown record format None", 1),
    ('["type"]\n', "no 'type'", 1),
    ('{"type":"header","format":1}\n{"index":3}\n', "no 'type'", 2),
    ('{"type":"header","format":1}\n{"type":"test","nodeid":"a"}\n',
     "malformed test line", 2),
    ('{"type":"header","format":1}\n{"type":"start","nodeid":"a"}\n',
     "malformed start line", 2),
    ('{"type":"header","format":1}\n{"type":"collection","changes":[{"x":1}]}\n',
     "malformed collection line", 2),
    ('{"type":"header","format":2}\n{"type":"footer"}\n{"type":"finding","victim":3}\n',
     "malformed finding line", 3),
    ('{"type":"header","format":4}\n', "unknown record format 4", 1),
    ('{"type":"header","format":0}\n', "unknown record format 0", 1),
    ('{"type":"header","format":2}\n{"type":"footer"}\n{"type":"released"}\n',
     "malformed released line", 3),
    ('{"type":"header","format":2}\n{"type":"footer"}\n{"type":"released","actions":{}}\n',
     "malformed released line", 3),
    ("", "empty record (no header line)", None),
    ("\n\n", "empty record (no header line)", None),
])
def test_bad_records_name_the_line(tmp_path: Path, text: str, message: str,
                                   line: int | None) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RecordError) as excinfo:
        read_record(path)
    assert message in str(excinfo.value)
    assert excinfo.value.line == line
    assert excinfo.value.path == path
    where = f"{path}:{line}" if line is not None else str(path)
    assert str(excinfo.value).startswith(where + ": ")


def test_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="no such record"):
        read_record(tmp_path / "absent.jsonl")
    with pytest.raises(RecordError, match="is a directory"):
        read_record(tmp_path)


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    lines = _lines()
    spaced = [lines[0], "", "   ", *lines[1:]]
    assert read_record(_write(tmp_path, spaced)).order() == read_record(SAMPLE).order()


def test_skip_plain_leaves_out_only_plain_tests(tmp_path: Path) -> None:
    whole = read_record(SAMPLE)
    light = read_record(SAMPLE, skip_plain=True)
    plain = [t.nodeid for t in whole.tests
             if not t.changes and t.failure is None and not t.extra.keys() - {"gauges"}]
    assert plain, "the golden record has plain tests"
    assert light.order() == [n for n in whole.order() if n not in plain]
    assert light.footer == whole.footer and light.running is None


def test_writer_round_trip_start_lines_and_the_running_test(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "r.jsonl"
    writer = RecordWriter(path)
    assert writer.fileno >= 0
    writer.write({"type": "header", "format": 1, "worker": "gw3"})
    writer.write_start(0, "t.py::a")
    entry = TestEntry(index=0, nodeid="t.py::a", outcome="failed", worker="gw3",
                      phases={"setup": "passed", "call": "failed"}, duration=0.25,
                      failure={"exc_type": "AssertionError"}, extra={"strict": ["env:X"]})
    writer.write(entry.to_json())
    writer.write_start(1, "t.py::é b")  # non-ASCII kept as is
    writer.close()
    writer.close()
    assert writer.fileno == -1
    writer.write_line("ignored after close")
    record = read_record(path)
    assert record.worker == "gw3" and record.crashed and not record.truncated
    (back,) = record.tests
    assert back == entry and back.failed
    assert record.running == {"type": "start", "index": 1, "nodeid": "t.py::é b"}
    assert "é" in path.read_text(encoding="utf-8")


def test_failed_means_setup_or_call() -> None:
    def entry(**phases: str) -> TestEntry:
        return TestEntry(index=0, nodeid="a", outcome="x", phases=phases)
    assert entry(setup="failed").failed
    assert entry(setup="passed", call="failed").failed
    assert not entry(setup="passed", call="passed", teardown="failed").failed
    assert not entry().failed


def test_plain_test_line_is_what_dumps_writes() -> None:
    entry = TestEntry(index=7, nodeid='t.py::x["q"]', outcome="passed",
                      phases={"setup": "passed", "call": "passed"}, duration=0.5)
    data = entry.to_json()
    args = (7, json.dumps(entry.nodeid, ensure_ascii=False), '"main"', "passed",
            dumps(entry.phases), 0.5)
    assert plain_test_line(*args, None) == dumps(data)
    data["gauges"] = {"fds": 3}
    assert plain_test_line(*args, '{"fds":3}') == dumps(data)


def test_merged_lanes_find_the_running_test_of_each_lane(tmp_path: Path) -> None:
    lines = [
        '{"type":"header","format":1,"worker":"main"}',
        '{"type":"lane","worker":"gw0"}',
        '{"type":"start","index":0,"nodeid":"a"}',
        '{"type":"test","index":0,"nodeid":"a","worker":"gw0","outcome":"passed"}',
        '{"type":"start","index":1,"nodeid":"b"}',
        '{"type":"lane","worker":"gw1"}',
        '{"type":"start","index":0,"nodeid":"c"}',
        '{"type":"test","index":0,"nodeid":"c","worker":"gw1","outcome":"passed"}',
        '{"type":"probe_error","probe":"fds","error":"boom"}',
        '{"type":"collection","changes":[]}',
        '{"type":"something_new","x":1}',
    ]
    record = read_record(_write(tmp_path, lines))
    assert record.order() == ["a", "c"]
    assert record.running is not None and record.running["nodeid"] == "b"
    assert record.errors == [{"type": "probe_error", "probe": "fds", "error": "boom"}]
    assert [o["type"] for o in record.other] == ["lane", "lane", "something_new"]


def test_write_atomic_replaces_whole_or_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    write_atomic(target, "first")
    write_atomic(target, "second")
    assert target.read_text(encoding="utf-8") == "second"
    with pytest.raises(TypeError):
        write_atomic(target, 5)  # type: ignore[arg-type]
    assert target.read_text(encoding="utf-8") == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    missing_dir = tmp_path / "gone" / "x.txt"
    with pytest.raises(OSError):
        write_atomic(missing_dir, "x")


def test_a_copy_of_the_golden_record_reads_the_same(tmp_path: Path) -> None:
    copy = tmp_path / "copy.jsonl"
    shutil.copy(SAMPLE, copy)
    a, b = read_record(SAMPLE), read_record(copy)
    assert a.tests == b.tests and a.header == b.header and a.footer == b.footer


def test_lines_keep_non_ascii_and_survive_unencodable_text(tmp_path: Path) -> None:
    assert dumps({"nodeid": "t.py::é"}) == '{"nodeid":"t.py::é"}'
    path = tmp_path / "a" / "b" / "r.jsonl"  # parent folders made as needed
    writer = RecordWriter(path)
    writer.write({"type": "header", "format": 1})
    writer.write({"type": "note", "text": "lone \ud800 surrogate"})  # not even surrogateescape
    writer.close()
    text = path.read_text(encoding="utf-8")
    assert "\\ud800" in text and "é" not in text
    again = RecordWriter(path)  # an existing folder and file: truncated, not an error
    again.close()
    assert path.read_text(encoding="utf-8") == ""


def test_a_test_line_with_only_the_required_fields() -> None:
    entry = TestEntry.from_json({"index": 3, "nodeid": "a"})
    assert (entry.outcome, entry.worker, entry.duration, entry.phases) == (
        "unknown", "main", 0.0, {})
    assert TestEntry(index=0, nodeid="a", outcome="passed").duration == 0.0


def test_a_long_record_cut_at_the_end(tmp_path: Path) -> None:
    lines = ['{"type":"header","format":1}']
    for i in range(300):
        lines.append(f'{{"type":"start","index":{i},"nodeid":"t{i}"}}')
        lines.append(f'{{"type":"test","index":{i},"nodeid":"t{i}","outcome":"passed"}}')
    lines.append('{"type":"test","ind')
    record = read_record(_write(tmp_path, lines, end=""))
    assert record.truncated and len(record.tests) == 300


def test_new_line_types_are_kept_aside_whatever_their_name(tmp_path: Path) -> None:
    # Kinds sorting before, between and after the known ones are all "other".
    names = ["aa_first", "extra_note", "fix", "gamma", "note", "report", "summary_x", "zz_new"]
    lines = ['{"type":"header","format":1}',
             *(f'{{"type":"{name}","a":1}}' for name in names),
             '{"type":"footer","exitstatus":0}']
    record = read_record(_write(tmp_path, lines))
    assert [o["type"] for o in record.other] == names
    assert record.collection == [] and record.errors == [] and record.verdicts == []
    assert record.footer == {"type": "footer", "exitstatus": 0}
    assert record.tests == [] and record.running is None


def test_crashed_lanes_at_the_same_index_name_the_last_worker(tmp_path: Path) -> None:
    lines = ['{"type":"header","format":1,"worker":"main"}',
             '{"type":"lane","worker":"gw0"}', '{"type":"start","index":1,"nodeid":"a"}',
             '{"type":"lane","worker":"gw1"}', '{"type":"start","index":1,"nodeid":"b"}']
    record = read_record(_write(tmp_path, lines))
    assert record.running is not None and record.running["nodeid"] == "b"


def test_values_json_cannot_hold_are_written_as_lists_paths_or_their_repr(
        tmp_path: Path) -> None:
    class Odd:
        def __repr__(self) -> str:
            return "<odd>"

    line = dumps({"s": {3}, "f": frozenset({"x"}), "t": (1, 2), "p": Path("/r/a b"),
                  "o": Odd()})
    assert line == '{"s":[3],"f":["x"],"t":[1,2],"p":"/r/a b","o":"<odd>"}'
    writer = RecordWriter(tmp_path / "r.jsonl")
    writer.write({"type": "header", "format": 2, "roots": {Path("/r")}})
    writer.close()
    assert read_record(tmp_path / "r.jsonl").header["roots"] == ["/r"]


def test_durations_are_written_to_the_microsecond_and_read_back() -> None:
    entry = TestEntry(index=0, nodeid="a", outcome="passed", duration=1.23456789)
    assert entry.to_json()["duration"] == 1.234568
    back = TestEntry.from_json(json.loads(dumps(entry.to_json())))
    assert back.duration == 1.234568
    assert TestEntry.from_json({"index": 0, "nodeid": "a", "duration": None}).duration == 0.0


def test_the_writer_writes_the_newest_format_this_reader_reads(tmp_path: Path) -> None:
    assert max(READABLE_FORMATS) == FORMAT
    writer = RecordWriter(tmp_path / "r.jsonl")
    writer.write({"type": "header", "format": FORMAT})
    writer.write({"type": "footer", "exitstatus": 0})
    writer.write({"type": "finding", "victim": "t.py::v", "status": "verified"})
    writer.close()
    record = read_record(tmp_path / "r.jsonl")
    assert record.verdicts == [{"type": "finding", "victim": "t.py::v", "status": "verified"}]
    assert record.other == [] and record.footer == {"type": "footer", "exitstatus": 0}


def test_a_record_is_made_with_the_usual_file_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        RecordWriter(tmp_path / "r.jsonl").close()
    finally:
        os.umask(umask)
    assert (tmp_path / "r.jsonl").stat().st_mode & 0o777 == 0o644


def test_crashed_lanes_name_the_latest_test_whatever_the_worker(tmp_path: Path) -> None:
    lines = ['{"type":"header","format":1,"worker":"main"}',
             '{"type":"lane","worker":"gw0"}', '{"type":"start","index":5,"nodeid":"late"}',
             '{"type":"lane","worker":"gw1"}', '{"type":"start","index":2,"nodeid":"early"}']
    record = read_record(_write(tmp_path, lines))
    assert record.running is not None and record.running["nodeid"] == "late"


def test_a_test_module_importing_test_entry_collects_no_class(
        pytester: pytest.Pytester) -> None:
    # The record's data class is named like a test class; pytest must not try to collect it.
    pytester.makepyfile(
        "from statesnap.record.journal import TestEntry\n\ndef test_x():\n    pass\n")
    result = pytester.runpytest_inprocess("-W", "error::pytest.PytestCollectionWarning")
    result.assert_outcomes(passed=1)


def test_a_lane_that_crashed_where_another_lane_finished_the_same_index(
        tmp_path: Path) -> None:
    lines = ['{"type":"header","format":1,"worker":"main"}',
             '{"type":"lane","worker":"gw0"}', '{"type":"start","index":0,"nodeid":"a"}',
             '{"type":"lane","worker":"gw1"}', '{"type":"start","index":0,"nodeid":"b"}',
             '{"type":"test","index":0,"nodeid":"b","worker":"gw1","outcome":"passed"}']
    record = read_record(_write(tmp_path, lines))
    assert record.running is not None and record.running["nodeid"] == "a"


def test_a_setup_failure_read_back_is_a_failure(tmp_path: Path) -> None:
    entry = TestEntry.from_json(json.loads(
        '{"index":0,"nodeid":"a","outcome":"error","phases":{"setup":"failed"}}'))
    assert entry.failed
    entry = TestEntry.from_json(json.loads(
        '{"index":0,"nodeid":"a","outcome":"failed","phases":{"call":"failed"}}'))
    assert entry.failed


def test_a_cut_last_line_after_a_blank_first_line(tmp_path: Path) -> None:
    lines = _lines()
    cut = ["", *lines[:-1], lines[-1][: len(lines[-1]) // 2]]
    record = read_record(_write(tmp_path, cut, end=""))
    assert record.truncated
    assert len(record.tests) == len(read_record(SAMPLE).tests) - (
        json.loads(lines[-1])["type"] == "test")


def test_released_lines_are_read_into_their_actions(tmp_path: Path) -> None:
    kill = {"what": "child process sleep (pid 7)", "probe": "children", "key": "sleep",
            "test": "t.py::a"}
    port = {"what": "port 8080", "probe": "sockets", "key": "8080"}
    lines = ['{"type":"header","format":2}', '{"type":"footer","exitstatus":0}',
             json.dumps({"type": "released", "actions": [kill, "not an action", 3]}),
             json.dumps({"type": "released", "actions": [port]}),
             json.dumps({"type": "released", "actions": []}),
             # Lines of kinds this reader does not know (sorting either side) are kept aside.
             '{"type":"aardvark","n":1}', '{"type":"zebra","n":2}']
    record = read_record(_write(tmp_path, lines))
    assert record.released == [kill, port]
    assert record.other == [{"type": "aardvark", "n": 1}, {"type": "zebra", "n": 2}]
    assert record.verdicts == []


def test_append_lines_adds_whole_lines_to_a_closed_record(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path)
    writer.write({"type": "header", "format": FORMAT, "worker": "main"})
    writer.write({"type": "footer", "exitstatus": 0, "tests": 0})
    writer.close()
    before = path.read_bytes()
    released = {"type": "released", "actions": [{"what": "port \u00e9 \ud800", "key": "k"}]}
    finding = {"type": "finding", "victim": "t.py::v", "status": "verified"}
    assert append_lines(path, [released, finding]) == 2
    after = path.read_bytes()
    assert after.startswith(before)  # appended, nothing overwritten
    added = after[len(before):].decode("utf-8").splitlines()
    assert [json.loads(line) for line in added] == [released, finding]  # a lone surrogate too
    record = read_record(path)
    assert record.released == released["actions"]
    assert [v["victim"] for v in record.verdicts] == ["t.py::v"]
    assert append_lines(path, []) == 0 and path.read_bytes() == after
    # Nothing to write opens nothing: no file is needed.
    assert append_lines(tmp_path / "absent.jsonl", []) == 0
    assert not (tmp_path / "absent.jsonl").exists()


def test_a_merged_record_without_lanes_is_its_own_only_lane(tmp_path: Path) -> None:
    from statesnap.record.lanes import merge_lanes, read_lanes

    controller = read_record(SAMPLE)
    target = tmp_path / "merged.jsonl"
    empty = tmp_path / "run.gw0.jsonl"
    empty.write_text("", encoding="utf-8")  # a worker that died before its header
    merge_lanes(target, controller, [("gw0", empty)])
    merged = read_record(target)
    assert merged.header["lanes"] == [] and merged.tests == []
    lanes = read_lanes(target)
    assert [(lane.path, lane.header) for lane in lanes] == [(target, merged.header)]


def test_a_failure_entry_keeps_the_first_line_and_the_end_of_the_text() -> None:
    from statesnap.record.failure import MESSAGE_LIMIT, TEXT_LIMIT, failure_entry

    text = "x" * TEXT_LIMIT + "assert tail"
    entry = failure_entry("call", "AssertionError", "\n  first " + "m" * MESSAGE_LIMIT + "\nsecond",
                          text, "tests/test_x.py:3", scrub=lambda s: s.replace("first", "***"))
    assert list(entry) == ["phase", "exc_type", "message", "text", "where"]
    assert entry["message"] == "*** " + "m" * (MESSAGE_LIMIT - len("first "))
    assert entry["text"] == text[-TEXT_LIMIT:] and entry["text"].endswith("assert tail")
    assert failure_entry("setup", None, "", "") == {
        "phase": "setup", "exc_type": None, "message": "", "text": ""}


@pytest.mark.parametrize("nodeid", ["t.py::a", 't.py::x["quoted" ünïcode\\]', "t.py::ctl\x01",
                                    "t.py::t[\u2028]"])
def test_skip_plain_names_the_running_test_as_the_whole_read_does(tmp_path: Path,
                                                                  nodeid: str) -> None:
    # The lean read keeps start lines as text and parses only the one whose test never
    # finished: it must come out as the whole read parses it, whatever the node id holds.
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path)
    writer.write({"type": "header", "format": FORMAT, "worker": "main"})
    for index, name in enumerate(["t.py::first", nodeid]):
        writer.write_start(index, name)
        writer.write_line(plain_test_line(index, json.dumps(name, ensure_ascii=False),
                                          '"main"', "passed", '{"call":"passed"}', 0.5, None))
    writer.write_start(2, nodeid)  # dies in it
    writer.close()
    lean, whole = read_record(path, skip_plain=True), read_record(path)
    assert whole.running == {"type": "start", "index": 2, "nodeid": nodeid}
    assert lean.running == whole.running
    assert lean.tests == [] and len(whole.tests) == 2


@pytest.mark.parametrize("bad", ['{"type":"start","index":01,"nodeid":"t.py::a"}',
                                 '{"type":"start","index":1,"nodeid":"t.py::\\q"}'])
def test_skip_plain_still_rejects_a_start_line_that_is_no_json(tmp_path: Path,
                                                               bad: str) -> None:
    lines = _lines()
    lines.insert(2, bad)
    path = _write(tmp_path, lines)
    for lean in (False, True):
        with pytest.raises(RecordError, match="not a statesnap record line") as excinfo:
            read_record(path, skip_plain=lean)
        assert excinfo.value.line == 3
