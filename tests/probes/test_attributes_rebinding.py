"""A module's or a class's namespace written to without a change of what it binds.

A dict's version tag moves on every store: click's test runner swaps module functions and puts
them back, unittest sets ``tearDown_exceptions`` on a class as its last test ends.  The probe
then skips describing the part again; these tests pin that what it skips is only what would
describe the same, and that a real change in the same interval is still seen.  Real modules,
written to a temporary package and imported.
"""

from __future__ import annotations

import itertools
import json
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from module_sources import imported_module
from statesnap.base.redact import Redactor
from statesnap.probes.attributes.probe import AttributesProbe
from statesnap.probes.attributes.scan import REWRITES_TO_BINDINGS
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
    yield from imported_module(tmp_path, monkeypatch, f"rebindproj{next(_counter)}_", SOURCE)


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


def _swap_and_put_back(probe: AttributesProbe, mod: types.ModuleType, times: int) -> None:
    """What click's test runner does around each invocation, read after each (as the
    snapshotter reads: the token moved, so the map)."""
    for _ in range(times):
        original = mod.helper
        mod.helper = mod.other
        mod.helper = original
        probe.token()
        probe.read()


def test_a_namespace_swapped_again_and_again_stops_moving_the_tokens(
        probe: AttributesProbe, mod: types.ModuleType) -> None:
    _swap_and_put_back(probe, mod, REWRITES_TO_BINDINGS)
    token, light, before = probe.token(), probe.light_token(), dict(probe.read())
    _swap_and_put_back(probe, mod, 3)
    assert probe.token() == token and probe.light_token() == light
    assert probe.read() == before


@pytest.mark.parametrize("light", [False, True])
def test_a_namespace_watched_by_its_bindings_still_shows_every_rebinding(
        probe: AttributesProbe, mod: types.ModuleType, light: bool) -> None:
    read_token = probe.light_token if light else probe.token
    _swap_and_put_back(probe, mod, REWRITES_TO_BINDINGS)
    before = dict(probe.read())
    original = mod.helper
    seen = [read_token()]

    def moved() -> set[str]:
        token = read_token()
        assert token != seen[-1], "a rebinding left the token where it was"
        seen.append(token)
        return {c.key.partition(":")[2] for c in diff_maps("attributes", before, probe.read())}

    mod.helper = mod.other
    assert moved() == {"helper"}
    # Functions made and dropped between two reads: the one bound last may sit at the
    # address of one bound before; identities are compared with the objects described.
    for _ in range(3):
        mod.helper = (lambda: 3)
        mod.helper = (lambda: 4)
        assert moved() == {"helper"}
    mod.helper = original
    assert moved() == set()
    mod.added = 1
    assert moved() == {"added"}
    del mod.added
    assert moved() == set()
    mod.LIMIT = 11
    assert moved() == {"LIMIT"}
    mod.LIMIT = 10
    assert moved() == set()
    # Still by bindings: a swap put back moves nothing.
    token = read_token()
    _swap_and_put_back(probe, mod, 1)
    assert read_token() == token


def test_a_container_filled_while_the_namespace_is_swapped_is_seen(
        probe: AttributesProbe, mod: types.ModuleType) -> None:
    _swap_and_put_back(probe, mod, REWRITES_TO_BINDINGS)
    before = dict(probe.read())
    token = probe.light_token()
    original = mod.helper
    mod.helper = mod.other
    mod.REGISTRY.append("x")
    mod.helper = original
    assert probe.light_token() != token
    assert _changed(probe, before) == {"REGISTRY"}


def test_a_rebinding_described_outside_a_snapshot_still_moves_the_next_token(
        probe: AttributesProbe, mod: types.ModuleType) -> None:
    # save() describes what moved (restore mode) without the snapshotter seeing a token: the
    # next token must not match the one taken before the rebinding.
    _swap_and_put_back(probe, mod, REWRITES_TO_BINDINGS)
    token, light = probe.token(), probe.light_token()
    mod.helper = mod.other
    probe.save()
    assert probe.token() != token and probe.light_token() != light


RUNNER_HELPER = """
def prompt():
    return "real"

def fake_prompt():
    return "fake"

def invoke():
    # click's CliRunner: swap a module function and put it back around each invocation.
    global prompt
    real = prompt
    prompt = fake_prompt
    try:
        return prompt()
    finally:
        prompt = real
"""

RUNNER_TESTS = """
import runner

def test_a_invokes():
    assert runner.invoke() == "fake"
    assert runner.invoke() == "fake"

def test_b_invokes():
    assert runner.invoke() == "fake"

def test_b2_invokes():
    assert runner.invoke() == "fake"

def test_c_leaves_the_fake_bound():
    runner.invoke()
    runner.prompt = lambda: "leaked"

def test_d_expects_the_real_one():
    runner.invoke()
    assert runner.prompt() == "real"
"""


def test_plugin_names_a_rebinding_left_in_a_namespace_swapped_by_every_test(
        pytester: pytest.Pytester) -> None:
    # From test_b on, the namespace is watched by its bindings (test_b2 reads it so for
    # the first time, after the rebuilt watch): test_c's leak must still be the key.
    pytester.makepyfile(runner=RUNNER_HELPER, test_runner=RUNNER_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-json", "out.json",
        "--statesnap-probes", "attributes")
    result.assert_outcomes(passed=4, failed=1)
    summary = json.loads((pytester.path / "out.json").read_text())
    leaks = {t["nodeid"].split("::")[1]: [x["key"] for x in t["leaks"]] for t in summary["tests"]}
    assert leaks == {"test_a_invokes": [], "test_b_invokes": [], "test_b2_invokes": [],
                     "test_c_leaves_the_fake_bound": ["runner:prompt"],
                     "test_d_expects_the_real_one": []}
    finding = next(f for f in summary["findings"]
                   if f["victim"].endswith("test_d_expects_the_real_one"))
    assert finding["key"] == "runner:prompt"
    assert finding["polluters"] == ["test_runner.py::test_c_leaves_the_fake_bound"]
