"""Facts about files on disk: a filesystem's mtime resolution, and file fingerprints.

``mtime_resolution`` goes in the record header; the ``files`` probe's fingerprints (size, mtime,
and a flag when content changed while the mtime did not; a folder's summary when thousands of
its entries changed at once) are built and read back here, and
:func:`restore_plan` turns a record's ``files`` changes into what a replay must undo.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from statesnap.base.plain import Frozen, Value

#: Name prefix of the temporary file :func:`mtime_resolution` creates; the ``files`` probe
#: never reports a file with this prefix.
PROBE_FILE_PREFIX = ".statesnap-mtime-"

#: The size changed while the mtime did not (the mtime was put back, or the tick is coarse).
SIZE_CHANGED_MTIME_KEPT = "size-changed-mtime-kept"
#: The file was written but its size and mtime read the same as before.
REWRITTEN_STAT_KEPT = "rewritten-stat-kept"

# A probe value with a nonzero digit at every decimal place below the second, and an odd
# number of seconds (2023-11-14), so that each candidate granularity truncates it visibly.
_PROBE_NS = 1_700_000_001_123_456_789
_GRANULARITIES = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000,
                  1_000_000_000, 2_000_000_000)


def _granularity(wanted: int, got: int) -> int | None:
    """The smallest candidate tick that turns ``wanted`` into ``got`` (Linux truncates)."""
    for g in _GRANULARITIES:
        if got % g == 0 and abs(wanted - got) < g:
            return g
    return None


def _unescape_mount(field_text: str) -> str:
    # /proc/mounts writes space, tab, newline and backslash as octal escapes (\040 ...).
    out, i = [], 0
    while i < len(field_text):
        ch, esc = field_text[i], field_text[i + 1 : i + 4]
        if ch == "\\" and len(esc) == 3 and esc.isdigit():
            out.append(chr(int(esc, 8)))
            i += 4
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def filesystem_of(path: Path, mounts: str = "/proc/mounts") -> tuple[str, str] | None:
    """``(mount point, filesystem type)`` of the mount holding ``path``, from ``/proc/mounts``."""
    try:
        with open(mounts, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    target = os.path.realpath(path)
    best: tuple[str, str] | None = None
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        point = _unescape_mount(parts[1])
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        # The longest mount point wins; a later line with the same point was mounted over it.
        if inside and (best is None or len(point) >= len(best[0])):
            best = (point, parts[2])
    return best


def mtime_resolution(root: Path) -> dict[str, Any]:
    """Measure the mtime resolution of the filesystem holding ``root``.

    Creates a dot-prefixed file in ``root``, sets its mtime with ``os.utime(ns=...)`` to a
    value with nonzero low digits, and reads back what the filesystem kept.  Also notes the
    smallest mtime step seen between a few quick writes (the clock tick the kernel stamps
    writes with, which can be coarser than what ``utime`` can set).  The file is removed
    even on error.  Returns ``{"root", "resolution_ns", "write_tick_ns", "fs_type",
    "mount_point"}`` plus ``"error"`` when the measurement failed (``resolution_ns`` is then
    ``None``).
    """
    info: dict[str, Any] = {"root": str(root), "resolution_ns": None, "write_tick_ns": None}
    fs = filesystem_of(root)
    info["mount_point"], info["fs_type"] = fs if fs is not None else (None, None)
    path = Path(root) / f"{PROBE_FILE_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            info["write_tick_ns"] = _write_tick(fd)
            os.utime(fd, ns=(_PROBE_NS, _PROBE_NS))
            got = os.fstat(fd).st_mtime_ns
        finally:
            os.close(fd)
        # Read back through the path too: some network filesystems only settle on a fresh stat.
        got = os.stat(path).st_mtime_ns
        info["resolution_ns"] = _granularity(_PROBE_NS, got)
        if info["resolution_ns"] is None:
            info["error"] = f"mtime set to {_PROBE_NS} read back as {got}"
    except OSError as exc:
        info["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            info.setdefault("error", f"could not remove {path}: {exc}")
    return info


def _write_tick(fd: int, budget_s: float = 0.05) -> int | None:
    """Smallest positive mtime step between quick one-byte writes, or None if none moved.

    On a coarse clock every stamp is a tick boundary, so each step is a whole number of ticks
    and the smallest of three is the tick; on a fine clock it is the time between two writes.
    """
    steps: list[int] = []
    deadline = time.monotonic() + budget_s
    last = -1
    while len(steps) < 3 and time.monotonic() < deadline:
        os.pwrite(fd, b".", 0)
        now = os.fstat(fd).st_mtime_ns
        if last >= 0 and now > last:
            steps.append(now - last)
        last = now
    return min(steps) if steps else None


# -- file fingerprints ------------------------------------------------------------------------
class FileState(Frozen):
    """A parsed ``files`` fingerprint: size and mtime of a regular file, or a symlink target."""

    _fields = ("size", "mtime_ns", "symlink", "flag")
    __slots__ = _fields

    def __init__(self, size: int | None = None, mtime_ns: int | None = None,
                 symlink: str | None = None, flag: str | None = None) -> None:
        self.size: Final = size
        self.mtime_ns: Final = mtime_ns
        self.symlink: Final = symlink
        self.flag: Final = flag


def file_fingerprint(size: int, mtime_ns: int, flag: str | None = None) -> dict[str, Any]:
    """The fingerprint of a regular file: ``{"size", "mtime_ns"}``, plus ``"flag"`` if marked."""
    fp: dict[str, Any] = {"size": size, "mtime_ns": mtime_ns}
    if flag:
        fp["flag"] = flag
    return fp


def symlink_fingerprint(target: str) -> dict[str, Any]:
    """The fingerprint of a symbolic link: where it points (its own mtime means nothing)."""
    return {"symlink": target}


def parse_file_fingerprint(fp: object) -> FileState | None:
    """Read back :func:`file_fingerprint` / :func:`symlink_fingerprint`; None if neither."""
    if not isinstance(fp, Mapping):
        return None
    if isinstance(fp.get("symlink"), str):
        return FileState(symlink=fp["symlink"])
    size, mtime, flag = fp.get("size"), fp.get("mtime_ns"), fp.get("flag")
    if not isinstance(size, int) or not isinstance(mtime, int):
        return None
    return FileState(size, mtime, flag=flag if isinstance(flag, str) else None)


def stat_fingerprint(path: str) -> dict[str, Any] | None:
    """The fingerprint of what is at ``path`` now; None if absent or not a file or link."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode):
        return file_fingerprint(st.st_size, st.st_mtime_ns)
    if stat.S_ISLNK(st.st_mode):
        try:
            return symlink_fingerprint(os.readlink(path))
        except OSError:
            return None
    return None  # fifos, sockets, devices: not files a test suite caches on


