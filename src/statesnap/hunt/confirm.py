"""A hunt finding's printed reproduction, run exactly as printed before the finding stands.

The hunt's runs may have been forked from a warm parent and carry statesnap; what the user is
given is the plain pytest line.  So that line runs by itself in a fresh process, without
statesnap, and must fail the victim as the runs did (a latent victim: the same failure);
otherwise the victim is left suspected, without a line.  The session end's counterpart is
:mod:`statesnap.proof.confirm`.
"""

from __future__ import annotations

from typing import Any

from statesnap.analysis.findings import LATENT
from statesnap.hunt.plan import HuntSuite
from statesnap.hunt.repro import up_to
from statesnap.hunt.runs import Replays
from statesnap.hunt.suspect import Suspect
from statesnap.hunt.verdicts import unproven
from statesnap.record.signature import Signature
from statesnap.replay.runner import BudgetSpent


def confirm_line(suite: HuntSuite, replays: Replays, header: dict[str, Any],
                 s: Suspect) -> None:
    """Run the printed line of ``s``'s finding; ``s.line_ran`` is that line once it failed
    the victim as the runs did, and the finding is turned suspected where it did not."""
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
        obs = replays.printed(f.repro or "", order,
                              f"running the printed reproduction of {s.nodeid}")
    except BudgetSpent:
        _line_unproven(suite, header, s, "the budget ran out before its printed reproduction "
                                         "ran (run again with a larger --budget)")
        return
    s.note_log(obs)
    got = Signature.of(obs.result.failures.get(s.nodeid))
    if obs.failed(s.nodeid) and (f.status != LATENT
                                 or Signature.of(s.failure).same_as(got)):
        s.line_ran = f.repro
        return
    how = (f"it failed differently ({got.text()})" if obs.failed(s.nodeid) else
           "it passed" if obs.passed(s.nodeid) else "it did not run")
    _line_unproven(suite, header, s, "the hunt's runs showed it, but its printed reproduction, "
                                     "run exactly as printed in a fresh process, did not fail "
                                     f"it the same way ({how}): not proven")


def _line_unproven(suite: HuntSuite, header: dict[str, Any], s: Suspect, why: str) -> None:
    """``s`` suspected, without the line that was not shown to fail it."""
    s.finding = unproven(suite, header, s, why)
    s.finding.repro = ""
