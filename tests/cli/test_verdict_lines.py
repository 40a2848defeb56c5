"""The ``finding`` lines of record format 2, read back: per lane, cut short, or absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statesnap.analysis.findings import Finding, ReplayRun
from statesnap.analysis.verdicts import findings_of, needs_replay, store, stored
from statesnap.output.explain import format_finding
from statesnap.record.lanes import read_lanes
from statesnap.record.reader import read_record


def _line(**obj: object) -> str:
    return json.dumps(obj)


def _test(index: int, nodeid: str, worker: str, failed: bool = False) -> str:
    outcome = "failed" if failed else "passed"
    return _line(type="test", index=index, nodeid=nodeid, worker=worker, outcome=outcome,
                 phases={"call": outcome}, duration=0.0, changes=[],
                 **({"failure": {"exc_type": "AssertionError", "message": "x"}}
                    if failed else {}))


def _verdict(victim: str, worker: str, polluter: str) -> Finding:
    return Finding(victim=victim, polluters=[polluter], probe="env", key="K", status="verified",
                   worker=worker, repro=f"python -m pytest {polluter} {victim}",
                   replays=[ReplayRun("pair", [polluter, victim],
                                      f"python -m pytest {polluter} {victim}", "failed",
                                      "AssertionError at t.py:3")])


def test_each_lane_of_a_merged_record_gets_its_own_workers_verdicts(tmp_path: Path) -> None:
    merged = tmp_path / "merged.jsonl"
    merged.write_text("\n".join([
        _line(type="header", format=2, worker="main", lanes=[{"worker": "gw0"},
                                                            {"worker": "gw1"}]),
        _line(type="lane", worker="gw0", header={"type": "header", "format": 2,
                                                 "worker": "gw0"}),
        _test(0, "t.py::a", "gw0"), _test(1, "t.py::v0", "gw0", failed=True),
        _line(type="lane", worker="gw1", header={"type": "header", "format": 2,
                                                 "worker": "gw1"}),
        _test(0, "t.py::b", "gw1"), _test(1, "t.py::v1", "gw1", failed=True),
        _line(type="footer"),
    ]) + "\n", encoding="utf-8")
    store(merged, [_verdict("t.py::v0", "gw0", "t.py::a"), _verdict("t.py::v1", "gw1", "t.py::b")])
    lanes = {lane.worker: lane for lane in read_lanes(merged)}
    assert [f.victim for f in stored(lanes["gw0"])] == ["t.py::v0"]
    assert [f.victim for f in stored(lanes["gw1"])] == ["t.py::v1"]
    (f,) = findings_of(lanes["gw1"])
    assert (f.status, f.polluters, f.source) == ("verified", ["t.py::b"], "session")
    assert f.replays[0].signature == "AssertionError at t.py:3"
    assert f.repro_proven


def test_a_cut_verdict_line_is_dropped_and_its_victim_reads_as_not_replayed(
        tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join([
        _line(type="header", format=2, worker="main"),
        _test(0, "t.py::a", "main"), _test(1, "t.py::v", "main", failed=True),
        _line(type="footer"),
    ]) + "\n", encoding="utf-8")
    store(path, [_verdict("t.py::v", "main", "t.py::a")])
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) - 40], encoding="utf-8")  # killed mid-write
    record = read_record(path)
    assert record.truncated and record.verdicts == []
    (f,) = findings_of(record)  # attributed afresh: no change recorded, so unexplained
    assert f.status == "unexplained" and not f.replays and not f.repro_proven
    text = "\n".join(format_finding(f))
    assert "reproduce:" not in text
    assert "to prove it: statesnap explain --verify --test t.py::v" in text


def _run(path: Path, tests: list[str], running: str | None = None) -> Path:
    lines = [_line(type="header", format=2, worker="main"), *tests]
    if running is not None:
        lines.append(_line(type="start", index=len(tests), nodeid=running))
    else:
        lines.append(_line(type="footer"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_verdict_line_another_version_wrote_is_skipped_and_the_next_is_read(
        tmp_path: Path) -> None:
    # Two victims; the first one's line has a candidate in another version's form.  Its
    # victim is attributed afresh (never shown as proven); the second one's verdict shows.
    path = _run(tmp_path / "run.jsonl", [
        _test(0, "t.py::a", "main"), _test(1, "t.py::v1", "main", failed=True),
        _test(2, "t.py::v2", "main", failed=True)])
    with path.open("a", encoding="utf-8") as out:
        out.write(_line(type="finding", victim="t.py::v1", status="verified",
                        polluters=["t.py::a"], candidates=[{"test": "t.py::a"}]) + "\n")
    store(path, [_verdict("t.py::v2", "main", "t.py::a")])
    record = read_record(path)
    assert [f.victim for f in stored(record)] == ["t.py::v2"]
    found = {f.victim: f for f in findings_of(record)}
    assert (found["t.py::v2"].status, found["t.py::v2"].source) == ("verified", "session")
    assert found["t.py::v1"].status != "verified" and found["t.py::v1"].source is None
    assert "reproduce:" not in "\n".join(format_finding(found["t.py::v1"]))


def test_only_a_victim_nothing_was_replayed_for_needs_a_replay(tmp_path: Path) -> None:
    # ``explain --markdown`` replays these first: never the ones the session proved.
    path = _run(tmp_path / "run.jsonl", [
        _test(0, "t.py::a", "main"), _test(1, "t.py::v1", "main", failed=True),
        _test(2, "t.py::v2", "main", failed=True)])
    store(path, [_verdict("t.py::v1", "main", "t.py::a")])
    found = findings_of(read_record(path))
    assert [f.victim for f in found if needs_replay(f)] == ["t.py::v2"]
    assert [f.victim for f in found if not needs_replay(f)] == ["t.py::v1"]


def test_the_test_a_run_crashed_in_is_a_victim_though_no_test_failed(tmp_path: Path) -> None:
    path = _run(tmp_path / "run.jsonl", [_test(0, "t.py::a", "main")], running="t.py::boom")
    record = read_record(path)
    assert record.running is not None and not any(t.failed for t in record.tests)
    (f,) = findings_of(record)
    assert f.victim == "t.py::boom" and not f.repro_proven
    # A finished run in which every test passed has none.
    passed = _run(tmp_path / "ok.jsonl", [_test(0, "t.py::a", "main")])
    assert findings_of(read_record(passed)) == []


def test_verdicts_are_not_appended_after_a_cut_last_line(tmp_path: Path) -> None:
    # A run killed mid-write leaves its last line cut; ``explain --verify`` then stores what
    # it proved.  Appended after the cut text, the first verdict would make one whole line
    # that is no JSON, and the reader would refuse the whole record from then on.
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join([
        _line(type="header", format=2, worker="main"),
        _test(0, "t.py::a", "main"), _test(1, "t.py::v", "main", failed=True),
        _test(2, "t.py::b", "main"),
    ]) + "\n", encoding="utf-8")
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) - 20], encoding="utf-8")  # killed mid-line
    before = path.read_bytes()
    with pytest.raises(ValueError, match="cut short"):
        store(path, [_verdict("t.py::v", "main", "t.py::a")])
    assert path.read_bytes() == before
    record = read_record(path)
    assert record.truncated and [t.nodeid for t in record.tests] == ["t.py::a", "t.py::v"]
