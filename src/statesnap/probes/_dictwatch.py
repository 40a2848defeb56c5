"""Cheap "did any of these dicts change?" answers, for the probes that watch many namespaces.

Reads CPython's per-dict version tags (PEP 509) in one C-level call, only after
:func:`probe_support` checked in this process that they behave as expected; otherwise
:func:`portable_reader`.  Why and what it costs: docs/PROBES.md ("Shared readers").
"""

from __future__ import annotations

import functools
import gc
import operator
import struct
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from statesnap.base.plain import Frozen

#: Offsets of ``ma_used`` and ``ma_version_tag`` in ``PyDictObject`` on 64-bit CPython.
_USED_OFFSET = 16
VERSION_OFFSET = VERSION_OFFSET = 24

Reader = Callable[[], object]

#: Lowest address of the window (not 0: ctypes treats a NULL base as "no buffer").
WINDOW_BASE = 8
_window_obj: Any = None


def memory_window() -> Any:
    """A byte view of the whole address space (from ``WINDOW_BASE``), created once.

    It is only a base pointer and a length: nothing is copied or touched until an index is
    read.  One fixed type, because ctypes caches every ``c_uint64 * n`` type it makes forever.
    """
    global _window_obj
    if _window_obj is None:
        ctypes = load_ctypes()
        length = (sys.maxsize - WINDOW_BASE) // 8
        array = (ctypes.c_uint64 * length).from_address(WINDOW_BASE)
        _window_obj = memoryview(array).cast("B")
    return _window_obj


def load_ctypes() -> Any:
    try:
        import ctypes
    except ImportError:
        return None
    return ctypes


def _tag(ctypes: Any, d: object) -> int:
    return int(ctypes.c_uint64.from_address(id(d) + VERSION_OFFSET).value)


def class_dict(cls: type) -> dict[str, Any] | None:
    """The real dict behind ``cls.__dict__`` (a read-only proxy), found through the gc."""
    found = [r for r in gc.get_referents(cls.__dict__) if type(r) is dict]
    return found[0] if len(found) == 1 else None


def _check() -> bool:
    ctypes = load_ctypes()
    if ctypes is None or sys.implementation.name != "cpython" or sys.maxsize < 2**63 - 1:
        return False
    if dict.__basicsize__ < VERSION_OFFSET + 8:
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


def checked_once(check: Callable[[], bool]) -> Callable[[], bool]:
    """``check()`` run on the first call only (per process); any surprise means False.

    For the self-checks that guard every read of interpreter internals.
    """
    @functools.cache
    def answer() -> bool:
        try:
            return bool(check())
        except Exception:  # any surprise means "not here"
            return False

    return answer


#: Whether version tags can be read here.
probe_support = checked_once(_check)


def portable_reader(mappings: Sequence[Mapping[Any, Any]]) -> Callable[[], tuple[object, ...]]:
    """Per mapping: length and the sums of the ids of its keys and values (costs per item)."""
    items = list(mappings)

    def read() -> tuple[object, ...]:
        return tuple(
            (len(d), sum(map(id, d)), sum(map(id, d.values()))) for d in items
        )

    return read


class Versions(Frozen):
    """Reads the version tags of a fixed set of dicts.

    ``read()`` is the token: one value per *distinct* dict, in address order.  ``per_item``
    turns a reading into one value per dict as given (a dict may be given twice: two modules
    binding the same registry), to find which ones moved.
    """

    _fields = ("read", "per_item")
    __slots__ = _fields

    def __init__(self, read: Callable[[], tuple[object, ...]],
                 per_item: Callable[[tuple[object, ...]], tuple[object, ...]]) -> None:
        self.read: Final = read
        self.per_item: Final = per_item


def identity(values: tuple[object, ...]) -> tuple[object, ...]:
    return values


def versions(dicts: Iterable[dict[Any, Any]]) -> Versions:
    """A :class:`Versions` over ``dicts``: tags where supported, else the portable signature."""
    items = list(dicts)
    if not items:
        return Versions(tuple, identity)
    if not probe_support():
        return Versions(portable_reader(items), identity)
    return words(items, VERSION_OFFSET)


def words(objects: Sequence[Any], offset: int) -> Versions:
    """A :class:`Versions` reading the 8-byte word at ``offset`` in each of ``objects``."""
    return words_at([(o, offset) for o in objects])


def words_at(places: Sequence[tuple[Any, int]]) -> Versions:
    """A :class:`Versions` reading the 8-byte word at each ``(object, offset)``.

    Only for layouts a self-check in this process has confirmed (a dict's version tag, a
    type's subclass slot).  One precompiled ``struct`` format covers the address range of all
    the words: ``Q`` at each word, ``x`` padding between them.  ``unpack_from`` skips padding
    without touching it, so a single C call reads exactly the words, ~3x faster than
    indexing.
    """
    items = list(places)
    if not items:
        return Versions(tuple, identity)
    wanted = tuple([id(o) + offset for o, offset in items])
    built = _LAYOUTS.get(wanted)
    if built is None:
        built = _LAYOUTS[wanted] = _layout(wanted)
        while len(_LAYOUTS) > _KEEP_LAYOUTS:
            del _LAYOUTS[next(iter(_LAYOUTS))]
    layout, start, per_item = built
    # A partial is called without a Python frame; it carries the objects so that they (and so
    # the addresses read) live exactly as long as the reader.
    read = functools.partial(layout.unpack_from, memory_window(), start)
    read.keep_alive = [o for o, _ in items]  # type: ignore[attr-defined]
    return Versions(read, per_item)


#: Layouts built lately, by the addresses they read.  A watch rebuilt after a fixture
#: configured a library afresh (structlog: once a test) mostly reads the same addresses as
#: before (new objects where the old ones were freed): compiling the format again cost most of
#: the rebuild.  A layout holds only numbers; the objects stay with each reader.
_LAYOUTS: dict[tuple[int, ...], tuple[struct.Struct, int, Callable[[Any], Any]]] = {}
_KEEP_LAYOUTS = 8


def _layout(wanted: tuple[int, ...]) -> tuple[struct.Struct, int, Callable[[Any], Any]]:
    addrs = sorted(set(wanted))
    parts = ["="]  # standard sizes, no alignment: the offsets are exact
    at = addrs[0]
    for addr in addrs:
        if addr > at:
            parts.append(f"{addr - at}x")
        parts.append("Q")
        at = addr + 8
    slot = {a: i for i, a in enumerate(addrs)}
    positions = [slot[a] for a in wanted]
    if len(positions) == 1:
        positions.append(positions[0])  # itemgetter of one index returns a scalar
    return (struct.Struct("".join(parts)), addrs[0] - WINDOW_BASE,
            operator.itemgetter(*positions))


_WORD = struct.Struct("=Q")


def version_tag(d: dict[Any, Any]) -> int | None:
    """``d``'s own version tag (a dict subclass's too: the same layout), None where
    :func:`probe_support` does not hold.  It moves on every store, an entry replaced by
    another of the same key included, and a new dict never has an old one's."""
    if not probe_support():
        return None
    tag: int = _WORD.unpack_from(memory_window(), id(d) + VERSION_OFFSET - WINDOW_BASE)[0]
    return tag


def version_reader(dicts: Iterable[dict[Any, Any]]) -> Reader:
    """A callable whose value changes whenever any of ``dicts`` is mutated."""
    return versions(dicts).read
