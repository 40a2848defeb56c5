"""Stored verdicts: what the session proved by replay, kept in the record and read back.

One ``finding`` line per victim after the footer (record format 2); every later reader shows
it, and only a victim without one is attributed afresh (``suspected``, "not replayed").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from statesnap.analysis.findings import Finding
from statesnap.record.journal import Record, append_lines

#: ``Finding.source`` of a verdict read back from the record.
SESSION = "session"
#: Fields of the summary form that are derived, not stored.
_DERIVED = ("repro_proven", "source")


def finding_line(f: Finding) -> dict[str, Any]:
    """The ``finding`` line of one verdict (the summary JSON's form, minus derived fields)."""
    data = {k: v for k, v in f.to_summary().items() if k not in _DERIVED}
    return {"type": "finding", **data}


def store(path: Path, findings: Iterable[Finding]) -> int:
    """Append the verdicts to the record at ``path``; how many lines were written.

    Each line is one ``write`` of its own on an ``O_APPEND`` descriptor, as the record's other
    lines are: a process killed halfway leaves whole lines and at most one cut last line,
    which :func:`statesnap.record.reader.read_record` ignores.
    """
    return append_lines(path, [finding_line(f) for f in findings])


def stored(record: Record) -> list[Finding]:
    """The verdicts stored in ``record`` (none in a format-1 record or an unfinished run)."""
    out: list[Finding] = []
    for data in record.verdicts:
        try:
            f = Finding.from_json(data)
        except (TypeError, ValueError, KeyError):
            continue  # a line another version wrote differently: attributed afresh instead
        f.source = SESSION
        out.append(f)
    return out


def needs_replay(f: Finding) -> bool:
    """A finding nothing was replayed for (a verdict the record alone suggested)."""
    return not f.replayed


def findings_of(record: Record, attributed: Sequence[Finding] | None = None) -> list[Finding]:
    """Every victim of ``record`` with its stored verdict, or else attributed afresh.

    ``attributed``: the record's findings as :func:`statesnap.analysis.attribution.attribute` makes
    them, when the caller has them already.  Stored verdicts of tests that are no victim of
    the record (a test pytest-rerunfailures passed on a rerun) are kept too.
    """
    mine = stored(record)
    if attributed is None:
        from statesnap.analysis.attribution import attribute

        attributed = attribute(record) if (record.running is not None
                                           or any(t.failed for t in record.tests)) else []
    by_victim = {f.victim: f for f in mine}
    out: list[Finding] = []
    for f in attributed:
        out.append(by_victim.pop(f.victim, f))
    out += [f for f in mine if f.victim in by_victim]
    return out

