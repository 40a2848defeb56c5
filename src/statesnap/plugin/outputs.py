"""The files a session was asked to write (record, summary JSON, report).

A path that cannot be written is a usage error at start (:func:`unwritable`); one asked for and
not written at the end fails the session (:func:`exit_status`).
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

    _fields = ("asked", "done", "said")
    __slots__ = _fields

    def __init__(self, asked: dict[Path, str] | None = None, done: set[Path] | None = None,
                 said: set[Path] | None = None) -> None:
        self.asked: dict[Path, str] = {} if asked is None else asked
        self.done: set[Path] = set() if done is None else done
        #: Files whose failure was already said in a line of their own.
        self.said: set[Path] = set() if said is None else said

    def ask(self, label: str, path: Path | None) -> None:
        if path is not None:
            self.asked[path] = label

    def written(self, path: Path) -> None:
        self.done.add(path)

    def failed(self, path: Path) -> None:
        self.said.add(path)

    def missing(self) -> list[tuple[str, Path]]:
        """``(option, path)`` of every asked-for file that was not written."""
        return [(label, p) for p, label in self.asked.items() if p not in self.done]


def exit_status(current: int | pytest.ExitCode, outputs_missing: bool) -> int | pytest.ExitCode:
    """The session's exit status once the outputs are known.

    A run that would pass fails with pytest's internal-error code (3) when a file it was
    asked for is missing; a run that already fails keeps its own code.
    """
    if outputs_missing and current == pytest.ExitCode.OK:
        return pytest.ExitCode.INTERNAL_ERROR
    return current
