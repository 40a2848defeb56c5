"""The typed state of one pytest session (:class:`RunState`) and of its test in progress
(:class:`TestState`), kept in ``config.stash[RUN_KEY]``.

Features talk to the core only through RunState's public methods: docs/ARCHITECTURE.md
("Adding a containment feature").
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from statesnap.base.internal import noted
from statesnap.base.plain import Value
from statesnap.base.redact import Redactor
from statesnap.base.text import printable
from statesnap.plugin import cleanroom
from statesnap.plugin.options import Settings
from statesnap.plugin.outputs import Outputs
from statesnap.probes.base import ProbeContext
from statesnap.proof.session_end import EndContext
from statesnap.record.journal import Record, RecordWriter
from statesnap.state.diff import Change
from statesnap.state.snapshot import Snapshot, Snapshotter
from statesnap.state.tracker import TestTracker

if TYPE_CHECKING:
    # Only a session with a failure (or a feature's finder) makes findings: the module is
    # imported then, at the session end, not by every session.
    from statesnap.analysis.findings import Finding

RUN_KEY = pytest.StashKey["RunState"]()


if TYPE_CHECKING:
    # For the type checker only: a Protocol class costs about 0.5 M instructions to create, at
    # every session's start (issue 13), and nothing checks it at run time.
    class TestObserver(Protocol):
        """A feature called around every test by the core plugin's protocol wrapper."""

        def before_test(self, item: pytest.Item) -> None:
            """Before the reference snapshot of the test (and before its setup)."""

        def after_test(self, item: pytest.Item, index: int,
                       changes: Sequence[Change]) -> list[str]:
            """After its final snapshot; returns ``probe:key`` refs it restored (or [])."""


#: At most this many lines per feature in the terminal section.
MAX_LINES = 12

#: Extra findings a feature adds at session end, from a record and the findings so far.
Finder = Callable[[Record, list["Finding"]], list["Finding"]]


class TestState:
    """What the core notes about the test in progress; a fresh one for every test."""

    __test__ = False  # not a test class, whatever pytest's python_classes say
    __slots__ = (
        "call_is_last",
        "failure",
        "fields",
        "function_fixtures",
        "nextitem",
        "phases",
        "quiet_fixtures",
        "tears_down",
        "wide_fixtures",
    )

    def __init__(self, nextitem: pytest.Item | None = None) -> None:
        #: Outcome of each phase that ran: ``{"setup": "passed", "call": "failed", ...}``.
        self.phases: dict[str, str] = {}
        #: The first failure (record format: phase, exc_type, message, text, where).
        self.failure: dict[str, Any] | None = None
        #: Fields features add to the test's record line (``isolation``, ``strict``...).
        self.fields: dict[str, Any] = {}
        #: The user's function-scoped fixtures set up so far, by name.
        self.function_fixtures: list[str] = []
        #: Whether a fixture of a wider scope was set up for it.
        self.wide_fixtures = False
        #: Whether one of :attr:`function_fixtures` may run code at teardown (a generator,
        #: or one given ``request``, which can add finalisers).
        self.tears_down = False
        #: pytest's fixtures set up for it that run no code at teardown (a directly
        #: parametrized argument's), by name.
        self.quiet_fixtures: list[str] = []
        #: The next test pytest will run (None: the last, or a child tears everything down).
        self.nextitem = nextitem
        #: The call phase's changes are closed by the end-of-test snapshot (quiet teardown).
        self.call_is_last = False

    def note_phase(self, when: str, outcome: str) -> None:
        """One phase's outcome, from a report this process made (or received)."""
        self.phases[when] = outcome

    def note_failure(self, failure: dict[str, Any]) -> None:
        """The test's failure, unless an earlier phase already failed."""
        if self.failure is None:
            self.failure = failure

    def adopt_outcome(self, phases: dict[str, str], failure: dict[str, Any] | None) -> None:
        """Take the phases and failure of a test that ran elsewhere (an isolated child)."""
        self.phases = dict(phases)
        if failure is not None:
            self.note_failure(failure)

    def add_field(self, name: str, value: Any) -> None:
        """A feature's field on this test's record line."""
        self.fields[name] = value



class SessionResults(Value):
    """What the session end found (the terminal section shows it)."""

    _fields = ("record", "records", "findings", "report_written")
    __slots__ = _fields

    def __init__(self, record: Record | None = None, records: list[Record] | None = None,
                 findings: list[Finding] | None = None, report_written: Path | None = None) -> None:
        #: The record read back (under xdist: all lanes as one view).
        self.record = record
        #: Every lane read back (one, or one per xdist worker).
        self.records: list[Record] = [] if records is None else records
        self.findings: list[Finding] = [] if findings is None else findings
        self.report_written = report_written

    def all(self) -> list[Record]:
        """The records to show: every lane, or the one record."""
        return self.records or ([self.record] if self.record is not None else [])

    def tests_with(self, name: str) -> list[tuple[str, Any]]:
        """``(node id, value)`` of every test whose record line has field ``name`` set."""
        return [(t.nodeid, t.extra[name]) for r in self.all() for t in r.tests
                if t.extra.get(name)]


