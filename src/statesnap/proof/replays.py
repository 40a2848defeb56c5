"""One replay of the verification, repeated, and kept with the finding it is for.

A replay runs an exact order in a fresh process (:mod:`statesnap.replay.runner`) within the
verification budget.  Its repeats must agree about the victim (else :class:`NotDeterministic`),
and each one is kept on the finding: its log and what the record keeps of it.  With replays
side by side (:mod:`statesnap.proof.sidebyside`) each one passes the :class:`~.gate.Gate`, and
one whose answer could hinge on a replay beside it runs again alone.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from statesnap.analysis.findings import Finding, ReplayRun
from statesnap.base.progress import Progress
from statesnap.record.journal import Record
from statesnap.record.signature import Signature
from statesnap.replay.gate import Gate
from statesnap.replay.ports import port_conflict
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


class Stopped(KeyboardInterrupt):
    """Another thread stopped the replays side by side (a Ctrl-C reached the main thread, or a
    replay that cannot run ended a CLI's verification): this worker ends as a Ctrl-C would."""


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
    #: The ``probe:key`` refs every repeat's child really put back before the victim (a key
    #: of a module the child had not imported when it saved its state is not among them).
    restored: frozenset[str] = frozenset()


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
        #: Replays side by side (statesnap.proof.sidebyside): the gate every replay passes,
        #: and the event that stops this worker.  None: replays one at a time, as before.
        self.gate: Gate | None = None
        self.stop: threading.Event | None = None
        #: The runner works in a scratch copy of its own: files it sets aside are its own.
        self.own_tree = False

    def replay(self, order: Sequence[str], victim: str, finding: Finding, label: str,
               restore: Mapping[str, object] | None = None,
               printed: str | None = None) -> Verdict:
        """``printed``: instead of a statesnap replay of ``order``, run this printed line
        exactly as printed (it names ``order``: statesnap.replay.printed)."""
        answers: list[ReplayResult] = []
        for _ in range(self.repeat):
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise BudgetSpent()
            result = self._run(order, restore, label, left, printed)
            if result.log is not None:
                finding.logs.append(self._link(result.log))
            finding.replays.append(self._replay_run(result, victim, label, restore, printed))
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
        restored = frozenset.intersection(*(frozenset(a.restored) for a in answers))
        return Verdict(failed=fails[0], ran=all(victim in a.outcomes for a in answers),
                       signature=(next(iter(signatures)) if len(signatures) == 1
                                  else Signature(None)), restored=restored)

    def _one(self, order: Sequence[str], restore: Mapping[str, object] | None, label: str,
             left: float, printed: str | None) -> ReplayResult:
        if printed is not None:
            return self.runner.run_printed(printed, order, label=label, timeout=left)
        return self.runner.run(order, restore=restore, label=label, timeout=left)

    def _run(self, order: Sequence[str], restore: Mapping[str, object] | None, label: str,
             left: float, printed: str | None = None) -> ReplayResult:
        """One replay; side by side, through the gate.  A fixed port that was taken while
        another replay ran beside it is no answer: the replay runs again alone, so what it
        says does not depend on which replays ran beside it."""
        gate = self.gate
        if gate is None:
            return self._one(order, restore, label, left, printed)
        self._check_stop()
        # Files set aside in the one tree all workers share: no replay may run beside them.
        alone = self.runner.aside is not None and not self.own_tree
        with (gate.alone() if alone else gate.shared()) as seen:
            result = self._one(order, restore, label, left, printed)
        self._check_stop(result)
        if not seen.beside or port_conflict(result) is None:
            return result
        self.progress(f"statesnap: a port was taken beside another replay; "
                      f"replaying {_order_words(order)} alone")
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise BudgetSpent()
        with gate.alone():
            again = self._one(order, restore, f"{label}-alone", left, printed)
        self._check_stop(again)
        return again

    def _check_stop(self, killed: ReplayResult | None = None) -> None:
        """Raise :class:`Stopped` once the replays were stopped; a replay that ran meanwhile
        was killed: only its log stays (its order and record are no answer)."""
        if self.stop is None or not self.stop.is_set():
            return
        if killed is not None and killed.log is not None:
            stem = killed.log.name.removesuffix(".log")
            for path in (killed.record, killed.log.with_name(f"{stem}.order.json"),
                         killed.log.with_name(f"{stem}.restore.json")):
                if path is not None:
                    path.unlink(missing_ok=True)
        raise Stopped()

    def _replay_run(self, result: ReplayResult, victim: str, label: str,
                    restore: Mapping[str, object] | None,
                    printed: str | None = None) -> ReplayRun:
        """What the record keeps of one replay (the session's verdicts are stored with it)."""
        outcome = ("timed out" if result.timed_out else
                   result.outcomes.get(victim) or ("could not run" if result.error else
                                                   "not run"))
        # What the child says it put back (the victim's test line), not what it was asked
        # to: a key whose module it had not imported when it saved is put back nowhere.
        keys = (restore or {}).get("keys")
        asked = [f"{k[0]}:{k[1]}" for k in keys if isinstance(k, (list, tuple)) and len(k) == 2
                 ] if isinstance(keys, list) else []
        done = set(result.restored)
        restored = [ref for ref in asked if ref in done]
        return ReplayRun(
            label=label, order=list(result.order),
            command=printed or repro_command(self.record.header, result.order),
            outcome=outcome,
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

    def same_printed_failure(self, verdict: Verdict, finding: Finding) -> bool:
        """:meth:`same_failure` for a printed line that is to stand for a pair replay
        (``finding.replays[-1]``): its failure, read from pytest's console, has the exception
        type only, while a replay's has the failing frame too.  Where the run's failure has a
        frame, the line's output must show it (``file:line: `` ends that frame's traceback
        entry); otherwise the answer is not as strict as a replay's, and is taken as no."""
        if not self.same_failure(verdict, finding):
            return False
        where = finding.signature().where
        if where is None or verdict.signature.where is not None:
            return True
        run = finding.replays[-1] if finding.replays else None
        if run is None or not run.log:
            return False
        log = Path(run.log)
        log = log if log.is_absolute() else self.record.path.parent / log
        try:
            text = log.read_text("utf-8", "replace")
        except OSError:
            return False
        return f"{where}: " in text



def _order_words(order: Sequence[str]) -> str:
    if len(order) <= 3:
        return "[" + ", ".join(order) + "]"
    return f"[{order[0]}, … {len(order) - 2} more …, {order[-1]}]"
