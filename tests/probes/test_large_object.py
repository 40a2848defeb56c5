"""A module-level project object with many attributes: each attribute is a key of its own.

A factory or settings singleton with more attributes than a namespace is digested whole for
(a serializer's forty options) was not watched at all: a test that set one option and left it
was no leak.  Each attribute is now keyed like a class attribute (``mod:OBJ.attr``), once, in
the module of its class (another module's ``from mod import OBJ`` is the same object), and a
key-level replay puts the one attribute back.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from large_object_sources import BAD_STYLE, FACTORY

TESTS = BAD_STYLE + """

def test_makes_an_id():
    assert FACTORY.make_id().startswith("obj-"), "no id made"
"""


def _write(root: Path) -> None:
    (root / "factorymod.py").write_text(textwrap.dedent(FACTORY))
    (root / "test_factory.py").write_text(textwrap.dedent(TESTS))


def test_each_attribute_of_a_large_module_object_is_a_key(pytester: pytest.Pytester) -> None:
    _write(pytester.path)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "--statesnap-json=out.json", "--statesnap-probes=attributes")
    result.assert_outcomes(passed=1, failed=1)
    summary = json.loads((pytester.path / "out.json").read_text())
    tests = {t["nodeid"].split("::")[1]: t for t in summary["tests"]}
    # Once, under the class's module: the test module's import of the same object adds none.
    assert [(x["key"], x["severity"]) for x in tests["test_rejects_a_bad_style"]["leaks"]] == [
        ("factorymod:FACTORY.id_style", "high")]
    (f,) = summary["findings"]
    assert f["victim"] == "test_factory.py::test_makes_an_id"
    assert f["status"] == "verified", f
    assert f["polluters"] == ["test_factory.py::test_rejects_a_bad_style"]
    assert (f["probe"], f["key"]) == ("attributes", "factorymod:FACTORY.id_style")
    assert f["hint_proven"] is True, f
    assert "monkeypatch.setattr(factorymod.FACTORY, 'id_style'" in f["hint"], f


def test_the_pair_fails_under_plain_pytest_and_the_victim_passes_alone(
        pytester: pytest.Pytester) -> None:
    _write(pytester.path)
    alone = pytester.runpytest_subprocess("-p", "no:statesnap", "test_factory.py::test_makes_an_id")
    alone.assert_outcomes(passed=1)
    pair = pytester.runpytest_subprocess(
        "-p", "no:statesnap", "test_factory.py::test_rejects_a_bad_style",
        "test_factory.py::test_makes_an_id")
    pair.assert_outcomes(passed=1, failed=1)
    assert "unknown id style 'broken'" in pair.stdout.str()


def test_a_counter_attribute_changed_in_a_test_is_its_own_key(
        pytester: pytest.Pytester) -> None:
    # Making an id moves the serial: a change of that attribute only, not of the object's
    # other forty.
    (pytester.path / "factorymod.py").write_text(textwrap.dedent(FACTORY))
    pytester.makepyfile(test_serial="""
        from factorymod import FACTORY

        def test_makes_two():
            FACTORY.make_id()
            FACTORY.make_id()
    """)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "--statesnap-json=out.json", "--statesnap-probes=attributes")
    result.assert_outcomes(passed=1)
    (t,) = json.loads((pytester.path / "out.json").read_text())["tests"]
    assert [(x["key"], x["before"], x["after"]) for x in t["leaks"]] == [
        ("factorymod:FACTORY.serial", "0", "2")]
