"""Which classes gained or lost subclasses, read without calling ``__subclasses__()``.

One word per class per token: CPython's subclass dict of each heap type, its pointer and
version tag, read with the dict tags (docs/PROBES.md, "Subclasses").
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from statesnap.probes._dictwatch import (
    VERSION_OFFSET,
    WINDOW_BASE,
    Versions,
    checked_once,
    class_dict,
    identity,
    load_ctypes,
    memory_window,
    probe_support,
    words,
)

#: Offsets in ``PyTypeObject`` on 64-bit CPython 3.11: ``tp_dict``, ``tp_bases``,
#: ``tp_mro`` (checked against objects we can reach) and ``tp_subclasses``.
_DICT_OFFSET = 264
_BASES_OFFSET = 336
_MRO_OFFSET = 344
_SUBCLASSES_OFFSET = 360


_WORD = struct.Struct("=Q")


def _word(obj: object, offset: int) -> int:
    value: int = _WORD.unpack_from(memory_window(), id(obj) + offset - WINDOW_BASE)[0]
    return value


def _check() -> bool:
    if not probe_support() or int(getattr(type, "__basicsize__", 0)) < _SUBCLASSES_OFFSET + 8:
        return False

    class Base:
        pass

    real = class_dict(Base)
    if (_word(Base, _DICT_OFFSET) != id(real) or _word(Base, _BASES_OFFSET) != id(Base.__bases__)
            or _word(Base, _MRO_OFFSET) != id(Base.__mro__)):
        return False
    if _word(Base, _SUBCLASSES_OFFSET) != 0:
        return False
    one = type("One", (Base,), {})
    first = _word(Base, _SUBCLASSES_OFFSET)
    if not first:
        return False
    owned = _owned(Base)
    if type(owned) is not dict or len(owned) != 1 or id(owned) != first:
        return False
    before = _tag(owned)
    two = type("Two", (Base,), {})
    # Freeing them would need a collection (a class is a cycle), which costs a session more
    # than all its tokens: the slot's other half (back to NULL) is trusted to CPython.
    return len(owned) == 2 and _tag(owned) != before and two is not one


def _tag(d: dict[Any, Any]) -> int:
    return _word(d, VERSION_OFFSET)


def _owned(cls: type) -> Any:
    """The object ``cls``'s subclass slot points to (a new reference), or None."""
    address = _word(cls, _SUBCLASSES_OFFSET)
    if not address:
        return None
    ctypes = load_ctypes()
    return ctypes.cast(address, ctypes.py_object).value


def has_subclasses(cls: type) -> bool:
    """Whether ``cls`` has live subclasses (one word read where the slot can be read)."""
    if supported():
        return bool(_word(cls, _SUBCLASSES_OFFSET))
    return bool(type.__subclasses__(cls))


#: Whether the subclass slot can be read here.
supported = checked_once(_check)


def subclasses_dict(cls: type) -> dict[Any, Any] | None:
    """The dict in which ``cls`` keeps its subclasses, while it has any (None: none, or the
    slot cannot be read here)."""
    if not supported():
        return None
    owned = _owned(cls)
    return owned if type(owned) is dict else None


def _counts(classes: Sequence[type]) -> tuple[int, ...]:
    return tuple(map(len, map(type.__subclasses__, classes)))


def slot_places(classes: Sequence[type]) -> list[tuple[Any, int]] | None:
    """``(class, offset)`` of each class's subclass slot, to read with other words in one
    call (:func:`~statesnap.probes._dictwatch.words_at`); None where it cannot be read."""
    if not supported():
        return None
    return [(cls, _SUBCLASSES_OFFSET) for cls in classes]


def slots(classes: Sequence[type]) -> Versions:
    """A :class:`Versions` over ``classes``' subclass slots: a reading moves when a class gets
    its first subclass or loses its last (more are seen through :func:`subclasses_dict`'s
    version tag); where the slot cannot be read, the number of live subclasses."""
    items = list(classes)
    if not items:
        return Versions(tuple, identity)
    if not supported():
        return Versions(lambda: _counts(items), identity)
    return words(items, _SUBCLASSES_OFFSET)
