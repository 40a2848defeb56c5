"""A finding whose polluters replays proved: verified, with its key, its fix, what it rests on.

Every change the proven polluters recorded is a key candidate, ranked by what connects it to the
victim; key-level replays (:mod:`statesnap.proof.keys`) name the key; the hint is its fix (the
set-up's, where a wide fixture made the change); where replays ran with the collector off, one
more with a collection before the victim says whether the failure rests on the collector's
timing.  :class:`~statesnap.proof.verify.Verifier` decides which replays prove the polluters,
and runs the printed line after this (:mod:`statesnap.proof.confirm`).
"""

from __future__ import annotations

from collections.abc import Sequence

from statesnap.analysis.attribution import Dirty, Write, dirty_before, rank
from statesnap.analysis.findings import MAX_CANDIDATES, VERIFIED, Finding
from statesnap.analysis.gctiming import mark_gc_timing
from statesnap.analysis.hints import hint_for
from statesnap.analysis.leaks import fixture_note, setup_hint
from statesnap.analysis.victimcode import SourceReader
from statesnap.proof.keys import prove_keys
from statesnap.proof.replays import STOPS, Replayer
from statesnap.record.journal import TestEntry
from statesnap.replay.gcmode import COLLECT, cycle_held_key, with_gc
from statesnap.replay.repro import gc_off_command, repro_command
from statesnap.state.diff import change_kind


def prove_verified(replayer: Replayer, tests: Sequence[TestEntry], sources: SourceReader,
                   finding: Finding, polluters: list[str], victim: TestEntry) -> None:
    """``finding`` verified with ``polluters`` (replays proved them), its reproduction, and
    its key and fix as far as replays prove them; ``tests``: the record's, in run order."""
    finding.status = VERIFIED
    finding.polluters = polluters
    finding.repro = repro_command(replayer.record.header, [*polluters, victim.nodeid])
    writes = _polluters_writes(tests, polluters, victim)
    # Every change the proven polluters recorded is a key candidate, low-rated ones
    # included, ranked by what connects it to the victim (not only the few kept among
    # the finding's candidates, which rank every earlier test's changes).
    mine = rank(victim, Dirty(writes), sources.of(victim.nodeid))
    if mine:
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
        _note_brittle(finding)
        return
    prove_keys(replayer, finding, polluters, victim, writes,
               ranking=[(c.probe, c.key) for c in mine])
    if finding.probe and finding.key:
        finding.hint = hint_for(finding.probe, finding.key,
                                change_kind(finding.before, finding.after),
                                finding.before, finding.after)
        w = writes.get((finding.probe, finding.key))
        if w is not None:
            finding.hint = setup_hint(w.change) or finding.hint
            finding.note = fixture_note(w.change, w.test.nodeid) or finding.note
    _gc_timing(replayer, finding, polluters, victim)
    _note_brittle(finding)


def _gc_timing(replayer: Replayer, finding: Finding, polluters: list[str],
               victim: TestEntry) -> None:
    """Replays ran with the collector off (state only reference cycles keep): one more
    with a collection just before the victim says whether the failure rests on it."""
    if not (replayer.runner.gc_off and cycle_held_key(finding.probe, finding.key)):
        return
    order = [*polluters, victim.nodeid]
    replayer.progress(f"statesnap: collecting garbage before {victim.nodeid}")
    try:
        v = replayer.replay(order, victim.nodeid, finding, "gc",
                            restore=with_gc({"before": victim.nodeid, "keys": []}, COLLECT))
    except STOPS:
        return
    if v.ran and not v.failed:
        mark_gc_timing(finding, gc_off_command(replayer.record.header, order))


def _polluters_writes(tests: Sequence[TestEntry], polluters: list[str], victim: TestEntry
                      ) -> dict[tuple[str, str], Write]:
    """Each change the polluters recorded: the last one of each key still dirty when the
    victim ran, then the others (overwritten or put back by a later test of the run,
    but live in the replay of ``[polluters, victim]``)."""
    dirty = dirty_before(tests, victim)
    writes = {ref: w for ref, w in dirty.writes.items() if w.test.nodeid in polluters}
    wanted = set(polluters)
    for t in tests:
        if t.nodeid not in wanted or t.worker != victim.worker:
            continue
        for ch in t.changes:
            ref = (ch.probe, ch.key)
            if ref not in writes:
                writes[ref] = Write(t, ch, ch.before)
    return writes


def _note_brittle(finding: Finding) -> None:
    if finding.alone_failure:
        extra = (f"alone it fails too, but differently ({finding.alone_failure}; in the "
                 f"run: {finding.signature().text()}): it also relies on state an earlier "
                 "test sets up (brittle)")
        finding.note = f"{finding.note}; {extra}" if finding.note else extra
