"""Readable fingerprints of module and class attributes, for the ``attributes`` probe.

Never calls a project object's ``__repr__``, ``__eq__`` or ``__getattr__``: only builtin scalars
and containers are shown by value; identity tags and content digests show rebinding and
in-place changes.  See docs/PROBES.md.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Any

from statesnap.probes._dictwatch import version_tag
from statesnap.probes.attributes._content import content_digest
from statesnap.probes.attributes._flatmemo import FLAT
from statesnap.probes.attributes._threadlocal import LOCAL, is_local, local_dict
from statesnap.probes.attributes.kinds import (
    BUILTIN,
    CODE,
    SCALARS,
    cache_like,
    cache_part,
    is_container,
    kind,
    tag,
)
from statesnap.probes.attributes.preview import clip, short

#: Containers up to this size also have their nested containers watched.
SMALL = 32
#: How deep below a module attribute nested containers and project-object namespaces are
#: watched and digested (``DATA["a"][0]["x"] = 2`` is three levels down), and how many of them
#: at most per attribute: library code mutates what it is given at any depth, but a module
#: table of thousands of records must not cost thousands of reads per test.
DEPTH = 4
BUDGET = 64
#: A module-level project object with more attributes than :data:`SMALL`, up to this many, has
#: each attribute keyed by itself; a bigger one is not watched.
LARGE = 256
#: Containers longer than this are signed from a sample (first and last items) plus length:
#: an in-place change in the middle of a huge list that keeps its length is missed, the price
#: of not walking 100k items three times per test.
HUGE = 4096
SAMPLE = 64
def _namespace(value: object, project_modules: frozenset[str]) -> dict[str, Any] | None:
    """The ``__dict__`` of a SimpleNamespace or a project class instance, of any size."""
    t = type(value)
    if t is types.SimpleNamespace or (
        t.__module__ in project_modules and not kind(value, (type, types.ModuleType, BaseException))
    ):
        if is_local(value):
            # A project's ``class Context(threading.local)``: its attributes are per thread,
            # the instance's own ``__dict__`` an empty one that never holds them.
            return local_dict(value)
        try:
            ns = object.__getattribute__(value, "__dict__")
        except AttributeError:
            return None  # __slots__ only
        if isinstance(ns, dict):
            return ns
    return None


def watched_namespace(value: object, project_modules: frozenset[str]) -> dict[str, Any] | None:
    """The ``__dict__`` of a config-like object (SimpleNamespace or a project class instance).

    Mutating such an object's attributes (``settings.debug = True``) is a leak just like
    rebinding a module attribute, so its namespace is watched like a dict.
    """
    ns = _namespace(value, project_modules)
    return ns if ns is not None and len(ns) <= SMALL else None


def attribute_namespace(value: object, project_modules: frozenset[str]
                        ) -> dict[str, Any] | None:
    """:func:`watched_namespace`, and for a module attribute itself also the dict of a
    ``threading.local`` or of a subclass of it, whoever defines the class (this thread's:
    humanize keeps its active locale in one; :mod:`._threadlocal`).

    Only where a module attribute is described (on a change), not in the walks below
    containers that digests repeat: thread-local objects sit at module level.
    """
    ns = watched_namespace(value, project_modules)
    if ns is None and issubclass(type(value), LOCAL):  # inline: this runs for every change
        ns = local_dict(value)
        return ns if ns is not None and len(ns) <= SMALL else None
    return ns


def large_namespace(value: object, project_modules: frozenset[str]) -> dict[str, Any] | None:
    """The namespace of a module-level project object with more than :data:`SMALL` attributes
    (and at most :data:`LARGE`): a factory or settings singleton, whose attributes are keyed
    one by one like a class's (``pkg.mod:factory.debug_level``) rather than digested whole."""
    ns = _namespace(value, project_modules)
    return ns if ns is not None and SMALL < len(ns) <= LARGE else None


def _children(obj: Any, project_modules: frozenset[str],
              owners: list[tuple[Any, Any]] | None = None) -> list[Any]:
    """The containers and watched namespaces directly inside a small container; ``owners``
    receives each object whose namespace it took, with that namespace."""
    if not is_container(obj) or len(obj) > SMALL:
        return []
    out: list[Any] = []
    pairs = obj.items() if kind(obj, dict) else ((None, v) for v in obj)
    for k, v in pairs:
        if type(v) in SCALARS:
            continue  # neither a container nor a namespace (most entries: no name test)
        if cache_like(k, v):
            # A cache inside (an environment's template cache, by its key or class name)
            # fills up as code runs, which is what caches are for: not walked into.
            continue
        if is_container(v):
            out.append(v)
        elif type(v) not in SCALARS:
            ns = watched_namespace(v, project_modules)
            if ns is not None:
                out.append(ns)
                if owners is not None:
                    owners.append((v, ns))
    return out


