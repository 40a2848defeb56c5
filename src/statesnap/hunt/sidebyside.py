"""The hunt's proofs side by side: proving tasks that do not depend on each other (different
victims; the candidate polluters one round tries for different victims) run at the same time,
one per worker, each worker with a runner of its own.

The hunt's orders stay one at a time: which order runs next depends on what the previous ones
exposed.  What a proof of one suspect runs depends on that suspect alone, so those run here,
with the session end's workers (:mod:`statesnap.replay.workerset`): the plan (how many workers,
and whether each replays in a scratch copy of the project because tests wrote files there, or
one at a time because they wrote files outside it) and its runners (:class:`RunnerKit`, a
:class:`ScratchRunner` per worker).  All the replays of one task run on one worker, so the
answers a proof compares (the pair against the victim alone) come from one environment.

One budget and deadline (the hunt's), one progress line.  The runs of each task are kept apart
and merged back in task order, so the hunt's summary lists them in the same order whichever
worker finished first.  A Ctrl-C reaches the main thread only: it stops the workers and kills
every replay in flight (:meth:`Runner.abort`) before it goes on; what was proven is kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from statesnap.base.progress import Progress
from statesnap.hunt.runs import HuntRun, Replays, Stopped
from statesnap.record.journal import Record
from statesnap.replay.gate import Gate
from statesnap.replay.runner import BudgetSpent, Runner
from statesnap.replay.scratchrunner import RunnerKit
from statesnap.replay.workerplan import Plan, plan
from statesnap.replay.workerset import WorkerSet

T = TypeVar("T")


def hunt_plan(records: Sequence[Record], workers: int) -> Plan:
    """The plan for every lane's record: one at a time if any lane says so, a scratch copy
    per worker if any lane's tests wrote files under the project."""
    layouts = [plan(record, workers, workers) for record in records]
    alone = next((p for p in layouts if p.workers == 1 and workers > 1), None)
    if alone is not None:
        return alone
    return Plan(max(1, workers), scratch=any(p.scratch for p in layouts))


class ProofPool:
    """Up to ``workers`` runners for the proving tasks of one hunt (see the module doc).

    The runners (and scratch copies) are made on the first call of :meth:`each` with more
    than one task, and last until :meth:`close`."""

    def __init__(self, record: Record, layout: Plan, kit: RunnerKit, replays: Replays,
                 say: Progress) -> None:
        self.replays = replays
        self.say = say
        self.workers = WorkerSet(record, layout, kit)
        #: False once the runners could not be made: the tasks then run one at a time.
        self.usable = layout.workers > 1
        self._lock = threading.Lock()

    def _prepare(self) -> bool:
        if self.workers.runners or not self.usable:
            return self.usable
        try:
            self.workers.prepare()
        except OSError as exc:
            self.usable = False
            self.say(f"statesnap: cannot copy the project for replays side by side "
                     f"({exc.strerror or exc}): the hunt's proofs run one at a time")
        return self.usable

    def each(self, items: Sequence[T], task: Callable[[Replays, T], None],
             alone: Replays) -> None:
        """``task(replays, item)`` for every item, side by side when there is more than one
        (``alone``'s replays otherwise).  A :class:`BudgetSpent` of one task lets the others
        end (each stops at the deadline itself) and then goes on; any other error, or a
        Ctrl-C, stops the workers and kills their replays first."""
        if len(items) < 2 or not self._prepare():
            for item in items:
                task(alone, item)
            return
        runs: list[list[HuntRun]] = [[] for _ in items]
        queue = iter(range(len(items)))
        stop = threading.Event()
        gate = Gate()
        spent: list[BudgetSpent] = []

        def work(runner: Runner) -> None:
            mine = self.replays.beside(runner, stop, gate)
            while not stop.is_set() and not spent:
                with self._lock:
                    index = next(queue, None)
                if index is None:
                    return
                mine.runs = runs[index]  # kept apart: merged back in task order
                try:
                    task(mine, items[index])
                except Stopped:
                    return  # the main thread stopped the workers: it says why
                except BudgetSpent as exc:
                    # No task starts past the deadline; the runs in flight end by it and
                    # still count (``stop`` would throw their answers away).
                    spent.append(exc)

        try:
            self.workers.run(work, len(items), "statesnap-hunt", on_stop=stop.set)
        finally:
            for ran in runs:
                self.replays.runs.extend(ran)
        if spent:
            raise spent[0]

    def close(self) -> None:
        self.workers.close()
