"""Verification in fresh processes: prove (or refute) each suspected finding.

The victim alone, ``[polluter, victim]``, delta debugging over earlier tests, then key-level
replays (:mod:`~statesnap.proof.keys`) and cleaners (:mod:`~statesnap.proof.cleaners`);
repeated replays that disagree make a finding ``not-deterministic``
(:mod:`~statesnap.proof.replays`).  Every replay is logged beside the record, all within a
budget.  Steps: docs/ARCHITECTURE.md ("Verification").
"""

from __future__ import annotations

from collections.abc import Sequence

from statesnap.analysis.attribution import dirty_before, polluters_of
from statesnap.analysis.findings import (
    NOT_DETERMINISTIC,
    NOT_ORDER_DEPENDENT,
    NOT_REPRODUCED,
    NOT_THE_CAUSE,
    UNEXPLAINED,
    VERIFIED,
    Finding,
)
from statesnap.analysis.hints import hint_for
from statesnap.analysis.leaks import fixture_note, setup_hint
from statesnap.analysis.leftovers import Leftover
from statesnap.analysis.minimize import ddmin
from statesnap.base.progress import Progress
from statesnap.proof.cleaners import find_cleaners
from statesnap.proof.keys import prove_keys
from statesnap.proof.leftovers import LeftoverReplays, prove_leftovers
from statesnap.proof.replays import NotDeterministic, Replayer, ReplayError, ReplayTimeout
from statesnap.record.journal import Record, TestEntry
from statesnap.replay.repro import repro_command
from statesnap.replay.runner import BudgetSpent, Runner
from statesnap.state.diff import change_kind

# ReplayError: the CLI's and backfill's (where a replay cannot run at all).
__all__ = ["INTERRUPTED", "ReplayError", "Verifier", "note_interrupted", "verify_findings"]

MAX_SINGLE_SUSPECTS = 5


