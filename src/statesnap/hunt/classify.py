"""From the orders' failures to suspects ready to prove: latent or brittle, and who to try first.

A test that passed in the record and failed in a hunt order is a suspect.  It is latent where it
passed in the run without the leaking tests (no leaker ran before it there), else its own run
alone tells (:meth:`~statesnap.hunt.prove.Prover.alone`).  Its candidates come from attribution
on the run that shows its failure, minus the keys that were dirty with the same value in a run
where it passed; their tests, best first, are the queue its proof tries.
"""

from __future__ import annotations

from collections.abc import Sequence

from statesnap.analysis.findings import LATENT
from statesnap.analysis.victimcode import SourceReader
from statesnap.hunt.plan import HuntSuite, Observation, candidates, observe, suspects
from statesnap.hunt.prove import Prover
from statesnap.hunt.runs import WITHOUT_LEAKERS, Observed
from statesnap.hunt.suspect import Suspect


def exposed(suite: HuntSuite, explored: Sequence[Observed]) -> list[Suspect]:
    """A suspect for each test the ``explored`` orders exposed, in the suite's order."""
    found: dict[str, Suspect] = {}
    for obs in explored:
        for nodeid in obs.run.new_failures:
            found.setdefault(nodeid, Suspect(nodeid)).failed_in.append(obs)
    for s in found.values():
        s.passed_in = [o for o in explored if o.passed(s.nodeid)]
    order = {n: i for i, n in enumerate(suite.order())}
    return sorted(found.values(), key=lambda s: order.get(s.nodeid, 0))


def classify(suite: HuntSuite, explored: Sequence[Observed], items: list[Suspect],
             prover: Prover) -> None:
    """Latent (passes without the leaking tests) or brittle (fails without them)."""
    without = next((o for o in explored if o.run.kind == WITHOUT_LEAKERS), None)
    tainted = _tainted(suite, without) if without is not None else set()
    unsure: list[Suspect] = []
    for s in items:
        # A latent victim of a leaker passes where no leaker ran before it.
        if without is not None and s.nodeid not in tainted and without.passed(s.nodeid):
            s.kind, s.without = LATENT, without
            s.note_log(without)
        else:
            unsure.append(s)
    if unsure:
        prover.alone(unsure)


def _tainted(suite: HuntSuite, without: Observed) -> set[str]:
    """Tests at the end of the run without leakers that ran after a leaking one."""
    leaked = without.leaked()
    out: set[str] = set()
    dirty = False
    for nodeid in without.order:
        if dirty and nodeid in suite.leaks:
            out.add(nodeid)
        dirty = dirty or (nodeid in suite.leaks and nodeid in leaked)
    return out


def attribute(suite: HuntSuite, sources: SourceReader, s: Suspect) -> None:
    """Rank the suspects of ``s``'s failure, on the record that shows it."""
    if s.kind == LATENT:
        runs = [o for o in s.failed_in if o.run.kind != WITHOUT_LEAKERS] or s.failed_in
        s.failing = runs[0]
        child = s.failing.child()
        obs = observe(child, s.nodeid) if child is not None else None
        cleared: list[Observation] = []
        recorded = _recorded(suite, s.nodeid)
        if recorded is not None:
            cleared.append(recorded)
        for other in s.passed_in:
            o_child = other.child()
            seen = observe(o_child, s.nodeid) if o_child is not None else None
            if seen is not None:
                cleared.append(seen)
        if obs is not None:
            s.candidates, s.set_aside = candidates(obs, None, cleared, sources.of(s.nodeid))
    else:
        s.failing = s.without
        recorded = _recorded(suite, s.nodeid)
        if recorded is not None:
            s.candidates, s.set_aside = candidates(recorded, s.failure,
                                                   code=sources.of(s.nodeid))
    for obs_run in s.failed_in:
        s.note_log(obs_run)
    s.queue = suspects(s.candidates)


def _recorded(suite: HuntSuite, nodeid: str) -> Observation | None:
    lane = suite.lane_of(nodeid)
    entry = suite.by_id.get(nodeid)
    return None if entry is None else Observation(lane, entry)
