"""Whether a module's namespace or a class's dict, written to, still binds what it did.

A dict's version tag moves on every store, even of the same object; the ``attributes`` probe
then skips describing the part again (:func:`same_bindings`).
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Mapping
from itertools import repeat
from typing import Any

from statesnap.probes._listwatch import pointers
from statesnap.probes.attributes.scan import (
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


def skips_hold(t: Tracked, ns: Mapping[str, Any] | None = None) -> bool:
    """Whether the names ``t`` left out for what they bound still bind those objects (in
    ``ns``, by default its namespace)."""
    names, values = t.skipped
    if ns is None:
        ns = t.ns
    return not names or all(map(operator.is_, map(ns.get, names, repeat(_MISSING)), values))


class NamespaceImage:
    """A namespace's names, then its objects, in order, as found binding what ``bound`` (a
    :attr:`Tracked.bound`) describes; it holds them, so an equal pointer array is the very
    same objects, never new ones at freed addresses."""

    __slots__ = ("bound", "held", "pointers")

    def __init__(self, bound: object, held: tuple[Any, ...], pointer_bytes: bytes) -> None:
        self.bound = bound
        self.held = held
        self.pointers = pointer_bytes

    @classmethod
    def of(cls, bound: object, ns: dict[str, Any]) -> NamespaceImage | None:
        """``ns``'s image (a dict only the caller holds); None where pointer arrays cannot be
        read here."""
        held = [*ns, *ns.values()]
        found = pointers(held)
        return None if found is None else cls(bound, tuple(held), found)

    def shows(self, ns: dict[str, Any]) -> bool:
        """Whether ``ns`` binds the same names, in the same order, to the same objects (the
        same length of names and of objects: a dict has as many of each)."""
        return pointers([*ns, *ns.values()]) == self.pointers


def binds_as_described(t: Tracked) -> bool:
    """Whether ``t``'s namespace has the names it had when described, each described one
    bound to the object its part was described from (C-level loops: click's runner writes
    four namespaces twice per invocation).

    The objects compared are held by ``t.bound``, so an identity match is never a new object
    at a freed one's address.  A namespace found so is imaged (:class:`NamespaceImage`); the
    next time, the same image (names and objects, by pointer, for the same ``t.bound``)
    answers in two array compares instead of a lookup per name: click's runner swaps four
    namespaces' functions and puts them back at every invocation (about 27 K instructions a
    namespace for the lookups, issue 13).
    """
    ns = t.ns
    image = t.image
    if image is not None and image.bound is t.bound and image.shows(ns):
        return True
    if type(ns) is not dict:
        return _binds(t, ns)
    # One C copy: what is checked is what the image is made of, whatever another thread
    # writes to the namespace meanwhile.
    copy = dict(ns)
    if not _binds(t, copy):
        return False
    t.image = NamespaceImage.of(t.bound, copy)
    return True


def _binds(t: Tracked, ns: Mapping[str, Any]) -> bool:
    keys, names, values = t.bound
    return bool(ns.keys() == keys
                and all(map(operator.is_, map(ns.get, names, repeat(_MISSING)), values))
                and skips_hold(t, ns))


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
