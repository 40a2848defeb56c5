"""One cause, one card: the victims of a shared cause listed under the first one's finding.

A cause that broke several victims (the same polluter(s), the same key:
:mod:`statesnap.analysis.causes`) is one card; its victims are rows under it, each with its
failure and, folded, its own reproduction.  A victim alone with its cause keeps its own card.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from statesnap.analysis.findings import Finding
from statesnap.base.plain import Value
from statesnap.output.report.values import LONG_LIMIT, cut


class VictimRow(Value):
    """One victim of a shared cause: the test, its failure, and the command that fails it."""

    _fields = ("test", "failure", "repro", "id")
    __slots__ = _fields

    def __init__(self, test: Any, failure: str | None, repro: str, id: str) -> None:
        self.test = test
        self.failure = failure
        #: Only a command a replay saw fail the victim (else empty).
        self.repro = repro
        self.id = id


def grouped(ordered: Sequence[Finding], view: Callable[[int, Finding], Any],
            ref: Callable[[Finding], Any]) -> list[Any]:
    """The finding views, one per cause; a shared cause's view gets ``victims`` rows."""
    out: list[Any] = []
    if not ordered:
        return out  # most reports: the grouping (a dataclass, ~1.5 M to import) is not loaded
    from statesnap.analysis.causes import group_by_cause

    for n, cause in enumerate(group_by_cause(ordered)):
        card = view(n, cause.first)
        if cause.shared:
            card.victims = [
                VictimRow(ref(f),
                          cut(": ".join(x for x in (f.exc_type, f.message) if x), LONG_LIMIT)
                          if f.exc_type or f.message else None,
                          f.repro if f.repro_proven else "", f"{card.id}-victim-{i + 1}")
                for i, f in enumerate(cause.findings)]
        out.append(card)
    return out
