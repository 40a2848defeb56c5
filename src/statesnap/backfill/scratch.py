"""A worker's own copy of the project tree, put back to the checkout's state before each replay.

Copied once (mtimes kept); before every replay one walk removes what the checkout lacks and
copies again what differs in size or mtime.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

#: Never copied: version control, environments, caches (a replay makes its own).
IGNORED = (".git", ".hg", ".venv", "venv", ".tox", ".nox", "__pycache__", ".pytest_cache",
           ".mypy_cache", ".ruff_cache", "node_modules")


def _ignore(extra: Iterable[str]) -> set[str]:
    return {*IGNORED, *extra}


def _files(root: Path, ignored: set[str]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in ignored]
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            out[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
    return out


class ScratchTree:
    """The scratch copy of ``source`` for this process (made on first use)."""

    def __init__(self, source: Path, exclude: Iterable[str] = ()) -> None:
        self.source = source
        self.ignored = _ignore(exclude)
        self.base = Path(tempfile.mkdtemp(prefix="statesnap-backfill-"))
        self.tree = self.base / source.name
        shutil.copytree(source, self.tree, symlinks=True,
                        ignore=lambda _d, names: [n for n in names if n in self.ignored])
        self.logs = self.base / "logs"
        self.logs.mkdir()
        self._source_files = _files(source, self.ignored)
        #: The commit the copy was made at (set by its owner).
        self.commit: str | None = None

    def reset(self) -> None:
        """Make the copy match the checkout again (files a replay created, changed, removed)."""
        mine = _files(self.tree, self.ignored)
        for rel in mine.keys() - self._source_files.keys():
            try:
                os.unlink(self.tree / rel)
            except OSError:
                pass
        for rel, stat in self._source_files.items():
            if mine.get(rel) != stat:
                target = self.tree / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    target.unlink(missing_ok=True)
                    shutil.copy2(self.source / rel, target, follow_symlinks=False)
                except OSError:
                    pass

    def remove(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)
