"""``files``: files and directories created, deleted, or changed under the watched roots.

Keys are paths relative to the rootdir, a directory's with a trailing ``/`` (fingerprint
:data:`DIRECTORY`: only its coming and going counts); file fingerprints come from
:mod:`statesnap.base.fsinfo`, flagged when content changed while the mtime did not.  The token
is "have inotify events arrived?" (a tree walk without inotify).  In a key-level replay a
file or directory made after the save is removed again (:meth:`FilesProbe.restore`).  What is
left out and why: docs/PROBES.md.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Collection
from typing import Any

from statesnap.base.fsinfo import (
    REWRITTEN_STAT_KEPT,
    SIZE_CHANGED_MTIME_KEPT,
    next_fingerprint,
    parse_file_fingerprint,
    stat_fingerprint,
)
from statesnap.probes import inotify as ino
from statesnap.probes.base import Probe, ProbeContext, ProbeMap, ProbeUnavailable, Severity
from statesnap.probes.pathfilter import PathFilter

INOTIFY = "inotify"
SCAN = "scan"
#: A directory's fingerprint: its mtime moves with every entry, so only that it exists counts.
DIRECTORY = "directory"


def is_directory_key(key: str) -> bool:
    """Whether a ``files`` key names a directory (``dir/``)."""
    return key.endswith("/")


class _WatchLimit(Exception):
    """No more inotify watches: the kernel's limit or ours."""


