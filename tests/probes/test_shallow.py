"""A project object described again from its last description's memo (``_shallow``): after a
reset that rebinds its names to equal containers (structlog's ``reset_defaults()``), the
fingerprint and the walk are exactly what a full description gives; everything else is
described in full (``again`` answers None)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from statesnap.probes.attributes import describe as D
from statesnap.probes.attributes._shallow import Memo, again, describe_namespace

PROJECT = frozenset({__name__})


class Renderer:
    def __init__(self) -> None:
        self.colors = True
        self.columns = ["a", "b"]


class Holder:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


class Config:
    """structlog's ``_Configuration``: its processors a list of project objects and functions."""

    def __init__(self, processors: list[Any]) -> None:
        self.is_configured = False
        self.processors = processors
        self.context = {"level": 1, "names": ["x"]}
        self.factory = Holder(stream=None)


def _full(value: object) -> tuple[str, list[Any]]:
    below: list[Any] = []
    text, _ = D.describe(value, PROJECT, name="CONFIG", walked=below)
    return text, below


def _memo(value: object) -> Memo:
    below: list[Any] = []
    found = describe_namespace(value, PROJECT, "CONFIG", below)
    assert found is not None
    text, memo = found
    assert (text, below) == _full(value)
    return memo


def _same_walk(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


DEFAULT = [Renderer(), len, Renderer()]


def test_a_namespace_is_described_as_describe_does_with_its_memo() -> None:
    config = Config(DEFAULT[:])
    memo = _memo(config)
    assert memo.ns is config.__dict__ and memo.first == 3  # processors, context, factory's
    # Not a namespace, or one with cache parts: described by describe alone.
    assert describe_namespace([1, 2], PROJECT, "X", []) is None
    assert describe_namespace(3, PROJECT, "X", []) is None
    assert describe_namespace(Holder(cache={}), PROJECT, "X", []) is None


def test_a_reset_to_an_equal_copy_gives_the_full_description_again_and_again() -> None:
    config = Config(DEFAULT[:])
    memo = _memo(config)
    for n in range(3):
        config.processors = DEFAULT[:]  # the reset
        config.context = {"level": 1, "names": config.context["names"]}
        below: list[Any] = []
        found = again(memo, config, PROJECT, below)
        assert found is not None, n
        text, memo = found
        full, walked = _full(config)
        assert text == full
        assert _same_walk(below, walked)
        assert below[0] is config.processors and below[1] is config.context
    # Nothing rebound at all (the same value stored again): the same description.
    config.is_configured = False
    found = again(memo, config, PROJECT, [])
    assert found is not None and found[0] == _full(config)[0]


def _case_scalar(config: Config) -> None:
    config.is_configured = True


def _case_other_items(config: Config) -> None:
    config.processors = [*DEFAULT, Renderer()]


def _case_same_length_other_items(config: Config) -> None:
    config.processors = [DEFAULT[2], DEFAULT[1], DEFAULT[0]]


def _case_dict_other_values(config: Config) -> None:
    config.context = {"level": 2, "names": config.context["names"]}


def _case_subclass(config: Config) -> None:
    class Processors(list[Any]):
        pass

    config.processors = Processors(config.processors)


def _case_name_added(config: Config) -> None:
    config.extra = 1  # type: ignore[attr-defined]


def _case_name_replaced(config: Config) -> None:
    # As many names in the same order, the last one another (bound to the same object).
    kept = config.backup  # type: ignore[attr-defined]
    del config.backup  # type: ignore[attr-defined]
    config.saved = kept  # type: ignore[attr-defined]


def _case_borg(config: Config) -> None:
    # A processor's namespace bound anew: no watched reading moves, the walk must see it.
    config.processors[0].__dict__ = {"colors": False, "columns": []}
    config.processors = config.processors[:]


def _case_old_bound_anew(config: Config) -> None:
    # Another name rebound from an equal copy to the old list itself.
    old = config.processors
    config.processors = old[:]
    config.backup = old  # type: ignore[attr-defined]


def _case_both_to_one(config: Config) -> None:
    # Two names bound to two equal lists, both bound anew to one copy: walked once now.
    copy = config.processors[:]
    config.processors = copy
    config.backup = copy  # type: ignore[attr-defined]


def _case_class_changed(config: Config) -> None:
    class Other(Config):
        pass

    config.__class__ = Other


CASES: list[Callable[[Config], None]] = [
    _case_scalar, _case_other_items, _case_same_length_other_items, _case_dict_other_values,
    _case_subclass, _case_name_added, _case_name_replaced, _case_borg, _case_old_bound_anew,
    _case_both_to_one, _case_class_changed]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__[6:] for c in CASES])
def test_anything_but_equal_containers_is_described_in_full(
        case: Callable[[Config], None]) -> None:
    config = Config([Renderer(), len, Renderer()])
    config.backup = config.processors[:]  # type: ignore[attr-defined]
    memo = _memo(config)
    case(config)
    assert again(memo, config, PROJECT, []) is None


def test_a_second_path_to_the_old_container_is_described_in_full() -> None:
    """The old list also reached deeper (through another object): the new walk meets it there
    again, where the old one had met it first at the top."""
    procs = DEFAULT[:]
    config = Config(procs)
    config.factory = Holder(stream=procs)
    memo = _memo(config)
    assert id(procs) in memo.again
    config.processors = procs[:]
    assert again(memo, config, PROJECT, []) is None
    walked = _full(config)[1]
    assert any(b is procs for b in walked)  # what the shortcut would have missed


def test_a_new_container_already_below_is_described_in_full() -> None:
    """The copy bound now was reached deeper before (through another object): the new walk
    meets it first at the top, and not again below."""
    procs = DEFAULT[:]
    copy = procs[:]
    config = Config(procs)
    config.factory = Holder(stream=copy)
    memo = _memo(config)
    config.processors = copy
    assert again(memo, config, PROJECT, []) is None
    assert sum(b is copy for b in _full(config)[1]) == 1
