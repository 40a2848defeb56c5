"""The findings a hunt's proofs write: proven, unresolved or unproven, each with its note and line.

Pure: the replays that earned a verdict already ran (:mod:`statesnap.hunt.prove` ran them);
these functions say what they showed, and build the plain pytest command each finding prints
from the order of the run that showed it.
"""

from __future__ import annotations

from typing import Any

from statesnap.analysis.findings import (
    BRITTLE,
    LATENT,
    MAX_CANDIDATES,
    NOT_ORDER_DEPENDENT,
    SUSPECTED,
    UNEXPLAINED,
    Finding,
)
from statesnap.analysis.hints import hint_for
from statesnap.hunt.plan import HuntSuite
from statesnap.hunt.repro import args_file_of, order_command, up_to
from statesnap.hunt.runs import Observed
from statesnap.hunt.suspect import Suspect
from statesnap.state.diff import change_kind


def base(suite: HuntSuite, s: Suspect, status: str) -> Finding:
    """A finding of ``s`` with ``status``: its failure, candidates and logs, nothing proven."""
    failure = s.failure or {}
    t = suite.by_id.get(s.nodeid)
    return Finding(victim=s.nodeid, polluters=[], probe=None, key=None, status=status,
                   worker=t.worker if t is not None else "main",
                   exc_type=failure.get("exc_type"), message=failure.get("message"),
                   candidates=s.candidates[:MAX_CANDIDATES], logs=list(s.logs))


def resolved(suite: HuntSuite, header: dict[str, Any], s: Suspect, causes: list[str],
             proof: Observed) -> Finding:
    """The finding of ``s`` proven ``latent`` (after ``causes``) or ``brittle`` (passing only
    after them) by ``proof``, the run of exactly ``[*causes, s]``."""
    f = base(suite, s, LATENT if s.kind == LATENT else BRITTLE)
    mine = [c for c in s.candidates if c.nodeid in causes]
    if mine:
        top = mine[0]
        f.probe, f.key, f.before, f.after = top.probe, top.key, top.before, top.after
        f.hint = hint_for(top.probe, top.key, change_kind(top.before, top.after),
                          top.before, top.after)
    without = s.without.run.label if s.without is not None else "?"
    proof_label = f"{proof.run.label} ({proof.run.log})"
    if s.kind == LATENT:
        f.polluters = causes
        f.repro = order_command(header, [*causes, s.nodeid], args_file_of(proof.run.order_file))
        seen = ", ".join(o.run.label for o in s.failed_in) or "?"
        f.note = (f"latent: {_why_hidden(suite, s.nodeid, causes)}; failed in {seen}; "
                  f"passes without the leaking tests ({without}); fails after "
                  f"{' + '.join(causes)} ({proof_label})")
    else:
        f.setter = causes[0]
        f.repro = failing_repro(header, s)
        if f.probe and f.key:
            f.hint = (f"set {f.probe}:{f.key} up in the test's own fixture instead of "
                      f"relying on {causes[0]} having run first")
        others = f" (together with {', '.join(causes[1:])})" if len(causes) > 1 else ""
        f.note = (f"brittle: fails without the leaking tests ({without}); passes after "
                  f"{causes[0]}{others} ({proof_label})")
    return f


def unresolved(suite: HuntSuite, header: dict[str, Any], s: Suspect,
               fails_in_order: bool) -> Finding:
    """The finding of ``s`` where no cause was proven.  ``fails_in_order``: a run of exactly
    the tests before a brittle one failed it (``Prover.failing_run``); unused for a latent
    victim."""
    if s.kind == LATENT:
        f = base(suite, s, UNEXPLAINED)
        run = s.failing or (s.failed_in[0] if s.failed_in else None)
        f.repro = order_repro(header, run, s.nodeid) if run is not None else ""
        f.note = ("failed in a hunt order but no earlier tests of it made it fail again "
                  "in a fresh process: flaky, or it needs more than the order")
    elif not fails_in_order:
        f = base(suite, s, UNEXPLAINED)
        f.note = ("failed in a shared run, in front of the other tests, but not in a run of "
                  "exactly the tests before it: flaky")
    else:
        f = base(suite, s, NOT_ORDER_DEPENDENT)
        f.repro = failing_repro(header, s)
        f.note = ("passed in the record but fails in a fresh process even after the tests "
                  "that ran before it there: it changed, or it depends on the environment")
    return f


def unproven(suite: HuntSuite, header: dict[str, Any], s: Suspect, why: str) -> Finding:
    """A suspect the budget (or a Ctrl-C, or its printed line) left unproven: ``suspected``,
    with what is known."""
    f = base(suite, s, SUSPECTED)
    if s.candidates:
        top = s.candidates[0]
        f.probe, f.key, f.before, f.after = top.probe, top.key, top.before, top.after
        if s.kind != "brittle":
            f.polluters = [top.nodeid]
    run = s.failing or (s.failed_in[0] if s.failed_in else s.without)
    f.repro = order_repro(header, run, s.nodeid) if run is not None else ""
    f.note = why
    return f


def _why_hidden(suite: HuntSuite, victim: str, causes: list[str]) -> str:
    v = suite.by_id.get(victim)
    for cause in causes:
        p = suite.by_id.get(cause)
        if v is None or p is None:
            continue
        if p.worker != v.worker:
            return f"{cause} ran in another worker ({p.worker}) in the record"
        if p.index > v.index:
            return f"{cause} ran after it in the record"
    return "a later test undid the leak before it ran in the record"


def failing_repro(header: dict[str, Any], s: Suspect) -> str:
    """The command that showed a brittle test failing (see ``Prover.failing_run``)."""
    return order_repro(header, s.without, s.nodeid) if s.without is not None else ""


def order_repro(header: dict[str, Any], obs: Observed, nodeid: str) -> str:
    """A plain pytest command running ``obs``'s order up to ``nodeid``; a long one reads
    its node ids from a file beside the run's log."""
    return order_command(header, up_to(obs.order, nodeid), args_file_of(obs.run.order_file))
