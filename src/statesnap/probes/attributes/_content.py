"""What a container or a namespace holds, apart from which builtin objects hold it: the
``eq~`` digest of the ``attributes`` probe's fingerprints.

The fingerprint's own digest (``~``, :func:`.describe.digest`) takes what it walks by
value (scalars) or identity (the rest), so a structure rebuilt with equal contents (sqlparse's
lexer reset: new lists of new ``(pattern.match, token)`` tuples) reads as changed.  This one
reads the very same items -- the value and the containers the ``~`` digest walks below it --
and differs in three ways only:

- a builtin list, dict, set or deque the walk reached (its exact type: a subclass may keep more
  than its items, a defaultdict its factory) is taken by its place in the walk, its items being
  digested there;
- a tuple (exact) by its items, the same way;
- a bound method by its function (or name) and the identity of what it is bound to.

So it can only stay equal where the ``~`` digest moved because equal contents now sit in other
builtin objects; whatever the ``~`` digest sees of what the value holds, this one sees too.
No object's own code runs.  A container of scalars only needs no ``eq~`` (its ``~`` digest is
by value already); a huge container, or tuples nested past :data:`NODES` items, get none
either (nothing is claimed).
"""

from __future__ import annotations

import collections
import types
from collections.abc import Iterable
from typing import Any

from statesnap.probes.attributes._flatmemo import CONTENT, closed

#: Most tuple items one digest looks into.
NODES = 4096
#: Taken by their place in the walk (exact types).
_BY_PLACE = frozenset({list, dict, set, collections.deque})


class _Untold(Exception):
    """The content cannot be told within the limits."""


class _Items:
    """One digest's item signatures: the walk's containers by place, a budget for tuples."""

    def __init__(self, below: list[Any], scalars: frozenset[type]) -> None:
        self.place = {id(c): i for i, c in enumerate(below) if type(c) in _BY_PLACE}
        self.scalars = scalars
        self.left = NODES

    def sig(self, item: object) -> object:
        t = type(item)
        if t in self.scalars:
            return item
        if t is tuple:
            self.left -= len(item)  # type: ignore[arg-type]
            if self.left < 0:
                raise _Untold
            return ("t", *map(self.sig, item))  # type: ignore[call-overload]
        place = self.place.get(id(item))
        if place is not None:
            return ("c", place)
        if t is types.MethodType:
            # Made again for the same function and object, it is the same method.
            m: types.MethodType = item  # type: ignore[assignment]
            return ("m", id(m.__func__), id(m.__self__))
        if issubclass(t, types.BuiltinMethodType):
            # ``pattern.match`` is a ``builtin_method`` (a C method of a class: no Python
            # subclass can be made of either).
            b: types.BuiltinMethodType = item  # type: ignore[assignment]
            return ("b", id(b.__self__), b.__name__)
        return id(item)

    def flat(self, value: Any, huge: int) -> object:
        """The items of one container (dict: keys, then values), as the ``~`` digest lists
        them."""
        if len(value) > huge:
            raise _Untold  # signed from a sample there: equality cannot be told
        if type(value) is dict:
            # A closed dict's items sign the same wherever the walk meets it: remembered.
            tag, known = CONTENT.get(value)
            if known is None:
                known = (self._all(value), self._all(value.values()))
                if tag is not None and closed(value):
                    CONTENT.keep(value, tag, known)
            return known
        if issubclass(type(value), dict):
            return (self._all(value), self._all(value.values()))
        if issubclass(type(value), set):
            return frozenset(self._all(value))
        return self._all(value)

    def _all(self, items: Iterable[Any]) -> tuple[object, ...]:
        # Scalars are their own signature: a container of them (a namespace's keys) in C
        # passes, not a Python call per item.
        every = tuple(items)
        if self.scalars.issuperset(map(type, every)):
            return every
        return tuple(map(self.sig, every))


def content_digest(value: Any, below: list[Any], scalars: frozenset[type],
                   huge: int) -> str | None:
    """``eq~xxxxxxxx`` of ``value`` and ``below`` (what the ``~`` digest walked under it, in
    its order), or None where it cannot be told."""
    t = type(value)
    if t not in _BY_PLACE:
        return None  # a subclass at the top: taken by identity, as in any container
    if not below and scalars.issuperset(map(type, value)) and (
            t is not dict or scalars.issuperset(map(type, value.values()))):
        # Scalars only (most module tables): the ``~`` digest already takes each by value,
        # and the same object with the same ``~`` is no change at all.  Two C passes.
        return None
    items = _Items(below, scalars)
    try:
        sig = (items.flat(value, huge), tuple(items.flat(c, huge) for c in below))
    except (_Untold, RecursionError):
        return None
    return f"eq~{hash(sig) & 0xFFFFFFFF:08x}"
