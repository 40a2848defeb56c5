"""A replay worker's own copy of the project tree, put back to the checkout's state before each
replay.

Replays side by side in one tree would see each other's files (and a staged file moved aside
by one under the other's feet), so each worker replays in a copy of its own: a backfill's Dask
worker (:mod:`statesnap.backfill.tasks`), a session's replay worker
(:mod:`statesnap.proof.sidebyside`).  Copied once (mtimes kept); before every replay one walk
removes what the checkout lacks and copies again what differs in size or mtime.  A project
past the owner's limit (:data:`MAX_COPY_BYTES` for a session's workers), or one the temporary
folder has no room for, is not copied
(an :class:`OSError`, as a failed copy).  The record's paths follow the copy with
:func:`mapped_header`.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

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


#: The largest project a session's replay worker copies (:mod:`statesnap.proof.sidebyside`):
#: past it, replays share the checkout one at a time rather than fill the temporary folder
#: with one copy per worker.
MAX_COPY_BYTES = 1 << 30

#: What a copy leaves free on the temporary folder's filesystem, at least.
KEEP_FREE_BYTES = 64 << 20


def _check_room(size: int, where: Path, most: int | None) -> None:
    """Refuse (:class:`OSError`, as a failed copy) a copy past ``most`` bytes or one that
    would leave the temporary folder's filesystem less than :data:`KEEP_FREE_BYTES` free."""
    if most is not None and size > most:
        raise OSError(errno.EFBIG, f"the project holds {size / (1 << 20):.0f} MiB to copy, "
                                   f"more than {most >> 20} MiB")
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return
    if free < size + KEEP_FREE_BYTES:
        raise OSError(errno.ENOSPC, f"the project holds {size / (1 << 20):.0f} MiB to copy, "
                                    f"and {free / (1 << 20):.0f} MiB are free in {where.parent}")


class ScratchTree:
    """The scratch copy of ``source`` for this process (made on first use)."""

    def __init__(self, source: Path, exclude: Iterable[str] = (),
                 prefix: str = "statesnap-backfill-", most: int | None = None) -> None:
        self.source = source
        self.ignored = _ignore(exclude)
        self._source_files = _files(source, self.ignored)
        self.base = Path(tempfile.mkdtemp(prefix=prefix))
        self.tree = self.base / source.name
        try:
            _check_room(sum(size for size, _ in self._source_files.values()), self.base, most)
            shutil.copytree(source, self.tree, symlinks=True,
                            ignore=lambda _d, names: [n for n in names if n in self.ignored])
            self.logs = self.base / "logs"
            self.logs.mkdir()
        except BaseException:
            # A copy the disk had no room for is no copy: leave none of it behind.
            shutil.rmtree(self.base, ignore_errors=True)
            raise
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


def map_paths(value: Any, old: str, new: str) -> Any:
    """``value`` with the path prefix ``old`` replaced by ``new`` in every string in it."""
    if isinstance(value, str):
        if value == old or value.startswith(old.rstrip("/") + "/"):
            return new + value[len(old):]
        return value.replace(f"={old}/", f"={new}/")
    if isinstance(value, list):
        return [map_paths(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: map_paths(v, old, new) for k, v in value.items()}
    return value


def mapped_header(header: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """A record's header with its project paths moved from ``old`` to ``new`` (a copy)."""
    out = dict(header)
    for name in ("rootdir", "invocation_dir", "replay", "inifile"):
        if name in out:
            out[name] = map_paths(out[name], old, new)
    return out
