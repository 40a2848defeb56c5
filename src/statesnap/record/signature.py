"""The failure signature: what a failure is, so that two failures can be told apart.

The exception type plus the test's own failing frame (``file:line``, stored as ``where``); a
victim failing alone with another signature still depends on the order.  Records without
``where`` compare types only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from statesnap.base.plain import Frozen

#: The exception type statesnap gives a test whose interpreter died.
CRASH = "crash"


class Signature(Frozen):
    """An exception type and the ``file:line`` of the test's failing frame (either unknown)."""

    _fields = ("exc_type", "where")
    __slots__ = _fields

    def __init__(self, exc_type: str | None, where: str | None = None) -> None:
        self.exc_type: Final = exc_type
        self.where: Final = where

    @classmethod
    def of(cls, failure: Mapping[str, Any] | None) -> Signature:
        """The signature of a record's ``failure`` entry."""
        if not failure:
            return cls(None)
        exc, where = failure.get("exc_type"), failure.get("where")
        return cls(str(exc) if exc else None, str(where) if where else None)

    def same_as(self, other: Signature) -> bool:
        """Whether two failures are the same one.

        What one side does not know cannot tell them apart: an unknown type (or a crash,
        which has no frame) matches any, and a frame is compared only when both have one.
        """
        if self.exc_type in (None, CRASH) or other.exc_type in (None, CRASH):
            return True
        if self.exc_type != other.exc_type:
            return False
        return self.where is None or other.where is None or self.where == other.where

    def text(self) -> str:
        """``AssertionError at tests/test_x.py:12``."""
        exc = self.exc_type or "a failure"
        return f"{exc} at {self.where}" if self.where else exc


def failing_frame(entries: Iterable[Any], test_file: Path | None, rootdir: Path) -> str | None:
    """``file:line`` (relative to ``rootdir`` where under it) of the test's failing frame.

    ``entries``: traceback entries with ``path`` and a 0-based ``lineno`` (pytest's
    ``ExceptionInfo.traceback``).  The deepest one in ``test_file`` wins, else the deepest
    under ``rootdir`` (a fixture in a conftest), else None.
    """
    in_test: tuple[str, int] | None = None
    in_root: tuple[str, int] | None = None
    root = str(rootdir)
    own = str(test_file) if test_file is not None else None
    for entry in entries:
        path = str(getattr(entry, "path", "") or "")
        line = int(getattr(entry, "lineno", -1)) + 1
        if not path or line <= 0:
            continue
        if own is not None and path == own:
            in_test = (path, line)
        if path.startswith(root + os.sep):
            in_root = (path, line)
    found = in_test or in_root
    if found is None:
        return None
    path, line = found
    rel = os.path.relpath(path, root) if path.startswith(root + os.sep) else path
    return f"{rel}:{line}"
