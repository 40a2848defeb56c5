"""The runs of a hunt: each one an exact order in a fresh pytest process, within the budget.

Every run goes through :class:`statesnap.replay.runner.Runner`, which keeps its order file, its full
output and the child's own record under the hunt's log folder.  The child's record is how a
run is read back: outcomes, failures, and the state changes of every test in that order, which
attribution works on exactly as it does on the recorded run.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statesnap.analysis.leaks import resolve_leaks
from statesnap.base.progress import Progress
from statesnap.probes.base import Severity
from statesnap.record.journal import Record
from statesnap.record.reader import RecordError, read_record
from statesnap.replay.gate import Gate
from statesnap.replay.ports import port_conflict
from statesnap.replay.result import ReplayResult
from statesnap.replay.runner import BudgetSpent, Runner

#: Kinds of run.  The first ones explore orders; the others prove what they found.
LEAKERS_FIRST = "leakers-first"
WITHOUT_LEAKERS = "without-leakers"
#: The leakers first and the rest backwards; the whole order backwards; LOW leakers first.
CLEANERS_AFTER = "leakers-first-rest-reversed"
#: The leakers first and the tests seen changing their keys after them (cleaners) last.
CLEANERS_LAST = "leakers-first-cleaners-last"
REVERSED = "reversed"
LOW_FIRST = "low-leakers-first"
#: Tests that change the same state, each right before each other one once.
NEIGHBOURS = "neighbours"
RANDOM = "random"
ALONE = "alone"
PAIR = "pair"
SETTER = "setter"
KEY = "key"
DDMIN = "ddmin"
#: A finding's printed line, run exactly as printed (no record: it runs without statesnap).
CONFIRM = "confirm"
ORDER_KINDS = (LEAKERS_FIRST, WITHOUT_LEAKERS, CLEANERS_AFTER, CLEANERS_LAST, REVERSED, LOW_FIRST,
               NEIGHBOURS, RANDOM)


@dataclass
class HuntRun:
    """What one run of a hunt was and what it showed."""

    label: str
    kind: str
    tests: int
    duration: float = 0.0
    seed: int | None = None
    group: int | None = None
    #: Tests that passed in the record and failed here (filled for the exploring kinds).
    new_failures: list[str] = field(default_factory=list)
    log: str | None = None
    order_file: str | None = None
    error: str | None = None
    timed_out: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "label": self.label, "kind": self.kind, "tests": self.tests,
            "duration": round(self.duration, 3), "new_failures": self.new_failures,
            "log": self.log, "order_file": self.order_file,
        }
        for name in ("seed", "group", "error"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        if self.timed_out:
            data["timed_out"] = True
        return data


@dataclass
class Observed:
    """One finished run: its order, what the runner read back, and the child's record."""

    run: HuntRun
    order: list[str]
    result: ReplayResult
    _child: Record | None = None
    _loaded: bool = False

    def child(self) -> Record | None:
        """The child's record (None when the child wrote none that can be read)."""
        if not self._loaded:
            # Read before marking it read: workers side by side may ask at once (both
            # then read it; neither sees "read, none").
            child: Record | None = None
            if self.result.record is not None:
                try:
                    child = read_record(self.result.record)
                except RecordError:
                    child = None
            self._child, self._loaded = child, True
        return self._child

    def outcome(self, nodeid: str) -> str | None:
        return self.result.outcomes.get(nodeid)

    def passed(self, nodeid: str) -> bool:
        return self.result.outcomes.get(nodeid) == "passed"

    def failed(self, nodeid: str) -> bool:
        return self.result.outcomes.get(nodeid) in ("failed", "error", "crashed")

    def leaked(self) -> set[str]:
        """Tests that left a change above LOW severity behind in this run."""
        child = self.child()
        if child is None:
            return set()
        by_index = {t.index: t.nodeid for t in child.tests}
        out: set[str] = set()
        for index, changes in resolve_leaks(sorted(child.tests, key=lambda t: t.index)).items():
            if any(c.severity > Severity.LOW for c in changes):
                out.add(by_index[index])
        return out


class Stopped(BudgetSpent):
    """The proofs side by side were stopped (a Ctrl-C, another worker's error): no replay of
    this worker starts, and none killed on the way counts as an answer."""


