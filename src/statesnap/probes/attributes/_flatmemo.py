"""What a dict's own items digest to, remembered by the dict's version tag.

A dict's flat ``~`` signature (:func:`.describe.digest` with ``nested=False``: its items by
value or identity) is a function of its keys and values alone, and so are its ``eq~`` items
(:mod:`._content`) where no key or value is a tuple or a builtin container (those are taken
through the walk: their place in it, their own items).  A dict's version tag moves on every
store, and a new dict never gets an old one's (:mod:`statesnap.probes._dictwatch`), so
``(id, tag)`` names one state of one dict: what was computed for it holds while its tag is the
same.  structlog's autouse reset puts a new processor list in ``_CONFIG`` before every test,
and its description walks the same ten dicts below it again each time, none of them moved.

Only exact dicts (a subclass's iteration may run code), and only where tags can be read.
Nothing is held but numbers and results: a dict freed and another made at its address has
another tag.
"""

from __future__ import annotations

import collections
import functools
import struct
from collections.abc import Callable
from typing import Any

from statesnap.probes._dictwatch import VERSION_OFFSET, WINDOW_BASE, memory_window, probe_support

#: Entries kept before the memo starts again (each a few small objects).
KEEP = 4096
#: Key and value types whose ``eq~`` signature depends on the walk around the dict.
OPEN = frozenset({tuple, list, dict, set, collections.deque})


@functools.cache
def _tag_reader() -> Callable[[int], tuple[int]] | None:
    """``reader(id(d) + _AT)[0]`` is ``_dictwatch.version_tag(d)`` (one C call rather than
    three Python ones: this runs for each dict below each attribute described); None where
    tags cannot be read."""
    if not probe_support():
        return None
    return functools.partial(struct.Struct("=Q").unpack_from, memory_window())


_AT = VERSION_OFFSET - WINDOW_BASE


class Memo:
    """``id(d) -> (tag, result)`` for exact dicts."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[int, Any]] = {}

    def get(self, d: dict[Any, Any]) -> tuple[int | None, Any]:
        """``(tag, result)``: the result where ``d`` is in the state it was computed for,
        else None (with the tag to :meth:`keep` it under; None where tags cannot be read)."""
        read = _tag_reader()
        if read is None:
            return None, None
        tag = read(id(d) + _AT)[0]
        known = self._known.get(id(d))
        if known is not None and known[0] == tag:
            return tag, known[1]
        return tag, None

    def keep(self, d: dict[Any, Any], tag: int, result: Any) -> None:
        if len(self._known) >= KEEP:
            self._known.clear()
        self._known[id(d)] = (tag, result)

    def clear(self) -> None:
        self._known.clear()


def closed(d: dict[Any, Any]) -> bool:
    """No key or value of ``d`` whose ``eq~`` signature depends on the walk (two C passes)."""
    return OPEN.isdisjoint(map(type, d)) and OPEN.isdisjoint(map(type, d.values()))


#: Flat ``~`` digests (:func:`.describe.flat_digest`).
FLAT = Memo()
#: ``eq~`` items of closed dicts (:meth:`._content._Items.flat`).
CONTENT = Memo()