def reachable(value: Any, project_modules: frozenset[str], depth: int = DEPTH) -> list[Any]:
    """Containers and project-object namespaces below ``value`` (not itself), breadth first.

    Up to ``depth`` levels and :data:`BUDGET` objects, only through containers of at most
    :data:`SMALL` items; each object once (shared or cyclic structures end).
    """
    return walk(value, project_modules, depth)[0]


def walk(value: Any, project_modules: frozenset[str], depth: int = DEPTH,
         again: set[int] | None = None, owners: list[tuple[Any, Any]] | None = None
         ) -> tuple[list[Any], int]:
    """:func:`reachable`'s list, and how many of its objects are directly below ``value``
    (the first level); ``again`` receives the ids of the objects met a second time (by a
    second path, or a cycle), ``owners`` each object whose namespace was taken, with it."""
    out: list[Any] = []
    seen = {id(value)}
    level = [value]
    first = -1
    for _ in range(depth):
        below: list[Any] = []
        for obj in level:
            for c in _children(obj, project_modules, owners):
                if id(c) in seen:
                    if again is not None:
                        again.add(id(c))
                    continue
                seen.add(id(c))
                out.append(c)
                below.append(c)
                if len(out) >= BUDGET:
                    return out, len(out) if first < 0 else first
        if first < 0:
            first = len(out)
        if not below:
            break
        level = below
    return out, max(first, 0)


def cache_parts(d: dict[Any, Any]) -> tuple[dict[Any, Any], str]:
    """``d`` without its cache-like items, and ``" cache~<digest>"`` of those (identities).

    A small dict with text keys only (a namespace, a settings dict): its caches are digested
    apart, so that a change confined to them (a ``cache_clear()`` rebinding one) is told from
    one of the rest (``cache_filled`` in ``_fingerprints``).  Otherwise ``(d, "")``.
    """
    if len(d) > SMALL or not any(cache_part(k, v) for k, v in d.items()):
        return d, ""
    if not all(type(k) is str for k in d):
        return d, ""  # hashing a project object's key into a new dict could run its code
    rest = {k: v for k, v in d.items() if not cache_part(k, v)}
    # Each cache by identity and, for a plain container (cache_tables, watched), by what it
    # holds: a table filled, an entry replaced at the same length, all show.
    sig = hash(tuple((k, _item_sig(v), _table_sig(v))
                     for k, v in d.items() if k not in rest)) & 0xFFFFFFFF
    return rest, f" cache~{sig:08x}"


def _table_sig(value: object) -> object:
    """A cache table's state without walking into it: its length and, for a dict, its
    version tag (one word read: it moves on every store, an entry replaced by another of the
    same key included); a list or set by the identities of its items, as the token reads
    them (C loops: a table of thousands costs no Python call per item); a dict where tags
    cannot be read by :func:`digest`."""
    if not is_container(value):
        return -1
    n = len(value)  # type: ignore[arg-type]
    if kind(value, dict):
        tag = version_tag(value)  # type: ignore[arg-type]
        return (n, tag) if tag is not None else (n, digest(value, nested=False))
    ids = map(id, value)  # type: ignore[call-overload]
    return n, hash(frozenset(ids) if kind(value, set) else tuple(ids))


def cache_tables(d: object) -> list[Any]:
    """The plain containers among the cache parts of a small dict (:func:`cache_parts`): a
    resolver's ``_cache = {}`` a test fills.  Watched, so that a fill is recorded (LOW: the
    ``_fingerprints.cache_filled``) as the test that made it, and saved, so that a
    key-level replay puts the contents back; never walked into.  Weak containers are left
    out: their entries vanish with a garbage collection, whichever test triggers it."""
    if not kind(d, dict) or len(d) > SMALL:  # type: ignore[arg-type]
        return []
    items = d.items()  # type: ignore[attr-defined]
    if not any(cache_part(k, v) for k, v in items) or not all(type(k) is str for k, _ in items):
        return []
    return [v for k, v in items if is_container(v) and cache_part(k, v)]


def _item_sig(item: object) -> object:
    # Scalars by value (an equal int rebuilt elsewhere is no change); the rest by identity.
    return item if type(item) in SCALARS else id(item)


def item_sigs(items: Sequence[Any]) -> tuple[Any, ...]:
    """``tuple(map(_item_sig, items))``: where every item is a scalar (a namespace's keys,
    a settings table) that is the items themselves, told by one C pass over their types
    instead of a Python call per item."""
    if SCALARS.issuperset(map(type, items)):
        return tuple(items)
    return tuple(map(_item_sig, items))


