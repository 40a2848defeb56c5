"""statesnap.base.plain's classes behave as the data classes they replace: repr, equality,
hashing, each compared with a real data class of the same fields."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from statesnap.base.plain import Frozen, Value


class Point(Value):
    _fields = ("x", "label")
    __slots__ = _fields

    def __init__(self, x: int, label: Any = None) -> None:
        self.x = x
        self.label = label


class OtherPoint(Value):
    _fields = ("x", "label")
    __slots__ = _fields

    def __init__(self, x: int, label: Any = None) -> None:
        self.x = x
        self.label = label


class Key(Frozen):
    _fields = ("probe", "key")
    __slots__ = _fields

    def __init__(self, probe: str, key: str) -> None:
        self.probe = probe
        self.key = key


@dataclasses.dataclass
class DataPoint:
    x: int
    label: Any = None


@dataclasses.dataclass(frozen=True)
class DataKey:
    probe: str
    key: str


def _named(text: str, cls: type, data_cls: type) -> str:
    return text.replace(data_cls.__qualname__, cls.__qualname__)


@pytest.mark.parametrize("args", [(1,), (2, "a"), (3, [1, {"k": None}]), (0, "it's")])
def test_repr_and_eq_as_a_data_class(args: tuple[Any, ...]) -> None:
    plain, data = Point(*args), DataPoint(*args)
    assert repr(plain) == _named(repr(data), Point, DataPoint)
    assert plain == Point(*args) and DataPoint(*args) == data
    assert (plain != Point(args[0] + 1)) == (data != DataPoint(args[0] + 1))


def test_equal_only_to_the_very_same_class() -> None:
    assert Point(1, "a") != OtherPoint(1, "a")
    assert Point(1) != (1, None)
    assert Point(1).__eq__((1, None)) is NotImplemented


def test_a_value_is_unhashable_and_a_frozen_one_hashes_by_its_fields() -> None:
    with pytest.raises(TypeError):
        hash(Point(1))
    with pytest.raises(TypeError):
        hash(DataPoint(1))
    assert hash(Key("env", "A")) == hash(Key("env", "A"))
    assert {Key("env", "A"), Key("env", "A"), Key("env", "B")} == {Key("env", "A"),
                                                                   Key("env", "B")}
    assert repr(Key("env", "A")) == _named(repr(DataKey("env", "A")), Key, DataKey)
    assert Key("env", "A") == Key("env", "A") and Key("env", "A") != Key("env", "B")


def test_slotted_no_stray_attributes() -> None:
    with pytest.raises(AttributeError):
        Point(1).other = 2  # type: ignore[attr-defined]
