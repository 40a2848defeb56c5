"""Cleaners of a verified finding: tests that put the victim's key back, proven by replay.

They show how to fix it: a test that undoes the leak does what the polluter should have done.
"""

from __future__ import annotations

from collections.abc import Sequence

from statesnap.analysis.attribution import dirty_before
from statesnap.analysis.findings import VERIFIED, Finding
from statesnap.proof.replays import NotDeterministic, Replayer, ReplayError, ReplayTimeout
from statesnap.record.journal import TestEntry
from statesnap.replay.repro import repro_command
from statesnap.replay.runner import BudgetSpent

MAX_CLEANER_REPLAYS = 3


def find_cleaners(replayer: Replayer, tests: Sequence[TestEntry], finding: Finding,
                  everywhere: bool = False) -> None:
    """Tests that put the victim's key back: they show how to fix it.

    A candidate is a test the run saw put the key back before the victim, and with
    ``everywhere`` any recorded test (of ``tests``, in their order) whose change set the key
    to its baseline value.  It is named a cleaner only when a replay of ``[polluter(s), it,
    victim]`` lets the victim pass, with that command kept as its proof.
    """
    finding.cleaners, finding.cleaner_proofs = [], {}
    if finding.status != VERIFIED or not finding.probe or not finding.key:
        return
    ref = (finding.probe, finding.key)
    victim = replayer.record.test_by_id(finding.victim)
    found: list[str] = []
    if victim is not None:
        found += dirty_before(tests, victim).cleaners.get(ref, [])
    if everywhere:
        found += [t.nodeid for t in tests
                  if any((ch.probe, ch.key) == ref and ch.after == finding.before
                         for ch in t.changes)]
    found = [n for n in dict.fromkeys(found)
             if n not in finding.polluters and n != finding.victim]
    for nodeid in found[:MAX_CLEANER_REPLAYS]:
        replayer.progress(f"statesnap: does {nodeid} clean up after {finding.polluters[0]}?")
        order = [*finding.polluters, nodeid, finding.victim]
        try:
            v = replayer.replay(order, finding.victim, finding, "cleaner")
        except (BudgetSpent, ReplayError, ReplayTimeout, NotDeterministic):
            break
        if v.ran and not v.failed:
            finding.cleaners.append(nodeid)
            finding.cleaner_proofs[nodeid] = repro_command(replayer.record.header, order)