class Verifier(Replayer):
    """Verifies findings of one record with one :class:`Runner`.

    ``raise_errors`` makes a replay that cannot run at all propagate as :class:`ReplayError`
    (the CLI turns it into one line and exit code 2); otherwise it becomes the finding's note.
    """

    def __init__(self, record: Record, runner: Runner, budget: float, repeat: int = 1,
                 progress: Progress | None = None, raise_errors: bool = False) -> None:
        super().__init__(record, runner, budget, repeat, progress)
        self.raise_errors = raise_errors
        self.tests = sorted(record.tests, key=lambda t: t.index)
        self._leftovers: list[Leftover] | None = None

    # -- the whole procedure for one finding ------------------------------------------------
    def verify(self, finding: Finding) -> Finding:
        victim = self.record.test_by_id(finding.victim)
        if victim is None:  # the crashed test: it has a start line only
            index = int((self.record.running or {}).get("index", len(self.tests)))
            victim = TestEntry(index=index, nodeid=finding.victim, outcome="crashed",
                               worker=finding.worker)
        try:
            self._verify(finding, victim)
        except BudgetSpent:
            finding.note = "the verification budget was spent before this finding was proven"
        except ReplayTimeout as exc:
            finding.note = str(exc)
        except NotDeterministic as exc:
            finding.status = NOT_DETERMINISTIC
            finding.polluters = []
            finding.note = f"the failure is not deterministic: {exc}"
        except ReplayError as exc:
            if self.raise_errors:
                raise
            finding.note = f"a replay could not run: {exc}"
        self._note_unstaged(finding)
        return finding

    def _note_unstaged(self, finding: Finding) -> None:
        """Say which files the replays could not start from, where that may matter."""
        stage = self.runner.stage
        if stage is None or not stage.unrestorable or finding.status == VERIFIED:
            return
        paths = sorted(str(p) for p in stage.unrestorable)
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        extra = (f"replays could not start from the files the recorded run started from "
                 f"({shown}: deleted or rewritten by the run)")
        finding.note = f"{finding.note}; {extra}" if finding.note else extra

    def _verify(self, finding: Finding, victim: TestEntry) -> None:
        vid = victim.nodeid
        # Only a replay names a cleaner (find_cleaners/_prove_cleaners), and only a replay
        # names a leftover file.
        finding.cleaners, finding.cleaner_proofs, finding.leftovers = [], {}, []
        finding.alone_failure = None
        self.runner.select_probes([c.probe for c in finding.candidates])
        self.progress(f"statesnap: replaying {vid} alone")
        alone = self.replay([vid], vid, finding, "alone")
        if not alone.ran:
            log = self.record.path.parent / finding.logs[-1] if finding.logs else None
            raise ReplayError(f"{vid} did not run when replayed alone", log)
        if alone.failed:
            if self.same_failure(alone, finding):
                if self._leftover_polluters(finding, victim):
                    return
                self._not_order_dependent(finding, vid)
                return
            # It fails alone, but not as it failed in the run: the order still matters
            # (it needs state an earlier test sets up, and/or an earlier test broke it).
            finding.alone_failure = alone.signature.text()
        suspects = polluters_of(finding.candidates)[:MAX_SINGLE_SUSPECTS]
        for nodeid in suspects:
            self.progress(f"statesnap: replaying {nodeid} → {vid}")
            if self.same_failure(self.replay([nodeid, vid], vid, finding, "pair"), finding):
                self._proven(finding, [nodeid], victim)
                return
        prefix = [t.nodeid for t in self.tests if t.index < victim.index
                  and t.worker == victim.worker]
        polluters = self._minimise(finding, victim, prefix, suspects)
        if polluters is None:
            self._unexplained(finding)
            return
        self._proven(finding, polluters, victim)

    def _not_order_dependent(self, finding: Finding, vid: str) -> None:
        """It fails alone, the same way: no polluter, no state to blame.

        The changes that happened before it stay among the candidates, labelled as not the
        cause; the finding itself names no key (no ``state:`` line)."""
        finding.status = NOT_ORDER_DEPENDENT
        finding.polluters = []
        finding.drop_state(NOT_THE_CAUSE)
        finding.note = "fails alone in a fresh process: a genuine failure, not pollution"
        finding.repro = repro_command(self.record.header, [vid])

    def _unexplained(self, finding: Finding) -> None:
        """The recorded order did not reproduce the failure: no polluter, no key, and no
        command that reproduces it."""
        finding.status = UNEXPLAINED
        finding.polluters = []
        finding.drop_state(NOT_REPRODUCED)
        finding.repro = ""
        if finding.alone_failure:
            finding.note = (f"it depends on the order: alone it fails differently "
                            f"({finding.alone_failure}; in the run: "
                            f"{finding.signature().text()}), but the recorded order did not "
                            "reproduce the run's failure")
        else:
            finding.note = ("the victim passed when the recorded order was replayed: "
                            "the failure depends on something outside the suite's order")

    def _leftover_polluters(self, finding: Finding, victim: TestEntry) -> bool:
        """A victim that fails alone because an earlier run left a file (verify_leftovers)."""
        if self._leftovers is None:
            from statesnap.analysis.leftovers import find_leftovers

            # Read once per session: earlier records can be large, and many findings may
            # fail alone.
            self._leftovers = find_leftovers(self.record)
        if not self._leftovers:
            return False
        vid = victim.nodeid

        def fails(order: list[str], label: str) -> bool:
            return self.same_failure(self.replay(order, vid, finding, label), finding)

        replays = LeftoverReplays(fails, self.runner.set_aside, self.progress,
                                  self.record.header)
        return prove_leftovers(replays, finding, victim, self._leftovers)

    def _minimise(self, finding: Finding, victim: TestEntry, prefix: list[str],
                  suspects: list[str]) -> list[str] | None:
        vid = victim.nodeid

        def fails(subset: Sequence[str]) -> bool:
            self.progress(f"statesnap: minimising {vid}: {len(subset)} earlier test(s)")
            return self.same_failure(self.replay([*subset, vid], vid, finding, "ddmin"),
                                      finding)

        position = {n: i for i, n in enumerate(prefix)}
        every_suspect = sorted({c.nodeid for c in finding.candidates if c.nodeid in position},
                               key=lambda n: position[n])
        # The state-based suspects together first: two polluters that only break the victim
        # together are usually both among them, and that set is far smaller than the prefix.
        if len(every_suspect) > 1 and fails(every_suspect):
            return ddmin(every_suspect, fails, known_failing=True)
        if not prefix or not fails(prefix):
            return None
        return ddmin(prefix, fails, known_failing=True)

    def _proven(self, finding: Finding, polluters: list[str], victim: TestEntry) -> None:
        finding.status = VERIFIED
        finding.polluters = polluters
        finding.repro = repro_command(self.record.header, [*polluters, victim.nodeid])
        dirty = dirty_before(self.tests, victim)
        writes = {ref: w for ref, w in dirty.writes.items() if w.test.nodeid in polluters}
        mine = [c for c in finding.candidates if c.nodeid in polluters]
        if mine:
            top = mine[0]
            finding.probe, finding.key, finding.before, finding.after = (
                top.probe, top.key, top.before, top.after)
        else:
            finding.probe = finding.key = finding.before = finding.after = None
            finding.hint = None
            finding.hint_proven, finding.proven_keys = False, []
            finding.note = ("no recorded state change of the polluter(s) explains it: the "
                            "state it relies on is outside what statesnap's probes see")
            self._note_brittle(finding)
            return
        prove_keys(self, finding, polluters, victim, writes)
        if finding.probe and finding.key:
            finding.hint = hint_for(finding.probe, finding.key,
                                    change_kind(finding.before, finding.after),
                                    finding.before, finding.after)
            w = writes.get((finding.probe, finding.key))
            if w is not None:
                finding.hint = setup_hint(w.change) or finding.hint
                finding.note = fixture_note(w.change, w.test.nodeid) or finding.note
        self._note_brittle(finding)

    def _note_brittle(self, finding: Finding) -> None:
        if finding.alone_failure:
            extra = (f"alone it fails too, but differently ({finding.alone_failure}; in the "
                     f"run: {finding.signature().text()}): it also relies on state an earlier "
                     "test sets up (brittle)")
            finding.note = f"{finding.note}; {extra}" if finding.note else extra

    def find_cleaners(self, finding: Finding, everywhere: bool = False) -> None:
        """Tests that put the victim's key back, proven by replay (statesnap.proof.cleaners);
        with ``everywhere``, any recorded test that put it back is a candidate."""
        find_cleaners(self, self.tests, finding, everywhere)


