"""A module's or a class's namespace written to without a change of what it binds.

A dict's version tag moves on every store: click's test runner swaps module functions and puts
them back, unittest sets ``tearDown_exceptions`` on a class as its last test ends.  The probe
then skips describing the part again; these tests pin that what it skips is only what would
describe the same, and that a real change in the same interval is still seen.  Real modules,
written to a temporary package and imported.
"""

from __future__ import annotations

import importlib
import itertools
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from statesnap.base.redact import Redactor
from statesnap.probes.attributes import AttributesProbe
from statesnap.probes.base import ProbeContext
from statesnap.state.diff import diff_maps

SOURCE = """
import unittest

REGISTRY = []
LIMIT = 10

def helper():
    return 1

def other():
    return 2

class Widget:
    count = 0
    items = []

class Case(unittest.TestCase):
    def test_it(self):
        pass
"""

_counter = itertools.count()


@pytest.fixture
def mod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    name = f"rebindproj{next(_counter)}_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(SOURCE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield importlib.import_module(name)
    sys.modules.pop(name, None)


@pytest.fixture
def probe(tmp_path: Path, mod: types.ModuleType) -> AttributesProbe:
    p = AttributesProbe()
    p.setup(ProbeContext(rootdir=tmp_path, redactor=Redactor()))
    p.read()
    return p


def _changed(probe: AttributesProbe, before: dict[str, Any]) -> set[str]:
    """Keys changed since ``before``, read the way the snapshotter reads: token first."""
    probe.token()
    return {c.key.partition(":")[2] for c in diff_maps("attributes", before, probe.read())}


def test_a_function_swapped_and_put_back_is_no_change(probe: AttributesProbe,
                                                      mod: types.ModuleType) -> None:
    before = dict(probe.read())
    token = probe.token()
    original = mod.helper
    mod.helper = mod.other
    mod.helper = original
    assert probe.token() != token  # the namespace's tag moved...
    assert _changed(probe, before) == set()  # ...but it binds what it did
    # Deleted and bound again (the name moves to the end of the dict): the same.
    del mod.helper
    mod.helper = original
    assert _changed(probe, before) == set()


def test_a_real_rebinding_after_a_skipped_one_is_seen_and_so_is_its_undoing(
        probe: AttributesProbe, mod: types.ModuleType) -> None:
    before = dict(probe.read())
    original = mod.helper
    mod.helper = mod.other
    mod.helper = original
    assert _changed(probe, before) == set()
    mod.helper = mod.other
    assert _changed(probe, before) == {"helper"}
    mod.helper = original
    assert _changed(probe, before) == set()


def test_a_swap_put_back_does_not_hide_a_container_filled_meanwhile(
        probe: AttributesProbe, mod: types.ModuleType) -> None:
    before = dict(probe.read())
    original = mod.helper
    mod.helper = mod.other
    mod.REGISTRY.append("x")
    mod.helper = original
    assert _changed(probe, before) == {"REGISTRY"}


def test_a_class_attribute_set_to_the_same_object_is_no_change_and_another_is(
        probe: AttributesProbe, mod: types.ModuleType) -> None:
    before = dict(probe.read())
    mod.Widget.count = 0
    assert _changed(probe, before) == set()
    mod.Widget.count = 5
    assert _changed(probe, before) == {"Widget.count"}
    mod.Widget.count = 0
    assert _changed(probe, before) == set()


def test_a_class_written_to_with_its_list_filled_in_the_same_interval(
        probe: AttributesProbe, mod: types.ModuleType) -> None:
    before = dict(probe.read())
    mod.Widget.count = 0  # the class dict's tag moves, nothing rebound
    mod.Widget.items.append(1)
    assert _changed(probe, before) == {"Widget.items"}


def test_unittest_bookkeeping_on_a_case_is_skipped_but_a_real_attribute_is_not(
        probe: AttributesProbe, mod: types.ModuleType) -> None:
    before = dict(probe.read())
    mod.Case.tearDown_exceptions = []  # what doClassCleanups does after tearDownClass
    assert _changed(probe, before) == set()
    mod.Case.flag = True
    assert _changed(probe, before) == {"Case.flag"}
