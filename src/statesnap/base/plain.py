"""Plain slotted value classes: what ``@dataclass`` gives, without its cost at import.

Creating a data class costs 1 to 2 ms (``dataclasses`` writes its ``__init__``, ``__repr__``
and ``__eq__`` as source text and compiles each with ``exec``; ``frozen`` adds two more and
``slots`` builds the class twice), and a session imports a few dozen of them before its first
test: most of what ``-p statesnap`` added to a small suite (issue 13).  The classes that a
session imports at its start write their ``__init__`` by hand, list their fields in
``_fields`` (and ``__slots__``), and take ``__repr__``, ``__eq__`` and ``__hash__`` from here,
computed as a data class's are: fields in order, equal only to the very same class.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["Frozen", "Plain", "Value"]


class Plain:
    """``__repr__`` from the fields (``Name(a=1, b='x')``), as a data class writes it."""

    __slots__ = ()
    #: The fields in order (a subclass's ``__slots__`` too, which ruff wants sorted).
    _fields: ClassVar[tuple[str, ...]] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({fields})"


class Value(Plain):
    """And ``__eq__``: field by field, equal only to an instance of the very same class.

    Unhashable, as a data class with ``eq`` and not ``frozen`` is."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            assert isinstance(other, Plain)
            return self._values() == other._values()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class Frozen(Value):
    """:class:`Value`'s ``__eq__``, and ``__hash__`` from the fields, as a frozen data class
    has (its fields are ``Final`` for mypy; nothing stops a write at run time)."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]  # Value is unhashable; this is not
        return hash(self._values())