#: How many example paths a folder summary keeps (:func:`folder_fingerprint`).
FOLDER_EXAMPLES = 5


class FolderState(Frozen):
    """A parsed folder summary: what a folder filled (or emptied) with many entries held."""

    _fields = ("files", "dirs", "size", "digest", "examples")
    __slots__ = _fields

    def __init__(self, files: int, dirs: int, size: int, digest: str,
                 examples: tuple[str, ...]) -> None:
        self.files: Final = files
        self.dirs: Final = dirs
        self.size: Final = size
        self.digest: Final = digest
        self.examples: Final = examples


def folder_fingerprint(files: int, dirs: int, size: int, digest: str,
                       examples: list[str]) -> dict[str, Any]:
    """One side of a folder's summarised change: how many files and folders it held, their
    bytes, a digest of every path and fingerprint, and a few example paths that changed
    (one key for a folder a test filled with thousands of files, not one per file)."""
    return {"folder": {"files": files, "dirs": dirs, "bytes": size, "digest": digest},
            "examples": examples[:FOLDER_EXAMPLES]}


def parse_folder_fingerprint(fp: object) -> FolderState | None:
    """Read back :func:`folder_fingerprint`; None if ``fp`` is not one."""
    if not isinstance(fp, Mapping):
        return None
    folder, examples = fp.get("folder"), fp.get("examples")
    if not isinstance(folder, Mapping) or not isinstance(examples, list):
        return None
    files, dirs, size = folder.get("files"), folder.get("dirs"), folder.get("bytes")
    if not isinstance(files, int) or not isinstance(dirs, int) or not isinstance(size, int):
        return None
    return FolderState(files, dirs, size, str(folder.get("digest") or ""),
                       tuple(str(e) for e in examples[:FOLDER_EXAMPLES]))


