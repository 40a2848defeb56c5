"""The workers of replays side by side: one runner each (in a scratch copy of the project of
its own where the plan says so), a thread per worker, and the stop that kills every replay in
flight.  Shared by the session end's verification (:mod:`statesnap.proof.sidebyside`) and the
hunt's proofs (:mod:`statesnap.hunt.sidebyside`), which decide what each worker runs.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from pathlib import Path

from statesnap.record.journal import Record
from statesnap.replay.runner import Runner
from statesnap.replay.scratch import MAX_COPY_BYTES, ScratchTree
from statesnap.replay.scratchrunner import RunnerKit
from statesnap.replay.workerplan import Plan


class WorkerSet:
    """Up to ``layout.workers`` runners for ``record``, made by :meth:`prepare`, ended by
    :meth:`close`."""

    def __init__(self, record: Record, layout: Plan, kit: RunnerKit) -> None:
        self.record = record
        self.layout = layout
        self.kit = kit
        self.runners: list[Runner] = []
        self.trees: list[ScratchTree] = []

    def prepare(self) -> None:
        """Each worker's runner (and scratch copy), made before any replay starts.
        :class:`OSError`: a copy could not be made (no room, too large, no permission);
        nothing is left behind."""
        source = Path(self.record.header.get("rootdir") or ".")
        try:
            for _ in range(self.layout.workers):
                tree = None
                if self.layout.scratch:
                    tree = ScratchTree(source, prefix="statesnap-replay-", most=MAX_COPY_BYTES)
                    self.trees.append(tree)
                self.runners.append(self.kit.build(self.record, tree))
        except OSError:
            self.close()
            raise

    def run(self, work: Callable[[Runner], None], count: int, name: str,
            on_stop: Callable[[], None]) -> None:
        """``work(runner)`` in a thread for each of the first ``count`` runners; back when
        every one ended.  A worker's error, or a Ctrl-C here (it reaches this thread only),
        calls ``on_stop``, kills every replay in flight until every worker has ended (each
        puts its staged files back on its way out), then goes on up."""
        pool = ThreadPoolExecutor(max_workers=max(1, min(len(self.runners), count)),
                                  thread_name_prefix=name)
        futures: list[Future[None]] = [pool.submit(work, r) for r in self.runners[:count]]
        try:
            pending = set(futures)
            while pending:
                # A timeout, so that a Ctrl-C reaches this thread promptly.
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
                for fut in done:
                    fut.result()  # a worker's error: stop the others, then raise it
        except BaseException:
            on_stop()
            while True:
                for runner in self.runners:
                    runner.abort()
                _, left = wait(futures, timeout=0.2)
                if not left:
                    break
            raise
        finally:
            pool.shutdown(wait=True)

    def close(self) -> None:
        for runner in self.runners:
            runner.close()
        for tree in self.trees:
            tree.remove()
        self.runners, self.trees = [], []
