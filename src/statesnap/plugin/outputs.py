"""The files a session was asked to write (record, summary JSON, report).

A path the user named that cannot be written is a usage error at start (:func:`unwritable`).
One asked for and not written at the end fails a passing session (:func:`exit_status`),
unless the disk had no room for it (full, or over quota): a disk that fills up costs
statesnap's files, never the tests' exit code, and the terminal names each file not written.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from statesnap.base.plain import Value


def unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written (None: it can).

    Missing parent directories are created at the end, so the nearest existing ancestor is
    what must take a new entry; it is tried for real (a file created and removed), since
    ``os.access`` says yes to root everywhere, ``/proc`` included.
    """
    if path.is_dir():
        return "is a directory, expected a file path"
    ancestor = path.parent
    while not ancestor.exists():
        if ancestor.parent == ancestor:
            return f"{ancestor} does not exist"
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is not a directory"
    try:
        fd, probe = tempfile.mkstemp(prefix=".statesnap-write-check-", dir=ancestor)
    except OSError as exc:
        return f"cannot write in {ancestor} ({exc.strerror or exc})"
    os.close(fd)
    os.unlink(probe)
    return None


class Outputs(Value):
    """Which asked-for files were written at the end, and which could not be."""

    _fields = ("asked", "done", "said", "no_room")
    __slots__ = _fields

    def __init__(self, asked: dict[Path, str] | None = None, done: set[Path] | None = None,
                 said: set[Path] | None = None, no_room: set[Path] | None = None) -> None:
        self.asked: dict[Path, str] = {} if asked is None else asked
        self.done: set[Path] = set() if done is None else done
        #: Files whose failure was already said in a line of their own.
        self.said: set[Path] = set() if said is None else said
        #: Files the disk had no room for (the record: cut short mid-run).
        self.no_room: set[Path] = set() if no_room is None else no_room

    def ask(self, label: str, path: Path | None) -> None:
        if path is not None:
            self.asked[path] = label

    def written(self, path: Path) -> None:
        self.done.add(path)

    def failed(self, path: Path, no_room: bool = False) -> None:
        self.said.add(path)
        if no_room:
            self.no_room.add(path)

    def missing(self) -> list[tuple[str, Path]]:
        """``(option, path)`` of every asked-for file that was not written."""
        return [(label, p) for p, label in self.asked.items() if p not in self.done]

    def missing_by_fault(self) -> bool:
        """Whether a file is missing for another reason than a disk without room."""
        return any(p not in self.no_room for _, p in self.missing())


def exit_status(current: int | pytest.ExitCode, outputs_missing: bool) -> int | pytest.ExitCode:
    """The session's exit status once the outputs are known.

    A run that would pass fails with pytest's internal-error code (3) when a file it was
    asked for is missing; a run that already fails keeps its own code.
    """
    if outputs_missing and current == pytest.ExitCode.OK:
        return pytest.ExitCode.INTERNAL_ERROR
    return current
