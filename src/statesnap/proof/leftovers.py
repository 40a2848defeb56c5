"""Verdicts for a victim that fails alone because an earlier run left a file on disk.

The files and directories (:mod:`statesnap.analysis.leftovers`) are moved aside around replays
of the victim alone; when it then passes, delta debugging finds which of them it fails with,
and the test(s) that wrote them are replayed before it with every leftover aside: failing it
again as in the run proves them the polluters, across runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statesnap.analysis.findings import NOT_REPRODUCED, UNEXPLAINED, VERIFIED, Finding
from statesnap.analysis.hints import hint_for
from statesnap.analysis.leftovers import Leftover
from statesnap.analysis.minimize import ddmin
from statesnap.base.progress import Progress
from statesnap.record.journal import TestEntry
from statesnap.replay.repro import repro_command


@dataclass
class LeftoverReplays:
    """What the proof needs from the verifier of the finding (statesnap.proof.verify)."""

    #: Replays an order (with a label for its log); whether the victim failed the same way.
    fails: Callable[[list[str], str], bool]
    #: Sets files aside for the next replays (an empty list puts them all back).
    set_aside: Callable[[list[Path]], None]
    progress: Progress
    header: dict[str, Any]


def prove_leftovers(v: LeftoverReplays, finding: Finding, victim: TestEntry,
                    found: list[Leftover]) -> bool:
    """A victim that fails alone because an earlier run left a file: find the file(s),
    prove it against the test(s) that wrote them; True when that settled the finding."""
    vid = victim.nodeid
    paths = [lo.path for lo in found]

    def fails_with(present: Sequence[Leftover]) -> bool:
        keep = {lo.path for lo in present}
        v.set_aside([p for p in paths if p not in keep])
        return v.fails([vid], "leftover")

    v.progress(f"statesnap: replaying {vid} alone, {len(found)} file(s) earlier "
               "runs left set aside")
    try:
        if fails_with([]):
            return False  # it fails without them too: they are not why
        # A single leftover comes back from ddmin at once, without a replay.
        culprits = ddmin(found, fails_with, known_failing=True)
        writers = list(dict.fromkeys(lo.writer for lo in culprits))
        # Verified against the writer(s): with every leftover aside, the writer(s) then
        # the victim must fail it again.
        v.set_aside(paths)
        v.progress(f"statesnap: replaying {' + '.join(writers)} → {vid}")
        proven = v.fails([*writers, vid], "leftover-pair")
    finally:
        v.set_aside([])
    finding.leftovers = [lo.to_json() for lo in culprits]
    files = ", ".join(lo.key for lo in culprits)
    origin = "; ".join(f"{lo.key} by {lo.writer} (record {lo.record.name})"
                       for lo in culprits)
    if not proven:
        finding.status = UNEXPLAINED
        finding.polluters = []
        finding.drop_state(NOT_REPRODUCED)
        finding.repro = ""
        finding.note = (f"fails alone only because earlier runs left {files} on disk "
                        f"({origin}), but the test(s) that wrote it did not break it "
                        "again in a replay")
        return True
    # The innermost names it: a folder a victim trips over lies inside the ones it needs.
    top = max(culprits, key=lambda lo: len(lo.key.rstrip("/").split("/")))
    finding.status = VERIFIED
    finding.polluters = writers
    finding.probe, finding.key = "files", top.key
    finding.before, finding.after = None, top.fingerprint
    finding.hint = hint_for("files", top.key, "added")
    finding.hint_proven = True  # setting the file aside made the victim pass alone
    finding.proven_keys = [f"files:{lo.key}" for lo in culprits]
    finding.repro = repro_command(v.header, [*writers, vid])
    finding.note = (f"an earlier run left {files} on disk ({origin}); with it set aside "
                    "the victim passes alone: delete it, and make its test remove it")
    return True

