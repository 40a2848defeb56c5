"""Lanes: one per record (an xdist worker or a CI shard), the timeline, and the page's data.

One compact SVG timeline per lane (runs of one outcome share a rectangle); per-test detail
travels as JSON, not DOM.  See docs/ARCHITECTURE.md ("The HTML report").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, overload

from statesnap.base.plain import Value
from statesnap.output.report.changes import ChangeViews
from statesnap.output.report.values import cut
from statesnap.record.journal import Record, TestEntry
from statesnap.state.diff import Change

#: Outcomes with a colour of their own; anything else is drawn as ``other``.
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed", "crashed")
#: Outcomes that get a marker wide enough to see among thousands of passing tests.
NOTABLE = frozenset({"failed", "error", "xpassed", "crashed"})
#: Characters of a failure's text carried into the page.
FAILURE_TEXT_LIMIT = 4000
NODEID_LIMIT = 1000
#: Leaks of this severity or below (plain imports, RNG state) are listed but not marked.
LOW_SEVERITY = 1
#: The narrowest marker, as a fraction of the lane: about one pixel in 600.
MARKER_FRACTION = 1 / 600
#: The leaks of a test that left none, shared by every such entry (read only): a fresh empty
#: list each would cost 19 MB for a record of 267,000 tests (issue 27).
_NO_LEAKS: list[Change] = []


def outcome_class(outcome: str) -> str:
    return outcome if outcome in OUTCOMES else "other"


class LaneEntry(Value):
    """One test in a lane, in run order (``pos``), or the test that was running at a crash."""

    _fields = ("pos", "test", "nodeid", "outcome", "leaks")
    __slots__ = _fields

    def __init__(self, pos: int, test: TestEntry | None, nodeid: str, outcome: str,
                 leaks: list[Change] | None = None) -> None:
        self.pos = pos
        self.test = test
        self.nodeid = nodeid
        self.outcome = outcome
        self.leaks: list[Change] = [] if leaks is None else leaks

    @property
    def notable_leaks(self) -> int:
        """The test's own leaks above low severity (a plain import is not worth a marker), as
        the terminal summary and the summary JSON count them: what a class or module set-up
        of the user's left is that method's (:attr:`setup_leakers`), not the test's."""
        if not self.leaks:
            return 0
        from statesnap.analysis.leaks import by_users_setup

        return sum(1 for c in self.leaks if c.severity > LOW_SEVERITY and not by_users_setup(c))

    @property
    def setup_leakers(self) -> set[str]:
        """The set-ups of the user's (``TestX.setup_class``) that left a leak above low
        severity where the record has it, on this test."""
        if not self.leaks:
            return set()
        from statesnap.analysis.leaks import by_users_setup, setup_name

        return {setup_name(c) for c in self.leaks
                if c.severity > LOW_SEVERITY and by_users_setup(c)}


class LaneEntries(Sequence[LaneEntry]):
    """A lane's entries (its tests in run order, then the test running at a crash), each
    made when it is read: an entry held for each of a record's 267,000 tests would cost
    30 MB for the time the report is built (issue 27).  Two reads of one position give
    equal entries, not the same object."""

    def __init__(self, record: Record) -> None:
        self._tests = record.tests
        self._leaks: dict[int, list[Change]] = {}
        # A record where no test changed anything lists no leak: the rules that list them
        # (statesnap.analysis.resets, and what it imports) are not imported (issue 28).
        if any(t.changes for t in record.tests):
            from statesnap.analysis.resets import listed_leaks

            self._leaks = listed_leaks(record.tests, record.footer)
        running = record.running
        self._running = None if running is None else str(running.get("nodeid", "?"))

    def __len__(self) -> int:
        return len(self._tests) + (self._running is not None)

    def _entry(self, pos: int) -> LaneEntry:
        if pos == len(self._tests):
            assert self._running is not None
            return LaneEntry(pos, None, self._running, "crashed")
        t = self._tests[pos]
        return LaneEntry(pos, t, t.nodeid, outcome_class(t.outcome),
                         self._leaks.get(t.index, _NO_LEAKS))

    def __iter__(self) -> Iterator[LaneEntry]:
        for pos in range(len(self)):
            yield self._entry(pos)

    def matching(self, nodeid: str) -> Iterator[LaneEntry]:
        """The entries of ``nodeid``, in run order (made only for those)."""
        for pos, t in enumerate(self._tests):
            if t.nodeid == nodeid:
                yield self._entry(pos)
        if self._running == nodeid:
            yield self._entry(len(self._tests))

    @overload
    def __getitem__(self, i: int) -> LaneEntry: ...
    @overload
    def __getitem__(self, i: slice) -> list[LaneEntry]: ...
    def __getitem__(self, i: int | slice) -> LaneEntry | list[LaneEntry]:
        if isinstance(i, slice):
            return [self._entry(pos) for pos in range(len(self))[i]]
        pos = range(len(self))[i]  # IndexError out of range, as a list's
        return self._entry(pos)


