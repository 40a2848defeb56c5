"""What changed between a key's two values, said in one line: for a pair too long to show
whole, or whose shown texts are the same.

- a container (a JSON dict or list, or an ``attributes`` fingerprint of one, whose preview
  lists its items): the keys or items added, removed and changed, and the length;
- two fingerprints whose texts differ only in identity tags and digests: "only identity
  changed" (another object, equal as far as its fingerprint shows) or "contents changed
  beyond the preview" (the same object: its digest moved);
- other text: the region around the first difference.

Pure; the terminal, the summary JSON (``delta``) and the report show it.  Values are untrusted
record text: nothing here evaluates them.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from typing import Any

#: One line's worth.
WIDTH = 100
#: Items named in a delta before "and N more".
_ITEMS = 3
#: An ``attributes`` fingerprint's identity tag, digests and length, after its preview.
_TAIL = (r"(?: \(\d+ chars\))?(?P<tag> #[0-9a-f]{6})(?P<label>(?: [\w.]+)?)"
         r"(?: len=(?P<n>\d+))?(?P<sigs>(?: ~[0-9a-f]{8}(?: sampled)?)?"
         r"(?: eq~[0-9a-f]{8})?(?: cache~[0-9a-f]{8})?)$")


@functools.cache
def _tail() -> re.Pattern[str]:
    # Compiled on first need: about 1.5 M instructions, and a report of a run whose changes
    # were all additions and removals never needs it.
    return re.compile(_TAIL)


def _tail_of(fp: str) -> re.Match[str] | None:
    """``_tail().search(fp)``, matched only where it can begin.  A match ends the text, and
    after its tag (`` #`` and hex digits) come a label, a length and digests, none holding
    `` #``: so its tag is the text's last `` #``, and it begins there or at the `` (N chars)``
    right before it.  A search tries every position of the preview instead: a summary
    JSON's deltas of structlog's run (two for each of its ~1,000 changes, each ~600
    characters) took ~160 M instructions."""
    at = fp.rfind(" #")
    if at < 0:
        return None
    chars = fp.rfind(" (", 0, at)
    if chars >= 0:
        m = _tail().match(fp, chars)
        if m is not None:
            return m
    return _tail().match(fp, at)


_OPEN = {"{": "}", "[": "]", "(": ")", "<": ">"}


def _text(value: Any) -> str:
    return "∅" if value is None else value if isinstance(value, str) else json.dumps(
        value, sort_keys=True, default=str)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _split_items(body: str) -> list[str] | None:
    """Top-level ``, ``-separated items of a preview's body; None where quoting or nesting
    cannot be followed (a clipped preview)."""
    if "…" in body:
        return None  # clipped: found in C before the walk, which looks at each character
    items: list[str] = []
    depth: list[str] = []
    quote = ""
    start = 0
    i = 0
    while i < len(body):
        c = body[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in _OPEN:
            depth.append(_OPEN[c])
        elif depth and c == depth[-1]:
            depth.pop()
        elif not depth and body.startswith(", ", i):
            items.append(body[start:i])
            start = i + 2
            i += 1
        i += 1
    if quote or depth:
        return None
    if body[start:]:
        items.append(body[start:])
    return items


def _preview(fp: str) -> tuple[str, list[str], str, int | None] | None:
    """``(kind, items, identity tag, length)`` of a container fingerprint whose preview is
    whole: kind ``dict`` (``{k: v}``), ``list`` or ``set``."""
    m = _tail_of(fp)
    if m is None:
        return None
    head = fp[:m.start()]
    n = int(m["n"]) if m["n"] else None
    space = head.find(" {")
    if head.startswith("<") and head.endswith("}>") and space > 0:
        # A namespace (an object's attributes): ``<Type {'a': 1}>``, compared as a dict.
        items = _split_items(head[space + 2:-2])
        return None if items is None else ("dict", items, m["tag"], n)
    if head.startswith("{") and head.endswith("}"):
        items = _split_items(head[1:-1])
        if items is None:
            return None
        kind = "dict" if all(": " in x for x in items) else "set"
        return kind, items, m["tag"], n
    if head.startswith("[") and head.endswith("]"):
        items = _split_items(head[1:-1])
        return None if items is None else ("list", items, m["tag"], n)
    return None


def _named(sign: str, items: list[str]) -> list[str]:
    shown = [f"{sign}{x}" for x in items[:_ITEMS]]
    if len(items) > _ITEMS:
        shown.append(f"{sign}{len(items) - _ITEMS} more")
    return shown


def _entries(kind: str, items: list[str]) -> dict[str, str]:
    if kind == "dict":
        return dict(x.split(": ", 1) for x in items)
    return {x: x for x in items}


def _compare(kind: str, old: list[str], new: list[str]) -> list[str]:
    a, b = _entries(kind, old), _entries(kind, new)
    if len(a) < len(old) or len(b) < len(new):
        # Items that read the same (``<_io.StringIO>: <_thread.lock>`` twice): by count.
        gone, came = Counter(old) - Counter(new), Counter(new) - Counter(old)
        return (_named("+", list(came.elements())) + _named("-", list(gone.elements())))
    if kind == "list" and old == new[:len(old)]:
        return _named("+", new[len(old):])
    if kind == "list" and new == old[:len(new)]:
        return _named("-", old[len(new):])
    parts = _named("+", [f"{k}: {b[k]}" if kind == "dict" else k for k in b if k not in a])
    parts += _named("-", [k for k in a if k not in b])
    changed = [k for k in a if k in b and a[k] != b[k]]
    parts += [f"~{k}: {a[k]} → {b[k]}" for k in changed[:_ITEMS]]
    if len(changed) > _ITEMS:
        parts.append(f"~{len(changed) - _ITEMS} more")
    return parts


def _strip(fp: str) -> str:
    return re.sub(r" (?:#[0-9a-f]{6}|~[0-9a-f]{8}|eq~[0-9a-f]{8}|cache~[0-9a-f]{8})", "", fp)


def _fingerprints(b: str, a: str) -> str | None:
    old, new = _preview(b), _preview(a)
    if old is not None and new is not None and old[0] == new[0]:
        parts = _compare(old[0], old[1], new[1])
        if old[3] is not None and new[3] is not None and old[3] != new[3]:
            parts.append(f"len {old[3]} → {new[3]}")
        if parts:
            return "; ".join(parts)
    if _strip(b) == _strip(a):
        tags = re.findall(r" #[0-9a-f]{6}", b), re.findall(r" #[0-9a-f]{6}", a)
        if tags[0] != tags[1]:
            return "only identity changed (another object, equal as far as it is shown)"
        return "contents changed beyond the preview (the same object; its digest moved)"
    return None


def _json_delta(before: Any, after: Any) -> str | None:
    if isinstance(before, dict) and isinstance(after, dict):
        parts = _compare("dict", [f"{json.dumps(k)}: {_json(v)}" for k, v in before.items()],
                         [f"{json.dumps(k)}: {_json(v)}" for k, v in after.items()])
        return "; ".join(parts) if parts else None
    if isinstance(before, list) and isinstance(after, list):
        parts = _compare("list", [_json(x) for x in before], [_json(x) for x in after])
        return "; ".join(parts) if parts else None
    return None


def _common_prefix(b: str, a: str) -> int:
    """The length of the longest common prefix of ``b`` and ``a``, by halving: each step one
    comparison of two slices in C, not one Python step per character (two fingerprints of
    one object read the same up to their digests, ~600 characters)."""
    low, high = 0, min(len(b), len(a))
    while low < high:
        mid = (low + high + 1) // 2
        if b[:mid] == a[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _around(b: str, a: str, width: int) -> str:
    common = _common_prefix(b, a)
    start = max(common - 12, 0)
    room = max((width - 20) // 2, 10)

    def part(text: str) -> str:
        body = text[start:start + room]
        return ("…" if start else "") + body + ("…" if start + room < len(text) else "")

    return f"at character {common}: {part(b)} → {part(a)}"


def delta(before: Any, after: Any, width: int = WIDTH) -> str | None:
    """One line saying what changed from ``before`` to ``after``; None where both sides are
    missing or equal, or one is absent (added, removed: the other side says it all)."""
    if before is None or after is None or before == after:
        return None
    found = _json_delta(before, after)
    if found is None and isinstance(before, str) and isinstance(after, str):
        found = _fingerprints(before, after) or _around(before, after, width)
    if found is None:
        found = _around(_text(before), _text(after), width)
    return found if len(found) <= width else found[:width - 1] + "…"
