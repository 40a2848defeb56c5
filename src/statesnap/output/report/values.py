"""How fingerprints look in the report: text, truncation, structural diffs, redaction.

Everything here runs when the report is built, never while tests run, so it may afford a
``deepdiff`` of two nested values.  Values are untrusted record data; they leave this module
as plain strings that the template autoescapes or the page's script puts in ``textContent``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from statesnap.base.plain import Value
from statesnap.base.redact import PREFIX, Redactor

#: Characters of a value shown in tables and finding cards.
SHORT_LIMIT = 200
#: Characters of a value kept for the per-test diff panel.
LONG_LIMIT = 2000
#: Lines of a structural diff kept per change.
DIFF_LINES = 40
#: Values whose JSON text is longer than this get no structural diff: deepdiff's cost grows
#: with size, and a 10,000-test report must still build in seconds.
DIFF_MAX_CHARS = 50_000


class ValueView(Value):
    """One fingerprint, ready to show: possibly cut, with the full length kept."""

    _fields = ("text", "length", "absent")
    __slots__ = _fields

    def __init__(self, text: str, length: int, absent: bool = False) -> None:
        self.text = text
        self.length = length
        self.absent = absent

    @property
    def truncated(self) -> bool:
        return len(self.text) < self.length

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"text": self.text}
        if self.truncated:
            data["length"] = self.length
        if self.absent:
            data["absent"] = True
        return data


class DiffLine(Value):
    """One line of a structural diff: ``+`` added, ``-`` removed, ``~`` changed."""

    _fields = ("sign", "path", "text")
    __slots__ = _fields

    def __init__(self, sign: str, path: str, text: str) -> None:
        self.sign = sign
        self.path = path
        self.text = text

    def to_json(self) -> list[str]:
        return [self.sign, self.path, self.text]


class StructuralDiff(Value):
    _fields = ("lines", "more")
    __slots__ = _fields

    def __init__(self, lines: list[DiffLine] | None = None, more: int = 0) -> None:
        self.lines: list[DiffLine] = [] if lines is None else lines
        #: Differences found beyond :data:`DIFF_LINES`.
        self.more = more


def as_text(value: Any, *, pretty: bool = False) -> str:
    """The textual form of a JSON-able fingerprint: strings as they are, the rest as JSON."""
    if isinstance(value, str):
        return value
    try:
        if pretty and isinstance(value, (dict, list)):
            return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=2, default=repr)
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError):  # a key that is not a string, a circular value
        return repr(value)


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit]


def show(value: Any, *, limit: int = SHORT_LIMIT, absent: bool = False,
         pretty: bool = False) -> ValueView:
    """A :class:`ValueView` of ``value``; ``absent`` marks the missing side of an add/remove."""
    if absent:
        return ValueView("", 0, absent=True)
    text = as_text(value, pretty=pretty)
    return ValueView(cut(text, limit), len(text))


def _nested(value: Any) -> bool:
    return isinstance(value, (dict, list)) and bool(value)


def _path(level: Any) -> str:
    try:
        path = str(level.path())
    except Exception:  # deepdiff cannot name some paths (sets); the report still shows it
        path = "root"
    return path.removeprefix("root") or "(whole value)"


_SIGNS = {"added": "+", "removed": "-"}


def structural_diff(before: Any, after: Any) -> StructuralDiff | None:
    """A readable, line-per-difference diff of two nested values, or None when not useful."""
    if not (_nested(before) and _nested(after)) or type(before) is not type(after):
        return None
    if len(as_text(before)) + len(as_text(after)) > DIFF_MAX_CHARS:
        return None
    # Imported here, not at the top: deepdiff costs more to import than the rest of the report
    # (~40 ms), and most reports hold no pair of nested values to diff.
    from deepdiff import DeepDiff
    from deepdiff.helper import NotPresent

    try:
        tree = DeepDiff(before, after, view="tree", threshold_to_diff_deeper=0)
    except Exception:  # deepdiff on odd data must not cost the whole report
        return None
    lines: list[DiffLine] = []
    for report_type in sorted(tree):
        sign = next((s for suffix, s in _SIGNS.items() if report_type.endswith(suffix)), "~")
        for level in tree[report_type]:
            t1 = None if isinstance(level.t1, NotPresent) else level.t1
            t2 = None if isinstance(level.t2, NotPresent) else level.t2
            if sign == "+":
                text = cut(as_text(t2), SHORT_LIMIT)
            elif sign == "-":
                text = cut(as_text(t1), SHORT_LIMIT)
            else:
                text = f"{cut(as_text(t1), SHORT_LIMIT)} → {cut(as_text(t2), SHORT_LIMIT)}"
            lines.append(DiffLine(sign, _path(level), text))
    lines.sort(key=lambda ln: (ln.path, ln.sign))
    return StructuralDiff(lines[:DIFF_LINES], max(0, len(lines) - DIFF_LINES))


class Scrubber:
    """A last, defensive redaction pass over environment names the probes should have redacted.

    Probes already replace secret-looking values with ``<redacted:…>``; a record written by an
    old or third-party tool might not have, and the report is the artifact that gets mailed
    around.  Its salt is random per report, so values stay comparable within one page only.
    """

    def __init__(self) -> None:
        self._redactor = Redactor()

    def value(self, name: str, value: Any) -> Any:
        if value is None or not self._redactor.is_secret(name):
            return value
        if isinstance(value, str) and value.startswith(PREFIX):
            return value
        return self._redactor.digest(as_text(value))

    def change(self, probe: str, key: str, value: Any) -> Any:
        """Redact a fingerprint of an ``env`` change whose variable name looks secret."""
        return self.value(key, value) if probe == "env" else value

    def mapping(self, env: Mapping[str, Any]) -> dict[str, Any]:
        return {str(k): self.value(str(k), v) for k, v in env.items()}
