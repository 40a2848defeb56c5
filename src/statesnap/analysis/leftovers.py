"""Files and directories an earlier run's tests left on disk, from the records of earlier runs.

A file or directory a recorded test created, never removed, and still there is a leftover;
verification sets it aside (:class:`statesnap.replay.filestage.FileStage`) to see whether the
victim then passes alone.  See docs/ARCHITECTURE.md ("From changes to suspects").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statesnap.record.journal import Record
from statesnap.record.reader import RecordError, read_record

#: How many earlier records are read, newest first.
MAX_RECORDS = 10


@dataclass
class Leftover:
    """A file an earlier run created and left, and the test that wrote it."""

    path: Path
    #: The key the ``files`` probe recorded it under (relative to the rootdir where inside).
    key: str
    writer: str
    #: The earlier run's record that saw it created.
    record: Path
    fingerprint: Any = None

    def to_json(self) -> dict[str, str]:
        return {"path": self.key, "writer": self.writer, "record": str(self.record)}


def _resolve(key: str, rootdir: Path) -> Path:
    p = Path(key)
    return p if p.is_absolute() else rootdir / p


def _started(record: Record) -> float:
    value = record.header.get("started")
    return float(value) if isinstance(value, (int, float)) else 0.0


def earlier_records(record: Record) -> list[Path]:
    """Records of earlier runs beside ``record`` and in the rootdir's runs folder, newest
    first (by modification time; ``record`` itself left out)."""
    rootdir = Path(record.header.get("rootdir") or ".")
    folders = dict.fromkeys([record.path.parent,
                             rootdir / ".pytest_cache" / "statesnap" / "runs"])
    me = record.path.resolve()
    found: list[tuple[float, Path]] = []
    for folder in folders:
        try:
            paths = list(folder.glob("*.jsonl"))
        except OSError:
            continue
        for p in paths:
            try:
                if p.resolve() == me:
                    continue
                found.append((p.stat().st_mtime, p))
            except OSError:
                continue
    found.sort(key=lambda x: x[0], reverse=True)
    return [p for _, p in dict.fromkeys(found)]


def _created_by(record: Record) -> dict[str, tuple[str, Any]]:
    """``key -> (test, fingerprint)`` of the files ``record``'s tests created and left."""
    out: dict[str, tuple[str, Any]] = {}
    for t in sorted(record.tests, key=lambda t: (t.worker, t.index)):
        for ch in t.changes:
            if ch.probe != "files":
                continue
            if ch.change == "removed":
                out.pop(ch.key, None)
            elif ch.before is None:
                out[ch.key] = (t.nodeid, ch.after)
    return out


def find_leftovers(record: Record, limit: int = MAX_RECORDS) -> list[Leftover]:
    """Files and directories earlier runs' tests created, never removed, and there now.

    Files ``record``'s own run created are left out: the replays' file stage sets those
    aside already.  A file several earlier runs created is named after the newest.
    """
    rootdir = Path(record.header.get("rootdir") or ".")
    own_created = {ch.key for t in record.tests for ch in t.changes
                   if ch.probe == "files" and ch.before is None}
    started = _started(record)
    found: dict[str, Leftover] = {}
    for path in earlier_records(record)[:limit]:
        try:
            earlier = read_record(path)
        except (RecordError, OSError, ValueError):
            continue
        if started and _started(earlier) >= started:
            continue  # not earlier: a run that started after this one
        if Path(str(earlier.header.get("rootdir") or "")) != rootdir:
            continue  # another project's run: its keys mean other files
        for key, (writer, fingerprint) in _created_by(earlier).items():
            if key in found or key in own_created:
                continue
            target = _resolve(key, rootdir)
            there = (target.is_dir() and not target.is_symlink() if key.endswith("/")
                     else target.is_file() or target.is_symlink())
            if there:  # a directory (``dir/`` key) too: a later mkdir of it fails
                found[key] = Leftover(target, key, writer, path, fingerprint)
    return list(found.values())
