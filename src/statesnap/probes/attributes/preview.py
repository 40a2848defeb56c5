"""Short, safe texts of values for the ``attributes`` probe's fingerprints and changes.

Builtin scalars and containers by value (a long ordered one by its first and last items, where
what a test appended shows), caches by type only, everything else by its type or qualified
name; a long text is cut in the middle.  Never calls a project object's ``__repr__``.
"""

from __future__ import annotations

import collections
import types
from collections.abc import Iterable
from itertools import islice
from typing import Any

from statesnap.probes.attributes.kinds import CALLABLES, SCALARS, cache_part, kind, qualified, tag
from statesnap.probes.base import fingerprint_repr

PREVIEW_ITEMS = 6
TEXT_LIMIT = 160

def ends(items: Iterable[Any], n: int, ordered: bool) -> tuple[list[Any], list[Any]]:
    """The items a preview shows: all of a short container; of a long ordered one its first
    and last few, since registries and logs grow at the end (marshmallow's class registry, a
    list appended to): the entries a test added are what the user needs to see."""
    if n <= PREVIEW_ITEMS or not ordered:
        return list(islice(items, PREVIEW_ITEMS)), []
    half = PREVIEW_ITEMS // 2
    tail = list(islice(reversed(items), half))  # type: ignore[call-overload]
    tail.reverse()
    return list(islice(items, PREVIEW_ITEMS - half)), tail


def entry(k: object, v: object, depth: int) -> str:
    return f"{short(k, depth + 1)}: {opaque(v) if cache_part(k, v) else short(v, depth + 1)}"


def short(value: object, depth: int = 0) -> str:
    """A safe short text: builtin scalars and containers by value, the rest by type."""
    t = type(value)
    if t in SCALARS:
        return fingerprint_repr(value, 60)
    if depth < 2 and t in (list, tuple, set, frozenset, collections.deque):
        items: Iterable[Any] = value  # type: ignore[assignment]
        n = len(value)  # type: ignore[arg-type]
        head, tail = ends(items, n, t not in (set, frozenset))
        parts = [opaque(v) if cache_part(None, v) else short(v, depth + 1) for v in head]
        if n > PREVIEW_ITEMS:
            parts.append(f"… +{n - len(head) - len(tail)}")
            parts += [opaque(v) if cache_part(None, v) else short(v, depth + 1) for v in tail]
        inner = ", ".join(parts)
        if t is list:
            return f"[{inner}]"
        if t is tuple:
            return f"({inner}{',' if n == 1 else ''})"
        if t is collections.deque:
            return f"deque([{inner}])"
        return f"{t.__name__}({{{inner}}})" if t is frozenset or not n else f"{{{inner}}}"
    if depth < 2 and kind(value, dict):
        d: dict[Any, Any] = value  # type: ignore[assignment]
        head, tail = ends(d.items(), len(d), True)
        parts = [entry(k, v, depth) for k, v in head]
        if len(d) > PREVIEW_ITEMS:
            parts.append(f"… +{len(d) - len(head) - len(tail)}")
            parts += [entry(k, v, depth) for k, v in tail]
        return "{" + ", ".join(parts) + "}"
    if kind(value, types.ModuleType):
        return f"module {value.__name__}"  # type: ignore[attr-defined]
    if kind(value, type):
        return f"class {qualified(value)}"
    if kind(value, CALLABLES):
        return f"{t.__name__} {qualified(value)}"
    if kind(value, (staticmethod, classmethod)):
        return f"{t.__name__} {qualified(value.__func__)}"  # type: ignore[attr-defined]
    enum_base = getattr(t, "_member_map_", None)
    if isinstance(enum_base, dict):
        return f"{t.__qualname__}.{getattr(value, '_name_', '?')}"
    return f"<{t.__module__}.{t.__qualname__}>"


def opaque(value: object) -> str:
    """A cache inside a container or a namespace, by its type only.

    Its contents are not watched (see :func:`_children`): shown, they would change unseen by
    the token, and the next watched change of the owner would be recorded with a ``before``
    holding what earlier tests put in the cache.
    """
    t = type(value)
    name = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    return f"<{name}>"


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    # Cut in the middle: a preview's last entries (what grew) stay in sight, its start too.
    if len(text) <= limit:
        return text
    head = limit // 3
    return f"{text[:head]}…{text[head - limit:]} ({len(text)} chars)"


def subclasses(subs: list[type]) -> str:
    """A class's live subclasses: sorted names with identity tags, count and a digest (a
    subclass freed and another made under the same name is a change)."""
    names = ", ".join(sorted(f"{qualified(sub)} {tag(sub)}" for sub in subs))
    sig = hash(frozenset(map(id, subs))) & 0xFFFFFFFF
    return f"{clip(f'[{names}]')} len={len(subs)} ~{sig:08x}"
