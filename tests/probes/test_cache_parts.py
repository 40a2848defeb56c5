"""Cache-like parts of a watched object, in real pytest runs (dateutil's ``gettz``).

A module-level project object whose attributes include caches -- an attribute whose name says
"cache", or a ``weakref`` container, whose entries vanish with their referents -- changes its
cache parts on every call and on every ``cache_clear()``.  Such a change is LOW (recorded,
hunted, not "leaked"); a change of any other attribute of the same object keeps its HIGH.  A
plain container among the cache parts (a cache table) is watched by its length and version, so
a fill is recorded (LOW) as the test that made it; what it holds is never in the fingerprint
(the next change of the object would otherwise show earlier tests' entries in its ``before``).
A weak container is not watched: its entries vanish with a collection, whoever triggers it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

LIB = """
import weakref
from collections import OrderedDict


class Zone:
    def __init__(self, name):
        self.name = name


def _make():
    # A local class, as dateutil.tz.tz's GettzFunc.
    class ZoneLookup:
        def __init__(self):
            self.__instances = weakref.WeakValueDictionary()
            self.__strong_cache = OrderedDict()
            self.default = "UTC"
            self.cache_size = 8

        def __call__(self, name):
            rv = self.__instances.get(name)
            if rv is None:
                rv = Zone(name)
                self.__instances[name] = rv
            self.__strong_cache[name] = self.__strong_cache.pop(name, rv)
            return rv

        def cache_clear(self):
            self.__instances = weakref.WeakValueDictionary()
            self.__strong_cache.clear()

    return ZoneLookup()


lookup = _make()
"""

TESTS = """
import lib


def test_a_fills():
    lib.lookup("A")


def test_b_fills():
    lib.lookup("B")


def test_c_clears():
    lib.lookup.cache_clear()
    lib.lookup("C")


def test_d_changes_the_default():
    lib.lookup.default = "Europe/Paris"


def test_e_victim():
    assert lib.lookup.default == "UTC"


def test_f_resizes():
    lib.lookup.cache_size = 4
"""


def _run(pytester: pytest.Pytester) -> tuple[pytest.RunResult, dict[str, Any]]:
    pytester.makepyfile(lib=LIB, test_zones=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "-p", "no:randomly", "--statesnap-json=out.json",
        "--statesnap-probes=attributes")
    data = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    return result, {t["nodeid"].split("::")[1]: t for t in data["tests"]}


def _rated(test: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((x["key"], x["severity"]) for x in test["leaks"])


def test_a_cache_part_changing_is_low_and_another_attribute_stays_high(
        pytester: pytest.Pytester) -> None:
    result, tests = _run(pytester)
    result.assert_outcomes(passed=5, failed=1)
    # Filling the strong cache (and the weak one): the strong cache's table is watched, so
    # the fill is recorded as the test's, LOW (a victim of it can still be hunted).
    for filler in ("test_a_fills", "test_b_fills"):
        assert _rated(tests[filler]) == [("lib:lookup", "low")], tests[filler]
        assert not tests[filler]["leaked"]
    # cache_clear() rebinds the weak dictionary: a change confined to the cache parts.
    assert _rated(tests["test_c_clears"]) == [("lib:lookup", "low")]
    assert not tests["test_c_clears"]["leaked"]
    # The same object's plain attribute: a real leak, rated as before.
    changed = tests["test_d_changes_the_default"]
    assert _rated(changed) == [("lib:lookup", "high")]
    assert changed["leaked"]
    # A scalar named "cache" is a setting, not a cache.
    assert _rated(tests["test_f_resizes"]) == [("lib:lookup", "high")]


def test_a_later_change_of_the_object_has_the_before_that_test_saw(
        pytester: pytest.Pytester) -> None:
    _, tests = _run(pytester)
    [leak] = tests["test_d_changes_the_default"]["leaks"]
    # Before: what the object was when test_d started (after test_c), not a description
    # taken before test_a with an empty strong cache (or one holding A and B).
    [clear] = tests["test_c_clears"]["leaks"]
    assert leak["before"] == clear["after"]
    assert "'default': 'UTC'" in leak["before"]
    assert "'default': 'Europe/Paris'" in leak["after"]
    for side in (leak["before"], leak["after"], clear["before"], clear["after"]):
        assert "lib.Zone" not in side  # no cache entries in any fingerprint


def test_the_victim_of_the_plain_attribute_is_verified(pytester: pytest.Pytester) -> None:
    result, _ = _run(pytester)
    result.stdout.fnmatch_lines([
        "*[[]VERIFIED*test_e_victim*",
        "*test_d_changes_the_default*",
    ])
    result.stdout.no_fnmatch_line("*polluted by*test_c_clears*")
