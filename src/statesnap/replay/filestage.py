"""Put the watched files back as the recorded run found them, around each replay.

Files and directories the run created are moved aside and changed files get their mtime back;
afterwards all is as before the replay.  What cannot be put back is in
:attr:`FileStage.unrestorable`; a stash left by a killed process is put back on the next
entry.  See docs/ARCHITECTURE.md ("Replays").
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statesnap.base.fsinfo import parse_folder_fingerprint
from statesnap.record.journal import Record
from statesnap.state.diff import Change

#: Files the run changed are copied aside (content and mtime) up to this many bytes in all;
#: beyond it only their mtime is put back, and only where the replay left them untouched.
COPY_LIMIT = 256 * 1024 * 1024
MANIFEST = "manifest.json"


def _resolve(key: str, rootdir: Path) -> Path:
    p = Path(key)
    return p if p.is_absolute() else rootdir / p


def _fingerprint(value: Any) -> tuple[int | None, int | None]:
    """``(size, mtime_ns)`` of a files fingerprint (None where absent)."""
    if not isinstance(value, dict):
        return None, None
    size, mtime = value.get("size"), value.get("mtime_ns")
    return (size if isinstance(size, int) else None, mtime if isinstance(mtime, int) else None)


@dataclass
class FileStage:
    """Created files to set aside, and original mtimes to put back, from a record."""

    created: list[Path] = field(default_factory=list)
    #: Directories the run created (``dir/`` keys that were absent when it started): a victim
    #: that makes or expects to miss one must not find the run's own left there.
    created_dirs: list[Path] = field(default_factory=list)
    #: Files the run changed: their mtime when the run started.
    mtimes: dict[Path, int] = field(default_factory=dict)
    #: ``path: why`` for changes a replay cannot undo (deleted files, rewritten content).
    unrestorable: dict[Path, str] = field(default_factory=dict)
    #: Where stashes go (a fresh folder under it per replay); default: the temp dir.
    stash_root: Path | None = None
    _stash: Path | None = None
    _moved: list[tuple[Path, Path]] = field(default_factory=list)
    _copies: list[tuple[Path, Path]] = field(default_factory=list)
    #: Directories the run made that could not be set aside in this replay.
    _kept: list[Path] = field(default_factory=list)
    _set_mtimes: dict[Path, tuple[int, int, int]] = field(default_factory=dict)

    @classmethod
    def from_record(cls, record: Record, stash_root: Path | None = None) -> FileStage:
        rootdir = Path(record.header.get("rootdir") or ".")
        first: dict[str, Any] = {}
        last: dict[str, Any] = {}
        changes = [*record.collection]
        for t in sorted(record.tests, key=lambda t: t.index):
            changes.extend(t.changes)
        made_dirs: dict[str, bool] = {}
        folded: dict[str, Change] = {}
        for ch in changes:
            if ch.probe != "files":
                continue
            if ch.key.endswith("/"):
                # A directory: absent at the start, there at the end (its files are keys of
                # their own; one the run removed cannot be put back with them).
                made_dirs.setdefault(ch.key, ch.before is None)
                summary = parse_folder_fingerprint(ch.after if ch.after is not None
                                                   else ch.before)
                if summary is not None and ch.before is not None:
                    # A folder that was there before, with thousands of its entries changed:
                    # the record keeps their count, not their names, so they stay in place.
                    folded[ch.key] = ch
                continue
            first.setdefault(ch.key, ch.before)
            last[ch.key] = None if ch.change == "removed" else ch.after
        stage = cls(stash_root=stash_root)
        for key, ch in folded.items():
            stage.unrestorable[_resolve(key.rstrip("/"), rootdir)] = (
                f"{_folded_words(ch)} by the recorded run (summarised in the record: "
                "only a few of their names are known); left as they are")
        stage.created_dirs = [_resolve(k.rstrip("/"), rootdir)
                              for k, made in made_dirs.items() if made]
        for key, before in first.items():
            path = _resolve(key, rootdir)
            size0, mtime0 = _fingerprint(before)
            if before is None:
                stage.created.append(path)  # the run made it: not there when it started
                continue
            if last.get(key) is None:
                stage.unrestorable[path] = "deleted by the recorded run"
                continue
            if mtime0 is not None:
                stage.mtimes[path] = mtime0
            size1, _ = _fingerprint(last.get(key))
            if size0 is not None and size1 is not None and size0 != size1:
                stage.unrestorable[path] = (f"content changed by the recorded run ({size0} → "
                                            f"{size1} bytes); only its mtime is put back")
        return stage

    @property
    def empty(self) -> bool:
        return not self.created and not self.mtimes and not self.created_dirs

    # -- around one replay ------------------------------------------------------------------
    def enter(self) -> None:
        """Set the run's leftovers aside; safe to call again only after :meth:`exit`."""
        if self.empty:
            return
        if self.stash_root is not None:
            self.stash_root.mkdir(parents=True, exist_ok=True)
            recover(self.stash_root)
        self._stash = Path(tempfile.mkdtemp(prefix="stage-", dir=self.stash_root))
        self._moved, self._copies, self._set_mtimes = [], [], {}
        # The outermost created directories there now go aside first, with all in them.
        dirs: list[Path] = []
        for d in sorted(self.created_dirs, key=lambda p: len(p.parts)):
            if _is_dir(d) and not any(d.is_relative_to(o) for o in dirs):
                dirs.append(d)
        plan_dirs = [(d, self._stash / f"d{i}-{d.name}") for i, d in enumerate(dirs)]
        # The manifest goes first, so a process killed halfway leaves a stash that can be
        # put back by whoever comes next (see recover()).
        _write_manifest(self._stash, plan_dirs, [])
        self._kept = []
        for orig, target in plan_dirs:
            try:
                # A rename or nothing: a tree copied across filesystems could be cut halfway
                # by a kill, and recover() would then put back half of it.
                os.rename(orig, target)
            except OSError as exc:
                self.unrestorable[orig] = (f"made by the recorded run; could not be set aside "
                                           f"({exc.strerror or exc})")
                self._kept.append(orig)
                continue
            self._moved.append((orig, target))
        moved_dirs = [orig for orig, _ in self._moved]
        plan_moved = [(p, self._stash / f"c{i}-{p.name}") for i, p in enumerate(self.created)
                      if (p.is_file() or p.is_symlink())
                      and not any(p.is_relative_to(d) for d in moved_dirs)]
        plan_copies: list[tuple[Path, Path]] = []
        budget = COPY_LIMIT
        for i, path in enumerate(self.mtimes):
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if size <= budget:
                budget -= size
                plan_copies.append((path, self._stash / f"m{i}-{path.name}"))
        _write_manifest(self._stash, [*self._moved, *plan_moved], plan_copies)
        for orig, target in plan_moved:
            shutil.move(str(orig), target)
            self._moved.append((orig, target))
        for orig, target in plan_copies:
            try:
                shutil.copy2(orig, target, follow_symlinks=False)
            except OSError:
                continue
            self._copies.append((orig, target))
        copied = {orig for orig, _ in self._copies}
        for path, ns in self.mtimes.items():
            try:
                st = path.stat()
                os.utime(path, ns=(st.st_atime_ns, ns))
            except OSError:
                continue
            if path not in copied:
                # No copy: remember what was there so exit() can tell whether the replay
                # rewrote it (then its mtime is left alone: an old mtime on new content is
                # the very thing that breaks mtime-keyed caches).
                self._set_mtimes[path] = (st.st_atime_ns, st.st_mtime_ns, ns)

    def exit(self) -> None:
        """Undo what the replay did to the staged paths and put the leftovers back."""
        if self._stash is None:
            return
        for path in self.created:
            # What the replay itself created in those places is the replay's, not the user's.
            if path.is_file() or path.is_symlink():
                try:
                    path.unlink()
                except OSError:
                    pass
        for d in sorted(self.created_dirs, key=lambda p: len(p.parts)):
            # One the run made that could not be set aside is the run's, not the replay's.
            if _is_dir(d) and not any(d.is_relative_to(k) for k in self._kept):
                shutil.rmtree(d, ignore_errors=True)
        _put_back(self._moved, self._copies)
        for path, (atime, mtime, staged) in self._set_mtimes.items():
            try:
                if path.stat().st_mtime_ns == staged:
                    os.utime(path, ns=(atime, mtime))
            except OSError:
                pass
        shutil.rmtree(self._stash, ignore_errors=True)
        self._stash = None
        self._moved, self._copies, self._set_mtimes, self._kept = [], [], {}, []
        if self.stash_root is not None:
            try:
                self.stash_root.rmdir()  # only when empty: the logs folder stays flat
            except OSError:
                pass


