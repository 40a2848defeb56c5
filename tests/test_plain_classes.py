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


def _as_data_class(obj: Any) -> Any:
    """The same object as a data class of the same name, fields and values (nested too)."""
    from statesnap.base.plain import Plain

    if isinstance(obj, Plain):
        cls = dataclasses.make_dataclass(type(obj).__name__, list(obj._fields))
        return cls(**{name: _as_data_class(getattr(obj, name)) for name in obj._fields})
    if isinstance(obj, list):
        return [_as_data_class(v) for v in obj]
    return obj


def test_a_finding_summarises_and_reads_as_its_data_class_did() -> None:
    import collections

    from statesnap.analysis.findings import Candidate, Finding, ReplayRun

    pair = collections.namedtuple("pair", "a b")
    finding = Finding(
        "t.py::test_v", ["t.py::test_p"], "env", "K", "verified", repro="cmd",
        before={"a": [1, (2, 3)], "n": pair(1, [2])}, after=("x", {"y": None}),
        candidates=[Candidate("t.py::test_p", 0, "env", "K", None, [1], 0.5, ["r"])],
        replays=[ReplayRun("alone", ["t.py::test_v"], "cmd", "passed", restored=["K"])],
        leftovers=[{"path": "p", "writer": "w", "record": "r"}], cleaner_proofs={"c": "cmd"})
    old = _as_data_class(finding)
    summary = finding.to_summary()
    expected = dataclasses.asdict(old) | {"repro_proven": True, "hint": None}
    assert summary == expected and list(summary) == list(expected)
    assert summary["before"]["n"] == pair(1, [2]) and type(summary["before"]["n"]) is pair
    assert summary["before"]["a"] is not finding.before["a"]  # a copy, as asdict made
    assert repr(finding) == repr(old)
    assert Finding.from_json(summary) == finding
    assert Finding("v", [], None, None, "suspected").logs is not Finding(
        "v", [], None, None, "suspected").logs  # no list shared between findings
