"""Verification in fresh processes: prove (or refute) each suspected finding.

The victim alone, ``[polluter, victim]``, delta debugging over earlier tests, then key-level
replays (:mod:`~statesnap.proof.keys`) and cleaners (:mod:`~statesnap.proof.cleaners`);
repeated replays that disagree make a finding ``not-deterministic``
(:mod:`~statesnap.proof.replays`).  Every replay is logged beside the record, all within a
budget.  Steps: docs/ARCHITECTURE.md ("Verification").

The first pair is the printed line.  The top suspect's ``[suspect, victim]`` is the line that
would be printed if it is the polluter, so it runs as that line, cold and exactly as printed
(``pair-printed``, :func:`~statesnap.proof.confirm.confirm_printed`'s way): failing the victim
the same way, it proves the pair and confirms the line at once, and the confirmation is not
run again unless the line finally printed differs (gc timing's collector-off line; several
polluters, delta debugging and leftovers take other paths and confirm as before).  A replay and
its printed line can disagree (replays keep the collector off and statesnap loaded; the line
neutralises reordering plugins), so a printed pair that misses is no verdict: the other
suspects' replays follow, then the top suspect's own replay, whose proof is then confirmed or
refused as every proof is.  Once the polluters are proven, the key-level step is
:mod:`statesnap.proof.keystep`'s; the notes of a proof cut short are :mod:`statesnap.proof.notes`'.
"""

from __future__ import annotations

from collections.abc import Sequence

