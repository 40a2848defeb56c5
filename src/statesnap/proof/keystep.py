"""The key-level step of a proof: once replays proved the polluters, which key explains it.

Every change the proven polluters recorded is a key candidate, low-rated ones included, ranked
by what connects it to the victim (statesnap.analysis.keyrank); then what they changed in a
replay of the pair and not in the run (statesnap.proof.keywrites).  The key's replays are
statesnap.proof.keys'; this step sets the finding's key, fix hint and notes around them.
"""

from __future__ import annotations

from statesnap.analysis.attribution import Dirty, rank
from statesnap.analysis.findings import MAX_CANDIDATES, VERIFIED, Finding
from statesnap.analysis.gctiming import mark_gc_timing
from statesnap.analysis.hints import hint_for
from statesnap.analysis.keyrank import joint_keys, key_order
from statesnap.analysis.leaks import fixture_note, setup_hint
from statesnap.analysis.victimcode import SourceReader
from statesnap.proof.keys import prove_keys
from statesnap.proof.keywrites import key_writes, new_writes
from statesnap.proof.replays import STOPS, Replayer
from statesnap.record.journal import TestEntry
from statesnap.replay.gcmode import COLLECT, cycle_held_key, with_gc
from statesnap.replay.repro import gc_off_command, repro_command
from statesnap.state.diff import change_kind


def prove_polluters(v: Replayer, tests: list[TestEntry], sources: SourceReader, finding: Finding,
                    polluters: list[str], victim: TestEntry) -> None:
    """Replays proved ``polluters``: the finding is verified for now, with its printed line;
    then the key (every change the polluters recorded is a candidate), its fix hint, whether
    the failure rests on garbage-collection timing, and a brittle victim's note."""
    finding.status = VERIFIED
    finding.polluters = polluters
    finding.repro = repro_command(v.record.header, [*polluters, victim.nodeid])
    own, replayed = key_writes(v.record, tests, finding, polluters, victim)
    writes = {**own, **replayed}
    # Every change the proven polluters recorded is a key candidate, low-rated ones
    # included, ranked by what connects it to the victim (not only the few kept among
    # the finding's candidates, which rank every earlier test's changes); then the others
    # statesnap.proof.keywrites finds, group after group.
    code = sources.of(victim.nodeid)
    mine = key_order(victim, [rank(victim, Dirty(own), code),
                              rank(victim, Dirty(replayed), code)], code, sources)
    if own:
        kept = {(c.nodeid, c.probe, c.key) for c in mine}
        finding.candidates = [*mine, *(c for c in finding.candidates
                                       if (c.nodeid, c.probe, c.key) not in kept)
                              ][:MAX_CANDIDATES]
        top = mine[0]
        finding.probe, finding.key, finding.before, finding.after = (
            top.probe, top.key, top.before, top.after)
    else:
        finding.probe = finding.key = finding.before = finding.after = None
        finding.hint = None
        finding.hint_proven, finding.proven_keys = False, []
        # Said only when the polluters recorded no change at all: a recorded change
        # that no replay could tie to the failure is another story (prove_keys says).
        finding.note = ("the polluter(s) recorded no state change: the state the victim "
                        "relies on is outside what statesnap's probes see")
        note_brittle(finding)
        return

    def more() -> list[tuple[str, str]]:
        # No replay of the pair kept a record (a printed line proved it): the first key
        # replay's, ranked, once it did not heal the victim.
        extra = new_writes(v.record, finding, polluters, writes)
        writes.update(extra)
        return [(c.probe, c.key) for c in rank(victim, Dirty(extra), code)]

    prove_keys(v, finding, polluters, victim, writes,
               ranking=[(c.probe, c.key) for c in mine],
               more=None if replayed else more, joint=joint_keys(mine, polluters))
    if finding.probe and finding.key:
        finding.hint = hint_for(finding.probe, finding.key,
                                change_kind(finding.before, finding.after),
                                finding.before, finding.after)
        w = writes.get((finding.probe, finding.key))
        if w is not None:
            finding.hint = setup_hint(w.change) or finding.hint
            where = fixture_note(w.change, w.test.nodeid)
            if where and f"{finding.probe}:{finding.key}" in finding.proven_keys:
                # Only for a proven key ("undo it in teardown_class" is a fix), and
                # beside what prove_keys noted, never instead of it.
                finding.note = f"{finding.note}; {where}" if finding.note else where
    _gc_timing(v, finding, polluters, victim)
    note_brittle(finding)


def _gc_timing(v: Replayer, finding: Finding, polluters: list[str], victim: TestEntry) -> None:
    """Replays ran with the collector off (state only reference cycles keep): one more
    with a collection just before the victim says whether the failure rests on it."""
    if not (v.runner.gc_off and cycle_held_key(finding.probe, finding.key)):
        return
    order = [*polluters, victim.nodeid]
    v.progress(f"statesnap: collecting garbage before {victim.nodeid}")
    try:
        verdict = v.replay(order, victim.nodeid, finding, "gc",
                           restore=with_gc({"before": victim.nodeid, "keys": []}, COLLECT))
    except STOPS:
        return
    if verdict.ran and not verdict.failed:
        mark_gc_timing(finding, gc_off_command(v.record.header, order))


def note_brittle(finding: Finding) -> None:
    """A victim that fails alone too, differently, also relies on state set up earlier."""
    if finding.alone_failure:
        extra = (f"alone it fails too, but differently ({finding.alone_failure}; in the "
                 f"run: {finding.signature().text()}): it also relies on state an earlier "
                 "test sets up (brittle)")
        finding.note = f"{finding.note}; {extra}" if finding.note else extra
