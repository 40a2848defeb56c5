"""The hunt: run the few orders that can expose latent order-dependent tests, and prove them.

Runs the orders (:mod:`statesnap.hunt.explore`), classifies each test that passed in the record
and failed in one of them (:mod:`statesnap.hunt.classify`), and proves it
(:mod:`statesnap.hunt.prove`), all within one time budget; then, while the budget lasts, the
orders put off behind the proofs.  The orders and why: docs/ARCHITECTURE.md ("The hunt").
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from statesnap.analysis.attribution import source_reader
from statesnap.analysis.findings import BRITTLE, LATENT
from statesnap.base.progress import Progress
from statesnap.hunt.classify import attribute, classify, exposed
from statesnap.hunt.explore import Explorer
from statesnap.hunt.options import HuntError, HuntOptions, default_logs_dir
from statesnap.hunt.plan import HuntSuite, build_suite, leaker_groups
from statesnap.hunt.prove import Prover
from statesnap.hunt.result import HuntResult
from statesnap.hunt.runs import Replays
from statesnap.hunt.sidebyside import ProofPool, hunt_plan
from statesnap.hunt.suspect import Suspect
from statesnap.hunt.verdicts import unproven
from statesnap.record.journal import Record
from statesnap.replay.runner import BudgetSpent, Runner
from statesnap.replay.scratchrunner import RunnerKit

#: The note of a suspect a Ctrl-C stopped the proofs of.
INTERRUPTED = "the hunt was interrupted (Ctrl-C) before it was proven"
#: The note of a suspect the budget ran out on.
BUDGET_SPENT = ("the hunt's budget ran out before it was proven (run again with a larger "
                "--budget)")


class Hunter:
    """One hunt over the lanes of one run (or one worker's lane)."""

    def __init__(self, records: Sequence[Record], options: HuntOptions,
                 progress: Progress | None = None, runner: Runner | None = None,
                 logs_dir: Path | None = None) -> None:
        if not records:
            raise HuntError("no record to hunt in")
        self.records = list(records)
        self.options = options
        self.suite: HuntSuite = build_suite(records, options.worker, options.all_leaks)
        if not self.suite.tests:
            where = f" of worker {options.worker}" if options.worker else ""
            raise HuntError(f"{records[0].path} holds no finished tests{where} to hunt in")
        first = self._lane_record()
        self.header = first.header
        self.sources = source_reader(first)
        self.runner = runner or Runner(first, logs_dir=logs_dir or default_logs_dir(
            records[0].path), extra_args=list(options.extra_args))
        self.replays = Replays(self.runner, options.budget, progress)
        self.pool = self._pool(first, progress or (lambda _msg: None))
        self.prover = Prover(self.suite, self.replays, self.header, self.pool)
        self.explorer = Explorer(self.suite, self.replays, options)
        #: Whether a Ctrl-C stopped the proofs (what was proven is kept).
        self.interrupted = False

    def _pool(self, record: Record, say: Progress) -> ProofPool | None:
        """The workers the proofs run on side by side (None: one at a time)."""
        if self.options.replay_workers <= 1:
            return None
        layout = hunt_plan(self.records, self.options.replay_workers)
        if layout.why is not None:
            say(f"statesnap: {layout.why}")
        if layout.workers <= 1:
            return None
        runner = self.runner
        kit = RunnerKit(timeout=runner.timeout, env=runner.env, redactor=runner.redactor,
                        beside=runner.beside, warm=runner.warm.setting,
                        logs_dir=runner.logs_dir, extra_args=runner.extra_args)
        return ProofPool(record, layout, kit, self.replays, say)

    def _lane_record(self) -> Record:
        for record in self.records:
            workers = {t.worker for t in record.tests} | {record.worker}
            if self.options.worker is None or self.options.worker in workers:
                return record
        return self.records[0]

    def explore(self) -> None:
        """Run the orders (a first round: some may be put off behind the proofs)."""
        self.explorer.explore()

    # -- classify and prove ----------------------------------------------------------------
    def _prove(self, items: list[Suspect]) -> bool:
        """Classify and prove ``items``; False when the budget ran out on the way."""
        try:
            if items:
                classify(self.suite, self.explorer.explored, items, self.prover)
                for s in items:
                    if s.kind is not None:
                        attribute(self.suite, self.sources, s)
                latent = [s for s in items if s.kind == LATENT]
                self.prover.latent(latent)
                for s in latent:
                    if s.kind == BRITTLE:
                        # It failed alone: some test has to run first for it to pass.
                        s.queue, s.tried = [], []
                        attribute(self.suite, self.sources, s)
                self.prover.brittle([s for s in items if s.kind == BRITTLE])
        except BudgetSpent:
            done = False
        else:
            done = True
        self.prover.keys()  # each stops at the budget itself, keeping the ranked key
        # The lines a key proof changed (one that runs with the collector off) run again.
        self.prover.confirm_printed(items)
        return done

    def hunt(self) -> HuntResult:
        """Run the orders, then prove each test they exposed, all within the budget."""
        self.explore()
        return self.conclude()

    def conclude(self) -> HuntResult:
        """Classify and prove what the orders exposed; then, while the budget lasts, run the
        orders put off behind the proofs and prove what they expose.  What the budget leaves
        unproven is suspected; what it leaves unrun is listed in ``skipped``."""
        explorer = self.explorer
        items = exposed(self.suite, explorer.explored)
        try:
            done = self._prove(items)
            if done and explorer.deferred and self.replays.left() > 0:
                known = {s.nodeid for s in items}
                explorer.second_round(known)
                try:
                    explorer.explore()
                except BudgetSpent:
                    pass
                more = [s for s in exposed(self.suite, explorer.explored)
                        if s.nodeid not in known]
                items += more
                self._prove(more)
        except KeyboardInterrupt:
            # The replays in flight were killed on the way here; what was proven stands.
            self.interrupted = True
        finally:
            if self.pool is not None:
                self.pool.close()
        explorer.give_up_deferred()
        suite = self.suite
        why = INTERRUPTED if self.interrupted else BUDGET_SPENT
        for s in items:
            if (s.finding is not None and s.finding.status in (LATENT, BRITTLE)
                    and s.line_ran != s.finding.repro):
                s.finding = None  # its printed line never ran: not proven
            if s.finding is None:
                s.finding = unproven(suite, self.header, s, why)
        return HuntResult(
            tests=len(suite.tests), leakers=len(suite.leaks), ignored_low=suite.ignored_low,
            groups=len(leaker_groups(suite)), runs=list(self.replays.runs),
            findings=[s.finding for s in items if s.finding is not None],
            logs_dir=self.replays.logs_dir,
            duration=time.monotonic() - self.replays.started, skipped=explorer.skipped,
            seeds=explorer.seeds, interrupted=self.interrupted,
        )


def hunt(records: Sequence[Record], options: HuntOptions | None = None,
         progress: Progress | None = None, runner: Runner | None = None) -> HuntResult:
    """Hunt latent and brittle order-dependent tests in the run of ``records``."""
    return Hunter(records, options or HuntOptions(), progress, runner).hunt()
