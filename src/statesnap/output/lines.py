"""Values as one short line of text, for the terminal and the explanations."""

from __future__ import annotations

import re
from typing import Any

from statesnap.base.text import printable

VALUE_WIDTH = 60

#: Characters kept before the first difference when a pair is cut around it; up to
#: ``_LOOK_BACK`` when that reaches back to the start of the item (``, ``) that differs.
_LEAD = 16
_LOOK_BACK = 40


def _text(value: Any) -> str:
    text = "∅" if value is None else (value if isinstance(value, str) else repr(value))
    return text.replace("\n", "\\n")


def short(value: Any, width: int = VALUE_WIDTH) -> str:
    """A one-line rendering of a fingerprint for the terminal."""
    text = _text(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def short_pair(before: Any, after: Any, width: int = VALUE_WIDTH) -> tuple[str, str]:
    """``before`` and ``after`` cut to ``width`` so that the cut sides still differ.

    Two long fingerprints of one object (a descriptor whose private cache filled, an instance
    whose nested dict changed) often share far more than ``width`` characters: cut from their
    starts, both would read the same, and the line would show no change at all. Such a pair
    is cut around its first difference instead, with ``…`` where text was left out.
    """
    b, a = _text(before), _text(after)
    cut_b, cut_a = short(b, width), short(a, width)
    if b == a:
        return cut_b, cut_a
    common = 0
    for x, y in zip(b, a, strict=False):
        if x != y:
            break
        common += 1
    if cut_b != cut_a and (common < width - _LOOK_BACK or max(len(b), len(a)) <= width):
        # Whole, or cut with room after the difference.  A long pair differing only near
        # the cut would differ by a character or two there (a registry's new last entry
        # past a long first one): cut around the difference instead.
        return cut_b, cut_a
    item = b.rfind(", ", max(common - _LOOK_BACK, 0), common)
    start = max(item + 2 if item >= 0 else common - _LEAD, 1)
    return _window(b, start, width), _window(a, start, width)


def _window(text: str, start: int, width: int) -> str:
    """``text`` from ``start`` in at most ``width`` characters, each cut end marked ``…``."""
    body = text[start:]
    if len(body) + 1 <= width:
        return "…" + body
    return "…" + body[: width - 2] + "…"


def one_line(text: str) -> str:
    """``text`` with every control character (a newline, a tab), bidirectional control and
    lone surrogate written as an escape (:func:`statesnap.base.text.printable`): a test id or
    a value of the tested process cannot end the line it is shown on."""
    return printable(text)


def markdown_code(text: str) -> str:
    """Inline Markdown code on one line, whatever backticks or newlines ``text`` holds: the
    fence is longer than any run of backticks in it, padded where the text starts or ends
    with one (or is blank, which an unpadded span cannot hold)."""
    text = one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_text(text: str) -> str:
    """Free text of a Markdown line on one line, ``<`` and ``&`` as text (no HTML of its
    own: a key named ``</details>`` does not close the block it is in)."""
    return one_line(text).replace("&", "&amp;").replace("<", "&lt;")


def needs_delta(shown_before: str, shown_after: str, before: Any, after: Any) -> bool:
    """Whether a line showing ``shown_before → shown_after`` should say what changed instead
    (statesnap.output.delta): either side was cut, or the two read the same."""
    return (shown_before == shown_after or _text(before) != shown_before
            or _text(after) != shown_after)