def verify_findings(
    record: Record,
    findings: list[Finding],
    *,
    budget: float = 120.0,
    repeat: int = 1,
    find_cleaners: bool = False,
    progress: Progress | None = None,
    runner: Runner | None = None,
    raise_errors: bool = False,
) -> list[Finding]:
    """Verify every finding of ``record`` within ``budget`` seconds (in place; returned)."""
    runner = runner or Runner(record)
    verifier = Verifier(record, runner, budget, repeat, progress, raise_errors)
    done = 0
    try:
        for finding in findings:
            verifier.verify(finding)
            verifier.find_cleaners(finding, everywhere=find_cleaners)
            done += 1
    except KeyboardInterrupt:
        # Ctrl-C: the runner killed the replay's process group and put the staged files
        # back on its way out.  The findings not finished say so, then the interrupt goes on.
        for finding in findings[done:]:
            note_interrupted(finding)
        raise
    finally:
        runner.close()
    return findings


#: The note of a finding whose replays a Ctrl-C stopped.
INTERRUPTED = "the session was interrupted (Ctrl-C) before this finding's replays finished"


def note_interrupted(finding: Finding) -> None:
    """Say on ``finding`` that a Ctrl-C stopped its replays (its status stays what the
    replays so far earned: a verdict not reached stays unproven)."""
    if finding.note and INTERRUPTED in finding.note:
        return
    finding.note = f"{finding.note}; {INTERRUPTED}" if finding.note else INTERRUPTED
