"""The ``files`` probe's inotify watches: one per directory, capped, dropped with their tree.

The instance's descriptor is statesnap's own (the ``fds`` probe leaves it out).  Past the
kernel's limit or the probe's own cap, :class:`WatchLimit`: the probe then walks the tree at
every snapshot instead (:mod:`statesnap.probes.files.probe`).
"""

from __future__ import annotations

import errno
import os

from statesnap.probes.files import inotify as ino


class WatchLimit(Exception):
    """No more inotify watches: the kernel's limit or ours."""


class DirWatches:
    """The inotify instance and its watches: the directory of each watch, and back."""

    def __init__(self, max_watches: int | None = None) -> None:
        """``max_watches`` caps the watches used (the kernel's limit is shared by every tool
        of the user)."""
        self._max_watches = max_watches
        #: The instance: None before :meth:`open`, after :meth:`close`, or when it failed.
        self.ino: ino.Inotify | None = None
        #: Descriptors statesnap owns (``ProbeContext.own_fds``): the instance's is added.
        self._own: set[int] = set()
        self._wd_path: dict[int, str] = {}
        self._path_wd: dict[str, int] = {}

    @property
    def count(self) -> int:
        """How many directories are watched."""
        return len(self._path_wd)

    def open(self, own: set[int]) -> None:
        """Start an instance, its descriptor listed in ``own``; OSError if there is none."""
        self._own = own
        self.ino = ino.Inotify()
        self._own.add(self.ino.fd)

    def watch(self, d: str) -> bool:
        """Watch directory ``d``: False if it is gone or unreadable (nothing in it to report),
        :class:`WatchLimit` if no more watches may be added."""
        assert self.ino is not None
        if self._max_watches is not None and len(self._path_wd) >= self._max_watches:
            raise WatchLimit(f"more than {self._max_watches} directories to watch")
        try:
            wd = self.ino.add_watch(d)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise WatchLimit(
                    "inotify watch limit reached (raise fs.inotify.max_user_watches)"
                ) from exc
            return False  # gone already, or unreadable: nothing in it to report
        self._wd_path[wd] = d
        self._path_wd[d] = wd
        return True

    def unwatch_tree(self, d: str) -> None:
        """Drop the watches of ``d`` and of every directory under it."""
        if self.ino is None:
            return
        inside = d.rstrip(os.sep) + os.sep
        for path in [p for p in self._path_wd if p == d or p.startswith(inside)]:
            wd = self._path_wd.pop(path)
            self._wd_path.pop(wd, None)
            self.ino.rm_watch(wd)

    def path_of(self, wd: int) -> str | None:
        """The directory of watch ``wd``, if it is still watched."""
        return self._wd_path.get(wd)

    def ignored(self, wd: int) -> None:
        """Watch ``wd`` went (``IN_IGNORED``), with its directory or by ``rm_watch``."""
        path = self._wd_path.pop(wd, None)
        if path is not None and self._path_wd.get(path) == wd:
            del self._path_wd[path]

    def renew(self) -> None:
        """In a forked child: the same directories watched on an instance of its own.

        The inherited descriptor shares its event queue with the parent: reading it here would
        steal the parent's events.  OSError or :class:`WatchLimit` if that fails.
        """
        old = self.ino
        if old is not None:
            self._own.discard(old.fd)
            old.close()
        self.ino = None
        self.ino = ino.Inotify()
        self._own.add(self.ino.fd)
        dirs = list(self._path_wd)
        self._wd_path.clear()
        self._path_wd.clear()
        for d in dirs:
            self.watch(d)

    def drop(self, owner: int) -> None:
        """Forget every watch; remove them from the instance too if this is process ``owner``,
        which opened it (a forked child's descriptor shares the parent's instance)."""
        if self.ino is not None and os.getpid() == owner:
            for wd in list(self._wd_path):
                self.ino.rm_watch(wd)
        self._wd_path.clear()
        self._path_wd.clear()

    def close(self) -> None:
        """Close the instance (its watches go with it) and forget every watch."""
        if self.ino is not None:
            self._own.discard(self.ino.fd)
            self.ino.close()
            self.ino = None
        self._wd_path.clear()
        self._path_wd.clear()
