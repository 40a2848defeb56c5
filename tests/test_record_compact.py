"""A record's changes written compactly and read back whole (format 3, issue 29's loguru
record): a change's ``aliases`` go into one ``aliases`` line per key while they stay the same,
and a change that starts where the last change of its key ended (an autouse fixture resetting
a key before every test) is written ``chained``, without its ``before``.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

from statesnap.record.journal import FORMAT, RecordWriter
from statesnap.record.reader import RecordError, read_record
from statesnap.state.diff import Change
from suite_runs import run_suite, write_suite


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _test_line(writer: RecordWriter, index: int, changes: list[Change]) -> None:
    writer.write({"type": "test", "index": index, "nodeid": f"t.py::test_{index}",
                  "worker": "main", "outcome": "passed", "phases": {"call": "passed"},
                  "duration": 0.0, "changes": writer.change_dicts(changes)})


def test_written_compactly_and_read_back_whole(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    names = ["test_a:STATE", "test_b:STATE"]
    steps = [
        [Change("attributes", "app:STATE", "changed", "<dict #1> n=0", "<dict #1> n=1",
                "setup", "reset", "function", 3, aliases=names),
         Change("env", "HOME", "changed", "/a", "/b")],
        [Change("attributes", "app:STATE", "changed", "<dict #1> n=1", "<dict #1> n=2",
                "setup", "reset", "function", 3, aliases=names)],
        # Changed elsewhere since (its own line did not chain): written whole again.
        [Change("attributes", "app:STATE", "changed", "<dict #1> n=7", "<dict #1> n=8",
                "setup", "reset", "function", 3, aliases=names[:1]),
         Change("env", "HOME", "changed", "/b", "/c")],
        [Change("attributes", "app:STATE", "removed", "<dict #1> n=8", None)],
    ]
    writer = RecordWriter(path)
    writer.write({"type": "header", "format": FORMAT, "worker": "main"})
    for i, changes in enumerate(steps):
        _test_line(writer, i, changes)
    writer.close()
    raw = _lines(path)
    tests = [obj for obj in raw if obj["type"] == "test"]
    assert all("aliases" not in c for t in tests for c in t["changes"])
    assert [(obj["key"], obj["aliases"]) for obj in raw if obj["type"] == "aliases"] == [
        ("app:STATE", names), ("app:STATE", names[:1]), ("app:STATE", [])]
    assert ["before" in c for t in tests for c in t["changes"]] == [
        True, True, False, True, False, False]
    back = read_record(path)
    assert [[c.to_json() for c in t.changes] for t in back.tests] == [
        [c.to_json() for c in changes] for changes in steps]


def test_a_chained_change_with_nothing_before_it_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path)
    writer.write({"type": "header", "format": FORMAT, "worker": "main"})
    writer.write({"type": "test", "index": 0, "nodeid": "t.py::test_0", "outcome": "passed",
                  "changes": [{"probe": "env", "key": "HOME", "change": "changed",
                               "after": "/b", "chained": True}]})
    writer.close()
    try:
        read_record(path)
    except RecordError as exc:
        assert "chained change of env:HOME" in str(exc)
    else:
        raise AssertionError("a chained change without an earlier one was read")


SUITE = {
    "app.py": """
        import itertools

        COUNT = itertools.count()
        STATE = {"n": -1}
        """,
    "conftest.py": """
        import pytest

        import app


        @pytest.fixture(autouse=True)
        def reset_state():
            app.STATE["n"] = next(app.COUNT)  # a fresh value before every test
        """,
    **{f"test_{m}.py": "".join(
        ["from app import STATE\n\n"]
        + [f"\ndef test_{m}{i}():\n    assert 'n' in STATE\n" for i in range(5)])
       for m in "abc"},
}


def test_a_reset_before_every_test_costs_one_short_change_per_test(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", SUITE)
    run = run_suite(root, tmp_path / "out", "-q", "--statesnap-verify-budget=0")
    assert run.proc.returncode == 0, run.output[-3000:]
    raw = _lines(run.record_path)
    assert raw[0]["format"] == FORMAT
    tests = [obj for obj in raw if obj["type"] == "test"]
    states = [c for t in tests for c in t["changes"] if c["key"] == "app:STATE"]
    assert len(states) == 15
    # One aliases line for the three modules' names, one full change, then chained ones.
    assert [obj["aliases"] for obj in raw if obj["type"] == "aliases"] == [
        ["test_a:STATE", "test_b:STATE", "test_c:STATE"]]
    assert "before" in states[0] and all(c.get("chained") and "before" not in c
                                         for c in states[1:]), states[:3]
    back = [c for t in run.record().tests for c in t.changes if c.key == "app:STATE"]
    assert all(c.aliases == ["test_a:STATE", "test_b:STATE", "test_c:STATE"] for c in back)
    assert all(b.before == a.after for a, b in pairwise(back))
    assert all(c.before != c.after and c.before is not None for c in back)
    # The reset rule reads the record as before: no test listed above LOW for it.
    summary = json.loads(run.json_path.read_text(encoding="utf-8"))
    assert not [t["nodeid"] for t in summary["tests"] if t["leaked"]], summary["tests"][:2]
