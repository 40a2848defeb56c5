"""The key candidates of a proven finding: which changes a key replay may put back.

Two groups, best first (each ranked by :func:`statesnap.analysis.attribution.rank`):

1. every change the proven polluters recorded in the run (:func:`polluters_writes`);
2. what they changed in a replay of ``[polluters, victim]`` and not in the run
   (:func:`replayed_writes`): the record compares each test's state before and after it, so a
   polluter that sets a key to the value an earlier test already set records no change of it
   in the run, and does in a fresh process (pysllo's forced level in the corpus).  The replay
   is the pair replay that proved them; where their printed line proved them (it records
   nothing), the first key replay, which runs the same order (``prove_keys``' ``more``).

Restoring a key in ``[polluters, victim]`` puts it back as the replay first saw it, so a key
of group 2 that heals the victim is one the polluters changed there.
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
               polluters: list[str], victim: TestEntry) -> tuple[Writes, Writes]:
    """The two groups, the second without the keys of the first."""
    own = polluters_writes(tests, polluters, victim)
    return own, new_writes(record, finding, polluters, own)


def new_writes(record: Record, finding: Finding, polluters: list[str], known: Writes
               ) -> Writes:
    """:func:`replayed_writes` less the keys in ``known``."""
    return {ref: w for ref, w in replayed_writes(record, finding, polluters).items()
            if ref not in known}


def replayed_writes(record: Record, finding: Finding, polluters: list[str]
                    ) -> dict[tuple[str, str], Write]:
    """The polluters' changes in the record of the latest replay of ``[polluters, victim]``
    (a fresh process: every change they make there is recorded, one an earlier test of the
    run had already made included; a key restored before the victim does not touch them);
    none where no such replay kept a record (a printed line records nothing)."""
    order = [*polluters, finding.victim]
    for run in reversed(finding.replays):
        if run.order != order or not run.log:
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