def _folded_words(ch: Change) -> str:
    """``4,000 of its entries added`` / ``… removed`` / ``… changed``: a summarised folder."""
    old, new = parse_folder_fingerprint(ch.before), parse_folder_fingerprint(ch.after)
    if new is None:
        count = (old.files + old.dirs) if old is not None else 0
        return f"{count:,} of its entries removed"
    if old is None:
        return f"{new.files + new.dirs:,} of its entries added"
    return f"{old.files:,} → {new.files:,} files in it"


def _write_manifest(stash: Path, moved: list[tuple[Path, Path]],
                    copies: list[tuple[Path, Path]]) -> None:
    data = {"moved": [[str(a), str(b)] for a, b in moved],
            "copies": [[str(a), str(b)] for a, b in copies]}
    tmp = stash / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, stash / MANIFEST)


def _is_dir(path: Path) -> bool:
    """A directory, not a link to one."""
    return path.is_dir() and not path.is_symlink()


def _there(path: Path) -> bool:
    return path.is_symlink() or path.exists()


def _put_back(moved: list[tuple[Path, Path]], copies: list[tuple[Path, Path]]) -> None:
    # Directories were planned first: each goes back before the files beside it.
    for orig, target in moved:
        if not _there(target):
            continue
        if _is_dir(target) and _there(orig):
            # The replay's own in the run's directory's place (exit() removed it unless it
            # could not): a move would put the directory inside it.
            if _is_dir(orig):
                shutil.rmtree(orig, ignore_errors=True)
            else:
                orig.unlink(missing_ok=True)
        orig.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(target), orig)
    for orig, target in copies:
        if target.is_file():
            try:
                # Content and mtime exactly as they were before the replay.
                shutil.copy2(target, orig, follow_symlinks=False)
            except OSError:
                pass


def recover(stash_root: Path) -> list[Path]:
    """Put back every stash under ``stash_root`` that a killed process left; the paths."""
    restored: list[Path] = []
    try:
        stashes = [d for d in stash_root.iterdir() if d.name.startswith("stage-")]
    except OSError:
        return restored
    for stash in stashes:
        try:
            data = json.loads((stash / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            shutil.rmtree(stash, ignore_errors=True)
            continue
        moved = [(Path(a), Path(b)) for a, b in data.get("moved") or []]
        copies = [(Path(a), Path(b)) for a, b in data.get("copies") or []]
        for orig, target in moved:
            if _there(target) and _there(orig):
                # A replay's own file or directory in the user's one's place.
                if _is_dir(orig):
                    shutil.rmtree(orig, ignore_errors=True)
                else:
                    orig.unlink()
        _put_back(moved, copies)
        restored += [orig for orig, _ in [*moved, *copies]]
        shutil.rmtree(stash, ignore_errors=True)
    return restored
