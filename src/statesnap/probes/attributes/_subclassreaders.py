"""Whether a module's code looks at classes' subclasses (``__subclasses__``).

A class defined inside a test stays among its base's ``__subclasses__()`` until the garbage
collector frees it.  That matters to a later test only where some code asks a class for its
subclasses (a registry or an enumeration that aggregates them): the ``attributes`` probe rates
a subclass change MEDIUM where the project's code names ``__subclasses__``, LOW elsewhere
(click and jinja2 tests define subclasses of the libraries' classes all the time, and nothing
there reads them).  Read from code objects, never by calling or importing anything.
"""

from __future__ import annotations

import types
from typing import Any

NAME = "__subclasses__"


def _code_names_it(code: types.CodeType) -> bool:
    """``__subclasses__`` as a name (``cls.__subclasses__()``, ``type.__subclasses__(c)``)
    or a constant (``getattr(cls, "__subclasses__")``), in ``code`` or a function inside."""
    if NAME in code.co_names or NAME in code.co_consts:
        return True
    return any(type(c) is types.CodeType and _code_names_it(c) for c in code.co_consts)


def _function_names_it(func: object) -> bool:
    seen = 0
    while seen < 8:  # through functools.wraps layers, a few at most
        if type(func) is types.FunctionType and _code_names_it(func.__code__):
            return True
        ns = getattr(type(func), "__dict__", {}).get("__dict__")
        inner = ns.__get__(func).get("__wrapped__") if ns is not None else None
        if inner is None:
            return False
        func, seen = inner, seen + 1
    return False


def _member_names_it(value: object) -> bool:
    t = type(value)
    if t in (staticmethod, classmethod):
        return _function_names_it(value.__func__)  # type: ignore[attr-defined]
    if t is property:
        return any(f is not None and _function_names_it(f)
                   for f in (value.fget, value.fset, value.fdel))  # type: ignore[attr-defined]
    return _function_names_it(value)


def _class_names_it(cls: type, module: str, seen: set[int]) -> bool:
    if id(cls) in seen:
        return False
    seen.add(id(cls))
    for member in list(vars(cls).values()):
        if issubclass(type(member), type):
            if vars(member).get("__module__") == module and _class_names_it(member, module, seen):
                return True
        elif _member_names_it(member):
            return True
    return False


def names_subclasses(name: str, ns: dict[str, Any]) -> bool:
    """Whether the functions and methods defined in module ``name`` (namespace ``ns``) name
    ``__subclasses__``: module-level code that ran at import cannot run again, so it is not
    looked at."""
    seen: set[int] = set()
    for value in list(ns.values()):
        if issubclass(type(value), type):
            if vars(value).get("__module__") == name and _class_names_it(value, name, seen):
                return True
        elif _member_names_it(value):
            return True
    return False
