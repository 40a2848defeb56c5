"""Where records live by default, and how the CLI finds the last run's.

Default: ``<cache_dir>/statesnap/runs/<time>-<worker>-<pid>.jsonl`` under pytest's cache
directory, with ``<cache_dir>/statesnap/latest`` naming the newest.  Old runs are pruned to
:data:`KEEP_RUNS` so the cache does not grow without bound.  Where the cache cannot be
written, the record falls back to the temporary directory (:func:`fallback_record_path`).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

KEEP_RUNS = 20
LATEST = "latest"


def cache_root(config: Any) -> Path:
    cache = getattr(config, "cache", None)
    cachedir = getattr(cache, "_cachedir", None)
    if cachedir is not None:
        return Path(cachedir) / "statesnap"
    return Path(config.rootpath) / ".pytest_cache" / "statesnap"


def default_record_path(config: Any, worker: str) -> Path:
    root = cache_root(config) / "runs"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    # Microseconds too: two in-process runs (pytester) share the pid and the second.
    micros = time.time_ns() // 1000 % 1_000_000
    path = root / f"{stamp}-{micros:06d}-{worker}-{os.getpid()}.jsonl"
    _prune(root)
    return path


def fallback_record_path(default: Path) -> Path:
    """Where the record goes when its default place cannot be written (a read-only
    ``.pytest_cache``): the same name under ``<tmp>/statesnap-<uid>/runs/``, pruned alike.

    The temporary directory is shared by every user, and its names are guessable: the
    ``statesnap-<uid>`` folder is made private, and one that is not this user's own folder
    (another user's, or a link placed there to have the record truncate another file) is
    refused with an OSError naming it."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    own = Path(tempfile.gettempdir()) / f"statesnap-{uid}"
    try:
        own.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(own)
    if not stat.S_ISDIR(info.st_mode) or (hasattr(os, "getuid") and info.st_uid != uid):
        raise OSError(errno.EPERM, "not a folder of this user's own", str(own))
    root = own / "runs"
    _prune(root)
    return root / default.name


def _prune(root: Path) -> None:
    try:
        runs = sorted(root.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for old in runs[:-KEEP_RUNS]:
        try:
            old.unlink()
            shutil.rmtree(old.with_suffix(".logs"), ignore_errors=True)
        except OSError:
            pass


def mark_latest(record: Path) -> None:
    """Point ``latest`` at ``record`` (a text file: symlinks are not portable to CI caches)."""
    latest = record.parent.parent / LATEST
    tmp = latest.with_name(f".{LATEST}.{os.getpid()}")
    try:
        tmp.write_text(os.path.relpath(record, latest.parent) + "\n", encoding="utf-8")
        os.replace(tmp, latest)
    except OSError:
        pass


#: Files that mark a project's root: the lookup of the last run stops there, so a project
#: never picks up the record of another project in a folder above it (as ``/tmp`` may hold).
PROJECT_MARKERS = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg",
                   "setup.py", ".git")


def find_latest(start: Path | None = None) -> Path | None:
    """The last run's record, looked up from ``start`` (default cwd) and its parents, up to
    the first folder that holds a project marker (pytest's own rootdir candidates)."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        latest = d / ".pytest_cache" / "statesnap" / LATEST
        if latest.is_file():
            return (latest.parent / latest.read_text(encoding="utf-8").strip()).resolve()
        if any((d / marker).exists() for marker in PROJECT_MARKERS):
            return None
    return None
