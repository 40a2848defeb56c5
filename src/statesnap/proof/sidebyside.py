"""Replays side by side: the victims of one record verified at the same time, one per worker.

Each worker thread takes the next victim and runs all of its replays with a runner of its own,
so the replays whose answers are compared (alone against in order, a pair against the same
pair with a key restored) run in one environment, as one at a time.  A worker with no victim
left runs the candidate pairs of those still being verified (:mod:`statesnap.proof.pairs`),
each compared only with the recorded failure.  What workers could see
of each other is kept apart:

- tests that wrote files under the project (the ``files`` probe says so, or did not watch):
  each worker replays in a scratch copy of its own (:mod:`statesnap.replay.scratch`, the
  backfill's mechanism), reset before every replay, with the staged files its own;
- tests that wrote files outside the project: replays run one at a time (a scratch copy cannot
  hold them), said once;
- a fixed port taken while another replay ran beside: that replay runs again alone
  (:mod:`statesnap.proof.replays`, :mod:`statesnap.replay.ports`).

One budget, one deadline, one progress line for all.  A Ctrl-C reaches the main thread only:
it stops every worker and kills every replay in flight (:meth:`Runner.abort`), then what was
proven is kept and the rest says it was interrupted, as one at a time.  Why: docs/ARCHITECTURE.md
("Replays side by side").
"""

from __future__ import annotations

import threading
import time

from statesnap.analysis.findings import Finding
from statesnap.base.progress import Progress
from statesnap.proof.notes import note_interrupted
from statesnap.proof.pairs import PairBoard
from statesnap.proof.progress import ProofProgress
from statesnap.proof.verify import Verifier
from statesnap.record.journal import Record
from statesnap.replay.gate import Gate
from statesnap.replay.runner import Runner
from statesnap.replay.scratchrunner import RunnerKit, ScratchRunner
from statesnap.replay.workerplan import Plan, plan
from statesnap.replay.workerset import WorkerSet


class SideBySide:
    """The victims of one record, verified by ``workers`` threads (see the module doc)."""

    def __init__(self, record: Record, findings: list[Finding], kit: RunnerKit,
                 layout: Plan, budget: float, repeat: int, find_cleaners: bool,
                 shown: ProofProgress, raise_errors: bool) -> None:
        self.record = record
        self.findings = findings
        self.kit = kit
        self.layout = layout
        self.budget = budget
        self.deadline = time.monotonic() + budget
        self.repeat = repeat
        self.everywhere = find_cleaners
        self.shown = shown
        self.raise_errors = raise_errors
        self.gate = Gate()
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._next = 0
        self.settled: set[int] = set()
        self.workers = WorkerSet(record, layout, kit)
        #: The candidate pairs of a victim, run by the workers with no victim left too.
        self.board = PairBoard(self.stop)

    def _take(self, busy: bool) -> int | None:
        """The next victim's index; the board counts this worker as verifying one while it
        has one (``busy``: it had one until now)."""
        with self._lock:
            if self.stop.is_set() or self._next >= len(self.findings):
                if busy:
                    self.board.idle()
                return None
            if not busy:
                self.board.busy()
            self._next += 1
            return self._next - 1

    def work(self, runner: Runner) -> None:
        """One worker: victims off the queue until none is left or the replays stop, then
        the pairs other workers' victims put up until no victim is left being verified."""
        verifier = Verifier(self.record, runner, self.budget, self.repeat, self.shown.step,
                            self.raise_errors)
        verifier.deadline, verifier.gate, verifier.stop = self.deadline, self.gate, self.stop
        verifier.own_tree = isinstance(runner, ScratchRunner)
        verifier.pairs = self.board
        index = self._take(busy=False)
        try:
            while index is not None:
                finding = self.findings[index]
                self.shown.begin(finding)
                try:
                    verifier.verify(finding)
                    verifier.find_cleaners(finding, everywhere=self.everywhere)
                except BaseException:
                    self.shown.dropped(finding)
                    raise
                with self._lock:
                    self.settled.add(index)
                self.shown.settled(finding)
                index = self._take(busy=True)
        except BaseException:
            self.board.idle()
            raise
        self.board.help(verifier)

    def run(self) -> list[Finding]:
        try:
            self.workers.run(self.work, self.layout.workers, "statesnap-replay",
                             on_stop=self.stop.set)
        except KeyboardInterrupt:
            for i, finding in enumerate(self.findings):
                if i not in self.settled:
                    note_interrupted(finding)
            raise
        return self.findings


def _replays_at_once(findings: list[Finding]) -> int:
    """How many replays could run at once: a victim's candidate pairs do not depend on each
    other (statesnap.proof.pairs), so each victim counts its pairs, at least one."""
    from statesnap.analysis.attribution import polluters_of
    from statesnap.proof.verify import MAX_SINGLE_SUSPECTS

    return sum(max(1, min(MAX_SINGLE_SUSPECTS, len(polluters_of(f.candidates))))
               for f in findings)


def verify_side_by_side(record: Record, findings: list[Finding], *,
                        kit: RunnerKit, workers: int, budget: float,
                        repeat: int = 1, find_cleaners: bool = False,
                        progress: Progress | None = None,
                        raise_errors: bool = False) -> list[Finding]:
    """Verify ``findings`` of ``record`` with up to ``workers`` replays at a time, each worker
    with a runner ``kit`` builds for the record (in a scratch copy where the tests wrote
    files)."""
    from statesnap.proof.verify import verify_findings

    layout = plan(record, workers, _replays_at_once(findings))
    shown = ProofProgress(progress, len(findings), budget)
    if layout.why is not None and len(findings) > 1:
        shown.say(f"statesnap: {layout.why}")
    if layout.workers == 1:
        return verify_findings(record, findings, budget=budget, repeat=repeat,
                               find_cleaners=find_cleaners, progress=progress,
                               runner=kit.build(record), raise_errors=raise_errors)
    pool = SideBySide(record, findings, kit, layout, budget, repeat, find_cleaners, shown,
                      raise_errors)
    try:
        try:
            pool.workers.prepare()
        except OSError as exc:
            shown.say(f"statesnap: cannot copy the project for replays side by side "
                      f"({exc.strerror or exc}): replays run one at a time")
            return verify_findings(record, findings, budget=budget, repeat=repeat,
                                   find_cleaners=find_cleaners, progress=progress,
                                   runner=kit.build(record), raise_errors=raise_errors)
        return pool.run()
    finally:
        pool.workers.close()
        shown.finish()
