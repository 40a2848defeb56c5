"""One cause, one entry: verified findings that share their polluter(s) and key, grouped.

Eight tests broken by one test's ``os.chdir`` are one cause with eight victims: the terminal,
the report and the CI job summary show the cause once and list its victims under it, each
with its own reproduction.  A finding alone with its cause (or not verified) stays an entry
of its own.  Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from statesnap.analysis.findings import VERIFIED, Finding


@dataclass
class Cause:
    """Findings with one proven cause: the same polluter(s) and the same state key."""

    findings: list[Finding] = field(default_factory=list)

    @property
    def first(self) -> Finding:
        return self.findings[0]

    @property
    def shared(self) -> bool:
        """Whether the cause broke more than one victim (shown once, victims under it)."""
        return len(self.findings) > 1

    @property
    def victims(self) -> list[str]:
        return [f.victim for f in self.findings]


def cause_key(f: Finding) -> tuple[tuple[str, ...], str, str] | None:
    """What makes two findings one cause: verified, with the same polluters and key.  None:
    the finding keeps its own entry (unproven, or no key a replay tied it to)."""
    if f.status != VERIFIED or not f.polluters or not f.probe or not f.key:
        return None
    return tuple(f.polluters), f.probe, f.key


def group_by_cause(findings: Iterable[Finding]) -> list[Cause]:
    """The findings as entries, in the order of each entry's first finding."""
    out: list[Cause] = []
    by_key: dict[tuple[tuple[str, ...], str, str], Cause] = {}
    for f in findings:
        key = cause_key(f)
        if key is None:
            out.append(Cause([f]))
            continue
        cause = by_key.get(key)
        if cause is not None and f.victim in cause.victims:
            out.append(Cause([f]))  # the same victim again (another lane): its own entry
            continue
        if cause is None:
            cause = by_key[key] = Cause([])
            out.append(cause)
        cause.findings.append(f)
    return out
