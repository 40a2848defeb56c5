"""Put the watched files back as the recorded run found them, around each replay.

A run leaves files behind: a build artifact, a cache, a file touched into the future.  A replay
that started among them would see a different world: the victim could fail alone, hiding the
polluter.  So before each replay the files the run created are moved aside and the mtimes it
changed are put back; afterwards whatever the replay created is removed and everything is
returned exactly as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statesnap.record import Record


def _resolve(key: str, roots: list[Path]) -> Path:
    p = Path(key)
    if p.is_absolute() or not roots:
        return p
    return roots[0] / p


def _mtime_ns(fingerprint: Any) -> int | None:
    if isinstance(fingerprint, dict):
        value = fingerprint.get("mtime_ns")
        return int(value) if isinstance(value, int) else None
    return None


@dataclass
class FileStage:
    """Created files to set aside, and original mtimes to put back, from a record."""

    created: list[Path] = field(default_factory=list)
    mtimes: dict[Path, int] = field(default_factory=dict)
    _stash: Path | None = None
    _moved: list[tuple[Path, Path]] = field(default_factory=list)
    _current_mtimes: dict[Path, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def from_record(cls, record: Record) -> FileStage:
        roots = [Path(r) for r in record.header.get("watch_roots") or []]
        first_state: dict[str, Any] = {}
        created: dict[str, None] = {}
        changes = [*record.collection]
        for t in record.tests:
            changes.extend(t.changes)
        for ch in changes:
            if ch.probe != "files":
                continue
            if ch.key not in first_state:
                first_state[ch.key] = ch.before
            if ch.change == "added" and first_state[ch.key] is None:
                created.setdefault(ch.key, None)
        stage = cls()
        for key in created:
            stage.created.append(_resolve(key, roots))
        for key, before in first_state.items():
            ns = _mtime_ns(before)
            if ns is not None:
                stage.mtimes[_resolve(key, roots)] = ns
        return stage

    @property
    def empty(self) -> bool:
        return not self.created and not self.mtimes

    def enter(self) -> None:
        if self.empty:
            return
        self._stash = Path(tempfile.mkdtemp(prefix="statesnap-stage-"))
        self._moved = []
        for i, path in enumerate(self.created):
            if path.is_file() or path.is_symlink():
                target = self._stash / f"{i}-{path.name}"
                shutil.move(str(path), target)
                self._moved.append((path, target))
        self._current_mtimes = {}
        for path, ns in self.mtimes.items():
            try:
                st = path.stat()
            except OSError:
                continue
            self._current_mtimes[path] = (st.st_atime_ns, st.st_mtime_ns)
            os.utime(path, ns=(st.st_atime_ns, ns))

    def exit(self) -> None:
        if self._stash is None:
            return
        for path in self.created:
            # What the replay itself created in those places is the replay's, not the user's.
            if path.is_file() or path.is_symlink():
                path.unlink()
        for orig, target in self._moved:
            orig.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(target), orig)
        for path, (atime, mtime) in self._current_mtimes.items():
            try:
                os.utime(path, ns=(atime, mtime))
            except OSError:
                pass
        shutil.rmtree(self._stash, ignore_errors=True)
        self._stash = None
