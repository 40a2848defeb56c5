"""Readable fingerprints of module and class attributes, for the ``attributes`` probe.

Never calls a project object's ``__repr__``, ``__eq__`` or ``__getattr__``: only builtin scalars
and containers are shown by value; identity tags and content digests show rebinding and
in-place changes.  See docs/PROBES.md.
"""

from __future__ import annotations

import collections
import functools
import types
import weakref
from collections.abc import Iterable
from itertools import islice
from typing import Any

from statesnap.probes._dictwatch import version_tag
from statesnap.probes.attributes._content import content_digest
from statesnap.probes.attributes._flatmemo import FLAT
from statesnap.probes.attributes._threadlocal import LOCAL, is_local, local_dict
from statesnap.probes.base import fingerprint_repr

#: Shown by value and compared by value: no identity tag.
SCALARS: frozenset[type] = frozenset({type(None), bool, int, float, complex, str, bytes})
#: Mutable containers whose contents are watched and restored in place.
LISTLIKE: tuple[type, ...] = (list, collections.deque)
SETLIKE: tuple[type, ...] = (set,)
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
_PREVIEW_ITEMS = 6
_TEXT_LIMIT = 160

LRU_TYPE: type = getattr(functools, "_lru_cache_wrapper", type(None))
_CALLABLES: tuple[type, ...] = (
    types.FunctionType, types.BuiltinFunctionType, types.MethodType,
    types.MethodDescriptorType, types.WrapperDescriptorType, LRU_TYPE,
)
#: Code rather than data: never redacted.
_CODE: tuple[type, ...] = (type, types.ModuleType, staticmethod, classmethod, property,
                           *_CALLABLES)


def tag(obj: object) -> str:
    """A short identity tag; two live objects never share one within a snapshot's lifetime."""
    return f"#{id(obj) & 0xFFFFFF:06x}"


def qualified(obj: object) -> str:
    """``module.qualname`` of a class or a callable (their own, safe attributes)."""
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None)
    if not isinstance(name, str):
        return type(obj).__qualname__
    return f"{module}.{name}" if isinstance(module, str) else name


def kind(value: object, cls: type | tuple[type, ...]) -> bool:
    """``isinstance`` by the real type only.

    ``isinstance`` also asks ``value.__class__``, and a ``Mock(spec=dict)`` answers ``dict``:
    then ``len()`` of it raises.  Module-level mocks are common in test modules.
    """
    return issubclass(type(value), cls)


_CONTAINERS: tuple[type, ...] = (dict, *LISTLIKE, *SETLIKE)
#: The containers themselves, not a subclass.
_BUILTIN = frozenset({dict, list, set, collections.deque})


def is_container(value: object) -> bool:
    return issubclass(type(value), _CONTAINERS)


def is_cache(value: object) -> bool:
    """An ``lru_cache``/``cache`` wrapper (C or the pure-Python fallback)."""
    if type(value) is LRU_TYPE:
        return True
    if kind(value, types.FunctionType):
        ns = value.__dict__
        return callable(ns.get("cache_info")) and callable(ns.get("cache_clear"))
    return False


def unwrap_descriptor(value: object) -> object:
    """The function inside a staticmethod/classmethod (where a method cache lives)."""
    if kind(value, (staticmethod, classmethod)):
        return value.__func__  # type: ignore[attr-defined]
    return value


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


#: Containers whose entries vanish with their referents: a cache by construction (code cannot
#: rely on what they hold), e.g. dateutil's ``gettz`` keeps its zones in one.
WEAK: tuple[type, ...] = (weakref.WeakValueDictionary, weakref.WeakKeyDictionary, weakref.WeakSet)
#: The same, looked for in a type's ``__mro__`` (one C call): ``issubclass`` with these ABC
#: classes runs ``ABCMeta.__subclasscheck__`` in Python for every value a walk meets.
_WEAK_SET = frozenset(WEAK)


def cache_like(name: object, value: object) -> bool:
    """Whether ``value`` is a cache by its name (a key, an attribute), its class's name, or
    its kind (a weak container)."""
    t = type(value)
    return (type(name) is str and "cache" in name.lower()) or (
        t not in SCALARS and ("cache" in t.__name__.lower() or not _WEAK_SET.isdisjoint(t.__mro__)))


def cache_part(name: object, value: object) -> bool:
    """A cache held inside a container or a namespace: never a scalar (``cache_size = 8`` and
    ``cache_dir = "/tmp"`` are settings, compared by value like any other)."""
    return type(value) not in SCALARS and cache_like(name, value)


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


def _children(obj: Any, project_modules: frozenset[str]) -> list[Any]:
    """The containers and watched namespaces directly inside a small container."""
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
    return out


