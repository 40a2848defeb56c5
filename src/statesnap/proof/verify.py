"""Verification in fresh processes: prove (or refute) each suspected finding.

The victim alone, ``[polluter, victim]``, delta debugging over earlier tests, then key-level
replays; repeated replays that disagree make a finding ``not-deterministic``.  Every replay is
logged beside the record, all within a budget.  Steps: docs/ARCHITECTURE.md ("Verification").
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statesnap.analysis.attribution import Write, dirty_before, polluters_of
from statesnap.analysis.findings import (
    NOT_DETERMINISTIC,
    NOT_ORDER_DEPENDENT,
    NOT_REPRODUCED,
    NOT_THE_CAUSE,
    UNEXPLAINED,
    VERIFIED,
    Finding,
    ReplayRun,
)
from statesnap.analysis.hints import hint_for, restorable
from statesnap.analysis.keyproof import narrowed_directory, restore_spec, smallest_healing_set
from statesnap.analysis.leaks import WIDE_SCOPES
from statesnap.analysis.leftovers import Leftover
from statesnap.analysis.minimize import ddmin
from statesnap.analysis.own_fixtures import fixture_words
from statesnap.base.progress import Progress
from statesnap.proof.leftovers import LeftoverReplays, prove_leftovers
from statesnap.record.journal import Record, TestEntry
from statesnap.record.signature import Signature
from statesnap.replay.repro import repro_command
from statesnap.replay.runner import BudgetSpent, ReplayResult, Runner
from statesnap.state.diff import REMOVED, change_kind

MAX_SINGLE_SUSPECTS = 5
MAX_KEY_REPLAYS = 6
#: Restorable keys a set-level proof restores together (then shrinks) at most.
MAX_SET_KEYS = 24
MAX_CLEANER_REPLAYS = 3


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
_STOPS = (BudgetSpent, ReplayTimeout, NotDeterministic)


@dataclass
class Verdict:
    """The answer of one (possibly repeated) replay for the victim."""

    failed: bool
    #: Whether the victim ran at all (an earlier test may have crashed the replay).
    ran: bool
    #: How it failed (unknown: the repeats disagreed, or it passed).
    signature: Signature


class Verifier:
    """Verifies findings of one record with one :class:`Runner`.

    ``raise_errors`` makes a replay that cannot run at all propagate as :class:`ReplayError`
    (the CLI turns it into one line and exit code 2); otherwise it becomes the finding's note.
    """

    def __init__(self, record: Record, runner: Runner, budget: float, repeat: int = 1,
                 progress: Progress | None = None, raise_errors: bool = False) -> None:
        self.record = record
        self.runner = runner
        self.deadline = time.monotonic() + budget
        self.repeat = max(1, repeat)
        self.progress = progress or (lambda _msg: None)
        self.raise_errors = raise_errors
        self.tests = sorted(record.tests, key=lambda t: t.index)
        self._leftovers: list[Leftover] | None = None

    # -- one replay, repeated ---------------------------------------------------------------
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
        self._prove_keys(finding, polluters, victim, writes)
        if finding.probe and finding.key:
            finding.hint = hint_for(finding.probe, finding.key,
                                    change_kind(finding.before, finding.after))
            w = writes.get((finding.probe, finding.key))
            if w is not None:
                finding.note = _fixture_note(w) or finding.note
        self._note_brittle(finding)

    def _note_brittle(self, finding: Finding) -> None:
        if finding.alone_failure:
            extra = (f"alone it fails too, but differently ({finding.alone_failure}; in the "
                     f"run: {finding.signature().text()}): it also relies on state an earlier "
                     "test sets up (brittle)")
            finding.note = f"{finding.note}; {extra}" if finding.note else extra

    def _prove_keys(self, finding: Finding, polluters: list[str], victim: TestEntry,
                    writes: dict[tuple[str, str], Write]) -> None:
        """Restore one key at a time before the victim: the first that heals it is named.

        Each polluter gets its own proof, so a failure that needs two polluters names the
        key of each.
        """
        rank = {(c.probe, c.key): i for i, c in enumerate(finding.candidates)}
        keys = sorted((ref for ref in writes if restorable(ref[0])),
                      key=lambda ref: (rank.get(ref, len(rank)), ref))
        order = [*polluters, victim.nodeid]
        baselines = {ref: w.baseline for ref, w in writes.items()}
        proven: list[tuple[str, str]] = []
        healed: set[str] = set()
        tried = 0
        stopped = False

        def heals(subset: Sequence[tuple[str, str]]) -> bool:
            what = ", ".join(f"{p}:{k}" for p, k in subset)
            self.progress(f"statesnap: restoring {what} before {victim.nodeid}")
            spec = restore_spec(victim.nodeid, subset, baselines)
            v = self.replay(order, victim.nodeid, finding, "key", restore=spec)
            return v.ran and not v.failed  # a victim that never ran is not healed

        for ref in keys:
            writer = writes[ref].test.nodeid
            if writer in healed:
                continue
            if tried >= MAX_KEY_REPLAYS:
                break
            tried += 1
            try:
                if not heals([ref]):
                    continue
            except _STOPS:
                stopped = True
                break
            # The hunt names the same key for the same victim (the innermost directory).
            proven.append(narrowed_directory(ref, keys, heals, _STOPS))
            healed.add(writer)
            if healed >= set(polluters):
                break
        alone = bool(proven)  # each key proven healed the victim by itself
        if not proven and len(keys) > 1:
            found = self._healing_set(finding, order, victim.nodeid, keys, baselines)
            stopped = found is None  # [] is an answer: all of them together did not heal
            proven = found or []
            alone = len(proven) == 1
            if alone:
                proven = [narrowed_directory(proven[0], keys, heals, _STOPS)]
        proven = list(dict.fromkeys(proven))
        why = None if proven or stopped else _no_key_note(keys, writes)
        if why:
            finding.note = f"{finding.note}; {why}" if finding.note else why
        finding.proven_keys = [f"{p}:{k}" for p, k in proven]
        if proven:
            probe, key = proven[0]
            cand = next((c for c in finding.candidates if (c.probe, c.key) == (probe, key)), None)
            finding.probe, finding.key = probe, key
            if cand is not None:
                finding.before, finding.after = cand.before, cand.after
            else:  # a key ranked below the candidates kept (a folder inside the named one)
                change = writes[(probe, key)].change
                finding.before = change.before
                finding.after = None if change.change == REMOVED else change.after
            # A set heals together only: the named key's fix alone is not proven (the hunt's
            # rule too); the terminal says "heals only together with", not "makes it pass".
            finding.hint_proven = alone

    def _healing_set(self, finding: Finding, order: list[str], victim: str,
                     keys: list[tuple[str, str]],
                     baselines: dict[tuple[str, str], Any]) -> list[tuple[str, str]] | None:
        """No single key heals the victim: the smallest set of them that does ([] if none;
        None where a replay could not answer: no time left, timed out, not deterministic)."""

        def heals(subset: Sequence[tuple[str, str]]) -> bool:
            self.progress(f"statesnap: restoring {len(subset)} key(s) before {victim}")
            spec = restore_spec(victim, subset, baselines)
            v = self.replay(order, victim, finding, "keys", restore=spec)
            return v.ran and not v.failed

        try:
            return smallest_healing_set(keys[:MAX_SET_KEYS], heals, singles=0)
        except _STOPS:
            return None

    def find_cleaners(self, finding: Finding, everywhere: bool = False) -> None:
        """Tests that put the victim's key back: they show how to fix it.

        A candidate is a test the run saw put the key back before the victim, and with
        ``everywhere`` any recorded test whose change set the key to its baseline value.  It
        is named a cleaner only when a replay of ``[polluter(s), it, victim]`` lets the
        victim pass, with that command kept as its proof.
        """
        finding.cleaners, finding.cleaner_proofs = [], {}
        if finding.status != VERIFIED or not finding.probe or not finding.key:
            return
        ref = (finding.probe, finding.key)
        victim = self.record.test_by_id(finding.victim)
        found: list[str] = []
        if victim is not None:
            found += dirty_before(self.tests, victim).cleaners.get(ref, [])
        if everywhere:
            found += [t.nodeid for t in self.tests
                      if any((ch.probe, ch.key) == ref and ch.after == finding.before
                             for ch in t.changes)]
        found = [n for n in dict.fromkeys(found)
                 if n not in finding.polluters and n != finding.victim]
        for nodeid in found[:MAX_CLEANER_REPLAYS]:
            self.progress(f"statesnap: does {nodeid} clean up after {finding.polluters[0]}?")
            order = [*finding.polluters, nodeid, finding.victim]
            try:
                v = self.replay(order, finding.victim, finding, "cleaner")
            except (BudgetSpent, ReplayError, ReplayTimeout, NotDeterministic):
                break
            if v.ran and not v.failed:
                finding.cleaners.append(nodeid)
                finding.cleaner_proofs[nodeid] = repro_command(self.record.header, order)


def _order_words(order: Sequence[str]) -> str:
    if len(order) <= 3:
        return "[" + ", ".join(order) + "]"
    return f"[{order[0]}, … {len(order) - 2} more …, {order[-1]}]"


def _no_key_note(keys: Sequence[tuple[str, str]],
                 writes: Mapping[tuple[str, str], Write]) -> str | None:
    """Why a verified finding names no proven key, where the replays answered."""
    if not keys:
        refs = ", ".join(f"{p}:{k}" for p, k in list(writes)[:3]) + (
            f" and {len(writes) - 3} more" if len(writes) > 3 else "")
        return (f"no key proven: no replay can put back what the polluter changed ({refs})"
                if writes else None)
    if len(keys) > MAX_SET_KEYS:
        return None  # not all were restored: nothing to say of the rest
    return (f"no key proven: restoring the polluter's {len(keys)} restorable change(s) before "
            "the victim does not make it pass")


def _fixture_note(w: Write) -> str | None:
    ch = w.change
    if ch.fixture and ch.scope in WIDE_SCOPES:
        words = fixture_words(ch.fixture)
        if words.internal:
            return (f"the change was made in {words.name} (set up for {w.test.nodeid}) and "
                    f"never undone: undo it {words.undo}")
        return (f"the change was made by the {ch.scope}-scoped fixture {ch.fixture!r} "
                f"(set up for {w.test.nodeid}) and never undone: undo it {words.undo}")
    return None


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
    try:
        for finding in findings:
            verifier.verify(finding)
            verifier.find_cleaners(finding, everywhere=find_cleaners)
    finally:
        runner.close()
    return findings