def _sample(items: Iterable[Any], n: int) -> list[Any]:
    if n <= HUGE:
        return list(items)
    head = list(islice(items, SAMPLE))
    try:
        tail = list(islice(reversed(items), SAMPLE))  # type: ignore[call-overload]
    except TypeError:  # a set has no order to sample from the end
        tail = []
    return head + tail


def digest(value: Any, nested: bool = True,
           project_modules: frozenset[str] = frozenset(), depth: int = DEPTH,
           content: bool = False, walked: list[Any] | None = None) -> str:
    """A content digest of a container: items by value (scalars) or identity (the rest).

    Small containers also fold in the flat signatures of what :func:`reachable` finds below
    them, so ``REGISTRY["a"].append(x)`` and ``DATA["a"][0]["x"] = 2`` change the
    fingerprint of ``REGISTRY`` and ``DATA``.  ``content``: followed by `` eq~...``, the same
    items apart from which builtin objects hold them (:mod:`._content`), where it can be
    told.  ``walked``: a list that receives what :func:`reachable` found below it (the
    objects a caller watches, walked once).
    """
    n = len(value)
    inner: list[Any]
    if kind(value, dict):
        keys = _sample(value, n)
        vals = _sample(value.values(), n)
        sig: object = (item_sigs(keys), item_sigs(vals))
        inner = vals
    elif kind(value, set):
        inner = _sample(value, n)
        sig = frozenset(item_sigs(inner)) if n <= HUGE else item_sigs(inner)
    else:
        inner = _sample(value, n)
        sig = item_sigs(inner)
    below = reachable(value, project_modules, depth) if nested and n <= SMALL else []
    if walked is not None:
        walked += below
    if nested and n <= SMALL:
        sig = (sig, tuple(map(flat_digest, below)))
    text = f"{hash(sig) & 0xFFFFFFFF:08x}"
    if n > HUGE:
        return f"{text} sampled"
    same = content_digest(value, below, SCALARS, HUGE) if content else None
    return f"{text} {same}" if same else text


def flat_digest(value: Any) -> str:
    """``digest(value, nested=False)``; an exact dict's remembered by its version tag
    (:mod:`._flatmemo`)."""
    if type(value) is not dict:
        return digest(value, nested=False)
    tag, known = FLAT.get(value)
    if known is None:
        known = digest(value, nested=False)
        if tag is not None:
            FLAT.keep(value, tag, known)
    return known  # type: ignore[no-any-return]


def depth_below(name: object, value: object) -> int:
    """How deep below ``value`` (bound to ``name``) to watch and digest.

    A cache (by its name or its class's) fills up as code runs, which is what caches are for:
    its own table is watched (one level down), what it holds is not walked into, as inside
    containers (jinja2's lexer cache of lexers would be described again whole with each new
    one).
    """
    return 1 if cache_like(name, value) else DEPTH


def describe(value: object, project_modules: frozenset[str],
             name: object = None, walked: list[Any] | None = None) -> tuple[str, bool]:
    """``(fingerprint, is_data)``; data fingerprints go through the redactor, code ones not.

    A container's digest folds in what :func:`reachable` finds below it, as deep as
    :func:`depth_below` says for ``name``; ``walked`` receives those objects (for a container
    or a namespace: what ``reachable`` of it would list, since the items a digest leaves
    out, its caches, are never walked into; nothing for any other value).
    """
    t = type(value)
    if t in SCALARS or t in (tuple, frozenset):
        return clip(short(value)), True
    if is_container(value):
        text = clip(short(value))
        label = "" if t in (list, dict, set) else f" {t.__qualname__}"
        rest, caches = (cache_parts(value) if kind(value, dict)  # type: ignore[arg-type]
                        else (value, ""))
        # A subclass keeps more than its items (a defaultdict its factory): no eq~.
        sig = digest(rest, True, project_modules, depth_below(name, value), t in BUILTIN,
                     walked)
        return (f"{text} {tag(value)}{label} len={len(value)}"  # type: ignore[arg-type]
                f" ~{sig}{caches}", True)
    ns = attribute_namespace(value, project_modules)
    if ns is not None:
        rest, caches = cache_parts(ns)
        sig = digest(rest, True, project_modules, depth_below(name, value), True, walked)
        return f"<{t.__qualname__} {clip(short(ns))}> {tag(value)} ~{sig}{caches}", True
    text = short(value)
    return f"{clip(text)} {tag(value)}", not kind(value, CODE)
