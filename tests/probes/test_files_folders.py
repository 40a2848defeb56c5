"""A folder that was there before and gains hundreds of files: one summarised change.

The folder keeps its key (``data/``, ``changed``), its summaries counting what it holds
directly; a key-level replay's restore removes what it gained (and keeps what it held), and
file staging, which cannot name every new file from the record, says so for the folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from statesnap.base.fsinfo import parse_folder_fingerprint
from statesnap.probes.base import ProbeContext
from statesnap.probes.files.probe import FilesProbe
from statesnap.record.journal import Record, TestEntry
from statesnap.replay.filestage import FileStage
from statesnap.state.diff import diff_maps

NEW = 700


@pytest.mark.parametrize("use_inotify", [True, False] if sys.platform.startswith("linux")
                         else [False], ids=lambda v: "inotify" if v else "scan")
def test_a_folder_there_before_filled_with_files(tmp_path: Path, use_inotify: bool) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (data / name).write_text("old")
    (tmp_path / "keep.txt").write_text("k")
    probe = FilesProbe(use_inotify=use_inotify)
    probe.setup(ProbeContext(rootdir=tmp_path, watch_roots=(tmp_path,)))
    try:
        probe.token()
        saved = probe.save()
        for i in range(NEW):
            (data / f"new{i}.txt").write_text("xy")
        (tmp_path / "keep.txt").write_text("changed too")
        probe.token()
        changes = diff_maps("files", saved, probe.read())  # type: ignore[arg-type]
        assert [(c.key, c.change) for c in changes] == [("data/", "changed"),
                                                        ("keep.txt", "changed")]
        folder = changes[0]
        old, new = parse_folder_fingerprint(folder.before), parse_folder_fingerprint(folder.after)
        assert old is not None and new is not None
        assert (old.files, old.size) == (3, 9)
        assert (new.files, new.size) == (3 + NEW, 9 + 2 * NEW)
        assert old.digest != new.digest
        assert 0 < len(new.examples) <= 5 and all(e.startswith("data/new") for e in new.examples)

        # A key-level replay: what the folder gained goes, what it held stays.
        assert probe.restore(saved, ["data/"]) == ["data/"]
        assert sorted(p.name for p in data.iterdir()) == ["a.txt", "b.txt", "c.txt"]
    finally:
        probe.close()

    # File staging cannot set the new files aside by name: it says so, for the folder.
    record = Record(path=tmp_path / "r.jsonl", header={"rootdir": str(tmp_path)},
                    tests=[TestEntry(0, "test_x.py::test_fills", "passed", changes=[folder])])
    stage = FileStage.from_record(record)
    assert stage.created == [] and stage.created_dirs == []
    note = stage.unrestorable[data]
    assert f"3 → {3 + NEW:,} files" in note and "summarised" in note