class RunState:
    """Everything one pytest process knows about its statesnap session."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.worker = worker_id(config)
        self.redactor = Redactor(settings.secret_patterns)
        self.writer: RecordWriter | None = None
        self.record_path: Path | None = None
        self.snapshotter: Snapshotter | None = None
        self.tracker: TestTracker | None = None
        self.ctx: ProbeContext | None = None
        #: Probe errors and other entries also written to the record.
        self.errors: list[dict[str, Any]] = []
        self.unavailable: dict[str, str] = {}
        #: Function-scoped autouse fixtures set up in this session, ``(name, baseid)``: the
        #: footer's ``autouse`` (statesnap.analysis.resets).
        self.autouse: dict[tuple[str, str], None] = {}
        #: Of those, the probes whose state does not exist here (no NVIDIA driver) and that
        #: were not named on the command line: the terminal names them only under ``-v``.
        self.quiet_unavailable: set[str] = set()
        #: Lines about the command line that may have misled pytest (options.rootdir_pitfalls).
        self.pitfalls: list[str] = []
        #: What is watched beyond the rootdir, or not watched (an installed project).
        self.coverage_notes: list[str] = []
        #: Test lines written, and those with a failure (none: no attribution at the end).
        self.tests_written = 0
        self.failures_written = 0
        #: The test in progress.
        self.test = TestState()
        #: The snapshot the test loop started from (guards compare with it).
        self.session_baseline: Snapshot | None = None
        #: The environment before any test ran: replays start from it, not the polluted one.
        self.initial_env = dict(os.environ)
        #: The process globals statesnap's own end relies on, before any test could change
        #: them; the end runs with them put back (statesnap.plugin.cleanroom).
        self.baseline = cleanroom.capture()
        #: The files this process must write; one missing at the end fails the session.
        self.outputs = Outputs()
        #: Each feature's mode for the record header (``{"isolate": None, "strict": "all"}``).
        self.modes: dict[str, str | None] = {}
        self.results = SessionResults()
        #: statesnap's own errors noted before this session (another in-process session's):
        #: the terminal section counts only those after.
        self.internal_mark = len(noted())
        #: In a child that runs one isolated test (spawned: from the start; forked: from
        #: :meth:`enter_child`): its changes die with it, it writes no outputs.
        self.child = settings.isolate_child is not None
        #: In a forked child: called with each report as it is made (streams it to the
        #: parent); a plain attribute, because registering a plugin per fork is costly.
        self.report_sink: Callable[[pytest.Item, pytest.TestReport], None] | None = None
        self.observers: list[TestObserver] = []
        self.finders: list[Finder] = []
        self._line_sources: list[Callable[[RunState], list[str]]] = []
        self._end: Callable[[RunState], None] | None = None
        #: An xdist worker's lane, next to the controller's record (None: not a worker).
        self.lane_path: Path | None = None

    @staticmethod
    def of(config: pytest.Config) -> RunState:
        """The session's run state (``pytest -p statesnap`` made it at configure)."""
        return config.stash[RUN_KEY]

    # -- what features use ------------------------------------------------------------------
    def say(self, text: str) -> None:
        """One line on the terminal now (a warning of statesnap's, never a Python warning)."""
        text = printable(text)  # it may name what a test left (a path, a key): escaped
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            # After -q's progress ("..F   [100%]") pytest leaves the line open and does not
            # know it (ensure_newline only knows file names): start a line of our own.
            tr.ensure_newline()
            if self.config.get_terminal_writer().width_of_current_line:
                tr.write("\n")
            tr.write_line(text, yellow=True)
        else:
            # The interpreter's own stderr: a test may have replaced sys.stderr.
            print(text, file=sys.__stderr__ or sys.stderr)

    def note_error(self, entry: dict[str, Any]) -> None:
        """An error entry: kept for the terminal and written to the record."""
        self.errors.append(entry)
        if self.writer is not None:
            self.writer.write(entry)

    def observe(self, observer: TestObserver) -> None:
        """Call ``observer`` around every test, in the order features registered."""
        self.observers.append(observer)

    def add_lines(self, source: Callable[[RunState], list[str]]) -> None:
        """Lines for the "statesnap containment" terminal section, asked for at the end."""
        self._line_sources.append(source)

    def containment_lines(self) -> list[str]:
        return [line for source in self._line_sources for line in source(self)]

    def add_finder(self, finder: Finder) -> None:
        """Findings of a feature's own, added to each record's at session end."""
        self.finders.append(finder)

    def take_over_end(self, end: Callable[[RunState], None]) -> None:
        """Run ``end`` instead of the plain session end (an xdist controller or worker)."""
        self._end = end

    @property
    def end(self) -> Callable[[RunState], None] | None:
        return self._end

    def enter_child(self, *, own_fds: Sequence[int] = (),
                    report_sink: Callable[[pytest.Item, pytest.TestReport], None] | None = None
                    ) -> None:
        """Become the child process of one isolated test: it writes no record (the parent
        does), its own channel descriptors are not the test's, and it tears every fixture
        down itself (no quiet teardown)."""
        self.child = True
        self.writer = None
        if self.ctx is not None:
            self.ctx.own_fds.update(own_fds)
        if report_sink is not None:
            self.report_sink = report_sink
        self.test.nextitem = None

    def end_context(self) -> EndContext:
        """What the session end needs from this run, in the proof layer's terms."""
        from statesnap.base.cores import available_cores

        s = self.settings
        return EndContext(
            record_path=self.record_path,
            verify_budget=s.verify_budget,
            verify_repeat=s.verify_repeat,
            replay_warm=s.replay_warm,
            find_cleaners=s.find_cleaners,
            verdicts_from=s.verdicts_from,
            replaying=s.order_file is not None,
            json_path=s.json_path,
            report_path=s.report_path,
            own_fds=set(self.ctx.own_fds) if self.ctx is not None else set(),
            initial_env=self.initial_env,
            redactor=self.redactor,
            say=self.say,
            outputs=self.outputs,
            finders=list(self.finders),
            replay_workers=(s.replay_workers if s.replay_workers is not None
                            else available_cores()),
        )


def worker_id(config: pytest.Config) -> str:
    workerinput = getattr(config, "workerinput", None)
    if isinstance(workerinput, dict) and "workerid" in workerinput:
        return str(workerinput["workerid"])
    return "main"