def next_fingerprint(old: Any, fresh: dict[str, Any], written: bool) -> Any:
    """The new fingerprint of a file, given its last one and a fresh unmarked one.

    ``written`` says inotify saw the content being written.  When nothing that ``stat`` sees
    changed and no write was seen, the old fingerprint (marker included) is kept, so that a
    metadata-only event (``chmod``) does not read as a change.
    """
    if old is None:
        return fresh
    before, after = parse_file_fingerprint(old), parse_file_fingerprint(fresh)
    if before is None or after is None or before.size is None or after.size is None:
        return fresh
    assert after.mtime_ns is not None
    same_mtime = after.mtime_ns == before.mtime_ns
    if after.size != before.size and same_mtime:
        return file_fingerprint(after.size, after.mtime_ns, SIZE_CHANGED_MTIME_KEPT)
    if after.size == before.size and same_mtime:
        if written and before.flag != REWRITTEN_STAT_KEPT:
            return file_fingerprint(after.size, after.mtime_ns, REWRITTEN_STAT_KEPT)
        return old
    return fresh


# -- replay support ---------------------------------------------------------------------------
class RestorePlan(Value):
    """What a replay must undo in the tree before it runs, from a record's ``files`` changes.

    Keys are the probe's keys: paths relative to the run's rootdir (absolute outside it).
    """

    _fields = ("created", "mtimes", "deleted")
    __slots__ = _fields

    def __init__(self, created: list[str] | None = None, mtimes: dict[str, int] | None = None,
                 deleted: list[str] | None = None) -> None:
        #: Files the run created and left behind: set them aside so the replay starts clean.
        self.created: list[str] = [] if created is None else created
        #: Files that existed before the run and changed: their original mtime, to put back.
        #: (The original content is not in the record; the plan can only say it changed.)
        self.mtimes: dict[str, int] = {} if mtimes is None else mtimes
        #: Files that existed before the run and were deleted: a replay cannot bring them back.
        self.deleted: list[str] = [] if deleted is None else deleted


def _field(change: Any, name: str) -> Any:
    if isinstance(change, Mapping):
        return change.get(name)
    return getattr(change, name, None)


def restore_plan(changes: Iterable[Any]) -> RestorePlan:
    """Fold ``files`` changes (``Change`` objects or record dicts, in run order) into a plan.

    For every path, the first change's ``before`` is its state before the run and the last
    change's ``after`` its state at the end; changes of other probes are ignored.
    """
    first: dict[str, Any] = {}
    last: dict[str, Any] = {}
    for ch in changes:
        if _field(ch, "probe") != "files":
            continue
        key = str(_field(ch, "key"))
        if key.endswith("/"):
            continue  # a directory: its files are what a replay undoes
        if key not in first:
            first[key] = _field(ch, "before")
        last[key] = _field(ch, "after")
    plan = RestorePlan()
    for key in sorted(first):
        original, final = first[key], last[key]
        if original is None and final is not None:
            plan.created.append(key)
        elif original is not None and final is None:
            plan.deleted.append(key)
        elif original is not None and final != original:
            state = parse_file_fingerprint(original)
            if state is not None and state.mtime_ns is not None:
                plan.mtimes[key] = state.mtime_ns
    return plan


def format_ns(value: Any) -> str:
    """``4 ms``, ``1 ns``: a duration in nanoseconds, in its largest whole unit."""
    if not isinstance(value, (int, float)):
        return "?"
    for unit, scale in (("s", 1_000_000_000), ("ms", 1_000_000), ("µs", 1_000)):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} ns"


def resolution_parts(info: Mapping[str, Any]) -> tuple[str, str]:
    """``("mtime to 1 ns, writes tick every 4 ms", "ext4 at /")`` from a header's measurement
    (the terminal and the report put the two in different orders)."""
    text = f"mtime to {format_ns(info.get('resolution_ns'))}"
    if info.get("write_tick_ns") is not None:
        text += f", writes tick every {format_ns(info.get('write_tick_ns'))}"
    where = " at ".join(str(x) for x in (info.get("fs_type"), info.get("mount_point")) if x)
    return text, where
