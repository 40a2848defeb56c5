"""``files``: files and directories created, deleted, or changed under the watched roots.

Keys are paths relative to the rootdir, a directory's with a trailing ``/`` (fingerprint
:data:`~statesnap.probes.files._tree.DIRECTORY`: only its coming and going counts); file
fingerprints come from :mod:`statesnap.base.fsinfo`, flagged when content changed while the
mtime did not.  The token is "have inotify events arrived?" (a tree walk without inotify).  In
a key-level replay a file or directory made after the save is removed again
(:meth:`FilesProbe.restore`).  The walk: :mod:`statesnap.probes.files._tree`; the watches:
:mod:`statesnap.probes.files._watch`.  What is left out and why: docs/PROBES.md.
"""

from __future__ import annotations

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
from statesnap.probes.base import Probe, ProbeContext, ProbeMap, Severity
from statesnap.probes.files import inotify as ino
from statesnap.probes.files._tree import DIRECTORY, FileTree
from statesnap.probes.files._watch import DirWatches, WatchLimit
from statesnap.probes.ownpid import PID

INOTIFY = "inotify"
SCAN = "scan"


def is_directory_key(key: str) -> bool:
    """Whether a ``files`` key names a directory (``dir/``)."""
    return key.endswith("/")


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
        #: ``inotify`` or ``scan``; :attr:`mode_reason` says why ``scan`` when it is.
        self.mode = ""
        self.mode_reason = ""
        self._watches = DirWatches(max_watches)
        self._notes: dict[str, str] = {}
        self._tree = FileTree(self._watches)
        self._map: ProbeMap = {}
        self._plain: dict[str, Any] = {}
        self._gen = 0
        self._pid = -1
        self._dirty: dict[str, bool] = {}
        #: Fingerprints a walk of a new directory just took, for :meth:`_apply` to use rather
        #: than stat each file again (a folder made with 100,000 files in it); an event on
        #: one of them since drops its entry.
        self._walked: dict[str, Any] = {}
        self._gone_dirs: list[str] = []
        self._rescan = False
        self._scanned = False

    # -- setup ------------------------------------------------------------------------------
    def setup(self, ctx: ProbeContext) -> None:
        self._tree = FileTree.of(ctx, self._watches)
        self._notes = ctx.notes
        self._pid = PID[0]
        if self._use_inotify:
            try:
                self._watches.open(ctx.own_fds)
            except OSError as exc:
                self.mode_reason = f"inotify unavailable: {exc.strerror or exc}"
        else:
            self.mode_reason = "inotify turned off"
        if self._watches.ino is not None:
            try:
                self._map = self._tree.walk_all(watch=True)
                self.mode = INOTIFY
            except WatchLimit as exc:
                self._fall_back(str(exc))
        else:
            self._fall_back(self.mode_reason)
        self._note()

    def _fall_back(self, reason: str) -> None:
        self._watches.close()
        self._walked.clear()
        self.mode, self.mode_reason = SCAN, reason
        self._plain = self._tree.walk_all(watch=False)
        # At runtime the old map holds the before-states and markers the diff compares with.
        self._map = self._merge(self._map, self._plain)
        self._scanned = True
        self._note()

    def _note(self) -> None:
        if self.mode == INOTIFY:
            text = (f"inotify: {self._watches.count} directories watched, "
                    f"{_files(self._map)} files")
        else:
            text = f"scan of {_files(self._map)} files per snapshot ({self.mode_reason})"
        self._notes[self.name] = text

    # -- cheap ------------------------------------------------------------------------------
    def token(self) -> object:
        if self.mode == SCAN:
            self._scan_update()
            self._scanned = True
            return self._gen
        if PID[0] != self._pid:
            self._after_fork()
        self._drain()
        return self._gen

    def _drain(self) -> None:
        inotify = self._watches.ino
        if inotify is None or not inotify.pending():
            return
        try:
            self._handle(inotify.read())
        except WatchLimit as exc:
            self._fall_back(str(exc))
            self._gen += 1

    def _handle(self, events: list[ino.Event]) -> None:
        relevant = False
        watches, tree = self._watches, self._tree
        for ev in events:
            mask = ev.mask
            if mask & ino.IN_Q_OVERFLOW:
                self._rescan = relevant = True
                continue
            if mask & ino.IN_IGNORED:  # the watch went, with its directory or by rm_watch
                watches.ignored(ev.wd)
                continue
            d = watches.path_of(ev.wd)
            if d is None or not ev.name:
                continue  # events about a watched directory itself also reach its parent
            path = os.path.join(d, ev.name)
            key = tree.key(path)
            if mask & ino.IN_ISDIR:
                if tree.filter.dir_excluded(ev.name, key):
                    continue
                if mask & (ino.IN_DELETE | ino.IN_MOVED_FROM):
                    # A directory moved away keeps its watches under its new name: drop them.
                    watches.unwatch_tree(path)
                    self._gone_dirs.append(key)
                    if self._walked:
                        inside = key + "/"
                        for k in [k for k in self._walked if k.startswith(inside)]:
                            del self._walked[k]
                    relevant = True
                if mask & (ino.IN_CREATE | ino.IN_MOVED_TO):
                    found: dict[str, Any] = {}
                    tree.walk(path, found, watch=True)  # the directory's own key too
                    for k in found:
                        self._dirty.setdefault(k, False)
                    self._walked.update(found)
                    relevant = True
                continue
            if tree.filter.file_excluded(ev.name, key):
                continue
            if self._walked:
                self._walked.pop(key, None)
            # Only IN_MODIFY means content was written; IN_CLOSE_WRITE also follows an open
            # for writing that wrote nothing.
            self._dirty[key] = self._dirty.get(key, False) or bool(mask & ino.IN_MODIFY)
            relevant = True
        if relevant:
            self._gen += 1

    def _after_fork(self) -> None:
        # The inherited descriptor shares its event queue with the parent: reading it here
        # would steal the parent's events.  Watch the same directories on a fresh instance.
        self._pid = PID[0]
        try:
            self._watches.renew()
        except (OSError, WatchLimit) as exc:
            self._fall_back(f"after fork: {exc}")
            self._gen += 1

    # -- detail -----------------------------------------------------------------------------
    def read(self) -> ProbeMap:
        if self.mode == SCAN:
            if not self._scanned:
                self._scan_update()
            self._scanned = False
            return self._map
        if PID[0] != self._pid:
            self._after_fork()
        self._drain()
        if self.mode == SCAN:  # the drain hit the watch limit
            return self._map
        if self._rescan:
            self._rescan = False
            self._dirty.clear()
            self._walked.clear()
            self._gone_dirs.clear()
            self._map = self._merge(self._map, self._tree.walk_all(watch=True))
        elif self._dirty or self._gone_dirs:
            self._apply()
        return self._map

    def _apply(self) -> None:
        new = dict(self._map)  # maps already handed out are never mutated
        dirty, self._dirty = self._dirty, {}
        walked, self._walked = self._walked, {}
        for d in self._gone_dirs:
            inside = d + "/"
            for key in [k for k in new if k.startswith(inside)]:
                dirty.setdefault(key, False)
        self._gone_dirs = []
        changed = False
        for key, written in dirty.items():
            if key.endswith("/"):
                there = DIRECTORY if _is_dir(self._tree.path(key)) else None
                if there != new.get(key):
                    if there is None:
                        del new[key]
                    else:
                        new[key] = there
                    changed = True
                continue
            fresh = walked[key] if key in walked else stat_fingerprint(self._tree.path(key))
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
        fresh = self._tree.walk_all(watch=False)
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
        keys of their own, and cannot be put back), and a directory there at the save loses
        what it holds directly that was made since (the key of a folder summarised with
        thousands of changed entries, :mod:`statesnap.state.folders`)."""
        assert isinstance(saved, dict)
        done: list[str] = []
        for key in keys:
            path = self._tree.path(key.rstrip("/"))
            try:
                if key in saved:
                    if key.endswith("/"):
                        os.makedirs(path, exist_ok=True)
                        # A summarised folder's key stands for its entries: those made since.
                        self._remove_new(saved, key)
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

    def _remove_new(self, saved: dict[str, Any], folder: str) -> None:
        """Remove what ``folder`` holds directly now and did not hold at the save."""
        start = len(folder)
        now = self.read()
        for key in [k for k in now if k.startswith(folder) and len(k) > start
                    and "/" not in k[start:-1] and k not in saved]:
            path = self._tree.path(key.rstrip("/"))
            try:
                if key.endswith("/"):
                    if _is_dir(path):
                        shutil.rmtree(path)
                elif os.path.lexists(path):
                    os.unlink(path)
            except OSError:
                continue

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
        self._watches.drop(owner=self._pid)

    def close(self) -> None:
        self._watches.close()
