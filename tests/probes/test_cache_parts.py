"""Cache-like parts of a watched object, in real pytest runs (dateutil's ``gettz``).

A module-level project object whose attributes include caches -- an attribute whose name says
"cache", or a ``weakref`` container, whose entries vanish with their referents -- changes its
cache parts on every call and on every ``cache_clear()``.  Such a change is LOW (recorded,
hunted, not "leaked"); a change of any other attribute of the same object keeps its HIGH.  A
plain container among the cache parts (a cache table) is watched, so a fill, an entry replaced
at the same length or the table swapped is recorded (LOW) as the test that made it; what it
holds is never shown in the fingerprint, only digested (the next change of the object would
otherwise show earlier tests' entries in its ``before``).
A weak container is not watched: its entries vanish with a collection, whoever triggers it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from suite_runs import run_shell, run_suite, write_suite

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


RESOLVER_SUITE = {
    "resolver.py": '''
        class Resolver:
            def __init__(self):
                self.default = "v1"
                self._cache = {}
                self._cache_log = []

            def resolve(self, name):
                if name not in self._cache:
                    self._cache[name] = self.default
                    self._cache_log.append(name)
                return self._cache[name]

            def pin(self, name, version):
                # An entry replaced: the table keeps its length.
                self._cache[name] = version

            def relabel(self, name, label):
                # An item of a list table replaced: the same length again.
                self._cache_log[self._cache_log.index(name)] = label


        RESOLVER = Resolver()
        RESOLVER.resolve("pkg")  # warmed at import: the tests find one entry in each table
        ''',
    "test_resolver.py": '''
        import resolver

        def test_a_pins_a_version():
            resolver.RESOLVER.pin("pkg", "v2")

        def test_b_resolves_the_default():
            assert resolver.RESOLVER.resolve("pkg") == "v1", "stale resolution"

        def test_c_relabels():
            resolver.RESOLVER.relabel("pkg", "pkg==v2")

        def test_d_log_names_the_package():
            assert resolver.RESOLVER._cache_log == ["pkg"]

        def test_e_swaps_the_table():
            resolver.RESOLVER._cache = {"pkg": "v3"}

        def test_f_resolves_the_default_again():
            assert resolver.RESOLVER.resolve("pkg") == "v1", "stale resolution"
        ''',
}


def test_a_cache_table_changed_at_the_same_length_is_recorded_and_proven(
        tmp_path: Path) -> None:
    """A cache table whose entry is replaced (or a list table whose item is), or which is
    swapped for another of the same length, keeps its length: each is recorded (LOW, a cache
    part), and the victim of each is verified with that key, its reproduction failing."""
    root = write_suite(tmp_path / "suite", RESOLVER_SUITE)
    run = run_suite(root, tmp_path / "out", "-q")
    assert run.proc.returncode == 1, run.output[-3000:]
    assert "3 failed, 3 passed" in run.proc.stdout, run.output[-3000:]
    leaks = run.leak_severities()
    assert leaks == {name: [("resolver:RESOLVER", "low")] for name in (
        "test_a_pins_a_version", "test_c_relabels", "test_e_swaps_the_table")}, leaks
    for victim, polluter in (("test_b_resolves_the_default", "test_a_pins_a_version"),
                             ("test_d_log_names_the_package", "test_c_relabels"),
                             ("test_f_resolves_the_default_again", "test_e_swaps_the_table")):
        finding = run.finding(victim)
        assert finding["status"] == "verified", finding
        assert finding["polluters"] == [f"test_resolver.py::{polluter}"], finding
        assert finding["proven_keys"] == ["attributes:resolver:RESOLVER"], finding
        repro = run_shell(finding["repro"], cwd=root)
        assert "1 failed, 1 passed" in repro.stdout, repro.stdout[-2000:]
    out = run.proc.stdout
    assert out.count("state: attributes:resolver:RESOLVER:") == 3, out[-4000:]
    assert out.count("(restoring it makes the victim pass)") == 3, out[-4000:]
    assert "fix: clear the cache of resolver.RESOLVER in a fixture" in out, out[-4000:]
