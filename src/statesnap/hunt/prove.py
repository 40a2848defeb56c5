"""Proving what a hunt found: a latent victim's polluter, a brittle test's state-setter.

Shared proof runs only nominate; nothing becomes a finding before its exact reproduction ran by
itself in a fresh process and showed it (and, for a latent victim, the victim passed alone).
The reasoning: docs/ARCHITECTURE.md ("The hunt").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from statesnap.analysis.findings import (
    BRITTLE,
    LATENT,
    MAX_CANDIDATES,
    NOT_ORDER_DEPENDENT,
    SUSPECTED,
    UNEXPLAINED,
    Finding,
)
from statesnap.analysis.gctiming import mark_gc_timing
from statesnap.analysis.hints import hint_for
from statesnap.analysis.leaks import fixture_note, setup_hint
from statesnap.analysis.minimize import ddmin
from statesnap.hunt.keys import prove_keys
from statesnap.hunt.plan import HuntSuite
from statesnap.hunt.repro import args_file_of, order_command, up_to
from statesnap.hunt.runs import ALONE, DDMIN, PAIR, SETTER, Observed, Replays
from statesnap.hunt.suspect import Suspect
from statesnap.record.signature import Signature
from statesnap.replay.gcmode import COLLECT, cycle_held_key, with_gc
from statesnap.replay.repro import gc_off_command
from statesnap.replay.runner import BudgetSpent
from statesnap.state.diff import Change, change_kind

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
        self._resolve(s, causes, proof)
        # At once, in this worker: a proof a Ctrl-C or the budget cuts short later keeps it.
        self._confirm_line(s)
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

    # -- findings --------------------------------------------------------------------------
    def _base(self, s: Suspect, status: str) -> Finding:
        failure = s.failure or {}
        t = self.suite.by_id.get(s.nodeid)
        return Finding(victim=s.nodeid, polluters=[], probe=None, key=None, status=status,
                       worker=t.worker if t is not None else "main",
                       exc_type=failure.get("exc_type"), message=failure.get("message"),
                       candidates=s.candidates[:MAX_CANDIDATES], logs=list(s.logs))

    def _resolve(self, s: Suspect, causes: list[str], proof: Observed) -> None:
        f = self._base(s, LATENT if s.kind == LATENT else BRITTLE)
        mine = [c for c in s.candidates if c.nodeid in causes]
        if mine:
            top = mine[0]
            f.probe, f.key, f.before, f.after = top.probe, top.key, top.before, top.after
            f.hint = hint_for(top.probe, top.key, change_kind(top.before, top.after),
                              top.before, top.after)
        without = s.without.run.label if s.without is not None else "?"
        proof_label = f"{proof.run.label} ({proof.run.log})"
        if s.kind == LATENT:
            self.key_proofs.append((s, causes, proof))
            f.polluters = causes
            f.repro = order_command(self.header, [*causes, s.nodeid],
                                    args_file_of(proof.run.order_file))
            seen = ", ".join(o.run.label for o in s.failed_in) or "?"
            f.note = (f"latent: {self._why_hidden(s.nodeid, causes)}; failed in {seen}; "
                      f"passes without the leaking tests ({without}); fails after "
                      f"{' + '.join(causes)} ({proof_label})")
        else:
            f.setter = causes[0]
            f.repro = self._failing_repro(s)
            if f.probe and f.key:
                f.hint = (f"set {f.probe}:{f.key} up in the test's own fixture instead of "
                          f"relying on {causes[0]} having run first")
            others = f" (together with {', '.join(causes[1:])})" if len(causes) > 1 else ""
            f.note = (f"brittle: fails without the leaking tests ({without}); passes after "
                      f"{causes[0]}{others} ({proof_label})")
        s.finding = f

    def _made_in(self, nodeid: str, probe: str, key: str) -> Change | None:
        """The recorded change of ``probe:key`` by ``nodeid``, where a wide fixture (or a
        class or module set-up) made it: the test is then only how a replay runs it."""
        t = self.suite.by_id.get(nodeid)
        for ch in t.changes if t is not None else ():
            if ch.probe == probe and ch.key == key and ch.fixture:
                return ch
        return None

    def keys(self) -> None:
        """The key-level proofs of the latent findings made so far, best first.

        Run once every suspect had its turn in the shared rounds (again after delta debugging):
        a victim and its polluter proven are a finding already (its key the best-ranked
        candidate, not proven), and on a slow machine the budget goes to making each one
        before naming the key of any (pykicad: 27 victims of one polluter, three runs each).
        What the budget leaves unproven keeps that key.
        """
        todo, self.key_proofs[:] = list(self.key_proofs), []
        self.each(todo, lambda p, proof: p._key_proof(*proof))

    def _key_proof(self, s: Suspect, causes: list[str], proof: Observed) -> None:
        f = s.finding
        if f is None or f.status not in (LATENT, BRITTLE):
            return  # none, or left suspected: its printed line did not fail it
        extra = prove_keys(self.suite, self.replays, f, s, causes, proof)
        if extra:
            f.note = f"{f.note}; {extra}" if f.note else extra
        self._name_the_setup(f, causes)
        self._gc_timing(f, s, causes)

    def _gc_timing(self, f: Finding, s: Suspect, causes: list[str]) -> None:
        """Runs went with the collector off (state only reference cycles keep): one more
        with a collection just before the victim says whether the failure rests on it."""
        if not (self.replays.runner.gc_off and cycle_held_key(f.probe, f.key)):
            return
        order = [*causes, s.nodeid]
        try:
            obs = self.replays.run(order, "gc", "gc", f"collecting garbage before {s.nodeid}",
                                   restore=with_gc({"before": s.nodeid, "keys": []}, COLLECT))
        except BudgetSpent:
            return  # the finding stands as proven with the collector off, unqualified
        s.note_log(obs)
        if obs.passed(s.nodeid):
            mark_gc_timing(f, gc_off_command(self.header, order))

    def _name_the_setup(self, f: Finding, causes: list[str]) -> None:
        """Where a wide fixture (or a class or module set-up) of a cause made the key's
        change, say so, and give the set-up's fix: the test is only how a replay runs it."""
        for cause in causes:
            made = self._made_in(cause, f.probe, f.key) if f.probe and f.key else None
            if made is None:
                continue
            f.hint = setup_hint(made) or f.hint
            where = fixture_note(made, cause)
            if where:
                f.note = f"{f.note}; {where}" if f.note else where
            return

    def _unresolved(self, s: Suspect) -> None:
        if s.kind == LATENT:
            f = self._base(s, UNEXPLAINED)
            run = s.failing or (s.failed_in[0] if s.failed_in else None)
            f.repro = self._order_repro(run, s.nodeid) if run is not None else ""
            f.note = ("failed in a hunt order but no earlier tests of it made it fail again "
                      "in a fresh process: flaky, or it needs more than the order")
        elif self.failing_run(s) is None:
            f = self._base(s, UNEXPLAINED)
            f.note = ("failed in a shared run, in front of the other tests, but not in a run of "
                      "exactly the tests before it: flaky")
        else:
            f = self._base(s, NOT_ORDER_DEPENDENT)
            f.repro = self._failing_repro(s)
            f.note = ("passed in the record but fails in a fresh process even after the tests "
                      "that ran before it there: it changed, or it depends on the environment")
        s.finding = f

    def confirm_printed(self, suspects: Sequence[Suspect]) -> None:
        """Run every latent or brittle finding's printed line exactly as printed (a fresh
        process, no statesnap): the hunt's runs may have been forked from a warm parent, and
        what the user is given is that line.  Each ran as its finding was made; this runs
        those a key proof changed since (a run with the collector off).  One that does not
        fail the victim as the runs did leaves the victim suspected, without a line."""
        todo = [s for s in suspects if s.finding is not None and s.finding.repro
                and s.finding.status in (LATENT, BRITTLE) and s.line_ran != s.finding.repro]
        self.each(todo, lambda p, s: p._confirm_line(s))

    def _confirm_line(self, s: Suspect) -> None:
        f = s.finding
        if f is None:
            return
        if f.status == LATENT:
            order = [*f.polluters, s.nodeid]
        elif s.without is not None and s.nodeid in s.without.order:
            order = up_to(s.without.order, s.nodeid)
        else:
            order = [s.nodeid]
        try:
            obs = self.replays.printed(f.repro or "", order,
                                       f"running the printed reproduction of {s.nodeid}")
        except BudgetSpent:
            self._line_unproven(s, "the budget ran out before its printed reproduction ran "
                                   "(run again with a larger --budget)")
            return
        s.note_log(obs)
        got = Signature.of(obs.result.failures.get(s.nodeid))
        if obs.failed(s.nodeid) and (f.status != LATENT
                                     or Signature.of(s.failure).same_as(got)):
            s.line_ran = f.repro
            return
        how = (f"it failed differently ({got.text()})" if obs.failed(s.nodeid) else
               "it passed" if obs.passed(s.nodeid) else "it did not run")
        self._line_unproven(s, "the hunt's runs showed it, but its printed reproduction, run "
                               "exactly as printed in a fresh process, did not fail it the "
                               f"same way ({how}): not proven")

    def _line_unproven(self, s: Suspect, why: str) -> None:
        """``s`` suspected, without the line that was not shown to fail it."""
        s.finding = None
        self.unproven(s, why)
        if s.finding is not None:
            s.finding.repro = ""

    def unproven(self, s: Suspect, why: str) -> None:
        """A suspect the budget left unproven: ``suspected``, with what is known."""
        f = self._base(s, SUSPECTED)
        if s.candidates:
            top = s.candidates[0]
            f.probe, f.key, f.before, f.after = top.probe, top.key, top.before, top.after
            if s.kind != "brittle":
                f.polluters = [top.nodeid]
        run = s.failing or (s.failed_in[0] if s.failed_in else s.without)
        f.repro = self._order_repro(run, s.nodeid) if run is not None else ""
        f.note = why
        s.finding = f

    def _why_hidden(self, victim: str, causes: list[str]) -> str:
        v = self.suite.by_id.get(victim)
        for cause in causes:
            p = self.suite.by_id.get(cause)
            if v is None or p is None:
                continue
            if p.worker != v.worker:
                return f"{cause} ran in another worker ({p.worker}) in the record"
            if p.index > v.index:
                return f"{cause} ran after it in the record"
        return "a later test undid the leak before it ran in the record"

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

    def _failing_repro(self, s: Suspect) -> str:
        """The command that showed a brittle test failing (see :meth:`failing_run`)."""
        return self._order_repro(s.without, s.nodeid) if s.without is not None else ""

    def _order_repro(self, obs: Observed, nodeid: str) -> str:
        """A plain pytest command running ``obs``'s order up to ``nodeid``; a long one reads
        its node ids from a file beside the run's log."""
        return order_command(self.header, up_to(obs.order, nodeid),
                             args_file_of(obs.run.order_file))

