"""Which objects many small sequences hold, read without making an object per item.

The signature is the pointer array of one fresh list that ``gc.get_referents`` fills with every
item of every watched sequence (the id sum where the layout check fails).  Why and what it
costs: docs/PROBES.md ("Shared readers").
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Callable, Sequence
from typing import Any

from statesnap.probes._dictwatch import WINDOW_BASE, checked_once, memory_window, probe_support

#: ``ob_size`` then ``ob_item`` in ``PyListObject`` on 64-bit CPython.
_HEADER = struct.Struct("=qQ")
_HEADER_OFFSET = 16



def _pointer_bytes(items: list[Any]) -> bytes:
    """The bytes of ``items``' pointer array (``items`` must be a list only we hold)."""
    window = memory_window()
    size, array = _HEADER.unpack_from(window, id(items) + _HEADER_OFFSET - WINDOW_BASE)
    start = array - WINDOW_BASE
    data: bytes = window[start: start + 8 * size].tobytes()
    return data


def _check() -> bool:
    if not probe_support():
        return False
    probe: list[Any] = [object(), "x", 3.5, None]
    if _pointer_bytes(probe) != struct.pack(f"={len(probe)}Q", *map(id, probe)):
        return False
    # And get_referents of lists gives exactly their items (CPython visits a list's items
    # last to first), the same way on every call.
    holder = [list(probe), [probe[0]]]
    got = gc.get_referents(*holder)
    return (sorted(map(id, got)) == sorted(map(id, [*probe, probe[0]]))
            and _pointer_bytes(got) == _pointer_bytes(gc.get_referents(*holder)))


#: Whether pointer arrays can be read here.
supported = checked_once(_check)


def pointers(items: list[Any]) -> bytes | None:
    """The addresses ``items`` (a list only the caller holds) points to, as bytes; None where
    the layout check fails here."""
    return _pointer_bytes(items) if supported() else None


def contents_reader(seqs: Sequence[Any]) -> Callable[[], object]:
    """A callable whose value changes when any item of any of ``seqs`` is replaced."""
    watched = tuple(seqs)
    if not watched:
        return tuple
    if supported():
        def read() -> object:
            return _pointer_bytes(gc.get_referents(*watched))
    else:
        def read() -> object:
            return sum(map(id, gc.get_referents(*watched)))
    return read
