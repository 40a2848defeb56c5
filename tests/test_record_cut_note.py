"""A record the disk refuses ends with whole lines: the ``cut`` note is whole or absent, and a
line appended after the record closed is whole or taken back.

Without a reserve (a filesystem with no ``fallocate``), the note goes into whatever room the
disk has left, and a disk with room for part of it takes part of it: the record must then end
with its last whole line, not with half a note that reads as a line a crash cut short.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from statesnap.record import reserve
from statesnap.record.journal import RecordWriter, append_lines
from statesnap.record.reader import read_record


def _full_disk_writer(path: Path, monkeypatch: pytest.MonkeyPatch, room: int) -> RecordWriter:
    """A writer without a reserve whose file's disk, once a header is in, refuses every
    line and takes only ``room`` bytes of anything after."""
    monkeypatch.setattr(reserve, "_load", lambda: None)
    writer = RecordWriter(path, keep_going=True)
    writer.write({"type": "header", "format": 2})
    real_write = os.write
    state = {"refused": False}

    def write(fd: int, data: bytes) -> int:
        if fd != writer.fileno:
            return real_write(fd, data)
        if not state["refused"]:  # the test line: the disk is full
            state["refused"] = True
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, bytes(data[:room]))  # the note: as much as fits

    monkeypatch.setattr(os, "write", write)
    return writer


def test_a_note_the_disk_took_in_part_is_taken_back(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.jsonl"
    writer = _full_disk_writer(path, monkeypatch, room=10)
    writer.write({"type": "test", "index": 0, "nodeid": "t.py::test_a", "outcome": "passed"})
    monkeypatch.undo()
    writer.close()
    assert writer.cut is not None and not writer.cut_noted
    assert path.read_text(encoding="utf-8") == '{"type":"header","format":2}\n'
    record = read_record(path)
    assert record.cut is None and not record.truncated


def test_a_note_that_fits_is_written_whole(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.jsonl"
    writer = _full_disk_writer(path, monkeypatch, room=4096)
    writer.write({"type": "test", "index": 0, "nodeid": "t.py::test_a", "outcome": "passed"})
    writer.write({"type": "footer"})  # dropped: the record was cut
    monkeypatch.undo()
    writer.close()
    assert writer.cut_noted
    record = read_record(path)
    assert record.cut is not None and record.cut["errno"] == "ENOSPC"
    assert record.cut["lines"] == 1 and record.footer is None and not record.crashed


def test_a_line_appended_in_part_is_taken_back(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # The session appends to its closed record (what was let go of, the verdicts); a disk
    # that fills up takes part of a line, and a later append must not run into it.
    path = tmp_path / "run.jsonl"
    writer = RecordWriter(path)
    writer.write({"type": "header", "format": 2})
    writer.write({"type": "footer"})
    writer.close()
    before = path.read_bytes()
    real_write = os.write

    def write(fd: int, data: bytes) -> int:
        if len(data) < 20:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, bytes(data[:10]))  # part of the line, then the disk is full

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(OSError):
        append_lines(path, [{"type": "released", "actions": [{"what": "a" * 40}]}])
    monkeypatch.undo()
    assert path.read_bytes() == before
    append_lines(path, [{"type": "released", "actions": [{"what": "b"}]}])  # room again
    record = read_record(path)  # every line whole: no malformed line in the middle
    assert record.released == [{"what": "b"}] and not record.truncated