def reachable(value: Any, project_modules: frozenset[str], depth: int = DEPTH) -> list[Any]:
    """Containers and project-object namespaces below ``value`` (not itself), breadth first.

    Up to ``depth`` levels and :data:`BUDGET` objects, only through containers of at most
    :data:`SMALL` items; each object once (shared or cyclic structures end).
    """
    out: list[Any] = []
    seen = {id(value)}
    level = [value]
    for _ in range(depth):
        below: list[Any] = []
        for obj in level:
            for c in _children(obj, project_modules):
                if id(c) in seen:
                    continue
                seen.add(id(c))
                out.append(c)
                below.append(c)
                if len(out) >= BUDGET:
                    return out
        if not below:
            break
        level = below
    return out


def _ends(items: Iterable[Any], n: int, ordered: bool) -> tuple[list[Any], list[Any]]:
    """The items a preview shows: all of a short container; of a long ordered one its first
    and last few, since registries and logs grow at the end (marshmallow's class registry, a
    list appended to): the entries a test added are what the user needs to see."""
    if n <= _PREVIEW_ITEMS or not ordered:
        return list(islice(items, _PREVIEW_ITEMS)), []
    half = _PREVIEW_ITEMS // 2
    tail = list(islice(reversed(items), half))  # type: ignore[call-overload]
    tail.reverse()
    return list(islice(items, _PREVIEW_ITEMS - half)), tail


def _entry(k: object, v: object, depth: int) -> str:
    return f"{short(k, depth + 1)}: {_opaque(v) if cache_part(k, v) else short(v, depth + 1)}"


def short(value: object, depth: int = 0) -> str:
    """A safe short text: builtin scalars and containers by value, the rest by type."""
    t = type(value)
    if t in SCALARS:
        return fingerprint_repr(value, 60)
    if depth < 2 and t in (list, tuple, set, frozenset, collections.deque):
        items: Iterable[Any] = value  # type: ignore[assignment]
        n = len(value)  # type: ignore[arg-type]
        head, tail = _ends(items, n, t not in (set, frozenset))
        parts = [_opaque(v) if cache_part(None, v) else short(v, depth + 1) for v in head]
        if n > _PREVIEW_ITEMS:
            parts.append(f"… +{n - len(head) - len(tail)}")
            parts += [_opaque(v) if cache_part(None, v) else short(v, depth + 1) for v in tail]
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
        head, tail = _ends(d.items(), len(d), True)
        parts = [_entry(k, v, depth) for k, v in head]
        if len(d) > _PREVIEW_ITEMS:
            parts.append(f"… +{len(d) - len(head) - len(tail)}")
            parts += [_entry(k, v, depth) for k, v in tail]
        return "{" + ", ".join(parts) + "}"
    if kind(value, types.ModuleType):
        return f"module {value.__name__}"  # type: ignore[attr-defined]
    if kind(value, type):
        return f"class {qualified(value)}"
    if kind(value, _CALLABLES):
        return f"{t.__name__} {qualified(value)}"
    if kind(value, (staticmethod, classmethod)):
        return f"{t.__name__} {qualified(value.__func__)}"  # type: ignore[attr-defined]
    enum_base = getattr(t, "_member_map_", None)
    if isinstance(enum_base, dict):
        return f"{t.__qualname__}.{getattr(value, '_name_', '?')}"
    return f"<{t.__module__}.{t.__qualname__}>"


def _opaque(value: object) -> str:
    """A cache inside a container or a namespace, by its type only.

    Its contents are not watched (see :func:`_children`): shown, they would change unseen by
    the token, and the next watched change of the owner would be recorded with a ``before``
    holding what earlier tests put in the cache.
    """
    t = type(value)
    name = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    return f"<{name}>"


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


def _item_sigs(items: list[Any]) -> tuple[Any, ...]:
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
        sig: object = (_item_sigs(keys), _item_sigs(vals))
        inner = vals
    elif kind(value, set):
        inner = _sample(value, n)
        sig = frozenset(_item_sigs(inner)) if n <= HUGE else _item_sigs(inner)
    else:
        inner = _sample(value, n)
        sig = _item_sigs(inner)
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


def _clip(text: str, limit: int = _TEXT_LIMIT) -> str:
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
    return f"{_clip(f'[{names}]')} len={len(subs)} ~{sig:08x}"


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
        return _clip(short(value)), True
    if is_container(value):
        text = _clip(short(value))
        label = "" if t in (list, dict, set) else f" {t.__qualname__}"
        rest, caches = (cache_parts(value) if kind(value, dict)  # type: ignore[arg-type]
                        else (value, ""))
        # A subclass keeps more than its items (a defaultdict its factory): no eq~.
        sig = digest(rest, True, project_modules, depth_below(name, value), t in _BUILTIN,
                     walked)
        return (f"{text} {tag(value)}{label} len={len(value)}"  # type: ignore[arg-type]
                f" ~{sig}{caches}", True)
    ns = attribute_namespace(value, project_modules)
    if ns is not None:
        rest, caches = cache_parts(ns)
        sig = digest(rest, True, project_modules, depth_below(name, value), True, walked)
        return f"<{t.__qualname__} {_clip(short(ns))}> {tag(value)} ~{sig}{caches}", True
    text = short(value)
    return f"{_clip(text)} {tag(value)}", not kind(value, _CODE)
