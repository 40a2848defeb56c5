"""A test that imports a package afresh and puts the original modules back leaks nothing.

A real pytest run: a fixture takes a package out of ``sys.modules``, the test imports it
again (new module objects, a default instance that is not the one other tests changed), and
the teardown puts the original modules back.  Over the whole test nothing changed, so it
records no leak, and the real polluter of a later victim -- which changed the original default
instance in place -- is the one named, keyed and verified, its printed pair failing under
plain pytest.  A re-import left in place is a change, and stays one.
"""

from __future__ import annotations

import json
import shlex

import pytest

MODULE = """
class Options:
    def __init__(self):
        self.strict = False


DEFAULTS = Options()
"""

TESTS = """
import importlib
import sys

import pytest

import shop.options


@pytest.fixture
def fresh_import():
    kept = {n: m for n, m in sys.modules.items() if n == "shop" or n.startswith("shop.")}
    for name in kept:
        del sys.modules[name]
    yield
    for name in [n for n in sys.modules if n == "shop" or n.startswith("shop.")]:
        del sys.modules[name]
    sys.modules.update(kept)


def test_turns_strict_on():
    shop.options.DEFAULTS.strict = True


def test_imports_the_package_afresh(fresh_import):
    again = importlib.import_module("shop.options")
    assert again is not shop.options and again.DEFAULTS.strict is False


def test_defaults_are_lenient():
    assert shop.options.DEFAULTS.strict is False
"""

LEFT_IN_PLACE = """
import importlib
import sys

import shop.options


def test_replaces_the_module():
    del sys.modules["shop.options"]
    importlib.import_module("shop.options")
"""


def _project(pytester: pytest.Pytester) -> None:
    pytester.mkpydir("shop")
    pytester.path.joinpath("shop", "options.py").write_text(MODULE)


def test_put_back_reimport_leaks_nothing_and_the_polluter_is_proven(
        pytester: pytest.Pytester) -> None:
    _project(pytester)
    pytester.makepyfile(test_reimport=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "statesnap",
                                           "--statesnap-json=out.json")
    result.assert_outcomes(passed=2, failed=1)
    data = json.loads((pytester.path / "out.json").read_text())
    tests = {t["nodeid"].split("::")[1]: t for t in data["tests"]}
    assert tests["test_imports_the_package_afresh"]["leaked"] is False
    assert tests["test_turns_strict_on"]["leaked"] is True
    (finding,) = data["findings"]
    assert finding["victim"].endswith("::test_defaults_are_lenient")
    assert finding["status"] == "verified"
    assert [p.split("::")[1] for p in finding["polluters"]] == ["test_turns_strict_on"]
    assert (finding["probe"], finding["key"]) == ("attributes", "shop.options:DEFAULTS")
    argv = shlex.split(finding["repro"])
    assert argv[:3] == ["python", "-m", "pytest"]
    plain = pytester.runpytest_subprocess("-p", "no:statesnap", *argv[3:])
    plain.assert_outcomes(passed=1, failed=1)


def test_a_reimport_left_in_place_is_a_change(pytester: pytest.Pytester) -> None:
    _project(pytester)
    pytester.makepyfile(test_left=LEFT_IN_PLACE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "statesnap",
                                           "--statesnap-json=out.json")
    result.assert_outcomes(passed=1)
    (test,) = json.loads((pytester.path / "out.json").read_text())["tests"]
    keys = {(x["probe"], x["key"]) for x in test["leaks"]}
    assert test["leaked"] is True
    assert ("attributes", "shop:options") in keys
