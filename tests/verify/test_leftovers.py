"""Which files earlier runs left behind, from the records in the runs folder (real files)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from statesnap.analysis.leftovers import earlier_records, find_leftovers
from statesnap.record.journal import Record, RecordWriter
from statesnap.record.reader import read_record


def files(key: str, before: Any, after: Any) -> dict[str, Any]:
    kind = "removed" if after is None else "added" if before is None else "changed"
    return {"probe": "files", "key": key, "change": kind, "before": before, "after": after}


def run_record(path: Path, root: Path, started: float,
               tests: list[tuple[str, list[dict[str, Any]]]], mtime: float) -> Record:
    path.parent.mkdir(parents=True, exist_ok=True)
    w = RecordWriter(path)
    w.write({"type": "header", "format": 1, "worker": "main", "rootdir": str(root),
             "started": started})
    w.write({"type": "collection", "changes": []})
    for i, (name, changes) in enumerate(tests):
        w.write({"type": "start", "index": i, "nodeid": f"test_x.py::{name}"})
        w.write({"type": "test", "index": i, "nodeid": f"test_x.py::{name}", "worker": "main",
                 "outcome": "passed", "phases": {"call": "passed"}, "duration": 0.0,
                 "changes": changes})
    w.write({"type": "footer", "exitstatus": 0, "tests": len(tests)})
    w.close()
    os.utime(path, (mtime, mtime))
    return read_record(path)


FP = {"size": 3, "mtime_ns": 1}


def test_files_earlier_runs_created_and_left_are_found(tmp_path: Path) -> None:
    root = tmp_path / "project"
    runs = root / ".pytest_cache" / "statesnap" / "runs"
    for name in ("left.txt", "removed.txt", "own.txt", "newer.txt", "twice.txt", "other.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("abc")
    run_record(runs / "1.jsonl", root, 100.0, [
        ("test_old_writer", [files("twice.txt", None, FP)])], mtime=1000)
    run_record(runs / "2.jsonl", root, 200.0, [
        ("test_writes", [files("left.txt", None, FP), files("gone.txt", None, FP)]),
        ("test_tidies", [files("removed.txt", None, FP)]),
        ("test_tidies_later", [files("removed.txt", FP, None)]),
        ("test_new_writer", [files("twice.txt", None, FP)])], mtime=2000)
    run_record(runs / "3.jsonl", root, 400.0, [  # started after the current run
        ("test_future", [files("newer.txt", None, FP)])], mtime=3000)
    run_record(runs / "4.jsonl", tmp_path / "elsewhere", 150.0, [  # another project
        ("test_other", [files("other.txt", None, FP)])], mtime=1500)
    current = run_record(tmp_path / "out" / "now.jsonl", root, 300.0, [
        ("test_makes_own", [files("own.txt", None, FP)])], mtime=2500)
    assert earlier_records(current) == [runs / "3.jsonl", runs / "2.jsonl",
                                        runs / "4.jsonl", runs / "1.jsonl"]
    found = {lo.key: lo for lo in find_leftovers(current)}
    # gone.txt is not on disk; removed.txt was removed in that run; own.txt is this run's
    # own; newer.txt is a later run's; other.txt another project's.
    assert sorted(found) == ["left.txt", "twice.txt"]
    assert found["left.txt"].writer == "test_x.py::test_writes"
    assert found["left.txt"].path == root / "left.txt"
    assert found["left.txt"].record == runs / "2.jsonl"
    assert found["twice.txt"].writer == "test_x.py::test_new_writer"  # the newest run's
    assert found["left.txt"].to_json() == {"path": "left.txt", "writer": "test_x.py::test_writes",
                                           "record": str(runs / "2.jsonl")}
    assert find_leftovers(current, limit=1) == []  # only the newest record, a later run's
