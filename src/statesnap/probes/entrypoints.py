"""The entry points of one group, without parsing every installed distribution's.

``importlib.metadata.entry_points(group=...)`` parses the ``entry_points.txt`` of every
installed distribution into entry point objects to keep the few of one group: with sixty
distributions installed, about 7 M instructions of each session's start (issue 13's fixed
cost).  Here the distributions are found as ``importlib.metadata`` finds them (each
``sys.path`` folder in order, its ``*.dist-info`` and ``*.egg-info`` folders as listed, the
first of each normalised name winning), each one's file is read as bytes, and only those that
name the group are handed to ``importlib.metadata`` to parse.  Where distributions can come
from elsewhere (a zip or an egg on ``sys.path``, a finder of another kind that finds them),
``importlib.metadata`` does the whole search itself.

Each folder's listing is the one ``importlib.metadata`` keeps (its ``FastPath`` lookups, by
the folder's mtime): pytest's own plugin search has just made them, so a session's start lists
no folder again (about 2 M instructions, issue 13).  Where that private cache is not as
expected, the folders are listed here, as it lists them.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["entry_points"]

_SUFFIXES = (".dist-info", ".egg-info")


def entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
    """The entry points of ``group``, as ``importlib.metadata.entry_points(group=group)``."""
    folders = _folders()
    if folders is None:
        return list(importlib.metadata.entry_points(group=group))
    header = f"[{group}]".encode()
    found: list[importlib.metadata.EntryPoint] = []
    for folder in folders:
        text = _read(os.path.join(folder, "entry_points.txt"))
        if text is not None and header in text:
            dist = importlib.metadata.PathDistribution(Path(folder))
            found += dist.entry_points.select(group=group)
    return found


def _read(path: str) -> bytes | None:
    """The file's bytes; None where there is none or it cannot be read (importlib.metadata
    then sees no entry points either).  Through the descriptor, not a buffered file object:
    some ninety files a session start, about 0.8 M instructions less (issue 28)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _folders() -> list[str] | None:
    """Each distribution's metadata folder, first of each name; None: ask importlib.metadata."""
    for finder in sys.meta_path:
        if hasattr(finder, "find_distributions") and finder is not importlib.machinery.PathFinder:
            return None
    seen: set[str] = set()
    out: list[str] = []
    for entry in sys.path:
        root = entry or "."
        if not isinstance(entry, str) or entry.endswith(".egg") or os.path.isfile(root):
            return None
        cached = _cached_lookup(entry)
        if cached is not None:
            for known, paths in cached:
                for path in paths:
                    if not path.endswith(_SUFFIXES):
                        return None  # a suffix in other case (below)
                    if known not in seen:
                        seen.add(known)
                        out.append(path)
            continue
        try:
            children = os.listdir(root)
        except OSError:
            continue
        # importlib.metadata groups one folder's distributions by name, in the order of their
        # first listing, and keeps the first distribution of each name on the whole path.
        by_name: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith(_SUFFIXES):
                by_name.setdefault(_normalise(low.rpartition(".")[0].partition("-")[0]),
                                   []).append(child)
        for group in by_name.values():
            for child in group:
                name = _stem_name(child)
                if name is None or name in seen:
                    if name is None:
                        # A suffix in other case: importlib.metadata names it from its
                        # metadata file, which only it reads.
                        return None
                    continue
                seen.add(name)
                out.append(os.path.join(entry, child) if entry else child)
    return out


def _cached_lookup(entry: str) -> Iterable[tuple[str, list[str]]] | None:
    """``(normalised name, metadata folders)`` of one ``sys.path`` folder from the listing
    ``importlib.metadata`` keeps for it (the same grouping and order as below: it is where
    they come from); None where that cache is not there as expected."""
    try:
        fast: Any = importlib.metadata.FastPath(entry)  # type: ignore[attr-defined]
        infos = fast.lookup(fast.mtime).infos
        if not isinstance(infos, dict):
            return None
        # Its paths are pathlib's (str() is kept once made); a folder on the path is relative
        # to the working directory as pathlib writes it (``Path("", child)`` is ``child``).
        return [(name, [str(p) for p in paths]) for name, paths in infos.items()]
    except Exception:  # another Python's importlib.metadata: list the folder here
        return None


def _stem_name(child: str) -> str | None:
    """The normalised name ``importlib.metadata`` gives a distribution from its folder name."""
    filename, ext = os.path.splitext(child)
    if ext not in _SUFFIXES:
        return None
    return _normalise(filename.partition("-")[0])


def _normalise(name: str) -> str:
    if "-" not in name and "." not in name and "__" not in name:
        return name.lower()  # nothing to collapse (most names): no regular expression
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")
