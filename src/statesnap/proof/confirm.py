"""A verified finding's printed reproduction, run exactly as printed before it stays verified.

Replays (forked from a warm parent or not) chose the polluters and the key; what the user is
given is one line, and that line is what must fail the victim.  It runs in a fresh process, in
the same files and environment the victim's replays used, without statesnap
(:mod:`statesnap.replay.printed`); the victim's outcome and failure come from its output.  A line
that does not fail the victim the same way leaves the finding unproven, with a note that names
the polluters the replays blamed.
"""

from __future__ import annotations

from collections.abc import Callable

from statesnap.analysis.findings import VERIFIED, Finding
from statesnap.proof.replays import Replayer
from statesnap.record.journal import TestEntry


def confirm_printed(verifier: Replayer, finding: Finding, polluters: list[str],
                    victim: TestEntry, unexplained: Callable[[Finding], None]) -> None:
    """Run ``finding.repro`` as printed; unless it fails the victim as the run did, the
    finding becomes unexplained (no command printed) and its note says what happened."""
    if finding.status != VERIFIED or not finding.repro:
        return
    vid = victim.nodeid
    verifier.progress(f"statesnap: running the printed reproduction of {vid}")
    verdict = verifier.replay([*polluters, vid], vid, finding, "confirm",
                              printed=finding.repro)
    if verifier.same_failure(verdict, finding):
        return
    if verdict.failed:
        how = f"it failed differently ({verdict.signature.text()})"
    else:
        how = "it passed" if verdict.ran else "it did not run"
    unexplained(finding)
    warm = ("; rerun with --statesnap-replay-warm=off" if verifier.runner.warm_runs else "")
    finding.note = (f"replays blamed {', '.join(polluters)}, but the printed reproduction, run "
                    "exactly as printed in a fresh process, did not fail the victim the same "
                    f"way ({how}): not proven{warm}")
