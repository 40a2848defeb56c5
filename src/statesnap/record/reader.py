"""Reading a record back: every line type, a cut last line, and a lean read of plain tests.

A record written by a process that died may end in a cut line: it is ignored, and the test
that had started and never finished is kept as :attr:`Record.running`.  A record the disk
cut short mid-run ends with a ``cut`` line instead (:attr:`Record.cut`): its last test
finished, and the run went on without the record.  Anything else that is
not a record line raises :class:`RecordError`, naming the file and the line.  The formats
read are :data:`statesnap.record.journal.READABLE_FORMATS`; the line types and the format's
history: docs/ARCHITECTURE.md ("The record format").

The record is read a line at a time, and plain tests (nothing but an outcome and gauges) share
their phases, gauges and words: a record of 267,000 tests (200 MB) is read in a fraction of
its size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from statesnap.record.journal import READABLE_FORMATS, Record, TestEntry
from statesnap.state.diff import Change

#: A decoder's ``decode`` taken at import (with the plugin, before any test): an isolated
#: test's record is read while the tests run, and a test may have left ``json.loads`` patched.
_LOADS = json.JSONDecoder().decode


class RecordError(Exception):
    """A record that cannot be read: the message names the file and, where known, the line."""

    def __init__(self, path: Path | str, message: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = Path(path)
        self.line = line


def _iter_lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    """``(line number, text, is_last)``; the last line may lack its newline.

    Streamed a line at a time: a record of 267,000 tests is 200 MB, and holding its text
    (and a list of its lines) would cost twice that before the first line is parsed."""
    # surrogateescape: a record of an older statesnap may hold raw bytes that are not UTF-8
    # (a file name); they come back as the same surrogateescape string a new record escapes.
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for lineno, line in enumerate(f, start=1):
            if line.endswith("\n"):
                yield lineno, line[:-1], False
            else:
                yield lineno, line, True  # the last line, cut before its newline


#: The end of a test line that holds nothing but the outcome: no change, no failure, no
#: extra field (our writer puts ``changes`` then the optional ``gauges`` last).  A literal
#: ``"changes":[]`` cannot occur inside a JSON string, where quotes are escaped.
_PLAIN_TAIL = re.compile(r'"changes":\[\](?:,"gauges":\{[^{}]*\})?\}$')
_INDEX = re.compile(r'"index":(\d+)')
#: A ``start`` line as :meth:`statesnap.record.journal.RecordWriter.write_start` writes it (no
#: worker: the lane's), and only valid JSON: the index without a leading zero, the node id a
#: well-formed JSON string.
#: Possessive (``++``, ``*+``): the three kinds of piece cannot overlap (a plain character is
#: never a backslash or a quote), so giving back never finds a match, and a run of plain
#: characters is one step, not one branch per character (a quarter of the cost).
_START = re.compile(r'\{"type":"start","index":(0|[1-9][0-9]*),"nodeid":'
                    r'"(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+"\}')
#: How a test line our writer made begins (:func:`statesnap.record.journal.plain_test_line`,
#: :func:`statesnap.record.journal.dumps`): the index's digits start right after it.
_TEST_HEAD = '{"type":"test","index":'
#: How a plain test line without gauges ends.
_BARE_TAIL = '"changes":[]}'


def _plain_test_index(text: str) -> int | None:
    """The index of a plain test line (see :data:`_PLAIN_TAIL`), else None.  Like the tail,
    a literal ``"index":`` is a key: in a string its quotes would be escaped.

    The regular expressions decide only where the string methods cannot (gauges, or no run
    of decimal digits before the first comma): every line gets the answer they give, at a
    third of their cost on the lines every test writes."""
    if not text.startswith('{"type":"test",'):
        return None
    if not text.endswith(_BARE_TAIL) and (
            '"changes":[]' not in text or _PLAIN_TAIL.search(text) is None):
        return None  # (the tail's literal looked for first: one C scan of a line with changes)
    if text.startswith(_TEST_HEAD):
        # The first "index": is the one right there (the head holds no other); its digits
        # end at a comma in every line the writer makes.
        digits = text[len(_TEST_HEAD):text.find(",", len(_TEST_HEAD))]
        if digits.isdecimal():  # exactly what \d+ takes (Unicode decimal digits)
            return int(digits)
    found = _INDEX.search(text)
    return int(found.group(1)) if found is not None else None


#: The changes of a plain test, shared by every plain entry (read only, as every entry read
#: back is): a fresh empty list each would cost 19 MB for a record of 267,000 tests.
_NO_CHANGES: list[Change] = []


def _shared_entry(obj: dict[str, Any], shared: dict[Any, Any],
                  names: dict[str, str] | None) -> TestEntry:
    """The entry of a plain test line (nothing but its outcome and gauges), its phases, its
    gauges and its words shared with every other plain test's that reads the same: a record
    of 267,000 tests holds a few dozen distinct ones, not 267,000 of each (issue 27).  Read
    only, as every entry read back is."""
    phases = obj.get("phases")
    extra = {k: v for k, v in obj.items() if k not in _ENTRY_FIELDS}
    try:
        # One level deep: the gauges are a flat dict of numbers.
        key = (tuple(phases.items()) if isinstance(phases, dict) else None,
               tuple((k, tuple(v.items()) if isinstance(v, dict) else v)
                     for k, v in extra.items()),
               obj.get("outcome"), obj.get("worker"))
        parts = shared.get(key)
    except TypeError:  # a value that cannot be a key (a list in the gauges)
        key, parts = None, None
    if parts is None:
        parts = (dict(phases) if isinstance(phases, dict) else {}, extra,
                 str(obj.get("outcome", "unknown")), str(obj.get("worker", "main")))
        if key is not None:
            shared[key] = parts
    nodeid = str(obj["nodeid"])
    if names is not None:
        nodeid = names.setdefault(nodeid, nodeid)
    return TestEntry(index=int(obj["index"]), nodeid=nodeid, outcome=parts[2],
                     worker=parts[3], phases=parts[0], duration=float(obj.get("duration") or 0.0),
                     changes=_NO_CHANGES, extra=parts[1])


#: A test line's fields that are :class:`TestEntry`'s own (the rest go to ``extra``).
_ENTRY_FIELDS = frozenset({"type", "index", "nodeid", "worker", "outcome", "phases", "duration",
                           "changes", "failure"})


def read_record(path: Path | str, skip_plain: bool = False,
                names: dict[str, str] | None = None) -> Record:
    """Read a record, accepting a truncated last line; raise :class:`RecordError` otherwise.

    ``skip_plain`` leaves out the tests that changed nothing, did not fail and carry no extra
    field: what the session's own terminal section needs after a run without failures, at a
    fraction of the cost.  Everything else wants the whole record.

    ``names``, shared by the reads of several records of one suite (``statesnap diff``),
    makes their plain tests' equal node ids one string: two records of 267,000 tests would
    otherwise hold each id twice.
    """
    path = Path(path)
    if not path.exists():
        raise RecordError(path, "no such record")
    if path.is_dir():
        raise RecordError(path, "is a directory, not a record")
    record: Record | None = None
    # Keyed by (worker, index): a merged xdist record holds several lanes whose indexes
    # overlap, each lane's lines after its own "lane" line.
    # A start line the writer made is kept as its text, parsed only if its test never
    # finished (one per record at most): every test has one.
    started: dict[tuple[str, int], dict[str, Any] | str] = {}
    lane = "main"
    shared: dict[Any, Any] = {}
    #: ``(lane, probe, key) -> aliases``: the last ``aliases`` line of each key, given to
    #: the changes of that key in the test lines after it (``Journal.change_dicts``).
    aliases: dict[tuple[str, str, str], list[str]] = {}
    #: ``(lane, probe, key) -> after`` of the last change of each key in a test line: the
    #: ``before`` of a ``chained`` change (format 3, ``Journal.change_dicts``).
    afters: dict[tuple[str, str, str], Any] = {}
    for lineno, text, cut in _iter_lines(path):
        if not text.strip():
            continue
        if record is not None and not cut:
            if skip_plain:
                plain = _plain_test_index(text)
                if plain is not None:
                    started.pop((lane, plain), None)
                    continue
            # Every test has a start line, parsed only if its test never finished: a
            # record of 267,000 tests spares as many parses.
            start = _START.fullmatch(text) if text.startswith('{"type":"start"') else None
            if start is not None:
                started[(lane, int(start.group(1)))] = text
                continue
        try:
            obj = _LOADS(text)
        except json.JSONDecodeError as exc:
            if cut and record is not None:
                record.truncated = True
                break
            if cut:
                raise RecordError(path, "truncated inside its header line", lineno) from None
            raise RecordError(path, f"not a statesnap record line ({exc.msg})", lineno) from None
        if not isinstance(obj, dict) or "type" not in obj:
            raise RecordError(path, "not a statesnap record line (no 'type')", lineno)
        kind = obj["type"]
        if record is None:
            if kind == "cut":
                raise RecordError(path, "cut short before its header was written "
                                  f"({obj.get('error')})", lineno)
            if kind != "header":
                raise RecordError(path, "not a statesnap record (first line is no header)", 1)
            fmt = obj.get("format")
            if fmt not in READABLE_FORMATS:
                readable = ", ".join(map(str, READABLE_FORMATS))
                raise RecordError(
                    path,
                    f"unknown record format {fmt!r} (this statesnap reads format {readable}; "
                    "upgrade statesnap to read it)",
                    lineno,
                )
            record = Record(path=path, header=obj)
            lane = str(obj.get("worker", "main"))
            continue
        try:
            if kind == "test":
                plain = _plain_test_index(text) is not None
                if not plain:
                    _unchain(obj.get("changes"), lane, afters)
                entry = (_shared_entry(obj, shared, names) if plain
                         else TestEntry.from_json(obj))
                if aliases:
                    for ch in entry.changes:
                        if ch.aliases is None:
                            ch.aliases = list(aliases.get((lane, ch.probe, ch.key), ())) or None
                record.tests.append(entry)
                started.pop((entry.worker, entry.index), None)
                started.pop((lane, entry.index), None)
            elif kind == "start":
                started[(str(obj.get("worker", lane)), int(obj["index"]))] = obj
            elif kind == "aliases":
                names_of = obj["aliases"]
                if not isinstance(names_of, list):
                    raise TypeError("aliases")
                aliases[(lane, str(obj["probe"]), str(obj["key"]))] = [str(a) for a in names_of]
            elif kind == "lane":
                lane = str(obj.get("worker", lane))
                record.other.append(obj)
            elif kind == "collection":
                record.collection.extend(Change.from_json(c) for c in obj.get("changes") or [])
                _add_reorders(record.header, obj.get("reorders"))
                if isinstance(obj.get("preload"), list):  # statesnap.replay.warmpick
                    record.header.setdefault("preload", [str(n) for n in obj["preload"]])
            elif kind == "probe_error":
                record.errors.append(obj)
            elif kind == "internal_error":
                record.internal_errors.append(obj)
            elif kind == "footer":
                record.footer = obj
            elif kind == "cut":
                record.cut = obj
            elif kind == "released":
                actions = obj["actions"]
                if not isinstance(actions, list):
                    raise TypeError("actions")
                record.released.extend(a for a in actions if isinstance(a, dict))
            elif kind == "finding":
                if not isinstance(obj.get("victim"), str):
                    raise KeyError("victim")
                record.verdicts.append(obj)
            else:
                record.other.append(obj)
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordError(path, f"malformed {kind} line ({exc!r})", lineno) from None
    if record is None:
        raise RecordError(path, "empty record (no header line)")
    if started and record.cut is None:
        # (In a record cut short, the test whose line the disk refused had finished.)
        # The last test started and never finished (the latest one when lanes crashed).
        running = started[max(started, key=lambda k: (k[1], k[0]))]
        record.running = _LOADS(running) if isinstance(running, str) else running
    return record


def _unchain(changes: object, lane: str, afters: dict[tuple[str, str, str], Any]) -> None:
    """Give each ``chained`` change of a test line its ``before`` (the ``after`` of the last
    change of its key in this lane), and note each change's ``after``."""
    if not isinstance(changes, list):
        return
    for c in changes:
        if not isinstance(c, dict):
            continue
        ref = (lane, str(c.get("probe")), str(c.get("key")))
        if c.get("chained") and "before" not in c:
            if ref not in afters:
                raise ValueError(f"chained change of {ref[1]}:{ref[2]} with no earlier one")
            c["before"] = afters[ref]
        afters[ref] = c.get("after")


def _add_reorders(header: dict[str, Any], found: object) -> None:
    """Plugins that reordered the tests, known once they were collected (pytest-order sorts
    by markers only tests have), joined to what the header's ``replay.reorders`` says."""
    if not isinstance(found, list) or not found:
        return
    replay = header.setdefault("replay", {})
    if not isinstance(replay, dict):
        return
    known = replay.get("reorders")
    kept = list(known) if isinstance(known, list) else []
    replay["reorders"] = kept + [str(n) for n in found if str(n) not in kept]
