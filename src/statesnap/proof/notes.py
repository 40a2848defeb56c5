"""The notes of findings whose proof was cut short: by the budget, or by a Ctrl-C.

Each says what the finding still owes (how many candidate polluters no replay tried) and how
to finish the work, so an unproven verdict never reads as a settled one.
"""

from __future__ import annotations

from statesnap.analysis.attribution import polluters_of
from statesnap.analysis.findings import Finding

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


#: The note of a finding whose replays a Ctrl-C stopped.
INTERRUPTED = "the session was interrupted (Ctrl-C) before this finding's replays finished"


def note_interrupted(finding: Finding) -> None:
    """Say on ``finding`` that a Ctrl-C stopped its replays (its status stays what the
    replays so far earned: a verdict not reached stays unproven)."""
    if finding.note and INTERRUPTED in finding.note:
        return
    finding.note = f"{finding.note}; {INTERRUPTED}" if finding.note else INTERRUPTED
