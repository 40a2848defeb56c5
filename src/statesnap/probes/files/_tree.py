"""The ``files`` probe's tree: its roots, keys relative to the rootdir, and the walk.

A key is a path relative to the rootdir, a directory's with a trailing ``/`` (fingerprint
:data:`DIRECTORY`).  The walk fingerprints every file under a directory and, with inotify,
watches each directory before listing it, so that anything made after the listing raises an
event.  What is out of view: :mod:`statesnap.probes.files.pathfilter` and virtual environments.
"""

from __future__ import annotations

import os
from typing import Any

from statesnap.base.fsinfo import stat_fingerprint
from statesnap.probes.base import ProbeContext, ProbeUnavailable
from statesnap.probes.files._watch import DirWatches
from statesnap.probes.files.pathfilter import PathFilter

#: A directory's fingerprint: its mtime moves with every entry, so only that it exists counts.
DIRECTORY = "directory"


def _nested(path: str, roots: list[str]) -> bool:
    return any(path != r and path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


class FileTree:
    """The watched roots, walked; a walk that watches adds its directories to ``watches``."""

    def __init__(self, watches: DirWatches, roots: list[str] | None = None, prefix: str = "",
                 path_filter: PathFilter | None = None) -> None:
        self.watches = watches
        self.roots: list[str] = [] if roots is None else roots
        #: The rootdir, real, with a trailing separator: what a key leaves out.
        self.prefix = prefix
        #: Which names are out of view.
        self.filter = PathFilter() if path_filter is None else path_filter

    @classmethod
    def of(cls, ctx: ProbeContext, watches: DirWatches) -> FileTree:
        """The tree of ``ctx.watch_roots`` (those that exist, none inside another), without
        statesnap's own outputs; :class:`ProbeUnavailable` if no root exists."""
        roots = [os.path.realpath(r) for r in ctx.watch_roots]
        roots = [r for r in dict.fromkeys(roots) if os.path.isdir(r)]
        roots = [r for r in roots if not _nested(r, roots)]
        if not roots:
            raise ProbeUnavailable("no watched root exists")
        prefix = os.path.realpath(ctx.rootdir).rstrip(os.sep) + os.sep
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
            if real.startswith(prefix):
                own.append(real[len(prefix):])
        return cls(watches, roots, prefix, PathFilter((*ctx.watch_exclude, *own)))

    def key(self, path: str) -> str:
        """The key of an absolute ``path`` (itself if outside the rootdir)."""
        key = path[len(self.prefix):] if path.startswith(self.prefix) else path
        return key if os.sep == "/" else key.replace(os.sep, "/")

    def path(self, key: str) -> str:
        """The absolute path of ``key`` (a directory key's ``/`` stays, as a separator)."""
        return key if os.path.isabs(key) else self.prefix + key.replace("/", os.sep)

    def walk_all(self, watch: bool) -> dict[str, Any]:
        """Every root walked: keys and their fingerprints."""
        out: dict[str, Any] = {}
        for root in self.roots:
            self.walk(root, out, watch, top_is_root=True)
        return out

    def walk(self, top: str, out: dict[str, Any], watch: bool, top_is_root: bool = False) -> None:
        """Fingerprint every file under ``top`` into ``out``; watch each directory first, so
        that anything created after the scan of a directory raises an event."""
        stack = [top]
        while stack:
            d = stack.pop()
            if watch and not self.watches.watch(d):
                continue
            try:
                with os.scandir(d) as it:
                    entries = list(it)
            except OSError:
                continue
            if not (top_is_root and d == top):
                if any(e.name == "pyvenv.cfg" for e in entries):
                    self.watches.unwatch_tree(d)  # a virtual environment: not the project's files
                    continue
                out[self.key(d) + "/"] = DIRECTORY
            # Paths and keys by concatenation: a folder may hold 100,000 files, and
            # os.path.join and key() per entry were a tenth of the walk.  (Not entry.stat():
            # each entry would keep its stat result, 48 MB more at the peak for 100,000.)
            head = d.rstrip(os.sep) + os.sep
            keyhead = self.key(head)
            dir_excluded, file_excluded = self.filter.dir_excluded, self.filter.file_excluded
            for entry in entries:
                name = entry.name
                key = keyhead + name
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if not dir_excluded(name, key):
                        stack.append(head + name)
                elif not file_excluded(name, key):
                    fp = stat_fingerprint(head + name)
                    if fp is not None:
                        out[key] = fp
