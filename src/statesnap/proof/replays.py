"""One replay of the verification, repeated, and kept with the finding it is for.

A replay runs an exact order in a fresh process (:mod:`statesnap.replay.runner`) within the
verification budget.  Its repeats must agree about the victim (else :class:`NotDeterministic`),
and each one is kept on the finding: its log and what the record keeps of it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from statesnap.analysis.findings import Finding, ReplayRun
from statesnap.base.progress import Progress
from statesnap.record.journal import Record
from statesnap.record.signature import Signature
from statesnap.replay.repro import repro_command
from statesnap.replay.result import ReplayResult
from statesnap.replay.runner import BudgetSpent, Runner


class ReplayError(Exception):
    """A replay that could not run at all (usage error, missing ids, interpreter missing)."""

    def __init__(self, message: str, log: Path | None = None) -> None:
        super().__init__(message)
        self.log = log


class ReplayTimeout(Exception):
    """A replay ran past its time limit and was killed with its process group."""

    def __init__(self, result: ReplayResult) -> None:
        super().__init__(f"a replay of {len(result.order)} test(s) timed out after "
                         f"{result.timeout:.0f}s and was killed (log: {result.log})")
        self.result = result


class NotDeterministic(Exception):
    """Repeats of one replay disagreed about the victim."""


#: What ends a key-level proof, keeping what earlier replays proved.
STOPS = (BudgetSpent, ReplayTimeout, NotDeterministic)


@dataclass
class Verdict:
    """The answer of one (possibly repeated) replay for the victim."""

    failed: bool
    #: Whether the victim ran at all (an earlier test may have crashed the replay).
    ran: bool
    #: How it failed (unknown: the repeats disagreed, or it passed).
    signature: Signature


class Replayer:
    """Runs the replays of one record's verification with one :class:`Runner`, all within
    one budget of ``budget`` seconds, each ``repeat`` times."""

    def __init__(self, record: Record, runner: Runner, budget: float, repeat: int = 1,
                 progress: Progress | None = None) -> None:
        self.record = record
        self.runner = runner
        self.deadline = time.monotonic() + budget
        self.repeat = max(1, repeat)
        self.progress = progress or (lambda _msg: None)

    def replay(self, order: Sequence[str], victim: str, finding: Finding, label: str,
               restore: Mapping[str, object] | None = None) -> Verdict:
        answers: list[ReplayResult] = []
        for _ in range(self.repeat):
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise BudgetSpent()
            result = self.runner.run(order, restore=restore, label=label, timeout=left)
            if result.log is not None:
                finding.logs.append(self._link(result.log))
            finding.replays.append(self._replay_run(result, victim, label, restore))
            if result.error is not None and not result.outcomes:
                raise ReplayError(result.error, result.log)
            if result.timed_out:
                if time.monotonic() >= self.deadline:
                    raise BudgetSpent()
                raise ReplayTimeout(result)
            answers.append(result)
        fails = [a.failed(victim) for a in answers]
        if len(set(fails)) > 1:
            raise NotDeterministic(
                f"{_order_words(order)}: the victim failed in {sum(fails)} of "
                f"{len(fails)} repeats")
        signatures = {a.signature(victim) for a in answers if a.failed(victim)}
        return Verdict(failed=fails[0], ran=all(victim in a.outcomes for a in answers),
                       signature=(next(iter(signatures)) if len(signatures) == 1
                                  else Signature(None)))

    def _replay_run(self, result: ReplayResult, victim: str, label: str,
                    restore: Mapping[str, object] | None) -> ReplayRun:
        """What the record keeps of one replay (the session's verdicts are stored with it)."""
        outcome = ("timed out" if result.timed_out else
                   result.outcomes.get(victim) or ("could not run" if result.error else
                                                   "not run"))
        keys = (restore or {}).get("keys")
        restored = [f"{k[0]}:{k[1]}" for k in keys if isinstance(k, (list, tuple)) and len(k) == 2
                    ] if isinstance(keys, list) else []
        return ReplayRun(
            label=label, order=list(result.order),
            command=repro_command(self.record.header, result.order), outcome=outcome,
            signature=result.signature(victim).text() if result.failed(victim) else None,
            log=self._link(result.log) if result.log is not None else None, restored=restored)

    def _link(self, log: Path) -> str:
        """A log's path relative to the record's folder where it lies under it."""
        base = self.record.path.parent
        try:
            return os.path.relpath(log, base) if log.is_relative_to(base) else str(log)
        except ValueError:
            return str(log)

    @staticmethod
    def same_failure(verdict: Verdict, finding: Finding) -> bool:
        """The victim failed in the replay as it failed in the run (statesnap.record.signature)."""
        return verdict.failed and verdict.signature.same_as(finding.signature())


def _order_words(order: Sequence[str]) -> str:
    if len(order) <= 3:
        return "[" + ", ".join(order) + "]"
    return f"[{order[0]}, … {len(order) - 2} more …, {order[-1]}]"
