"""Describing's walk remembered per dict: a dict met again holding the very same items (its
version tag unchanged) gives the same ``~`` digest, ``eq~`` items and, while the objects it
holds are still what they were, the same children.

structlog's autouse fixture binds a new processor list (equal items) into ``_CONFIG`` before
every test, and the ``attributes`` probe describes ``_CONFIG`` again: the walk below it meets
the same processors' namespaces (eleven dicts, not one of them written) and worked out each
one's children, digest and content items anew, most of a test's share of the probe.  A
:class:`WalkMemo` is one attribute's walk (kept on its ``Part``); the next description of that
attribute takes from it only what still holds, checked per dict:

- a dict's items are what they were where it is the same object with the same version tag
  (the tag moves on every store, and a new dict never has an old one's): its ``~`` digest
  (identities and scalar values) is the same;
- its ``eq~`` items also depend on which of its items the walk lists (taken by their place):
  checked against this walk's places;
- its children also depend on each item's class (its name, module and bases: whether it is a
  cache, a container, a project object) and, for an object whose namespace could be watched,
  which dict is its ``__dict__`` and whether that is small enough to walk into (a namespace not
  walked that shrinks below :data:`~.describe.SMALL` is walked from then on): all checked.

Lists, sets and deques have no tag: described as before.  Where tags cannot be read
(:func:`~statesnap.probes._dictwatch.probe_support`), nothing is remembered.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from statesnap.probes._dictwatch import version_tag

#: How small a namespace must be to be walked into (``describe.SMALL``; set there, so that
#: this module imports nothing of ``describe``).
SMALL = 32
#: Put among the objects whose namespace was asked for where one is a ``threading.local``:
#: its namespace is the calling thread's, which no check here can vouch for.
PER_THREAD = object()


def own_dict(value: object) -> Any:
    """``value``'s ``__dict__`` as the walk reads it (None for a ``__slots__``-only object)."""
    try:
        return object.__getattribute__(value, "__dict__")
    except AttributeError:
        return None


def _classes(types: tuple[type, ...]) -> tuple[Any, ...]:
    # What the walk asks of each class: its name (a cache by name), module (a project
    # object) and bases (a container, a weak container, a thread-local).
    return tuple((t.__name__, t.__module__, t.__mro__) for t in dict.fromkeys(types))


class Node:
    """One dict of a walk: its tag, and what was worked out from it (None: not yet)."""

    __slots__ = ("children", "classes", "content", "flat", "obj", "spaces", "tag", "types")

    def __init__(self, obj: dict[Any, Any], tag: int) -> None:
        self.obj = obj
        self.tag = tag
        #: ``describe.digest(obj, nested=False)``.
        self.flat: str | None = None
        #: ``(places, items)``: the ``eq~`` items, and which of its items the walk listed
        #: where (id -> place) when they were made.
        self.content: tuple[dict[int, int], object] | None = None
        #: Its children, and what they were found from: each value's class, and each object
        #: whose namespace was asked for with that namespace and its size then.
        self.children: list[Any] | None = None
        self.types: tuple[type, ...] = ()
        self.classes: tuple[Any, ...] = ()
        self.spaces: tuple[tuple[object, Any, bool], ...] = ()

    def keep_children(self, children: list[Any], asked: list[object]) -> None:
        if PER_THREAD in asked:
            return
        self.types = tuple(map(type, self.obj.values()))
        self.classes = _classes(self.types)
        self.spaces = tuple((v, ns := own_dict(v), ns is not None and len(ns) <= SMALL)
                            for v in asked)
        self.children = children

    def children_hold(self) -> bool:
        """Whether :attr:`children` are still what the walk would find."""
        if self.children is None:
            return False
        types = tuple(map(type, self.obj.values()))
        if types != self.types or _classes(types) != self.classes:
            return False
        for value, ns, small in self.spaces:
            now = own_dict(value)
            if now is not ns or (ns is not None and (len(ns) <= SMALL) != small):
                return False
        return True


class WalkMemo:
    """One attribute's walk: a :class:`Node` per dict it met, those of the last walk of the
    same attribute (``prior``) taken where the dict holds the same items."""

    __slots__ = ("_prior", "nodes", "project")

    def __init__(self, prior: WalkMemo | None, project: frozenset[str]) -> None:
        self.project = project
        # Which modules are the project's decides what is walked into: another set, nothing
        # of the last walk is used.
        self._prior = prior.nodes if prior is not None and prior.project == project else {}
        self.nodes: dict[int, Node] = {}

    def node(self, d: dict[Any, Any]) -> Node | None:
        """``d``'s node in this walk (None where version tags cannot be read)."""
        found = self.nodes.get(id(d))
        if found is not None:
            return found
        tag = version_tag(d)
        if tag is None:
            return None
        found = self._prior.get(id(d))
        if found is None or found.obj is not d or found.tag != tag:
            found = Node(d, tag)
        self.nodes[id(d)] = found
        return found


def places_in(d: dict[Any, Any], place: dict[int, int]) -> dict[int, int]:
    """Which of ``d``'s keys and values the walk lists, by id, with their places."""
    ids = set(map(id, d))
    ids.update(map(id, d.values()))
    return {i: place[i] for i in ids.intersection(place)}


def has_tuples(d: dict[Any, Any]) -> bool:
    """Whether ``d`` holds a tuple (the ``eq~`` items look into tuples within a budget)."""
    return any(type(x) is tuple for x in chain(d, d.values()))
