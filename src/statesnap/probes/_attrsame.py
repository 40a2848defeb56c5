"""Whether a module's namespace or a class's dict, written to, still binds what it did.

A dict's version tag moves on every store, even of the same object; the ``attributes`` probe
then skips describing the part again (:func:`same_bindings`).
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Mapping
from itertools import repeat
from typing import Any

from statesnap.probes._attrscan import (
    MODULE_PART,
    Tracked,
    class_skip,
    skip_name,
)

_MISSING = object()


def _same_items(now: Mapping[str, Any], described: list[tuple[str, Any]],
                skip: frozenset[str]) -> bool:
    """Whether ``now`` binds every name ``described`` did, but for dunders, pytest's names and
    ``skip``, to the very same objects (identity only: no project ``__eq__`` is called)."""
    seen = dict(described)  # only here: describing keeps the list it was made from
    if now.keys() == seen.keys() and all(map(operator.is_, now.values(), seen.values())):
        return True  # in C: nothing was rebound (a name swapped and put back, say)
    for name, value in now.items():
        if seen.get(name, _MISSING) is not value and not (skip_name(name, value) or name in skip):
            return False
    return all(name in now or skip_name(name, value) or name in skip
               for name, value in seen.items())


def skips_hold(t: Tracked) -> bool:
    """Whether the names ``t`` left out for what they bound still bind those objects."""
    names, values = t.skipped
    ns = t.ns
    return not names or all(map(operator.is_, map(ns.get, names, repeat(_MISSING)), values))


def binds_as_described(t: Tracked) -> bool:
    """Whether ``t``'s namespace has the names it had when described, each described one
    bound to the object its part was described from (C-level loops: click's runner writes
    four namespaces twice per invocation).

    The objects compared are held by ``t.bound``, so an identity match is never a new object
    at a freed one's address."""
    keys, names, values = t.bound
    ns = t.ns
    return bool(ns.keys() == keys
                and all(map(operator.is_, map(ns.get, names, repeat(_MISSING)), values))
                and skips_hold(t))


def same_bindings(t: Tracked, key: str, moved: Collection[Any]) -> bool:
    """Whether a part whose only moved objects are its own namespace -- the module's
    (:data:`MODULE_PART`) or a test case class's dict -- still binds every name it describes
    to the object it was described with; then describing it again would give the same
    fingerprints, and is skipped.

    A dict's version tag moves on every store, even of the same value: click's test runner
    swaps a few module functions and puts them back around each invocation, and unittest
    sets ``tearDown_exceptions`` on each class as its last test ends (only test case classes
    keep what they were described from).  Anything else that moved (a container, a subclass
    slot, a cache) is described again as usual.
    """
    if not t.fresh:
        return False
    if key == MODULE_PART:
        return all(obj is t.ns for obj in moved) and binds_as_described(t)
    part = t.parts.get(key)
    if part is None or part.cls is None or part.seen is None:
        return False
    _, cls, own = part.cls
    if not all(obj is own for obj in moved):
        return False
    now = cls.__dict__
    if not _same_items(now, part.seen, class_skip(cls)):
        return False
    part.seen = list(now.items())
    return True