class Replays:
    """Starts the runs of one hunt with one :class:`Runner`, never past the deadline."""

    def __init__(self, runner: Runner, budget: float, progress: Progress | None = None) -> None:
        self.runner = runner
        self.started = time.monotonic()
        self.deadline = self.started + budget
        self.progress = progress or (lambda _msg: None)
        self.runs: list[HuntRun] = []
        #: The runner's own per-run timeout; a run never gets more than the budget left.
        self._timeout = runner.timeout
        #: The number the progress line gives the next run, shared with :meth:`beside`'s.
        self._numbers = itertools.count(1)
        #: Set when the workers side by side must stop (:meth:`beside`'s, None: never).
        self.stop: threading.Event | None = None
        #: The gate the replays side by side pass (:meth:`beside`'s, None: one at a time).
        self.gate: Gate | None = None

    def beside(self, runner: Runner, stop: threading.Event, gate: Gate) -> Replays:
        """Runs with another ``runner`` (a worker's of :mod:`statesnap.hunt.sidebyside`) under
        this budget and deadline, numbered on the same progress line; their runs are
        collected apart (``runs``) and merged back in a stable order by the caller."""
        other = Replays(runner, 0.0, self.progress)
        other.started, other.deadline, other._numbers = self.started, self.deadline, self._numbers
        other.stop, other.gate = stop, gate
        return other

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def run(self, order: Sequence[str], label: str, kind: str, message: str,
            restore: dict[str, Any] | None = None, **meta: Any) -> Observed:
        """Run ``order``; raise :class:`BudgetSpent` when no time is left to start it.

        ``restore``: keys to put back before a test (a key-level proof)."""
        self._starting(label, message)
        result = self._run(order, restore, label)
        if self.stop is not None and self.stop.is_set():
            raise Stopped(label)  # killed by the stop, most likely: it tells nothing
        run = HuntRun(label=label, kind=kind, tests=len(order), duration=result.duration,
                      log=None if result.log is None else str(result.log),
                      order_file=None if result.log is None else
                      str(result.log.with_suffix(".order.json")),
                      error=result.error, timed_out=result.timed_out, **meta)
        self.runs.append(run)
        return Observed(run, list(order), result)

    def printed(self, command: str, order: Sequence[str], message: str) -> Observed:
        """Run a finding's printed line ``command`` (naming ``order``) exactly as printed, in
        a fresh process without statesnap; :class:`BudgetSpent` / :class:`Stopped` as
        :meth:`run`."""
        label = CONFIRM
        self._starting(label, message)
        result = self._gated(label, lambda lab: self.runner.run_printed(command, order,
                                                                         label=lab))
        if self.stop is not None and self.stop.is_set():
            raise Stopped(label)
        run = HuntRun(label=label, kind=label, tests=len(order), duration=result.duration,
                      log=None if result.log is None else str(result.log),
                      error=result.error, timed_out=result.timed_out)
        self.runs.append(run)
        return Observed(run, list(order), result)

    def _starting(self, label: str, message: str) -> None:
        """Before a run: :class:`BudgetSpent` when no time is left to start it,
        :class:`Stopped` when the hunt stops; its timeout and progress line."""
        left = self.left()
        if left <= 0:
            raise BudgetSpent(label)
        if self.stop is not None and self.stop.is_set():
            raise Stopped(label)
        self.runner.timeout = max(1.0, min(self._timeout, left))
        self.progress(f"statesnap: hunt run {next(self._numbers)}: {message}")

    def _run(self, order: Sequence[str], restore: dict[str, Any] | None,
             label: str) -> ReplayResult:
        """One replay; side by side, through the gate.  A fixed port taken while another
        replay ran beside it is no answer: the replay runs again alone (as the session end's
        verification does, :mod:`statesnap.proof.replays`)."""
        return self._gated(label, lambda lab: self.runner.run(order, restore=restore,
                                                              label=lab))

    def _gated(self, label: str, start: Callable[[str], ReplayResult]) -> ReplayResult:
        """``start(label)`` through the gate (see :meth:`_run`)."""
        if self.gate is None:
            return start(label)
        with self.gate.shared() as seen:
            result = start(label)
        if not seen.beside or port_conflict(result) is None:
            return result
        if self.stop is not None and self.stop.is_set():
            raise Stopped(label)
        left = self.left()
        if left <= 0:
            raise BudgetSpent(label)
        self.runner.timeout = max(1.0, min(self._timeout, left))
        self.progress(f"statesnap: hunt run {next(self._numbers)}: a port was taken beside "
                      f"another replay; {label} again alone")
        with self.gate.alone():
            return start(f"{label}-alone")

    @property
    def logs_dir(self) -> Path:
        return self.runner.logs_dir