from statesnap.analysis.attribution import (
    classmates,
    polluters_of,
    source_reader,
)
from statesnap.analysis.findings import (
    NOT_DETERMINISTIC,
    NOT_ORDER_DEPENDENT,
    NOT_REPRODUCED,
    NOT_THE_CAUSE,
    UNEXPLAINED,
    VERIFIED,
    Finding,
)
from statesnap.analysis.leftovers import Leftover
from statesnap.analysis.minimize import ddmin
from statesnap.base.progress import Progress
from statesnap.proof.cleaners import find_cleaners
from statesnap.proof.confirm import confirm_printed
from statesnap.proof.keystep import prove_polluters
from statesnap.proof.leftovers import LeftoverReplays, prove_leftovers
from statesnap.proof.notes import INTERRUPTED, budget_note, note_interrupted
from statesnap.proof.pairs import PRINTED_PAIR, PairBoard
from statesnap.proof.replays import (
    NotDeterministic,
    Replayer,
    ReplayError,
    ReplayTimeout,
)
from statesnap.record.journal import Record, TestEntry
from statesnap.replay.repro import repro_command
from statesnap.replay.runner import BudgetSpent, Runner
from statesnap.replay.scratchrunner import ScratchRunner

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
        self.sources = source_reader(record)
        #: Side by side: where this victim's candidate pairs go to run on idle workers too
        #: (statesnap.proof.pairs).  None: one after the other, on this runner.
        self.pairs: PairBoard | None = None

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
            finding.note = budget_note(finding)
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
        paths = sorted(self.runner.shown(p) if isinstance(self.runner, ScratchRunner) else str(p)
                       for p in stage.unrestorable)
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
                if self.runner.beside:
                    self._alone_beside(finding)
                    return
                self._not_order_dependent(finding, vid)
                return
            # It fails alone, but not as it failed in the run: the order still matters
            # (it needs state an earlier test sets up, and/or an earlier test broke it).
            finding.alone_failure = alone.signature.text()
        suspects = polluters_of(finding.candidates)[:MAX_SINGLE_SUSPECTS]
        first, confirmed = self._first_failing_pair(finding, vid, suspects)
        if first is not None:
            self._proven(finding, [first], victim, confirmed)
            return
        prefix = [t.nodeid for t in self.tests if t.index < victim.index
                  and t.worker == victim.worker]
        # The classmates' pairs are replays only: the top suspect's printed line ran above.
        first, _ = self._first_failing_pair(finding, vid, classmates(prefix, vid, suspects),
                                            printed_first=False)
        if first is not None:
            self._proven(finding, [first], victim)
            return
        polluters = self._minimise(finding, victim, prefix, suspects)
        if polluters is None:
            self.unexplained(finding)
            return
        self._proven(finding, polluters, victim)

    def _first_failing_pair(self, finding: Finding, vid: str, suspects: list[str],
                            printed_first: bool = True) -> tuple[str | None, str | None]:
        """The first suspect in rank order whose ``[suspect, victim]`` fails the victim as the
        run did, and the printed line that failed it (None: a replay did); side by side, on
        the workers with no victim left (statesnap.proof.pairs).

        The top suspect's pair runs first as the line that would be printed for it, cold and
        exactly as printed (``pair-printed``): where it fails the victim as the run did, it is
        both the pair's proof and the line's confirmation.  Where it does not, the other
        suspects' replays follow as before, then the top suspect's own replay (statesnap on,
        the collector off), last: a replay can fail where its printed line passes (state only
        reference cycles hold, statesnap's plugin loaded), and the old flow proved such a
        suspect and then confirmed or refused its line (gc timing), so that verdict stays
        reachable; a later suspect whose replay fails is preferred to it, as its printed line
        has not failed yet.  The printed pair counts only where its output shows the run's
        failing frame too (:meth:`same_printed_failure`): it proves what a replay would."""
        if not suspects:
            return None, None
        line = repro_command(self.record.header, [suspects[0], vid]) if printed_first else None
        ranks = [*suspects, suspects[0]] if printed_first else list(suspects)
        board = self.pairs
        if board is not None:
            i = board.first_failing(self, finding, vid, ranks, [line])
        else:
            i = None
            for at, nodeid in enumerate(ranks):
                self.progress(f"statesnap: replaying {nodeid} → {vid}")
                printed = line if at == 0 else None
                v = self.replay([nodeid, vid], vid, finding, PRINTED_PAIR if printed else "pair",
                                printed=printed)
                if (self.same_printed_failure(v, finding) if printed
                        else self.same_failure(v, finding)):
                    i = at
                    break
        if i is None:
            return None, None
        return ranks[i], (line if i == 0 else None)

    def _not_order_dependent(self, finding: Finding, vid: str) -> None:
        """It fails alone, the same way: no polluter, no state to blame.

        The changes that happened before it stay among the candidates, labelled as not the
        cause; the finding itself names no key (no ``state:`` line)."""
        finding.status = NOT_ORDER_DEPENDENT
        finding.polluters = []
        finding.drop_state(NOT_THE_CAUSE)
        finding.note = "fails alone in a fresh process: a genuine failure, not pollution"
        finding.repro = repro_command(self.record.header, [vid])

    def _alone_beside(self, finding: Finding) -> None:
        """It fails alone, but beside processes the tests left running, which statesnap does
        not end (it signals only what it started): a fresh machine would not have them, so
        neither "genuine failure" nor a polluter is proven."""
        beside = self.runner.beside
        shown = "; ".join(beside[:3]) + (f"; and {len(beside) - 3} more" if len(beside) > 3
                                          else "")
        self.unexplained(finding)
        finding.note = (f"it fails alone too, but the replays ran beside process(es) the tests "
                        f"left running ({shown}), which statesnap never signals: whether it "
                        "fails without them is not proven; end them in the test that started "
                        "them, then run statesnap explain --verify")

    def unexplained(self, finding: Finding) -> None:
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
        was = finding.status
        if not prove_leftovers(replays, finding, victim, self._leftovers):
            return False
        if finding.status == VERIFIED:
            # The printed line, with the leftovers set aside as the replays had them (with
            # them on disk the victim fails alone, whatever the line runs).
            self.runner.set_aside([lo.path for lo in self._leftovers])
            try:
                confirm_printed(self, finding, finding.polluters, victim, self.unexplained)
            except BaseException:
                if finding.status == VERIFIED:
                    finding.status = was
                raise
            finally:
                self.runner.set_aside([])
        return True

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

    def _proven(self, finding: Finding, polluters: list[str], victim: TestEntry,
                confirmed: str | None = None) -> None:
        """Replays proved ``polluters``: the key, the fix, then the printed reproduction run
        exactly as printed (statesnap.proof.confirm) before the finding stays verified.
        ``confirmed``: a line already run exactly as printed that failed the victim as the run
        did (the first pair's); the confirmation runs unless it is the line printed."""
        was = finding.status
        try:
            prove_polluters(self, self.tests, self.sources, finding, polluters, victim)
            if confirmed is None or finding.repro != confirmed:
                confirm_printed(self, finding, polluters, victim, self.unexplained)
        except BaseException:
            # Cut short (budget, timeout, Ctrl-C) before the printed line failed the victim:
            # not verified; verify() says why.
            if finding.status == VERIFIED:
                finding.status = was
            raise

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
    """Verify every finding of ``record`` within ``budget`` seconds (in place; returned).

    ``progress``: on a terminal (a callback with ``live``) one status line, rewritten before
    each replay; otherwise one line per victim once its verdict is settled
    (:mod:`statesnap.proof.progress`).
    """
    from statesnap.proof.progress import ProofProgress

    runner = runner or Runner(record)
    shown = ProofProgress(progress, len(findings), budget)
    verifier = Verifier(record, runner, budget, repeat, shown.step, raise_errors)
    done = 0
    try:
        for finding in findings:
            shown.begin(finding)
            verifier.verify(finding)
            verifier.find_cleaners(finding, everywhere=find_cleaners)
            shown.settled(finding)
            done += 1
    except KeyboardInterrupt:
        # Ctrl-C: the runner killed the replay's process group and put the staged files
        # back on its way out.  The findings not finished say so, then the interrupt goes on.
        for finding in findings[done:]:
            note_interrupted(finding)
        raise
    finally:
        runner.close()
        shown.finish()
    return findings