def _nested(path: str, roots: list[str]) -> bool:
    return any(path != r and path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def _is_dir(path: str) -> bool:
    """A directory, not a link to one."""
    return os.path.isdir(path) and not os.path.islink(path)


def _files(found: ProbeMap) -> int:
    return sum(1 for k in found if not k.endswith("/"))


class FilesProbe(Probe):
    """Files under ``ProbeContext.watch_roots``, watched with inotify where possible."""

    name = "files"
    severity = Severity.MEDIUM
    replay_restorable = True

    def __init__(self, use_inotify: bool = True, max_watches: int | None = None) -> None:
        """``max_watches`` caps the inotify watches used (the kernel's limit is shared by
        every tool of the user); beyond it the probe falls back to walking the tree."""
        self._use_inotify = use_inotify
        self._max_watches = max_watches
        #: ``inotify`` or ``scan``; :attr:`mode_reason` says why ``scan`` when it is.
        self.mode = ""
        self.mode_reason = ""
        self._ino: ino.Inotify | None = None
        self._own: set[int] = set()
        self._notes: dict[str, str] = {}
        self._roots: list[str] = []
        self._prefix = ""
        self._filter = PathFilter()
        self._map: ProbeMap = {}
        self._plain: dict[str, Any] = {}
        self._gen = 0
        self._pid = -1
        self._wd_path: dict[int, str] = {}
        self._path_wd: dict[str, int] = {}
        self._dirty: dict[str, bool] = {}
        self._gone_dirs: list[str] = []
        self._rescan = False
        self._scanned = False

    # -- setup ------------------------------------------------------------------------------
    def setup(self, ctx: ProbeContext) -> None:
        roots = [os.path.realpath(r) for r in ctx.watch_roots]
        roots = [r for r in dict.fromkeys(roots) if os.path.isdir(r)]
        self._roots = [r for r in roots if not _nested(r, roots)]
        if not self._roots:
            raise ProbeUnavailable("no watched root exists")
        self._prefix = os.path.realpath(ctx.rootdir).rstrip(os.sep) + os.sep
        # statesnap's own outputs (the record, replay logs, reports) are never a test's doing.
        own = []
        # So is a file the session's own stdout/stderr is redirected to (pytest > out.log).
        redirected = []
        for fd in (1, 2):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith(os.sep):
                redirected.append(target)
        for path in [*map(str, ctx.own_paths), *redirected]:
            real = os.path.realpath(path)
            if real.startswith(self._prefix):
                own.append(real[len(self._prefix):])
        self._filter = PathFilter((*ctx.watch_exclude, *own))
        self._own = ctx.own_fds
        self._notes = ctx.notes
        self._pid = os.getpid()
        if self._use_inotify:
            try:
                self._ino = ino.Inotify()
            except OSError as exc:
                self.mode_reason = f"inotify unavailable: {exc.strerror or exc}"
            else:
                self._own.add(self._ino.fd)
        else:
            self.mode_reason = "inotify turned off"
        if self._ino is not None:
            try:
                self._map = self._walk_all(watch=True)
                self.mode = INOTIFY
            except _WatchLimit as exc:
                self._fall_back(str(exc))
        else:
            self._fall_back(self.mode_reason)
        self._note()

    def _fall_back(self, reason: str) -> None:
        self._close_inotify()
        self.mode, self.mode_reason = SCAN, reason
        self._plain = self._walk_all(watch=False)
        # At runtime the old map holds the before-states and markers the diff compares with.
        self._map = self._merge(self._map, self._plain)
        self._scanned = True
        self._note()

    def _note(self) -> None:
        if self.mode == INOTIFY:
            text = (f"inotify: {len(self._path_wd)} directories watched, "
                    f"{_files(self._map)} files")
        else:
            text = f"scan of {_files(self._map)} files per snapshot ({self.mode_reason})"
        self._notes[self.name] = text

    # -- walking ----------------------------------------------------------------------------
    def _key(self, path: str) -> str:
        key = path[len(self._prefix):] if path.startswith(self._prefix) else path
        return key if os.sep == "/" else key.replace(os.sep, "/")

    def _abs(self, key: str) -> str:
        return key if os.path.isabs(key) else self._prefix + key.replace("/", os.sep)

    def _walk_all(self, watch: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for root in self._roots:
            self._walk(root, out, watch, top_is_root=True)
        return out

    def _walk(self, top: str, out: dict[str, Any], watch: bool, top_is_root: bool = False) -> None:
        """Fingerprint every file under ``top`` into ``out``; watch each directory first, so
        that anything created after the scan of a directory raises an event."""
        stack = [top]
        while stack:
            d = stack.pop()
            if watch and not self._watch(d):
                continue
            try:
                with os.scandir(d) as it:
                    entries = list(it)
            except OSError:
                continue
            if not (top_is_root and d == top):
                if any(e.name == "pyvenv.cfg" for e in entries):
                    self._unwatch_tree(d)  # a virtual environment: not the project's files
                    continue
                out[self._key(d) + "/"] = DIRECTORY
            for entry in entries:
                path = os.path.join(d, entry.name)
                key = self._key(path)
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if not self._filter.dir_excluded(entry.name, key):
                        stack.append(path)
                elif not self._filter.file_excluded(entry.name, key):
                    fp = stat_fingerprint(path)
                    if fp is not None:
                        out[key] = fp

    def _watch(self, d: str) -> bool:
        assert self._ino is not None
        if self._max_watches is not None and len(self._path_wd) >= self._max_watches:
            raise _WatchLimit(f"more than {self._max_watches} directories to watch")
        try:
            wd = self._ino.add_watch(d)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise _WatchLimit(
                    "inotify watch limit reached (raise fs.inotify.max_user_watches)"
                ) from exc
            return False  # gone already, or unreadable: nothing in it to report
        self._wd_path[wd] = d
        self._path_wd[d] = wd
        return True

    def _unwatch_tree(self, d: str) -> None:
        if self._ino is None:
            return
        inside = d.rstrip(os.sep) + os.sep
        for path in [p for p in self._path_wd if p == d or p.startswith(inside)]:
            wd = self._path_wd.pop(path)
            self._wd_path.pop(wd, None)
            self._ino.rm_watch(wd)

    # -- cheap ------------------------------------------------------------------------------
    def token(self) -> object:
        if self.mode == SCAN:
            self._scan_update()
            self._scanned = True
            return self._gen
        if os.getpid() != self._pid:
            self._after_fork()
        self._drain()
        return self._gen

    def _drain(self) -> None:
        inotify = self._ino
        if inotify is None or not inotify.pending():
            return
        try:
            self._handle(inotify.read())
        except _WatchLimit as exc:
            self._fall_back(str(exc))
            self._gen += 1

    def _handle(self, events: list[ino.Event]) -> None:
        relevant = False
        for ev in events:
            mask = ev.mask
            if mask & ino.IN_Q_OVERFLOW:
                self._rescan = relevant = True
                continue
            if mask & ino.IN_IGNORED:  # the watch went, with its directory or by rm_watch
                path = self._wd_path.pop(ev.wd, None)
                if path is not None and self._path_wd.get(path) == ev.wd:
                    del self._path_wd[path]
                continue
            d = self._wd_path.get(ev.wd)
            if d is None or not ev.name:
                continue  # events about a watched directory itself also reach its parent
            path = os.path.join(d, ev.name)
            key = self._key(path)
            if mask & ino.IN_ISDIR:
                if self._filter.dir_excluded(ev.name, key):
                    continue
                if mask & (ino.IN_DELETE | ino.IN_MOVED_FROM):
                    # A directory moved away keeps its watches under its new name: drop them.
                    self._unwatch_tree(path)
                    self._gone_dirs.append(key)
                    relevant = True
                if mask & (ino.IN_CREATE | ino.IN_MOVED_TO):
                    found: dict[str, Any] = {}
                    self._walk(path, found, watch=True)  # the directory's own key too
                    for k in found:
                        self._dirty.setdefault(k, False)
                    relevant = True
                continue
            if self._filter.file_excluded(ev.name, key):
                continue
            # Only IN_MODIFY means content was written; IN_CLOSE_WRITE also follows an open
            # for writing that wrote nothing.
            self._dirty[key] = self._dirty.get(key, False) or bool(mask & ino.IN_MODIFY)
            relevant = True
        if relevant:
            self._gen += 1

    def _after_fork(self) -> None:
        # The inherited descriptor shares its event queue with the parent: reading it here
        # would steal the parent's events.  Watch the same directories on a fresh instance.
        old = self._ino
        self._pid = os.getpid()
        if old is not None:
            self._own.discard(old.fd)
            old.close()
        self._ino = None
        try:
            self._ino = ino.Inotify()
            self._own.add(self._ino.fd)
            dirs = list(self._path_wd)
            self._wd_path.clear()
            self._path_wd.clear()
            for d in dirs:
                self._watch(d)
        except (OSError, _WatchLimit) as exc:
            self._fall_back(f"after fork: {exc}")
            self._gen += 1

    # -- detail -----------------------------------------------------------------------------
    def read(self) -> ProbeMap:
        if self.mode == SCAN:
            if not self._scanned:
                self._scan_update()
            self._scanned = False
            return self._map
        if os.getpid() != self._pid:
            self._after_fork()
        self._drain()
        if self.mode == SCAN:  # the drain hit the watch limit
            return self._map
        if self._rescan:
            self._rescan = False
            self._dirty.clear()
            self._gone_dirs.clear()
            self._map = self._merge(self._map, self._walk_all(watch=True))
        elif self._dirty or self._gone_dirs:
            self._apply()
        return self._map

    def _apply(self) -> None:
        new = dict(self._map)  # maps already handed out are never mutated
        dirty, self._dirty = self._dirty, {}
        for d in self._gone_dirs:
            inside = d + "/"
            for key in [k for k in new if k.startswith(inside)]:
                dirty.setdefault(key, False)
        self._gone_dirs = []
        changed = False
        for key, written in dirty.items():
            if key.endswith("/"):
                there = DIRECTORY if _is_dir(self._abs(key)) else None
                if there != new.get(key):
                    if there is None:
                        del new[key]
                    else:
                        new[key] = there
                    changed = True
                continue
            fresh = stat_fingerprint(self._abs(key))
            old = new.get(key)
            if fresh is None:
                if old is not None:
                    del new[key]
                    changed = True
                continue
            fp = next_fingerprint(old, fresh, written)
            if fp != old:
                new[key] = fp
                changed = True
        if changed:
            self._map = new  # otherwise keep the same object: the diff is then skipped free

    def _scan_update(self) -> None:
        fresh = self._walk_all(watch=False)
        if fresh != self._plain:
            self._map = self._merge(self._map, fresh)
            self._plain = fresh
            self._gen += 1

    @staticmethod
    def _merge(old_map: ProbeMap, fresh: dict[str, Any]) -> ProbeMap:
        return {k: fp if fp == DIRECTORY else next_fingerprint(old_map.get(k), fp, False)
                for k, fp in fresh.items()}

    # -- key-level replays ------------------------------------------------------------------
    def save(self) -> object:
        return self.read()  # never mutated once handed out

    def restore(self, saved: object, keys: Collection[str]) -> list[str]:
        """A file or directory made since the save is removed (all in a directory made since
        was made since too); a directory removed since is made again, empty (its files are
        keys of their own, and cannot be put back)."""
        assert isinstance(saved, dict)
        done: list[str] = []
        for key in keys:
            path = self._abs(key.rstrip("/"))
            try:
                if key in saved:
                    if key.endswith("/"):
                        os.makedirs(path, exist_ok=True)
                        done.append(key)
                    continue
                if key.endswith("/") and _is_dir(path):
                    shutil.rmtree(path)
                elif os.path.lexists(path) and not _is_dir(path):
                    os.unlink(path)
                done.append(key)
            except OSError:
                continue  # not put back: the victim's replay shows what that did
        return done

    # -- reporting --------------------------------------------------------------------------
    def feeds_memos(self, key: str) -> bool:
        # A cached function reading a file keeps what it read.
        return True

    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        state = parse_file_fingerprint(after)
        if state is not None and state.flag is not None:
            return Severity.HIGH
        return Severity.MEDIUM

    def detail(self, key: str, before: Any, after: Any) -> str | None:
        a, b = parse_file_fingerprint(before), parse_file_fingerprint(after)
        if a is None or b is None or a.size is None or b.size is None:
            return None
        if b.flag == SIZE_CHANGED_MTIME_KEPT:
            return (f"size {a.size} → {b.size} bytes with the mtime unchanged: caches keyed "
                    "on mtime will not see this change")
        if b.flag == REWRITTEN_STAT_KEPT:
            return ("rewritten with the same size and mtime: caches keyed on mtime and size "
                    "will not see this change")
        assert a.mtime_ns is not None and b.mtime_ns is not None
        return f"size {a.size} → {b.size} bytes, mtime {(b.mtime_ns - a.mtime_ns) / 1e9:+.3f} s"

    def hint(self, key: str, change: str) -> str | None:
        state = parse_file_fingerprint(self._map.get(key))
        if state is not None and state.flag is not None:
            return (f"{key} changed while its mtime stayed put (os.utime after a write?): let "
                    "the mtime move forward, or wait out the filesystem's mtime resolution")
        if is_directory_key(key):
            if change == "removed":
                return f"do not remove {key}: work on a copy under tmp_path"
            return f"make {key} under tmp_path, or remove it in a fixture finaliser"
        if change == "added":
            return f"write {key} under tmp_path, or delete it in a fixture finaliser"
        if change == "removed":
            return f"do not delete {key}: work on a copy under tmp_path"
        return f"modify a copy of {key} under tmp_path, or put it back in a fixture finaliser"

    def stop(self) -> None:
        # The watches dropped now, the descriptor closed at close(): an inotify instance
        # closed with watches on it waits out the kernel's SRCU grace period (~15 ms of wall
        # time, no CPU), which the session's end then spends doing its own work instead.
        # Not in a forked child: its descriptor shares the parent's instance and watches.
        if self._ino is not None and os.getpid() == self._pid:
            for wd in list(self._wd_path):
                self._ino.rm_watch(wd)
        self._wd_path.clear()
        self._path_wd.clear()

    def _close_inotify(self) -> None:
        if self._ino is not None:
            self._own.discard(self._ino.fd)
            self._ino.close()
            self._ino = None
        self._wd_path.clear()
        self._path_wd.clear()

    def close(self) -> None:
        self._close_inotify()