class Lane(Value):
    _fields = ("index", "label", "record", "entries")
    __slots__ = _fields

    def __init__(self, index: int, label: str, record: Record, entries: LaneEntries) -> None:
        self.index = index
        self.label = label
        self.record = record
        self.entries = entries

    def key(self, pos: int) -> str:
        """The id of a test in the page: ``lane.position``."""
        return f"{self.index}.{pos}"

    def find(self, nodeid: str, *, prefer_failed: bool = False) -> LaneEntry | None:
        found: LaneEntry | None = None
        for entry in self.entries.matching(nodeid):
            if prefer_failed and entry.test is not None and entry.test.failed:
                return entry
            found = found or entry
        return found


def lane_labels(records: Sequence[Record]) -> list[str]:
    """The worker id of each record, or its file name where worker ids collide (CI shards)."""
    workers = [r.worker for r in records]
    first = [r.worker if workers.count(r.worker) == 1 else r.path.name for r in records]
    return [f"{label} #{i + 1}" if first.count(label) > 1 else label
            for i, label in enumerate(first)]


def build_lanes(records: Sequence[Record]) -> list[Lane]:
    return [Lane(i, label, record, LaneEntries(record))
            for i, (record, label) in enumerate(zip(records, lane_labels(records), strict=True))]


def find_test(lanes: Sequence[Lane], nodeid: str, worker: str | None = None,
              *, prefer_failed: bool = False) -> tuple[Lane, LaneEntry] | None:
    """Where a finding's test ran: its worker's lane first, then any lane."""
    ordered = sorted(lanes, key=lambda lane: lane.record.worker != worker)
    for lane in ordered:
        entry = lane.find(nodeid, prefer_failed=prefer_failed)
        if entry is not None:
            return lane, entry
    return None


class Rect(Value):
    """A run of tests in one lane: ``x`` and ``width`` in test positions."""

    _fields = ("x", "width", "kind", "count")
    __slots__ = _fields

    def __init__(self, x: float, width: float, kind: str, count: int = 1) -> None:
        self.x = x
        self.width = width
        self.kind = kind
        self.count = count


class LaneView(Value):
    _fields = ("index", "label", "source", "count", "segments", "markers", "leak_marks", "leaked",
               "running")
    __slots__ = _fields

    def __init__(self, index: int, label: str, source: str, count: int, segments: list[Rect],
                 markers: list[Rect], leak_marks: list[Rect], leaked: int, running: str | None
                 ) -> None:
        self.index = index
        self.label = label
        self.source = source
        self.count = count
        self.segments = segments
        self.markers = markers
        self.leak_marks = leak_marks
        self.leaked = leaked
        self.running = running


class TimelineView(Value):
    _fields = ("lanes", "width", "outcomes", "leaked")
    __slots__ = _fields

    def __init__(self, lanes: list[LaneView], width: int, outcomes: list[tuple[str, int]],
                 leaked: int) -> None:
        self.lanes = lanes
        #: Positions along the x axis: the longest lane, so that lanes line up at their start.
        self.width = width
        self.outcomes = outcomes
        self.leaked = leaked


def _runs(flags: Sequence[str | None]) -> list[tuple[int, int, str]]:
    """``(start, length, value)`` of consecutive equal non-None values."""
    out: list[tuple[int, int, str]] = []
    for pos, value in enumerate(flags):
        if value is None:
            continue
        if out and out[-1][2] == value and out[-1][0] + out[-1][1] == pos:
            start, length, _ = out[-1]
            out[-1] = (start, length + 1, value)
        else:
            out.append((pos, 1, value))
    return out


