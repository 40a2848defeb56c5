"""Which objects many small sequences hold, read without making an object per item.

The ``attributes`` probe must see a module-level list changed in place at the same length
(``REGISTRY[0] = stub``).  Summing the ids of every item costs ~45 ns per item here (an int
object is made for each), ~50 µs per test for a project with a thousand list items.

Instead, ``gc.get_referents(*seqs)`` copies every item pointer of every watched sequence into
one fresh list, in one C call (a few ns per item), and the bytes of that list's pointer array
are the signature: they change whenever any item's identity does.  The fresh list is ours
alone (no other thread can reach it, and we hold it), so reading its array through the
address-space view of :mod:`._dictwatch` is as safe as reading a dict's version tag.  A
watched sequence's own memory is never read.  Where the layout check fails (not CPython, not
64-bit), the signature is the id sum over the same list.  The items are only held for the
duration of the call.
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
