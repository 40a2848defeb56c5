"""The key candidates of a proven finding: which changes a key replay may put back.

Three groups, best first (each ranked by :func:`statesnap.analysis.attribution.rank`):

1. every change the proven polluters recorded in the run (:func:`polluters_writes`);
2. what they changed in the replay that proved them and not in the run (:func:`replayed_writes`):
   the record compares each test's state before and after it, so a polluter that sets a key
   to the value an earlier test already set records no change of it in the run, and does in
   a fresh process (pysllo's forced level in the corpus);
3. where a printed line proved them (it records nothing), the keys other, earlier tests left
   dirty when the victim ran (:func:`rewritten`), for one polluter: it may have set them again.

Restoring a key in ``[polluters, victim]`` puts it back as the replay first saw it, so a key
of groups 2 or 3 that heals the victim is one the polluters changed there.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from statesnap.analysis.attribution import Write, dirty_before
from statesnap.analysis.findings import Finding
from statesnap.record.journal import Record, TestEntry
from statesnap.record.reader import RecordError, read_record

Writes = dict[tuple[str, str], Write]


def key_writes(record: Record, tests: Sequence[TestEntry], finding: Finding,
               polluters: list[str], victim: TestEntry) -> tuple[Writes, Writes, Writes]:
    """The three groups, each without the keys of the groups before it."""
    own = polluters_writes(tests, polluters, victim)
    replayed = {ref: w for ref, w in replayed_writes(record, finding, polluters).items()
                if ref not in own}
    borrowed = {ref: w for ref, w in rewritten(record, tests, polluters, victim, own).items()
                if ref not in replayed}
    return own, replayed, borrowed


def replayed_writes(record: Record, finding: Finding, polluters: list[str]
                    ) -> dict[tuple[str, str], Write]:
    """The polluters' changes in the record of the replay that proved them (a fresh
    process: every change they make there is recorded, one an earlier test of the run had
    already made included); none where a printed line proved them (it records nothing)."""
    order = [*polluters, finding.victim]
    for run in reversed(finding.replays):
        if run.order != order or run.outcome != "failed" or run.restored or not run.log:
            continue
        log = Path(run.log)
        log = log if log.is_absolute() else record.path.parent / log
        path = log.with_name(log.name.removesuffix(".log") + ".jsonl")
        if not path.is_file():
            continue
        try:
            replay = read_record(path)
        except (OSError, ValueError, RecordError):
            return {}
        out: dict[tuple[str, str], Write] = {}
        for t in replay.tests:
            me = record.test_by_id(t.nodeid) if t.nodeid in polluters else None
            if me is None:
                continue
            for ch in t.changes:
                out.setdefault((ch.probe, ch.key), Write(me, ch, ch.before))
        return out
    return {}


def rewritten(record: Record, tests: Sequence[TestEntry], polluters: list[str],
              victim: TestEntry, own: dict[tuple[str, str], Write]
              ) -> dict[tuple[str, str], Write]:
    """Keys still dirty when the victim ran whose last change was another test's, as the
    polluter's (one polluter only): a test that sets a key to the value an earlier test
    already set records no change of it, yet in the replay of ``[polluter, victim]`` it
    is the one that changes it.  Restoring such a key there puts it back as the replay
    first saw it: where it heals the victim, the polluter changed it."""
    if len(polluters) != 1:
        return {}
    me = record.test_by_id(polluters[0])
    if me is None:
        return {}
    dirty = dirty_before(tests, victim)
    return {ref: Write(me, w.change, w.baseline) for ref, w in dirty.writes.items()
            if ref not in own and w.test.index < me.index}


def polluters_writes(tests: Sequence[TestEntry], polluters: list[str], victim: TestEntry
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

