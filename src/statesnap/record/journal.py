"""The run record: a JSON Lines journal, appended and flushed per test.

The writer of every line type, and the typed entries a record is read back as (the reader:
:mod:`statesnap.record.reader`).  Bump :data:`FORMAT` on every incompatible change, keep a
reader for the old one (:data:`READABLE_FORMATS`) and add a golden record under ``snapshots/``.
The line types and the format's history: docs/ARCHITECTURE.md ("The record format").
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from statesnap.base.plain import Value
from statesnap.base.text import FILE_ERRORS
from statesnap.record.reserve import Reserve
from statesnap.state.diff import Change

FORMAT = 3
READABLE_FORMATS = (1, 2, 3)


def _json_default(value: object) -> Any:
    # Fingerprints should already be JSON-able; anything else degrades to its repr instead of
    # losing the line.
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return repr(value)


#: One encoder for every line (``json.dumps`` with options builds a new one per call).
_ENCODER = json.JSONEncoder(default=_json_default, ensure_ascii=False, separators=(",", ":"))
#: Its ``encode`` taken now, with the plugin: a test that patched ``json.JSONEncoder.encode``
#: and left it must not reach the record's lines.
_ENCODE = _ENCODER.encode


#: A JSON string literal, non-ASCII kept (as ``dumps`` writes it).
encode_string: Any = json.encoder.encode_basestring


def dumps(obj: Mapping[str, Any] | list[Any]) -> str:
    return _ENCODE(obj)


def plain_test_line(index: int, nodeid_json: str, worker_json: str, outcome: str,
                    phases_json: str, duration: float, gauges_json: str | None,
                    changes_json: str = "[]") -> str:
    """The ``test`` line of a test with no failure and no extra field (and, unless
    ``changes_json`` is given, no change).

    Most lines of a run are like this, and formatting them by hand costs a third of
    :func:`dumps`.  The text is exactly what ``dumps`` makes of the same entry (a test holds
    that), so :func:`statesnap.record.reader.read_record`'s plain-line check finds them either
    way.  ``*_json`` arguments are already JSON text.  A test whose only extra is its changes
    (every test of a suite whose autouse fixture resets a setting) has only them encoded: the
    fields around them are the same text as a plain line's, most of them the same every test.
    """
    gauges = "" if gauges_json is None else f',"gauges":{gauges_json}'
    return (f'{{"type":"test","index":{index},"nodeid":{nodeid_json},"worker":{worker_json},'
            f'"outcome":{encode_string(outcome)},"phases":{phases_json},'
            f'"duration":{float(duration)!r},"changes":{changes_json}{gauges}}}')


class RecordWriter:
    """Appends lines, each with one ``write`` syscall of its own (no buffer), so a killed
    process leaves every finished line.

    ``keep_going`` (the pytest session's record): a write the disk refuses (full, over quota,
    an I/O error) never raises.  The record is cut short instead: what was written of the
    line is taken back, a ``cut`` line says why (:meth:`cut_short`), and every later line is
    dropped; :attr:`cut` keeps the note.  Room for that note is kept reserved past the end
    of the file (:mod:`statesnap.record.reserve`).  Without it, an error raises OSError.
    """

    def __init__(self, path: Path, keep_going: bool = False) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                                       0o666)
        #: Bytes written so far: where the next line starts.
        self._size = 0
        self._lines = 0
        self._reserve: Reserve | None = Reserve(self._fd) if keep_going else None
        #: The ``cut`` note once the disk refused a line (None: every line was written).
        self.cut: dict[str, Any] | None = None
        #: Whether the note itself reached the file.
        self.cut_noted = False
        #: ``(probe, key) -> aliases`` as the last ``aliases`` line gave them (none: []).
        self._aliases: dict[tuple[str, str], list[str]] = {}
        #: ``(probe, key) -> after`` of the last change of that key written in a test line.
        self._after: dict[tuple[str, str], Any] = {}

    @property
    def fileno(self) -> int:
        return -1 if self._fd is None else self._fd

    def write(self, obj: Mapping[str, Any]) -> None:
        self.write_line(dumps(obj))

    def write_open(self, obj: Mapping[str, Any]) -> None:
        """:meth:`write`, or ValueError once closed: for a caller that keeps what was not
        written (:func:`statesnap.base.internal.set_sink`)."""
        if self._fd is None:
            raise ValueError(f"{self.path}: the record is closed")
        if self.cut is not None:
            raise ValueError(f"{self.path}: the record was cut short")
        self.write(obj)

    def change_dicts(self, changes: Iterable[Change]) -> list[dict[str, Any]]:
        """A test line's ``changes``, written compactly and losslessly (format 3):

        - without ``aliases``: an ``aliases`` line written before the test line says them
          where they differ from the last such line of that key (loguru's logger names the
          same 42 other keys in every test's change);
        - without ``before`` where it is the ``after`` of the last change of the same key
          written in a test line: ``"chained": true`` says so (an autouse fixture that
          resets a key before every test makes each test's change start where the last one
          ended).

        The reader gives both back (:func:`~statesnap.record.reader.read_record`)."""
        out: list[dict[str, Any]] = []
        last = self._after
        for c in changes:
            data = c.to_json()
            aliases = data.pop("aliases", None) or []
            ref = (c.probe, c.key)
            if self._aliases.get(ref, []) != aliases:
                self._aliases[ref] = aliases
                self.write({"type": "aliases", "probe": c.probe, "key": c.key,
                            "aliases": aliases})
            before = data["before"]
            if before is not None and ref in last and last[ref] == before:
                del data["before"]
                data["chained"] = True
            last[ref] = data["after"]
            out.append(data)
        return out

    def write_start(self, index: int, nodeid: str) -> None:
        """The ``start`` line of a test (written before every test: formatted by hand)."""
        self.write_start_encoded(index, encode_string(nodeid))

    def write_start_encoded(self, index: int, nodeid_json: str) -> None:
        """:meth:`write_start` with the node id already a JSON string (``encode_string``):
        the core encodes it once for both of a test's lines."""
        self.write_line(f'{{"type":"start","index":{int(index)},"nodeid":{nodeid_json}}}')

    def write_line(self, line: str) -> None:
        fd = self._fd
        if fd is None or self.cut is not None:
            return
        # A byte that was not UTF-8 (a surrogateescape character in a file name or an
        # environment value) is written as JSON's ``\udcXX`` escape: valid UTF-8, and read
        # back as the same string (statesnap.base.text).
        data = (line + "\n").encode("utf-8", FILE_ERRORS)
        size = len(data)
        reserve = self._reserve
        # Most lines fit in the room already reserved: no call for them.
        if (reserve is not None and self._size + size > reserve.limit
                and not reserve.room_for(self._size, size)):
            self.cut_short(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
            return
        try:
            while data:  # a regular file takes it whole; a short write (a full disk) is retried
                data = data[os.write(fd, data):]
        except OSError as exc:
            if reserve is None:
                raise
            self.cut_short(exc)
            return
        self._size += size
        self._lines += 1

    def cut_short(self, exc: OSError) -> None:
        """End the record here: take back a line written in part, write the ``cut`` note in
        the room left (reserved), drop every later line."""
        if self._fd is None or self.cut is not None:
            return
        self.cut = {"type": "cut", "error": exc.strerror or str(exc),
                    "errno": errno.errorcode.get(exc.errno or 0, str(exc.errno)),
                    "lines": self._lines}
        note = (dumps(self.cut) + "\n").encode("utf-8", FILE_ERRORS)
        try:
            # Back to where the refused line began: a cut line would hide the note.
            if os.fstat(self._fd).st_size > self._size:
                os.ftruncate(self._fd, self._size)
            os.lseek(self._fd, self._size, os.SEEK_SET)
            written = os.write(self._fd, note)
            if written != len(note):
                # A disk with room for part of it (no reserve): half a note is no line.
                os.ftruncate(self._fd, self._size)
                return
        except OSError:
            return
        self._size += written
        self.cut_noted = True

    def close(self) -> None:
        if self._fd is not None:
            if self._reserve is not None:
                self._reserve.release(self._size)
            os.close(self._fd)
            self._fd = None


def append_lines(path: Path, objs: list[Mapping[str, Any]]) -> int:
    """Append ``objs`` to the record at ``path`` after it was closed; how many were written.

    Each line is one ``write`` of its own on an ``O_APPEND`` descriptor, as the record's other
    lines are: a process killed halfway leaves whole lines and at most one cut last line,
    which :func:`statesnap.record.reader.read_record` ignores.  A write that fails (a full
    disk) takes back what it wrote of its line before raising: half a line would run into
    the next one appended, and the record would no longer read.

    A record that already ends in such a cut line (a run or an earlier append killed
    mid-write) is left as it is, :class:`ValueError`: a line appended after it would join the
    cut text into one whole line that is no JSON, and the reader refuses such a record.
    """
    lines = [dumps(obj) + "\n" for obj in objs]
    if not lines:
        return 0
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
    try:
        end = os.fstat(fd).st_size
        if end and os.pread(fd, 1, end - 1) != b"\n":
            raise ValueError("it ends in a line cut short (a process killed mid-write); "
                             "a line appended after it would make the record unreadable")
        for line in lines:
            data = encoded = line.encode("utf-8", FILE_ERRORS)
            try:
                while data:
                    data = data[os.write(fd, data):]
            except OSError:
                try:
                    os.ftruncate(fd, end)
                except OSError:
                    pass
                raise
            end += len(encoded)
    finally:
        os.close(fd)
    return len(lines)


class TestEntry(Value):
    """One finished test as read back from a record."""

    __test__ = False  # a data class, not a pytest test class despite the name
    _fields = ("index", "nodeid", "outcome", "worker", "phases", "duration", "changes",
                 "failure", "extra")
    __slots__ = _fields

    def __init__(self, index: int, nodeid: str, outcome: str, worker: str = "main",
                 phases: dict[str, str] | None = None, duration: float = 0.0,
                 changes: list[Change] | None = None, failure: dict[str, Any] | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        self.index = index
        self.nodeid = nodeid
        self.outcome = outcome
        self.worker = worker
        self.phases: dict[str, str] = {} if phases is None else phases
        self.duration = duration
        self.changes: list[Change] = [] if changes is None else changes
        self.failure = failure
        self.extra: dict[str, Any] = {} if extra is None else extra

    def renumbered(self, index: int) -> TestEntry:
        """The same entry at another index (the fields shared, as ``dataclasses.replace``)."""
        return TestEntry(index, self.nodeid, self.outcome, self.worker, self.phases,
                         self.duration, self.changes, self.failure, self.extra)

    @property
    def failed(self) -> bool:
        """Failed or errored in setup or call (teardown errors do not make a victim)."""
        return self.phases.get("setup") == "failed" or self.phases.get("call") == "failed"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": "test",
            "index": self.index,
            "nodeid": self.nodeid,
            "worker": self.worker,
            "outcome": self.outcome,
            "phases": self.phases,
            "duration": round(self.duration, 6),
            "changes": [c.to_json() for c in self.changes],
        }
        if self.failure is not None:
            data["failure"] = self.failure
        data.update(self.extra)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TestEntry:
        known = {"type", "index", "nodeid", "worker", "outcome", "phases", "duration"}
        known |= {"changes", "failure"}
        return cls(
            index=int(data["index"]),
            nodeid=str(data["nodeid"]),
            outcome=str(data.get("outcome", "unknown")),
            worker=str(data.get("worker", "main")),
            phases=dict(data.get("phases") or {}),
            duration=float(data.get("duration") or 0.0),
            changes=[Change.from_json(c) for c in data.get("changes") or []],
            failure=data.get("failure"),
            extra={k: v for k, v in data.items() if k not in known},
        )


class Record(Value):
    """A whole record, read back."""

    _fields = ("path", "header", "collection", "tests", "errors", "footer", "running",
                 "truncated", "other", "verdicts", "released", "internal_errors", "cut")
    __slots__ = _fields

    def __init__(self, path: Path, header: dict[str, Any],
                 collection: list[Change] | None = None, tests: list[TestEntry] | None = None,
                 errors: list[dict[str, Any]] | None = None,
                 footer: dict[str, Any] | None = None, running: dict[str, Any] | None = None,
                 truncated: bool = False, other: list[dict[str, Any]] | None = None,
                 verdicts: list[dict[str, Any]] | None = None,
                 released: list[dict[str, Any]] | None = None,
                 internal_errors: list[dict[str, Any]] | None = None,
                 cut: dict[str, Any] | None = None) -> None:
        self.path = path
        self.header = header
        self.collection: list[Change] = [] if collection is None else collection
        self.tests: list[TestEntry] = [] if tests is None else tests
        self.errors: list[dict[str, Any]] = [] if errors is None else errors
        self.footer = footer
        #: The test that was running when the process died (a ``start`` with no ``test``
        #: line).
        self.running = running
        #: The last line was cut short (the process died mid-write); it was ignored.
        self.truncated = truncated
        self.other: list[dict[str, Any]] = [] if other is None else other
        #: The ``finding`` lines (format 2): the verdicts the session stored, as written.
        self.verdicts: list[dict[str, Any]] = [] if verdicts is None else verdicts
        #: The actions of the ``released`` lines: what the session let go of before
        #: replaying.
        self.released: list[dict[str, Any]] = [] if released is None else released
        #: The ``internal_error`` lines: statesnap's own errors, caught so the run went on.
        self.internal_errors: list[dict[str, Any]] = (
            [] if internal_errors is None else internal_errors)
        #: The ``cut`` line: the disk refused a line mid-run, and the record stops there
        #: (``error``, ``errno``, ``lines`` written before it); the tests after it ran but
        #: are not in the record.
        self.cut = cut

    @property
    def worker(self) -> str:
        return str(self.header.get("worker", "main"))

    @property
    def crashed(self) -> bool:
        """The process died before the footer (a record the disk cut short did not)."""
        return self.footer is None and self.cut is None

    def test_by_id(self, nodeid: str) -> TestEntry | None:
        for t in self.tests:
            if t.nodeid == nodeid:
                return t
        return None

    def order(self) -> list[str]:
        return [t.nodeid for t in self.tests]

