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
refused as every proof is.  Key candidates include, after the polluters' own recorded changes,
what they changed in a replay of the pair and not in the run: setting a key to the value it
already has records no change (:mod:`statesnap.proof.keywrites`).
"""

from __future__ import annotations

from collections.abc import Sequence

from statesnap.analysis.attribution import (
    Dirty,
    classmates,
    polluters_of,
    rank,
    source_reader,
)
from statesnap.analysis.findings import (
    MAX_CANDIDATES,
    NOT_DETERMINISTIC,
    NOT_ORDER_DEPENDENT,
    NOT_REPRODUCED,
    NOT_THE_CAUSE,
    UNEXPLAINED,
    VERIFIED,
    Finding,
)
from statesnap.analysis.gctiming import mark_gc_timing
from statesnap.analysis.hints import hint_for
from statesnap.analysis.keyrank import joint_keys, key_order
from statesnap.analysis.leaks import fixture_note, setup_hint
from statesnap.analysis.leftovers import Leftover
from statesnap.analysis.minimize import ddmin
from statesnap.base.progress import Progress
from statesnap.proof.cleaners import find_cleaners
from statesnap.proof.confirm import confirm_printed
from statesnap.proof.keys import prove_keys
from statesnap.proof.keywrites import key_writes, new_writes
from statesnap.proof.leftovers import LeftoverReplays, prove_leftovers
from statesnap.proof.pairs import PRINTED_PAIR, PairBoard
from statesnap.proof.replays import (
    STOPS,
    NotDeterministic,
    Replayer,
    ReplayError,
    ReplayTimeout,
)
from statesnap.record.journal import Record, TestEntry
from statesnap.replay.gcmode import COLLECT, cycle_held_key, with_gc
from statesnap.replay.repro import gc_off_command, repro_command
from statesnap.replay.runner import BudgetSpent, Runner
from statesnap.replay.scratchrunner import ScratchRunner
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
            self._prove(finding, polluters, victim)
            if confirmed is None or finding.repro != confirmed:
                confirm_printed(self, finding, polluters, victim, self.unexplained)
        except BaseException:
            # Cut short (budget, timeout, Ctrl-C) before the printed line failed the victim:
            # not verified; verify() says why.
            if finding.status == VERIFIED:
                finding.status = was
            raise

    def _prove(self, finding: Finding, polluters: list[str], victim: TestEntry) -> None:
        finding.status = VERIFIED
        finding.polluters = polluters
        finding.repro = repro_command(self.record.header, [*polluters, victim.nodeid])
        own, replayed = key_writes(self.record, self.tests, finding, polluters, victim)
        writes = {**own, **replayed}
        # Every change the proven polluters recorded is a key candidate, low-rated ones
        # included, ranked by what connects it to the victim (not only the few kept among
        # the finding's candidates, which rank every earlier test's changes); then the others
        # statesnap.proof.keywrites finds, group after group.
        code = self.sources.of(victim.nodeid)
        mine = key_order(victim, [rank(victim, Dirty(own), code),
                                  rank(victim, Dirty(replayed), code)], code, self.sources)
        if own:
            kept = {(c.nodeid, c.probe, c.key) for c in mine}
            finding.candidates = [*mine, *(c for c in finding.candidates
                                           if (c.nodeid, c.probe, c.key) not in kept)
                                  ][:MAX_CANDIDATES]
            top = mine[0]
            finding.probe, finding.key, finding.before, finding.after = (
                top.probe, top.key, top.before, top.after)
        else:
            finding.probe = finding.key = finding.before = finding.after = None
            finding.hint = None
            finding.hint_proven, finding.proven_keys = False, []
            # Said only when the polluters recorded no change at all: a recorded change
            # that no replay could tie to the failure is another story (prove_keys says).
            finding.note = ("the polluter(s) recorded no state change: the state the victim "
                            "relies on is outside what statesnap's probes see")
            self._note_brittle(finding)
            return

        def more() -> list[tuple[str, str]]:
            # No replay of the pair kept a record (a printed line proved it): the first key
            # replay's, ranked, once it did not heal the victim.
            extra = new_writes(self.record, finding, polluters, writes)
            writes.update(extra)
            return [(c.probe, c.key) for c in rank(victim, Dirty(extra), code)]

        prove_keys(self, finding, polluters, victim, writes,
                   ranking=[(c.probe, c.key) for c in mine],
                   more=None if replayed else more, joint=joint_keys(mine, polluters))
        if finding.probe and finding.key:
            finding.hint = hint_for(finding.probe, finding.key,
                                    change_kind(finding.before, finding.after),
                                    finding.before, finding.after)
            w = writes.get((finding.probe, finding.key))
            if w is not None:
                finding.hint = setup_hint(w.change) or finding.hint
                where = fixture_note(w.change, w.test.nodeid)
                if where and f"{finding.probe}:{finding.key}" in finding.proven_keys:
                    # Only for a proven key ("undo it in teardown_class" is a fix), and
                    # beside what prove_keys noted, never instead of it.
                    finding.note = f"{finding.note}; {where}" if finding.note else where
        self._gc_timing(finding, polluters, victim)
        self._note_brittle(finding)

    def _gc_timing(self, finding: Finding, polluters: list[str], victim: TestEntry) -> None:
        """Replays ran with the collector off (state only reference cycles keep): one more
        with a collection just before the victim says whether the failure rests on it."""
        if not (self.runner.gc_off and cycle_held_key(finding.probe, finding.key)):
            return
        order = [*polluters, victim.nodeid]
        self.progress(f"statesnap: collecting garbage before {victim.nodeid}")
        try:
            v = self.replay(order, victim.nodeid, finding, "gc",
                            restore=with_gc({"before": victim.nodeid, "keys": []}, COLLECT))
        except STOPS:
            return
        if v.ran and not v.failed:
            mark_gc_timing(finding, gc_off_command(self.record.header, order))

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


#: The start of the note of a finding the budget cut short.
BUDGET_SPENT = "the verification budget was spent before this finding was proven"


def budget_note(finding: Finding) -> str:
    """What a finding cut short by the budget still owes: how many of its candidate polluters
    no replay tried, and the command that finishes the work."""
    tried = {n for r in finding.replays for n in r.order if n != finding.victim}
    suspects = polluters_of(finding.candidates)
    left = [n for n in suspects if n not in tried]
    owed = (f"{len(finding.replays)} replay(s) ran; {len(left)} of {len(suspects)} "
            "candidate polluter(s) left untried")
    return f"{BUDGET_SPENT} ({owed}): `statesnap explain --verify` finishes the work"


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


#: The note of a finding whose replays a Ctrl-C stopped.
INTERRUPTED = "the session was interrupted (Ctrl-C) before this finding's replays finished"


def note_interrupted(finding: Finding) -> None:
    """Say on ``finding`` that a Ctrl-C stopped its replays (its status stays what the
    replays so far earned: a verdict not reached stays unproven)."""
    if finding.note and INTERRUPTED in finding.note:
        return
    finding.note = f"{finding.note}; {INTERRUPTED}" if finding.note else INTERRUPTED
