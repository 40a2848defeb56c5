"""Verification in fresh processes: prove (or refute) each suspected finding.

1. The victim alone must pass; if it fails alone the finding is ``not-order-dependent``.
2. ``[polluter, victim]`` must fail the victim again with the same exception type: ``verified``.
3. When no single suspect does it, delta debugging over the tests that ran before the victim
   in its process, starting from the state-based suspects, finds a failure that needs two
   polluters together.
4. Key-level replays restore one dirty key before the victim; the key whose restoration makes
   the victim pass is the one it relies on, and proves the fix hint.

Every replay's output is kept in a log beside the record.  All of it runs within a budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from statesnap.attribution import dirty_before, polluters_of
from statesnap.findings import (
    NOT_DETERMINISTIC,
    NOT_ORDER_DEPENDENT,
    UNEXPLAINED,
    VERIFIED,
    Finding,
)
from statesnap.hints import _probe_class, hint_for
from statesnap.minimize import ddmin
from statesnap.record import Record, TestEntry
from statesnap.repro import repro_command
from statesnap.runner import ReplayResult, Runner

Progress = Callable[[str], None]
MAX_SINGLE_SUSPECTS = 5
MAX_KEY_REPLAYS = 6
MAX_CLEANER_REPLAYS = 3


class BudgetSpent(Exception):
    """The verification budget ran out; the finding keeps what was learnt so far."""


@dataclass
class Verdict:
    """The answer of one (possibly repeated) replay for the victim."""

    failed: bool
    consistent: bool
    exc_type: str | None


class Verifier:
    """Verifies findings of one record with one :class:`Runner`."""

    def __init__(self, record: Record, runner: Runner, budget: float, repeat: int = 1,
                 progress: Progress | None = None) -> None:
        self.record = record
        self.runner = runner
        self.deadline = time.monotonic() + budget
        self.repeat = max(1, repeat)
        self.progress = progress or (lambda _msg: None)
        self.tests = sorted(record.tests, key=lambda t: t.index)

    # -- one replay, repeated ---------------------------------------------------------------
    def replay(self, order: Sequence[str], victim: str, finding: Finding, label: str,
               restore: Mapping[str, object] | None = None) -> Verdict:
        answers: list[ReplayResult] = []
        for _ in range(self.repeat):
            if time.monotonic() > self.deadline:
                raise BudgetSpent()
            result = self.runner.run(order, restore=restore, label=label)
            if result.log is not None:
                finding.logs.append(str(result.log))
            if result.error is not None and not result.outcomes:
                raise ReplayError(result.error)
            answers.append(result)
        fails = [a.failed(victim) or a.outcomes.get(victim) == "crashed" for a in answers]
        types = {a.exc_type(victim) for a, f in zip(answers, fails, strict=True) if f}
        return Verdict(
            failed=fails[0],
            consistent=len(set(fails)) == 1,
            exc_type=next(iter(types)) if types else None,
        )

    def _same_failure(self, verdict: Verdict, finding: Finding) -> bool:
        if not verdict.failed:
            return False
        if finding.exc_type in (None, "crash"):
            return True
        return verdict.exc_type in (None, finding.exc_type)

    # -- the whole procedure for one finding ------------------------------------------------
    def verify(self, finding: Finding) -> Finding:
        victim = self.record.test_by_id(finding.victim)
        if victim is None:
            victim = TestEntry(index=len(self.tests), nodeid=finding.victim, outcome="crashed",
                               worker=finding.worker)
        try:
            self._verify(finding, victim)
        except BudgetSpent:
            finding.note = "verification budget spent before this finding was proven"
        except ReplayError as exc:
            finding.note = f"replay could not run: {exc}"
        return finding

    def _verify(self, finding: Finding, victim: TestEntry) -> None:
        vid = victim.nodeid
        self.progress(f"statesnap: replaying {vid} alone")
        alone = self.replay([vid], vid, finding, "alone")
        if not alone.consistent:
            finding.status = NOT_DETERMINISTIC
            finding.note = "the victim alone passed and failed across repeats"
            return
        if alone.failed:
            finding.status = NOT_ORDER_DEPENDENT
            finding.polluters = []
            finding.note = "fails alone in a fresh process: a genuine failure, not pollution"
            finding.repro = repro_command(self.record.header, [vid])
            return
        suspects = polluters_of(finding.candidates)[:MAX_SINGLE_SUSPECTS]
        for nodeid in suspects:
            self.progress(f"statesnap: replaying {nodeid} → {vid}")
            v = self.replay([nodeid, vid], vid, finding, "pair")
            if not v.consistent:
                finding.status = NOT_DETERMINISTIC
                finding.note = f"[{nodeid}, victim] failed in some repeats only"
                return
            if self._same_failure(v, finding):
                self._proven(finding, [nodeid], victim)
                return
        prefix = [t.nodeid for t in self.tests if t.index < victim.index
                  and t.worker == victim.worker]
        polluters = self._minimise(finding, victim, prefix, suspects)
        if polluters is None:
            finding.status = UNEXPLAINED
            finding.note = ("the victim passed when the recorded order was replayed: "
                            "the failure depends on something outside the suite's order")
            return
        self._proven(finding, polluters, victim)

    def _minimise(self, finding: Finding, victim: TestEntry, prefix: list[str],
                  suspects: list[str]) -> list[str] | None:
        vid = victim.nodeid

        def fails(subset: Sequence[str]) -> bool:
            self.progress(f"statesnap: bisecting {vid} with {len(subset)} earlier test(s)")
            return self._same_failure(self.replay([*subset, vid], vid, finding, "ddmin"),
                                      finding)

        position = {n: i for i, n in enumerate(prefix)}
        every_suspect = sorted({c.nodeid for c in finding.candidates if c.nodeid in position},
                               key=lambda n: position[n])
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
        keys = [(ref, w) for ref, w in dirty.writes.items() if w.test.nodeid in polluters]
        mine = [c for c in finding.candidates if c.nodeid in polluters]
        if mine:
            top = mine[0]
            finding.probe, finding.key, finding.before, finding.after = (
                top.probe, top.key, top.before, top.after)
        restorable = [(ref, w) for ref, w in keys if _restorable(ref[0])]
        rank = {(c.probe, c.key): i for i, c in enumerate(finding.candidates)}
        restorable.sort(key=lambda rw: rank.get(rw[0], len(rank)))
        proven: list[str] = []
        order = [*polluters, victim.nodeid]
        for (probe, key), _w in restorable[:MAX_KEY_REPLAYS]:
            self.progress(f"statesnap: restoring {probe}:{key} before {victim.nodeid}")
            spec = {"before": victim.nodeid, "keys": [[probe, key]]}
            try:
                v = self.replay(order, victim.nodeid, finding, "key", restore=spec)
            except BudgetSpent:
                break
            if not v.failed:
                proven.append(f"{probe}:{key}")
                break  # suspects are ranked: the first key that heals the victim is named
        finding.proven_keys = proven
        if proven:
            probe, key = proven[0].split(":", 1)
            cand = next((c for c in finding.candidates if (c.probe, c.key) == (probe, key)), None)
            finding.probe, finding.key = probe, key
            if cand is not None:
                finding.before, finding.after = cand.before, cand.after
            finding.hint_proven = True
        if finding.probe and finding.key:
            change = ("removed" if finding.after is None else
                      "added" if finding.before is None else "changed")
            finding.hint = hint_for(finding.probe, finding.key, change)

    def find_cleaners(self, finding: Finding) -> None:
        """Tests of the suite that put the victim's key back: they show how to fix it."""
        if finding.status != VERIFIED or not finding.probe or not finding.key:
            return
        ref = (finding.probe, finding.key)
        found: list[str] = []
        for t in self.tests:
            if t.nodeid in finding.polluters or t.nodeid == finding.victim:
                continue
            for ch in t.changes:
                if (ch.probe, ch.key) == ref and ch.after == finding.before:
                    found.append(t.nodeid)
                    break
        proven: list[str] = []
        for nodeid in found[:MAX_CLEANER_REPLAYS]:
            order = [*finding.polluters, nodeid, finding.victim]
            try:
                v = self.replay(order, finding.victim, finding, "cleaner")
            except (BudgetSpent, ReplayError):
                break
            if not v.failed:
                proven.append(nodeid)
        finding.cleaners = proven


class ReplayError(Exception):
    """A replay that could not run at all (usage error, interpreter missing)."""


def _restorable(probe: str) -> bool:
    cls = _probe_class(probe)
    return bool(cls is not None and cls.restorable)


def verify_findings(
    record: Record,
    findings: list[Finding],
    *,
    budget: float = 120.0,
    repeat: int = 1,
    find_cleaners: bool = False,
    progress: Progress | None = None,
    runner: Runner | None = None,
) -> list[Finding]:
    """Verify every finding of ``record`` within ``budget`` seconds (in place; returned)."""
    runner = runner or Runner(record)
    verifier = Verifier(record, runner, budget, repeat, progress)
    for finding in findings:
        verifier.verify(finding)
        if find_cleaners:
            verifier.find_cleaners(finding)
    return findings
