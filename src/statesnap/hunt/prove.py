"""Proving what a hunt found: a latent victim's polluter, a brittle test's state-setter.

Shared proof runs only nominate; nothing becomes a finding before its exact reproduction ran by
itself in a fresh process and showed it (and, for a latent victim, the victim passed alone).
This module decides which runs to make and in what order (side by side where a pool is given);
the findings they earn are written by :mod:`statesnap.hunt.verdicts`, a latent finding's key is
proven by :mod:`statesnap.hunt.keys`, and each printed line is run by
:mod:`statesnap.hunt.confirm`.  The reasoning: docs/ARCHITECTURE.md ("The hunt").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from statesnap.analysis.findings import BRITTLE, LATENT
from statesnap.analysis.minimize import ddmin
from statesnap.hunt.confirm import confirm_line
from statesnap.hunt.keys import key_proof
from statesnap.hunt.plan import HuntSuite
from statesnap.hunt.repro import up_to
from statesnap.hunt.runs import ALONE, DDMIN, PAIR, SETTER, Observed, Replays
from statesnap.hunt.suspect import Suspect
from statesnap.hunt.verdicts import resolved, unresolved
from statesnap.record.signature import Signature

if TYPE_CHECKING:
    from statesnap.hunt.sidebyside import ProofPool

#: Rounds of shared proof runs before falling back to delta debugging.
MAX_ROUNDS = 2

Want = Callable[[Observed, "Suspect"], bool]
T = TypeVar("T")


class Prover:
    """Turns suspects into findings with as few runs as it can."""

    def __init__(self, suite: HuntSuite, replays: Replays, header: dict[str, Any],
                 pool: ProofPool | None = None) -> None:
        self.suite = suite
        self.replays = replays
        self.header = header
        #: Latent findings whose key-level proof has not run yet: ``(suspect, causes, the
        #: run that proved them)``.
        self.key_proofs: list[tuple[Suspect, list[str], Observed]] = []
        #: Where tasks that do not depend on each other run side by side (None: in turn).
        self.pool = pool

    def each(self, items: Sequence[T], task: Callable[[Prover, T], None]) -> None:
        """``task(prover, item)`` for every item, each with a prover of its own worker's
        replays when a pool runs them side by side; in turn (with this one) otherwise."""
        if self.pool is None:
            for item in items:
                task(self, item)
            return

        def on(replays: Replays, item: T) -> None:
            if replays is self.replays:
                task(self, item)
                return
            worker = Prover(self.suite, replays, self.header)
            worker.key_proofs = self.key_proofs  # list.append: one at a time under the GIL
            task(worker, item)

        self.pool.each(items, on, self.replays)
        # Proven in whatever order the workers finished: their key proofs go in suite order.
        rank = {n: i for i, n in enumerate(self.suite.order())}
        self.key_proofs.sort(key=lambda p: rank.get(p[0].nodeid, len(rank)))

    # -- shared runs -----------------------------------------------------------------------
    def batch(self, head: Sequence[str], members: Sequence[str], label: str, kind: str,
              message: str) -> tuple[Observed, dict[str, str | None]]:
        """Run ``[*head, *members]``; each member's outcome, None where an earlier member
        left state behind in this run (its outcome then says nothing on its own)."""
        order = [*head, *members]
        obs = self.replays.run(order, label, kind, message)
        leaked = obs.leaked() if len(members) > 1 else set()
        outcomes: dict[str, str | None] = {}
        dirty = False
        for m in members:
            outcomes[m] = None if dirty else obs.outcome(m)
            dirty = dirty or m in leaked
        return obs, outcomes

    def _leakers_last(self, items: Sequence[Suspect]) -> list[Suspect]:
        # A member that leaked in the record goes last: it can taint only those after it.
        return sorted(items, key=lambda s: s.nodeid in self.suite.leaks)

    def alone(self, suspects: Sequence[Suspect]) -> None:
        """Run suspects without any other test; sets ``kind`` (and ``without``) on each."""
        todo: list[list[Suspect]] = [self._leakers_last(suspects)] if suspects else []
        while todo:
            members = todo.pop(0)
            what = members[0].nodeid if len(members) == 1 else f"{len(members)} tests"
            obs, outcomes = self.batch([], [m.nodeid for m in members], ALONE, ALONE,
                                       f"{what} alone")
            for i, m in enumerate(members):
                out = outcomes[m.nodeid]
                if out is None or (i > 0 and out != "passed"):
                    # Another member ran before it: only its own run says it fails alone.
                    todo.append([m])
                    continue
                m.note_log(obs)
                m.without = obs
                if len(members) == 1:
                    m.solo = obs
                m.kind = LATENT if out == "passed" else BRITTLE

    # -- the two proofs --------------------------------------------------------------------
    def latent(self, suspects: Sequence[Suspect]) -> None:
        def fails(obs: Observed, s: Suspect) -> bool:
            # The same failure, not just a failure: another assertion (or another error) in
            # the pair is another order dependency, and would print a wrong polluter.
            if not obs.failed(s.nodeid):
                return False
            got = Signature.of(obs.result.failures.get(s.nodeid))
            return Signature.of(s.failure).same_as(got)

        self._prove(suspects, fails, PAIR, "polluter", LATENT)

    def brittle(self, suspects: Sequence[Suspect]) -> None:
        def passes(obs: Observed, s: Suspect) -> bool:
            return obs.passed(s.nodeid)

        self._prove(suspects, passes, SETTER, "setter", BRITTLE)

    def _prove(self, suspects: Sequence[Suspect], want: Want, kind: str, role: str,
               proving: str) -> None:
        for _ in range(MAX_ROUNDS):
            pending = [s for s in suspects
                       if s.finding is None and s.queue and s.kind == proving]
            if not pending:
                break
            heads: dict[str, list[Suspect]] = {}
            for s in pending:
                head = s.queue.pop(0)
                s.tried.append(head)
                heads.setdefault(head, []).append(s)
            # Each suspect is in one head's group: the groups are independent.
            self.each(list(heads.items()),
                      lambda p, hg: p._try_head(hg[0], hg[1], want, kind, role))
        # The findings the shared rounds made get their keys before delta debugging
        # searches (many runs each) for the polluters of the rest.
        self.keys()
        rest = [s for s in suspects if s.finding is None and s.kind == proving]
        self.each(rest, lambda p, s: p._search(s, want, proving))

    def _try_head(self, head: str, group: list[Suspect], want: Want, kind: str,
                  role: str) -> None:
        """One shared run of ``head`` before the suspects of ``group``, and the confirmation
        of each it nominates."""
        runs = [self._leakers_last(group)]
        while runs:
            members = runs.pop(0)
            obs, outcomes = self.batch(
                [head], [m.nodeid for m in members], kind, kind,
                f"{role} {head} → {len(members)} test(s)")
            for m in members:
                m.note_log(obs)
                if outcomes[m.nodeid] is None:
                    runs.append([m])  # tainted by another member: try it alone
                elif want(obs, m):
                    self._confirm(m, [head], obs, want, kind)

    def _search(self, s: Suspect, want: Want, proving: str) -> None:
        """Delta debugging for the causes of ``s`` the shared rounds did not find."""
        if s.finding is not None or s.kind != proving:
            return
        found = self._minimise(s, want)
        confirmed = found is not None and self._confirm(s, *found, want, DDMIN)
        if not confirmed and s.finding is None and s.kind == proving:
            self._unresolved(s)

    def _confirm(self, s: Suspect, causes: list[str], proof: Observed, want: Want,
                 kind: str) -> bool:
        """Resolve ``s`` only once its exact reproduction showed it in a process of its own.

        ``proof`` nominated ``causes``; when it ran more than ``[*causes, s]`` (a shared run),
        that exact order runs again by itself.  A latent victim must also pass alone; one that
        fails alone turns brittle (``kind`` changes, no finding yet).
        """
        exact = [*causes, s.nodeid]
        if proof.order != exact:
            proof = self.replays.run(exact, kind, kind,
                                     f"confirming {' + '.join(causes)} → {s.nodeid}")
            s.note_log(proof)
            if not want(proof, s):
                return False
        if s.kind == LATENT:
            solo = self.solo(s)
            if not solo.passed(s.nodeid):
                s.kind, s.without = BRITTLE, solo
                return False
        elif self.failing_run(s) is None:
            return False  # its printed reproduction (the failing one) did not fail it
        s.finding = resolved(self.suite, self.header, s, causes, proof)
        if s.kind == LATENT:
            self.key_proofs.append((s, causes, proof))
        # At once, in this worker: a proof a Ctrl-C or the budget cuts short later keeps it.
        confirm_line(self.suite, self.replays, self.header, s)
        return True

    def solo(self, s: Suspect) -> Observed:
        """``s`` run alone, in a process of its own (once)."""
        if s.solo is None:
            s.solo = self.replays.run([s.nodeid], ALONE, ALONE, f"{s.nodeid} alone")
            s.note_log(s.solo)
        return s.solo

    def _minimise(self, s: Suspect, want: Want) -> tuple[list[str], Observed] | None:
        last: list[Observed] = []

        def interesting(subset: Sequence[str]) -> bool:
            obs = self.replays.run([*subset, s.nodeid], DDMIN, DDMIN,
                                   f"bisecting {s.nodeid} with {len(subset)} earlier test(s)")
            s.note_log(obs)
            ok = want(obs, s)
            if ok:
                last.append(obs)
            return ok

        prefix = self._prefix(s)
        position = {n: i for i, n in enumerate(prefix)}
        pool = sorted({c.nodeid for c in s.candidates if c.nodeid in position},
                      key=lambda n: position[n])
        for items in (pool, prefix):
            if not items or (items is prefix and items == pool):
                continue
            if interesting(items):
                found = ddmin(items, interesting, known_failing=True)
                return found, last[-1]
        return None

    def _prefix(self, s: Suspect) -> list[str]:
        """The tests that ran before ``s``: in the failing run (latent) or the record."""
        if s.kind == LATENT and s.failing is not None:
            order = s.failing.order
            return order[: order.index(s.nodeid)] if s.nodeid in order else []
        lane = [t.nodeid for t in self.suite.lane_of(s.nodeid)]
        return lane[: lane.index(s.nodeid)] if s.nodeid in lane else []

    # -- verdicts, keys, printed lines ------------------------------------------------------
    def _unresolved(self, s: Suspect) -> None:
        # Of a brittle one, the run of exactly the tests before it (run now if need be) says
        # whether it is flaky or fails whatever ran first.
        fails = s.kind != LATENT and self.failing_run(s) is not None
        s.finding = unresolved(self.suite, self.header, s, fails)

    def keys(self) -> None:
        """The key-level proofs of the latent findings made so far, best first.

        Run once every suspect had its turn in the shared rounds (again after delta debugging):
        a victim and its polluter proven are a finding already (its key the best-ranked
        candidate, not proven), and on a slow machine the budget goes to making each one
        before naming the key of any (pykicad: 27 victims of one polluter, three runs each).
        What the budget leaves unproven keeps that key.
        """
        todo, self.key_proofs[:] = list(self.key_proofs), []
        self.each(todo, lambda p, proof: key_proof(p.suite, p.replays, p.header, *proof))

    def confirm_printed(self, suspects: Sequence[Suspect]) -> None:
        """Run every latent or brittle finding's printed line exactly as printed (a fresh
        process, no statesnap): the hunt's runs may have been forked from a warm parent, and
        what the user is given is that line.  Each ran as its finding was made; this runs
        those a key proof changed since (a run with the collector off).  One that does not
        fail the victim as the runs did leaves the victim suspected, without a line."""
        todo = [s for s in suspects if s.finding is not None and s.finding.repro
                and s.finding.status in (LATENT, BRITTLE) and s.line_ran != s.finding.repro]
        self.each(todo, lambda p, s: confirm_line(p.suite, p.replays, p.header, s))

    def failing_run(self, s: Suspect) -> Observed | None:
        """A run of exactly the order a brittle finding prints, in which ``s`` failed.

        The run that showed it failing (``without``), cut after ``s``; when the cut changed
        it (``s`` ran first in a shared alone run), the cut order runs by itself once.  None
        when that run did not fail it: nothing to print.
        """
        run = s.without
        if run is None or s.nodeid not in run.order:
            return None
        order = up_to(run.order, s.nodeid)
        if order != run.order:
            if order == [s.nodeid]:
                run = self.solo(s)
            else:
                run = self.replays.run(order, ALONE, ALONE,
                                       f"{s.nodeid} after {len(order) - 1} test(s)")
                s.note_log(run)
            s.without = run
        return run if run.failed(s.nodeid) else None
