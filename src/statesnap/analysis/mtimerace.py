"""The mtime race, said in words: a file whose content changed while its mtime did not.

One sentence per race (the file, the test that changed it, the test whose write the mtime still
stamps, the mtime resolution) for the terminal, the report and the Markdown.  Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from statesnap.base.fsinfo import (
    REWRITTEN_STAT_KEPT,
    parse_file_fingerprint,
    parse_folder_fingerprint,
    resolution_parts,
)
from statesnap.base.plain import Value
from statesnap.record.journal import TestEntry

HINT = ("caches keyed on mtime (mypy's incremental cache, make, build tools) cannot see this "
        "change: write the file under tmp_path, or let its mtime move forward "
        "(os.utime with a later time) after rewriting it")


class Race(Value):
    _fields = ("key", "test", "earlier", "before", "after", "flag", "resolution")
    __slots__ = _fields

    def __init__(self, key: str, test: str, earlier: str | None, before: Any, after: Any, flag: str,
                 resolution: str) -> None:
        self.key = key
        #: The test that changed the file without moving its mtime.
        self.test = test
        #: The test that wrote the version the mtime still stamps (None: before the run).
        self.earlier = earlier
        self.before = before
        self.after = after
        self.flag = flag
        self.resolution = resolution


def flagged(value: Any) -> str | None:
    """The fingerprint's flag when ``value`` is a ``files`` fingerprint with one."""
    state = parse_file_fingerprint(value)
    return state.flag if state is not None else None


def file_text(value: Any) -> str | None:
    """``19 bytes`` / ``19 bytes, same mtime`` / ``→ target`` / ``5000 files, 5000 bytes
    (out/f0.txt, …)``: a files fingerprint in words."""
    state = parse_file_fingerprint(value)
    if state is None:
        return folder_text(value)
    if state.symlink is not None:
        return f"symlink → {state.symlink}"
    return f"{state.size} bytes" + (", same mtime" if state.flag else "")


def folder_text(value: Any) -> str | None:
    """A folder's summary (:func:`~statesnap.base.fsinfo.folder_fingerprint`) in words."""
    folder = parse_folder_fingerprint(value)
    if folder is None:
        return None
    text = f"{folder.files} files"
    if folder.dirs:
        text += f" in {folder.dirs + 1} folders"
    text += f", {folder.size} bytes"
    if folder.examples:
        text += f" (e.g. {', '.join(folder.examples[:2])}, …)"
    return text


def file_pair(before: Any, after: Any) -> tuple[str | None, str | None]:
    """Both sides of a ``files`` change in words (:func:`file_text`).

    A file rewritten with the same size reads the same on both sides (``870 bytes → 870
    bytes``), a line that shows no change at all: the after side then says what moved.
    """
    b, a = file_text(before), file_text(after)
    if a is None or b != a:
        return b, a
    old, new = parse_file_fingerprint(before), parse_file_fingerprint(after)
    if (old is not None and new is not None and old.mtime_ns is not None
            and new.mtime_ns is not None and old.mtime_ns != new.mtime_ns):
        return b, f"{a}, rewritten (mtime {(new.mtime_ns - old.mtime_ns) / 1e9:+.3f} s)"
    return b, f"{a}, rewritten"


def resolution_of(header: Mapping[str, Any], key: str) -> str:
    """The measured mtime resolution of the filesystem that holds ``key`` (a files key)."""
    found = header.get("mtime_resolution") or {}
    if not isinstance(found, Mapping) or not found:
        return "not measured"
    root = str(header.get("rootdir") or "")
    path = key if key.startswith("/") else str(Path(root) / key)
    best = max(found, key=lambda r: len(str(r)) if path.startswith(str(r)) else -1)
    info = found[best]
    if not isinstance(info, Mapping) or info.get("resolution_ns") is None:
        return "not measured"
    text, where = resolution_parts(info)
    return f"{text} ({where})" if where else text


def races(tests: Iterable[TestEntry], header: Mapping[str, Any]) -> list[Race]:
    """Every flagged ``files`` change of a record's tests, in run order (per worker)."""
    last: dict[tuple[str, str], str] = {}
    out: list[Race] = []
    for t in sorted(tests, key=lambda t: (t.worker, t.index)):
        for ch in t.changes:
            if ch.probe != "files":
                continue
            ref = (t.worker, ch.key)
            flag = flagged(ch.after)
            if flag is not None:
                out.append(Race(ch.key, t.nodeid, last.get(ref), ch.before, ch.after, flag,
                                resolution_of(header, ch.key)))
            last[ref] = t.nodeid
    return out


def sentence(race: Race) -> str:
    """One sentence with the words "mtime did not change", the file, both tests, the
    filesystem's resolution and what it breaks."""
    a, b = parse_file_fingerprint(race.before), parse_file_fingerprint(race.after)
    if race.flag == REWRITTEN_STAT_KEPT or a is None or b is None or a.size == b.size:
        what = "rewrote it with the same size"
    else:
        what = f"changed its size ({a.size} → {b.size} bytes)"
    since = (f"since {race.earlier} wrote it" if race.earlier and race.earlier != race.test
             else "since the run started" if race.earlier is None
             else "between two writes of the same test")
    return (f"{race.key}: {race.test} {what} but the mtime did not change {since} (put "
            "back with os.utime, or both writes fell within one tick of the filesystem's "
            f"mtime resolution: {race.resolution}); caches keyed on mtime will not see the "
            "change")


def finding_sentence(key: str, before: Any, after: Any, polluter: str | None, victim: str,
                     header: Mapping[str, Any]) -> str | None:
    """The sentence for a finding whose state is a flagged file, or None."""
    flag = flagged(after)
    if flag is None:
        return None
    race = Race(key, polluter or "an earlier test", None, before, after, flag,
                resolution_of(header, key))
    text = sentence(race).replace(" since the run started", f" before {victim} read it")
    return text
