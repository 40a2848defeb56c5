"""A project object described again after its names were rebound to equal containers, without
walking what lies below it: the ``attributes`` probe's shortcut for an autouse reset.

structlog's ``reset_defaults()`` gives ``_CONFIG`` a fresh copy of its processor list before
every test: ``_CONFIG``'s namespace moves, and describing it again walked and digested the
processors, their namespaces and what they hold (most of the probe's cost on that suite).

Where the only watched object that moved is that namespace, nothing below it changed since
it was described: the watch reads every object the walk found.  Where also every object whose
namespace the walk took still has that one (a ``__dict__`` bound anew moves no reading: the
Borg pattern), the new description differs from the old only where names bind other objects.
Where each such name binds a list or dict of the old one's type holding the very same items,
reached only from that name, the walk is the old one with the new container in the old one's
place, and every digest of what lies below is the old one: the fingerprint is
:func:`.describe.describe`'s, made from the :class:`Memo` of the last description.  Anything
else (a scalar changed, a container with other items, an object met twice) is described in
full.  What the watch itself trusts (an object's type, a function's name) is trusted here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import is_, is_not
from typing import Any

from statesnap.probes.attributes import describe as D
from statesnap.probes.attributes._content import content_digest
from statesnap.probes.attributes._threadlocal import is_local
from statesnap.probes.attributes.kinds import SCALARS, is_container, tag
from statesnap.probes.attributes.preview import clip, short

#: The objects whose namespace a walk took, their types, and those namespaces.
Owners = tuple[tuple[Any, ...], tuple[type, ...], tuple[Any, ...]]


#: Most full descriptions in a row made without a memo after memos failed to serve.
MAX_SKIP = 64


class Backoff:
    """Full descriptions to make before a memo is tried again, after one did not serve
    (loguru's reset binds the logger a new core: no memo ever does).  Each failure in a row
    doubles the wait, up to :data:`MAX_SKIP`; a memo that serves starts again at one."""

    __slots__ = ("skip", "step")

    def __init__(self, skip: int, step: int) -> None:
        self.skip = skip
        self.step = step

    def spent(self) -> Backoff:
        return Backoff(max(self.skip - 1, 0), self.step)


class Memo:
    """What describing one project object's namespace found: enough to describe it again after
    a rebinding to equal containers (:func:`again`)."""

    __slots__ = ("again", "below", "cls", "first", "flats", "head", "keys", "ns", "owners",
                 "step", "tail", "vals", "value")

    def __init__(self, value: object, ns: dict[str, Any], keys: tuple[Any, ...],
                 vals: tuple[Any, ...], below: tuple[Any, ...], first: int,
                 again: frozenset[int], owners: Owners,
                 flats: tuple[str, ...], head: str, tail: str) -> None:
        self.value = value
        self.cls = type(value)
        self.ns = ns
        self.keys = keys
        self.vals = vals
        #: The walk below the namespace (:func:`.describe.walk`), how many of its objects
        #: are directly below, and the ids of those it met twice.
        self.below = below
        self.first = first
        self.again = again
        #: The objects whose namespace the walk took, their types, and those namespaces.
        self.owners = owners
        #: Each walked object's flat digest, in the walk's order.
        self.flats = flats
        #: The fingerprint's text before the digest, and after it (its ``eq~`` part).
        self.head = head
        self.tail = tail
        #: The wait after the last failure in a row (:class:`Backoff`), doubled by the next.
        self.step = 1


def _text(memo: Memo) -> str:
    sig = ((D.item_sigs(memo.keys), D.item_sigs(memo.vals)), memo.flats)
    return f"{memo.head}{hash(sig) & 0xFFFFFFFF:08x}{memo.tail}"


def _owners(pairs: list[tuple[Any, Any]]) -> Owners | None:
    """The objects whose namespace the walk took, their types and those namespaces; None
    where one is a ``threading.local`` (its namespace is per thread)."""
    objs = tuple(v for v, _ in pairs)
    if any(map(is_local, objs)):
        return None
    return objs, tuple(map(type, objs)), tuple(inner for _, inner in pairs)


def _same_owners(owners: Owners) -> bool:
    """Every owner still of its type, its ``__dict__`` the same object (C loops: the type
    decides the rest of D._namespace's test, as the watch trusts types)."""
    objs, kinds, inners = owners
    try:
        return tuple(map(type, objs)) == kinds and all(
            map(is_, map(object.__getattribute__, objs, repeat("__dict__")), inners))
    except AttributeError:  # a __dict__ deleted
        return False


def describe_namespace(value: object, project: frozenset[str], name: object,
                       walked: list[Any]) -> tuple[str, Memo] | None:
    """:func:`.describe.describe` of a project object (or SimpleNamespace) whose namespace has
    no cache parts, with its :class:`Memo`; None for any other value."""
    if type(value) in SCALARS or is_container(value):
        return None
    ns = D.attribute_namespace(value, project)
    if ns is None or D.cache_parts(ns)[1]:
        return None
    # D.digest(ns, True, project, depth, True, walked) for a namespace (at most SMALL names).
    again: set[int] = set()
    pairs: list[tuple[Any, Any]] = []
    below, first = D.walk(ns, project, D.depth_below(name, value), again, pairs)
    owners = _owners(pairs)
    if owners is None:
        return None
    flats = tuple(map(D.flat_digest, below))
    same = content_digest(ns, below, SCALARS, D.HUGE)
    memo = Memo(value, ns, tuple(ns), tuple(ns.values()), tuple(below), first,
                frozenset(again), owners, flats,
                f"<{type(value).__qualname__} {clip(short(ns))}> {tag(value)} ~",
                f" {same}" if same else "")
    walked += below
    return _text(memo), memo


def memo_for(memo: Memo | Backoff | None, containers: dict[str, list[Any]] | None, key: str,
             moved: Sequence[Any] | None) -> tuple[Memo | Backoff | None] | None:
    """What a part described last as ``memo`` (its ``containers``: the objects its
    description watches, the namespace first) is described again with, where ``moved`` are
    its watched objects that moved: where the namespace alone moved (a reset's rebinding:
    structlog's), ``(memo,)`` (``(None,)``: none yet, one is made), for :func:`described`;
    else None, a full description and no memo (loguru's reset gives the logger a new core
    and changes the old one: no memo would ever serve), or while a :class:`Backoff` waits."""
    watched = containers.get(key) if containers is not None else None
    if not moved or not watched:
        return None
    own = watched[0]
    if any(map(is_not, moved, repeat(own))):
        return None
    if isinstance(memo, Backoff):
        return None if memo.skip else (memo,)
    return (memo if memo is not None and memo.ns is own else None,)


def described(last: Memo | Backoff | None, part: Any, value: object, project: frozenset[str],
              name: object, walked: list[Any]) -> tuple[str, Memo] | None:
    """The fingerprint of a part described again (see :func:`memo_for`) and its new memo:
    from ``last`` where that holds (:func:`again`); a memo that does not hold makes the part
    wait (``part.memo``: a :class:`Backoff`) and None is returned (a full description); with
    none, or after the wait, the part is described and remembered (:func:`describe_namespace`,
    None for a value that is no namespace)."""
    if isinstance(last, Memo):
        found = again(last, value, project, walked)
        if found is None:
            step = min(last.step * 2, MAX_SKIP)
            part.memo = Backoff(step, step)
        return found
    found = describe_namespace(value, project, name, walked)
    if found is not None and last is not None:
        found[1].step = last.step
    return found


def again(memo: Memo, value: object, project: frozenset[str],
          walked: list[Any]) -> tuple[str, Memo] | None:
    """The fingerprint of ``value`` (described last as ``memo``), where the only watched
    object that moved since is its namespace, and each name bound anew binds a list or dict
    of the old one's type with the very same items; None where that does not hold."""
    if value is not memo.value or type(value) is not memo.cls:
        return None
    ns = D.attribute_namespace(value, project)
    if ns is not memo.ns or len(ns) != len(memo.keys) or len(memo.below) >= D.BUDGET:
        return None
    keys = tuple(ns)
    if not all(map(is_, keys, memo.keys)):
        return None
    if not _same_owners(memo.owners):
        return None  # an object's __dict__ bound anew (or its type changed): walked again
    vals = tuple(ns.values())
    below = list(memo.below)
    places: dict[int, int] | None = None
    placed: set[int] = set()
    for new, old in zip(vals, memo.vals, strict=True):
        if new is old:
            continue
        kind = type(new)
        if kind is not type(old) or (kind is not list and kind is not dict):
            return None
        if len(new) != len(old) or not all(map(is_, new, old)):
            return None
        if kind is dict and not all(map(is_, new.values(), old.values())):
            return None
        if places is None:
            places = {id(b): i for i, b in enumerate(memo.below)}
        # The old container walked once, directly below (no other path to it), and the new
        # one nowhere in the walk: the new walk is the old one with it in the old one's place.
        at = places.get(id(old))
        if (at is None or at >= memo.first or id(old) in memo.again or id(new) in places
                or id(new) in placed or new is ns):
            return None
        below[at] = new
        placed.add(id(new))
    fresh = Memo(value, ns, keys, vals, tuple(below), memo.first, memo.again, memo.owners,
                 memo.flats, memo.head, memo.tail)
    walked += below
    return _text(fresh), fresh
