"""Folders filled or emptied with many entries at once: one summarised ``files`` change each.

A test that writes 100,000 files into a folder would otherwise leave 100,000 changes, and the
record, the terminal, the report and the summary JSON would each hold one per file (issue 27:
a 15 MB record and 415 MB of memory for one such test).  Past :data:`FOLDER_SUMMARY_AT`
changed entries in one folder they become one change of the folder's key (``out/``), whose
fingerprints (:func:`~statesnap.base.fsinfo.folder_fingerprint`) hold the count of files and
folders, their bytes, a digest of every path and fingerprint, and a few example paths.

Which folder: the outermost one made (or removed) together with the entries, so that a folder
made with everything in it is one change that a replay sets aside whole; otherwise the
entries' own parent, which was there before and after (its summary then counts what it holds
directly).  Files directly under the rootdir are never summarised: the rootdir has no key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from statesnap.base.fsinfo import FOLDER_EXAMPLES, folder_fingerprint

#: More changed entries than this in one folder, in one diff, are one summarised change.
FOLDER_SUMMARY_AT = 500


def _is_dir(key: str) -> bool:
    return key.endswith("/")


def _folder_of(key: str, moved: set[str]) -> str:
    """The outermost folder of ``moved`` that holds ``key`` (or is it), else its parent."""
    if moved:
        i = key.find("/")
        while i != -1:
            prefix = key[: i + 1]
            if prefix in moved:
                return prefix
            i = key.find("/", i + 1)
    return key[: key.rstrip("/").rfind("/") + 1]


def _side(pairs: list[tuple[str, Any]], examples: list[str]) -> dict[str, Any]:
    """The summary of one side: ``pairs`` of (key, fingerprint) present on it, sorted."""
    # Loops in C where they can be: a folder may hold 100,000 entries.
    dirs = sum(1 for key, _ in pairs if key[-1:] == "/")
    sizes = [fp.get("size") for _, fp in pairs if isinstance(fp, dict)]
    size = sum(n for n in sizes if type(n) is int)
    blob = json.dumps(pairs, separators=(",", ":"), default=repr).encode()
    digest = hashlib.blake2b(blob, digest_size=8).hexdigest()
    return folder_fingerprint(len(pairs) - dirs, dirs, size, digest, examples)


def _direct(folder: str, side: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """What ``folder`` holds directly on one side of the diff, sorted by key."""
    start = len(folder)
    return sorted((k, v) for k, v in side.items()
                  if k.startswith(folder) and len(k) > start and "/" not in k[start:-1])


def summarise_folders(keys: list[str], before: Mapping[str, Any], after: Mapping[str, Any],
                      values: bool = True) -> tuple[list[str], list[tuple[str, str, Any, Any]]]:
    """``keys`` (sorted, each differing between the maps) split into those kept as they are
    and summarised folders: ``(key, kind, before, after)`` with kind ``added``, ``removed``
    or ``changed`` and None for an absent side (both None without ``values``: for a caller
    that only wants to know which keys changed)."""
    if len(keys) <= FOLDER_SUMMARY_AT:
        return keys, []
    moved = {k for k in keys if _is_dir(k) and ((k in before) != (k in after))}
    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(_folder_of(key, moved), []).append(key)
    kept: list[str] = []
    folders: list[tuple[str, str, Any, Any]] = []
    for folder, members in groups.items():
        entries = [k for k in members if k != folder]
        if not folder or len(entries) <= FOLDER_SUMMARY_AT:
            kept.extend(members)
            continue
        examples = entries[:FOLDER_EXAMPLES]
        if not values:
            kind = "changed" if folder not in moved else "added" if folder in after else "removed"
            folders.append((folder, kind, None, None))
            continue
        if folder in moved:
            if folder in after:
                folders.append((folder, "added", None, _side(
                    [(k, after[k]) for k in entries if k in after], examples)))
            else:
                folders.append((folder, "removed", _side(
                    [(k, before[k]) for k in entries if k in before], examples), None))
            continue
        folders.append((folder, "changed", _side(_direct(folder, before), examples),
                        _side(_direct(folder, after), examples)))
    kept.sort()
    return kept, folders
