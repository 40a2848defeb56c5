"""What kind of value the ``attributes`` probe is looking at, by its real type only.

Scalars (shown and compared by value), the containers watched in place, code against data,
caches (by name, class or kind) and identity tags; never a call into a project object.  The
describing (statesnap.probes.attributes.describe) and the preview texts
(statesnap.probes.attributes.preview) build on these.
"""

from __future__ import annotations

import collections
import functools
import types
import weakref

#: Shown by value and compared by value: no identity tag.
SCALARS: frozenset[type] = frozenset({type(None), bool, int, float, complex, str, bytes})
#: Mutable containers whose contents are watched and restored in place.
LISTLIKE: tuple[type, ...] = (list, collections.deque)
SETLIKE: tuple[type, ...] = (set,)

LRU_TYPE: type = getattr(functools, "_lru_cache_wrapper", type(None))
CALLABLES: tuple[type, ...] = (
    types.FunctionType, types.BuiltinFunctionType, types.MethodType,
    types.MethodDescriptorType, types.WrapperDescriptorType, LRU_TYPE,
)
#: Code rather than data: never redacted.
CODE: tuple[type, ...] = (type, types.ModuleType, staticmethod, classmethod, property,
                           *CALLABLES)


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


CONTAINERS: tuple[type, ...] = (dict, *LISTLIKE, *SETLIKE)
#: The containers themselves, not a subclass.
BUILTIN = frozenset({dict, list, set, collections.deque})


def is_container(value: object) -> bool:
    return issubclass(type(value), CONTAINERS)


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


#: Containers whose entries vanish with their referents: a cache by construction (code cannot
#: rely on what they hold), e.g. dateutil's ``gettz`` keeps its zones in one.
WEAK: tuple[type, ...] = (weakref.WeakValueDictionary, weakref.WeakKeyDictionary, weakref.WeakSet)
#: The same, looked for in a type's ``__mro__`` (one C call): ``issubclass`` with these ABC
#: classes runs ``ABCMeta.__subclasscheck__`` in Python for every value a walk meets.
WEAK_SET = frozenset(WEAK)


def cache_like(name: object, value: object) -> bool:
    """Whether ``value`` is a cache by its name (a key, an attribute), its class's name, or
    its kind (a weak container)."""
    t = type(value)
    return (type(name) is str and "cache" in name.lower()) or (
        t not in SCALARS and ("cache" in t.__name__.lower() or not WEAK_SET.isdisjoint(t.__mro__)))


def cache_part(name: object, value: object) -> bool:
    """A cache held inside a container or a namespace: never a scalar (``cache_size = 8`` and
    ``cache_dir = "/tmp"`` are settings, compared by value like any other)."""
    return type(value) not in SCALARS and cache_like(name, value)
