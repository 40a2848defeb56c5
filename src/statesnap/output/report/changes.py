"""View models of one state change: what the leak table and the per-test diff panel show."""

from __future__ import annotations

from typing import Any

from statesnap.analysis.own_fixtures import display_fixture
from statesnap.base.plain import Value
from statesnap.output.report.values import (
    LONG_LIMIT,
    SHORT_LIMIT,
    Scrubber,
    StructuralDiff,
    ValueView,
    as_text,
    cut,
    show,
    structural_diff,
)
from statesnap.state.diff import ADDED, REMOVED, Change


def file_words(probe: str, value: Any) -> Any:
    """A ``files`` fingerprint in words (``19 bytes, same mtime``); other values as they are."""
    if probe != "files":
        return value
    # Imported where a files change is shown: a report without one never runs it (issue 28).
    from statesnap.analysis.mtimerace import file_text

    return file_text(value) or value


def _delta(before: Any, after: Any) -> str | None:
    """:func:`statesnap.output.delta.delta`, imported where a change is shown: the report of a
    session where nothing changed never runs it (issue 28)."""
    from statesnap.output.delta import delta

    return delta(before, after)


#: Characters of a state key shown (keys are node ids, paths, reprs: untrusted and unbounded).
KEY_LIMIT = 300


class ChangeView(Value):
    """One key that changed, with both sides ready to show."""

    _fields = ("probe", "key", "change", "before", "after", "phase", "fixture", "scope", "severity",
               "leak", "diff", "delta")
    __slots__ = _fields

    def __init__(self, probe: str, key: str, change: str, before: ValueView, after: ValueView,
                 phase: str | None, fixture: str | None, scope: str | None, severity: int,
                 leak: bool, diff: StructuralDiff | None = None,
                 delta: str | None = None) -> None:
        self.probe = probe
        self.key = key
        self.change = change
        self.before = before
        self.after = after
        self.phase = phase
        self.fixture = fixture
        self.scope = scope
        self.severity = severity
        self.leak = leak
        self.diff = diff
        #: What changed, in one line (statesnap.output.delta), where both sides exist.
        self.delta = delta

    @property
    def where(self) -> str:
        """``setup, fixture db (module)``: the phase and fixture that made the change."""
        if not self.phase:
            return ""
        if self.fixture:
            name = display_fixture(self.fixture, self.phase)
            return f"{self.phase}, fixture {name} ({self.scope or 'function'})"
        return self.phase

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "probe": self.probe,
            "key": self.key,
            "change": self.change,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "where": self.where,
            "severity": self.severity,
            "leak": self.leak,
        }
        if self.delta is not None:
            data["delta"] = self.delta
        if self.diff is not None and self.diff.lines:
            data["diff"] = [ln.to_json() for ln in self.diff.lines]
            if self.diff.more:
                data["diff_more"] = self.diff.more
        return data


class ChangeViews:
    """Builds :class:`ChangeView` objects, caching structural diffs of repeated values.

    The same nested value often changes the same way in many tests (a logging config touched
    by every test of a module); diffing it once keeps large reports fast.
    """

    def __init__(self, scrubber: Scrubber) -> None:
        self.scrubber = scrubber
        self._diffs: dict[tuple[str, str], StructuralDiff | None] = {}

    def value(self, probe: str, key: str, value: Any) -> Any:
        """A key's value as the report shows it: secrets scrubbed, and a file's fingerprint
        in words ("19 bytes, same mtime"), not its JSON."""
        return file_words(probe, self.scrubber.change(probe, key, value))

    def side(self, probe: str, key: str, value: Any) -> ValueView:
        """One side (before or after) of a finding's or a candidate's key; None is absent."""
        return show(self.value(probe, key, value), absent=value is None)

    def build(self, ch: Change, *, leak: bool, limit: int = SHORT_LIMIT,
              with_diff: bool = False) -> ChangeView:
        before = self.value(ch.probe, ch.key, ch.before)
        after = self.value(ch.probe, ch.key, ch.after)
        pretty = limit > SHORT_LIMIT
        view = ChangeView(
            probe=ch.probe,
            key=cut(ch.key, KEY_LIMIT),
            change=ch.change,
            before=show(before, limit=limit, absent=ch.change == ADDED, pretty=pretty),
            after=show(after, limit=limit, absent=ch.change == REMOVED, pretty=pretty),
            phase=ch.phase,
            fixture=ch.fixture,
            scope=ch.scope,
            severity=ch.severity,
            leak=leak,
            delta=_delta(before, after) if ch.change not in (ADDED, REMOVED) else None,
        )
        if with_diff and ch.change not in (ADDED, REMOVED):
            view.diff = self.diff(before, after)
        return view

    def detail(self, ch: Change, *, leak: bool) -> ChangeView:
        """The long form for the per-test panel: longer values and a structural diff."""
        return self.build(ch, leak=leak, limit=LONG_LIMIT, with_diff=True)

    def diff(self, before: Any, after: Any) -> StructuralDiff | None:
        if not isinstance(before, (dict, list)) or not isinstance(after, (dict, list)):
            return None
        cache_key = (as_text(before), as_text(after))
        if cache_key not in self._diffs:
            self._diffs[cache_key] = structural_diff(before, after)
        return self._diffs[cache_key]
