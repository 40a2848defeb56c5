"""File staging: replays start from the files the recorded run started from, and afterwards
everything is exactly as it was (content and mtimes), even after a killed process."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from statesnap.record.journal import Record, RecordWriter
from statesnap.record.reader import read_record
from statesnap.replay.filestage import FileStage, recover
from statesnap.replay.runner import Runner
from suite_runs import run_suite, write_suite

HOUR_NS = 3600 * 10**9


def _fp(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _record(tmp_path: Path, root: Path, changes: list[dict[str, Any]]) -> Record:
    path = tmp_path / "r.jsonl"
    w = RecordWriter(path)
    w.write({"type": "header", "format": 1, "rootdir": str(root), "watch_roots": [str(root)]})
    w.write({"type": "test", "index": 0, "nodeid": "t.py::t", "outcome": "passed",
             "phases": {"call": "passed"}, "changes": changes})
    w.close()
    return read_record(path)


def _state(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def _leftovers(tmp_path: Path) -> tuple[Path, Record]:
    """A tree as a run left it: it built an artifact and touched a source into the future."""
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "build").mkdir()
    data = root / "src" / "data.txt"
    data.write_text("data")
    start = _fp(data)
    os.utime(data, ns=(start["mtime_ns"] + HOUR_NS, start["mtime_ns"] + HOUR_NS))
    artifact = root / "build" / "artifact.txt"
    artifact.write_text("built by the run")
    record = _record(tmp_path, root, [
        {"probe": "files", "key": "build/artifact.txt", "change": "added", "before": None,
         "after": _fp(artifact)},
        {"probe": "files", "key": "src/data.txt", "change": "changed", "before": start,
         "after": _fp(data)},
    ])
    return root, record


def test_the_stage_sets_leftovers_aside_and_puts_everything_back(tmp_path: Path) -> None:
    root, record = _leftovers(tmp_path)
    data, artifact = root / "src" / "data.txt", root / "build" / "artifact.txt"
    start_mtime = record.tests[0].changes[1].before["mtime_ns"]
    left = _state(root)
    stage = FileStage.from_record(record, stash_root=tmp_path / "stage")
    assert stage.created == [artifact]
    assert stage.mtimes == {data: start_mtime}
    stage.enter()
    assert not artifact.exists()
    assert data.stat().st_mtime_ns == start_mtime
    # The replay does what the run did, and more: rebuilds, rewrites the source.
    artifact.write_text("built by the replay")
    data.write_text("rewritten by the replay")
    stage.exit()
    assert _state(root) == left
    assert not (tmp_path / "stage").exists()


def test_a_stash_left_by_a_killed_process_is_put_back(tmp_path: Path) -> None:
    root, record = _leftovers(tmp_path)
    left = _state(root)
    stage = FileStage.from_record(record, stash_root=tmp_path / "stage")
    stage.enter()
    (root / "build" / "artifact.txt").write_text("half a replay")
    # ... and the process dies here: no exit().  The next one to stage puts things back.
    restored = recover(tmp_path / "stage")
    assert root / "build" / "artifact.txt" in restored
    assert (root / "build" / "artifact.txt").read_text() == "built by the run"
    assert (root / "src" / "data.txt").read_text() == "data"
    assert list((tmp_path / "stage").iterdir()) == []
    # mtimes were only set, not stashed by path: the copy brought the run's one back.
    assert _state(root) == left


def test_what_cannot_be_put_back_is_listed(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    record = _record(tmp_path, root, [
        {"probe": "files", "key": "gone.txt", "change": "removed",
         "before": {"size": 3, "mtime_ns": 1}, "after": None},
        {"probe": "files", "key": "grew.txt", "change": "changed",
         "before": {"size": 3, "mtime_ns": 1}, "after": {"size": 9, "mtime_ns": 2}},
        {"probe": "files", "key": "/elsewhere/abs.txt", "change": "added", "before": None,
         "after": {"size": 1, "mtime_ns": 1}},
    ])
    stage = FileStage.from_record(record)
    assert set(stage.unrestorable) == {root / "gone.txt", root / "grew.txt"}
    assert "deleted" in stage.unrestorable[root / "gone.txt"]
    assert "3 → 9 bytes" in stage.unrestorable[root / "grew.txt"]
    assert stage.created == [Path("/elsewhere/abs.txt")]  # absolute keys stay absolute


def test_a_record_without_file_changes_stages_nothing(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    stage = FileStage.from_record(_record(tmp_path, root, []))
    assert stage.empty
    stage.enter()
    stage.exit()


LEFTOVER_SUITE = {
    "src/data.txt": "data\n",
    "build/.keep": "",
    "test_fs.py": '''
        import os, time

        def test_a_builds():
            open("build/artifact.txt", "w").write("built")

        def test_b_touches_into_the_future():
            future = time.time() + 3600
            os.utime("src/data.txt", (future, future))

        def test_c_victim_of_the_artifact():
            assert not os.path.exists("build/artifact.txt")

        def test_d_victim_of_the_mtime():
            # Like mypy's incremental cache: a source newer than now breaks freshness checks.
            assert os.stat("src/data.txt").st_mtime <= time.time()
        ''',
}


def test_leftovers_of_the_run_do_not_hide_the_polluter(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", LEFTOVER_SUITE)
    run = run_suite(root, tmp_path / "out")
    artifact = run.finding("test_c_victim_of_the_artifact")
    assert artifact["status"] == "verified", run.output[-3000:]
    assert artifact["polluters"] == ["test_fs.py::test_a_builds"]
    assert (artifact["probe"], artifact["key"]) == ("files", "build/artifact.txt")
    mtime = run.finding("test_d_victim_of_the_mtime")
    assert mtime["status"] == "verified"
    assert mtime["polluters"] == ["test_fs.py::test_b_touches_into_the_future"]
    # Afterwards the tree is as the run left it: the artifact, and the future mtime.
    assert (root / "build" / "artifact.txt").read_text() == "built"
    assert os.stat(root / "src" / "data.txt").st_mtime > time.time() + 3000


def test_without_staging_the_victim_fails_alone(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", LEFTOVER_SUITE)
    run = run_suite(root, tmp_path / "out", budget=0)
    record = run.record()
    victim = "test_fs.py::test_c_victim_of_the_artifact"
    unstaged = Runner(record, stage_files=False).run([victim], label="alone")
    assert unstaged.failed(victim)
    staged = Runner(record).run([victim], label="alone")
    assert staged.passed(victim)
    assert (root / "build" / "artifact.txt").read_text() == "built"


def _made_tree(tmp_path: Path) -> tuple[Path, Record]:
    """A tree a run made: ``data/out/x.txt`` where no ``data/`` was when it started."""
    root = tmp_path / "proj"
    root.mkdir()
    out = root / "data" / "out"
    out.mkdir(parents=True)
    (out / "x.txt").write_text("exported by the run")
    record = _record(tmp_path, root, [
        {"probe": "files", "key": "data/", "change": "added", "before": None,
         "after": "directory"},
        {"probe": "files", "key": "data/out/", "change": "added", "before": None,
         "after": "directory"},
        {"probe": "files", "key": "data/out/x.txt", "change": "added", "before": None,
         "after": _fp(out / "x.txt")},
    ])
    return root, record


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_directory_the_run_made_is_set_aside_and_put_back(tmp_path: Path) -> None:
    # Only its files set aside, the run's empty folders stayed: a victim asserting the
    # folder is absent failed alone, and was called "not order-dependent".
    root, record = _made_tree(tmp_path)
    left = _tree(root)
    stage = FileStage.from_record(record, stash_root=tmp_path / "stage")
    assert stage.created_dirs == [root / "data", root / "data" / "out"]
    stage.enter()
    assert not (root / "data").exists()
    # The replay makes the folder again, with other files in it.
    (root / "data" / "out").mkdir(parents=True)
    (root / "data" / "out" / "y.txt").write_text("the replay's")
    stage.exit()
    assert _tree(root) == left
    assert (root / "data" / "out" / "x.txt").read_text() == "exported by the run"
    assert not (tmp_path / "stage").exists()


def test_a_set_aside_directory_left_by_a_killed_process_is_put_back(tmp_path: Path) -> None:
    root, record = _made_tree(tmp_path)
    left = _tree(root)
    FileStage.from_record(record, stash_root=tmp_path / "stage").enter()
    (root / "data" / "out").mkdir(parents=True)  # half a replay, then the process dies
    (root / "data" / "out" / "x.txt").write_text("the replay's")
    restored = recover(tmp_path / "stage")
    assert root / "data" in restored
    assert _tree(root) == left
    assert (root / "data" / "out" / "x.txt").read_text() == "exported by the run"


def test_a_directory_that_cannot_be_set_aside_stays_with_its_files(tmp_path: Path) -> None:
    # The stash inside the folder itself: no rename can move a folder into itself.  The
    # files in it go aside one by one, and the folder is never removed.
    root, record = _made_tree(tmp_path)
    stage = FileStage.from_record(record, stash_root=root / "data" / "stash")
    stage.enter()
    assert "could not be set aside" in stage.unrestorable[root / "data"]
    assert (root / "data" / "out").is_dir() and not (root / "data" / "out" / "x.txt").exists()
    stage.exit()
    assert (root / "data" / "out" / "x.txt").read_text() == "exported by the run"
