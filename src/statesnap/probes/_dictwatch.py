"""Cheap "did any of these dicts change?" answers, for the probes that watch many namespaces.

Touching every value of every watched namespace costs ~80 ns per value here (each value's
header is a cache miss), so a project of a few hundred modules would cost milliseconds per
token.  CPython (3.6 to at least 3.13) keeps a version tag in every dict (PEP 509,
``ma_version_tag``) that is set from a process-wide counter on every insertion, replacement and
deletion.  Reading those tags costs ~50 ns per *dict*, whatever its size: one
``operator.itemgetter`` over a ``ctypes`` array laid over the address range of the watched dicts
returns all of them in one C-level call.

This reads interpreter internals, so it is only used after :func:`probe_support` has checked,
in this very process, that the tag sits where expected and changes on every kind of mutation
(dict, class attribute, instance attribute).  Otherwise :func:`version_reader` falls back to
:func:`portable_reader` (length plus the sums of the ids of keys and values), which costs per
value.
The reader keeps the dicts alive, so the memory it reads stays valid while the reader exists.
"""

from __future__ import annotations

import functools
import gc
import operator
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

#: Offsets of ``ma_used`` and ``ma_version_tag`` in ``PyDictObject`` on 64-bit CPython.
_USED_OFFSET = 16
_VERSION_OFFSET = 24

Reader = Callable[[], object]

_support: bool | None = None
#: Lowest address of the window (not 0: ctypes treats a NULL base as "no buffer").
_BASE = 8
_window_obj: Any = None


def _window() -> Any:
    """A ``uint64`` array over the whole address space, created once.

    It is only a base pointer and a length: nothing is copied or touched until an index is
    read.  One fixed type, because ctypes caches every ``c_uint64 * n`` type it makes forever.
    """
    global _window_obj
    if _window_obj is None:
        ctypes = _ctypes()
        length = (sys.maxsize - _BASE) // 8
        array = (ctypes.c_uint64 * length).from_address(_BASE)
        # A memoryview indexes ~25% faster than the ctypes array itself.
        _window_obj = memoryview(array).cast("B").cast("Q")
    return _window_obj


def _ctypes() -> Any:
    try:
        import ctypes
    except ImportError:
        return None
    return ctypes


def _tag(ctypes: Any, d: object) -> int:
    return int(ctypes.c_uint64.from_address(id(d) + _VERSION_OFFSET).value)


def class_dict(cls: type) -> dict[str, Any] | None:
    """The real dict behind ``cls.__dict__`` (a read-only proxy), found through the gc."""
    found = [r for r in gc.get_referents(cls.__dict__) if type(r) is dict]
    return found[0] if len(found) == 1 else None


def _check() -> bool:
    ctypes = _ctypes()
    if ctypes is None or sys.implementation.name != "cpython" or sys.maxsize < 2**63 - 1:
        return False
    if dict.__basicsize__ < _VERSION_OFFSET + 8:
        return False
    probe: dict[str, object] = {"a": object(), "b": 1}
    if ctypes.c_ssize_t.from_address(id(probe) + _USED_OFFSET).value != len(probe):
        return False
    seen = [_tag(ctypes, probe)]
    if _tag(ctypes, probe) != seen[-1]:
        return False

    def moved() -> bool:
        tag = _tag(ctypes, probe)
        ok = tag != seen[-1]
        seen.append(tag)
        return ok

    probe["c"] = 1
    if not moved():
        return False
    probe["a"] = object()
    if not moved():
        return False
    del probe["b"]
    if not moved():
        return False

    class Probe:
        attr = 1

    cdict = class_dict(Probe)
    if cdict is None:
        return False
    before = _tag(ctypes, cdict)
    Probe.attr = 2
    if _tag(ctypes, cdict) == before:
        return False
    inst = Probe()
    inst.x = 1  # type: ignore[attr-defined]
    idict = vars(inst)
    before = _tag(ctypes, idict)
    inst.x = 2  # type: ignore[attr-defined]
    return _tag(ctypes, idict) != before


def probe_support() -> bool:
    """Whether version tags can be read here (checked once per process)."""
    global _support
    if _support is None:
        try:
            _support = _check()
        except Exception:  # any surprise means "not here"
            _support = False
    return _support


def portable_reader(mappings: Sequence[Mapping[Any, Any]]) -> Reader:
    """Per mapping: length and the sums of the ids of its keys and values (costs per item)."""
    items = list(mappings)

    def read() -> object:
        return tuple(
            (len(d), sum(map(id, d)), sum(map(id, d.values()))) for d in items
        )

    return read


def version_reader(dicts: Iterable[dict[Any, Any]]) -> Reader:
    """A callable returning one value per dict, in order, that changes when that dict does.

    Version tags where :func:`probe_support` says so, else :func:`portable_reader`.  Either
    way the result is a flat tuple (for a single dict, the value is repeated).
    """
    items = list(dicts)
    if not items:
        return tuple
    if not probe_support():
        return portable_reader(items)
    # Indices into a window based at _BASE: each is the tag of a dict held alive below.
    indices = [(id(d) + _VERSION_OFFSET - _BASE) // 8 for d in items]
    if len(indices) == 1:
        indices.append(indices[0])  # itemgetter of one index returns a scalar, not a tuple
    # A partial of the itemgetter is called without a Python frame; it carries the dicts so
    # that they (and so the addresses read) live exactly as long as the reader.
    reader = functools.partial(operator.itemgetter(*indices), _window())
    reader.keep_alive = items  # type: ignore[attr-defined]
    return reader
