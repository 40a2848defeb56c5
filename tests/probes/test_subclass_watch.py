"""The ``attributes`` probe sees a project class's live subclasses come and go.

A class defined inside a test stays among its base's ``__subclasses__()`` until the garbage
collector frees it; a base class that aggregates its subclasses (a registry, an enumeration)
then answers differently in later tests.  Real modules, imported; real subclasses, really
collected.
"""

from __future__ import annotations

import gc
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from module_sources import imported_module
from statesnap.base.redact import Redactor
from statesnap.probes.attributes import _subclasswatch
from statesnap.probes.attributes.probe import AttributesProbe
from statesnap.probes.base import ProbeContext, Severity
from statesnap.state.diff import diff_maps

SOURCE = """
class Registry:
    '''Aggregates the names its subclasses declare.'''
    names = ()

    @classmethod
    def members(cls):
        return sorted(n for sub in cls.__subclasses__() for n in sub.names)

class Plain:
    pass
"""


@pytest.fixture
def mod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    yield from imported_module(tmp_path, monkeypatch, "subproj_", SOURCE)


def _probe(root: Path) -> AttributesProbe:
    probe = AttributesProbe()
    probe.setup(ProbeContext(rootdir=root, redactor=Redactor()))
    return probe


def _define(base: type, name: str) -> type:
    # A class and an instance referring to it: a cycle, freed only by a collection (as a
    # class defined in a test body is).
    sub = type(name, (base,), {"names": (name.lower(),)})
    sub.instance = sub()  # type: ignore[attr-defined]
    return sub


def test_the_subclass_slot_is_read_here() -> None:
    # The fast path is the one the rest of this file exercises (CPython 3.11, 64-bit).
    assert _subclasswatch.supported()


def test_each_subclass_made_or_collected_moves_the_token_and_the_key(
        mod: types.ModuleType, tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    key = f"{mod.__name__}:Registry.__subclasses__"
    clean = probe.read()
    assert key not in clean and f"{mod.__name__}:Plain.__subclasses__" not in clean
    token = probe.token()

    first = _define(mod.Registry, "First")  # the class's first subclass: its slot is set
    assert probe.token() != token
    one = probe.read()
    assert "First" in one[key] and "len=1" in one[key]
    [change] = diff_maps("attributes", clean, one)
    assert (change.key, change.change) == (key, "added")
    assert probe.severity_of(key, None, one[key]) == Severity.MEDIUM

    token = probe.token()
    second = _define(mod.Registry, "Second")  # the slot stays: the dict's tag moves
    assert probe.token() != token
    two = probe.read()
    assert "Second" in two[key] and "len=2" in two[key]
    assert mod.Registry.members() == ["first", "second"]

    token = probe.token()
    del first
    gc.collect()
    assert probe.token() != token
    assert "First" not in probe.read()[key]
    del second
    gc.collect()
    assert key not in probe.read()
    assert diff_maps("attributes", clean, probe.read()) == []


def test_a_same_count_replacement_shows(mod: types.ModuleType, tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    key = f"{mod.__name__}:Registry.__subclasses__"
    kept = _define(mod.Registry, "Kept")
    old = _define(mod.Registry, "Old")
    before = probe.read()[key]
    token = probe.token()
    del old
    gc.collect()
    new = _define(mod.Registry, "New")
    assert probe.token() != token
    after = probe.read()[key]
    assert after != before and "New" in after and "len=2" in after
    assert kept and new


def test_restoring_collects_what_only_cycles_keep(mod: types.ModuleType,
                                                  tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    key = f"{mod.__name__}:Registry.__subclasses__"
    saved = probe.save()
    held = _define(mod.Registry, "Held")
    # Still referenced: it cannot be taken out of the list, and restore says so.
    assert probe.restore(saved, [key]) == []
    assert mod.Registry.members() == ["held"]
    gc.disable()  # no automatic collection between the two lines below
    try:
        del held
        # Only its own cycle keeps it now: restoring frees it.
        assert mod.Registry.members() == ["held"]
        assert probe.restore(saved, [key]) == [key]
    finally:
        gc.enable()
    assert mod.Registry.members() == []
    assert key not in probe.read()


def test_the_hint_names_the_base_class(mod: types.ModuleType, tmp_path: Path) -> None:
    probe = _probe(tmp_path)
    hint = probe.hint(f"{mod.__name__}:Registry.__subclasses__", "added") or ""
    assert f"{mod.__name__}.Registry.__subclasses__()" in hint, hint
    assert "module level" in hint, hint