def timeline(lanes: Sequence[Lane]) -> TimelineView:
    width = max((len(lane.entries) for lane in lanes), default=0) or 1
    least = max(1.0, width * MARKER_FRACTION)
    views = []
    counts: Counter[str] = Counter()
    leaked_total = 0
    for lane in lanes:
        outcomes = [e.outcome for e in lane.entries]
        counts.update(outcomes)
        segments = [Rect(s, n, kind, n) for s, n, kind in _runs(outcomes)]
        notable = [o if o in NOTABLE else None for o in outcomes]
        markers = [Rect(s, max(n, least), kind, n) for s, n, kind in _runs(notable)]
        leaky = ["leak" if e.notable_leaks else None for e in lane.entries]
        leak_marks = [Rect(s, max(n, least), kind, n) for s, n, kind in _runs(leaky)]
        leaked = sum(1 for e in lane.entries if e.notable_leaks)
        leaked_total += leaked
        running = lane.record.running
        views.append(LaneView(
            index=lane.index,
            label=lane.label,
            source=lane.record.path.name,
            count=len(lane.record.tests),
            segments=segments,
            markers=markers,
            leak_marks=leak_marks,
            leaked=leaked,
            running=cut(str(running.get("nodeid", "?")), NODEID_LIMIT) if running else None,
        ))
    ordered = [(o, counts[o]) for o in (*OUTCOMES, "other") if counts[o]]
    return TimelineView(views, width, ordered, leaked_total)


def page_data(lanes: Sequence[Lane], views: ChangeViews) -> dict[str, Any]:
    """The JSON the page's script reads: every test in a compact row, details where any.

    ``tests`` rows are ``[lane, position, nodeid, outcome, duration, leaks, changes]``
    (``leaks`` counts those above low severity),
    lane by lane, so a test's row is ``lanes[lane].offset + position``.  They are
    :class:`TestRows`, made as they are read (written into the page).
    """
    lane_rows: list[dict[str, Any]] = []
    details: dict[str, Any] = {}
    offset = 0
    for lane in lanes:
        lane_rows.append({"label": lane.label, "offset": offset, "count": len(lane.entries),
                          "worker": lane.record.worker, "source": lane.record.path.name})
        offset += len(lane.entries)
        for e in lane.entries:
            detail = _detail(e, views)
            if detail is not None:
                details[lane.key(e.pos)] = detail
    return {"lanes": lane_rows, "tests": TestRows(lanes), "details": details}


def _row(lane: Lane, e: LaneEntry) -> list[Any]:
    t = e.test
    return [lane.index, e.pos, cut(e.nodeid, NODEID_LIMIT), e.outcome,
            round(t.duration, 4) if t is not None else None,
            e.notable_leaks, len(t.changes) if t is not None else 0]


class TestRows(Sequence[list[Any]]):
    """The page's ``tests`` rows (:func:`page_data`), each made when it is read: a list of
    seven per test held for the time the page is written would cost 40 MB for a record of
    267,000 tests (issue 27).  :func:`statesnap.output.report.render.json_chunks` writes them
    a batch at a time."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, lanes: Sequence[Lane]) -> None:
        self._lanes = list(lanes)
        self._count = sum(len(lane.entries) for lane in self._lanes)

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[list[Any]]:
        for lane in self._lanes:
            for e in lane.entries:
                yield _row(lane, e)

    @overload
    def __getitem__(self, i: int) -> list[Any]: ...
    @overload
    def __getitem__(self, i: slice) -> list[list[Any]]: ...
    def __getitem__(self, i: int | slice) -> list[Any] | list[list[Any]]:
        if isinstance(i, slice):
            return list(self)[i]
        if i < 0:
            i += self._count
        for lane in self._lanes:
            if 0 <= i < len(lane.entries):
                return _row(lane, lane.entries[i])
            i -= len(lane.entries)
        raise IndexError("test row out of range")


def _detail(e: LaneEntry, views: ChangeViews) -> dict[str, Any] | None:
    t = e.test
    if t is None:
        return {"crashed": True}
    if not t.changes and t.failure is None:
        return None
    # A leak is one of this test's own Change objects that resolve_leaks kept (identity, so
    # two equal changes of different tests never confuse each other).
    # A leak listed at LOW (analysis/resets.py) is a copy: matched by its key, shown as listed.
    leak_ids = {id(c) for c in e.leaks}
    listed = {(c.probe, c.key): c for c in e.leaks}
    data: dict[str, Any] = {
        "index": t.index,
        "worker": t.worker,
        "phases": dict(t.phases),
        "changes": [views.detail(c if id(c) in leak_ids else listed.get((c.probe, c.key), c),
                                 leak=id(c) in leak_ids or (c.probe, c.key) in listed
                                 ).to_json() for c in t.changes],
    }
    if t.failure:
        f = t.failure
        data["failure"] = {
            "phase": str(f.get("phase") or ""),
            "exc_type": str(f.get("exc_type") or ""),
            "message": cut(str(f.get("message") or ""), FAILURE_TEXT_LIMIT),
            "text": str(f.get("text") or "")[-FAILURE_TEXT_LIMIT:],
        }
    return data
