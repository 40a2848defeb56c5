"""What collection changed, and whose leak a fixture's change is (issue 2, "when snapshots
are taken").

The runs use the ``env`` probe only, so that each assertion is about one real environment
variable set by the inner suite and nothing else can blur it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from statesnap.analysis.leaks import resolve_leaks

ONLY_ENV = ["--statesnap-probes", "env", "--statesnap-verify-budget", "0"]

IMPORT_TIME_SUITE = '''
import os

os.environ["SET_AT_IMPORT"] = "yes"


def test_after_import():
    assert os.environ["SET_AT_IMPORT"] == "yes"


def test_also_after_import():
    pass
'''

SCOPE_CONFTEST = '''
import os

import pytest


@pytest.fixture(scope="session")
def tidy_session():
    os.environ["TIDY_SESSION"] = "on"
    yield
    del os.environ["TIDY_SESSION"]
'''

SCOPE_SUITE = '''
import os

import pytest


@pytest.fixture(scope="module")
def tidy_module():
    os.environ["TIDY_MODULE"] = "on"
    yield
    del os.environ["TIDY_MODULE"]


@pytest.fixture(scope="module")
def messy_module():
    os.environ["MESSY_MODULE"] = "on"
    yield


@pytest.fixture
def messy_function():
    os.environ["MESSY_FUNCTION"] = "on"
    yield


@pytest.fixture(scope="module")
def messy_module_finaliser():
    yield
    os.environ["MESSY_MODULE_FINALISER"] = "on"


@pytest.fixture
def messy_finaliser():
    yield
    os.environ["MESSY_FINALISER"] = "on"


def test_before_any_fixture(tidy_session):
    pass


def test_uses_tidy_first(tidy_module):
    assert os.environ["TIDY_MODULE"] == "on"


def test_uses_tidy_again(tidy_module):
    pass


def test_between():
    pass


def test_uses_messy_module_first(messy_module):
    pass


def test_uses_messy_module_again(messy_module):
    pass


def test_uses_messy_function(messy_function):
    pass


def test_leaks_in_call():
    os.environ["LEAK_IN_CALL"] = "on"


def test_uses_messy_finaliser(messy_finaliser):
    pass


def test_leaks_in_addfinalizer(request):
    request.addfinalizer(lambda: os.environ.__setitem__("LEAK_IN_ADDFINALIZER", "on"))


class TestWithClassFixture:
    @pytest.fixture(scope="class")
    @classmethod
    def tidy_class(cls):
        os.environ["TIDY_CLASS"] = "on"
        yield
        del os.environ["TIDY_CLASS"]

    def test_first(self, tidy_class):
        pass

    def test_second(self, tidy_class):
        pass


def test_uses_messy_module_finaliser(messy_module_finaliser):
    pass


def test_last(tidy_session):
    pass
'''


def _summary_leaks(summary: Path) -> dict[str, list[dict[str, Any]]]:
    data = json.loads(summary.read_text(encoding="utf-8"))
    return {t["nodeid"].split("::", 1)[1]: t["leaks"] for t in data["tests"]}


def test_import_time_change_is_the_collection_entry(inner, pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_import_time=IMPORT_TIME_SUITE)
    summary = tmp_path / "summary.json"
    run = inner(*ONLY_ENV, "--statesnap-json", str(summary))
    assert run.outcomes() == {"passed": 2}
    record = run.record()
    assert [(c.probe, c.key, c.change, c.after, c.phase) for c in record.collection] == [
        ("env", "SET_AT_IMPORT", "added", "yes", "collection")]
    # Collection's change is nobody's leak: every test starts from the post-collection state.
    assert all(t.changes == [] for t in record.tests)
    assert _summary_leaks(summary) == {"test_after_import": [], "test_also_after_import": []}
    assert "collection changed 1 key(s) (imports with side effects)" in run.section()
    assert "no test leaked state" in run.section()


@pytest.fixture
def scope_run(inner, pytester, tmp_path: Path) -> tuple[Any, dict[str, list[dict[str, Any]]]]:
    inner.conftest(SCOPE_CONFTEST)
    pytester.makepyfile(test_scope=SCOPE_SUITE)
    summary = tmp_path / "summary.json"
    run = inner(*ONLY_ENV, "--statesnap-json", str(summary))
    assert run.outcomes() == {"passed": 14}
    return run, _summary_leaks(summary)


def _leak(leaks: dict[str, list[dict[str, Any]]], test: str) -> dict[str, Any]:
    (only,) = leaks[test]
    return only


def test_wide_fixtures_undone_at_scope_end_leak_for_nobody(scope_run) -> None:
    run, leaks = scope_run
    tidy = {"TIDY_MODULE", "TIDY_CLASS", "TIDY_SESSION"}
    assert not [(t, leak["key"]) for t, ls in leaks.items() for leak in ls if leak["key"] in tidy]
    for test in ("test_before_any_fixture", "test_uses_tidy_first", "test_uses_tidy_again",
                 "test_between", "TestWithClassFixture::test_first",
                 "TestWithClassFixture::test_second"):
        assert leaks[test] == [], test
    # The record itself holds both halves, labelled with the fixture and its scope.
    record = run.record()
    first = record.test_by_id("test_scope.py::test_uses_tidy_first")
    assert first is not None
    assert [(c.key, c.change, c.phase, c.fixture, c.scope) for c in first.changes] == [
        ("TIDY_MODULE", "added", "setup", "tidy_module", "module")]
    undo = [(t.nodeid.split("::", 1)[1], c.change, c.phase, c.fixture, c.scope)
            for t in record.tests for c in t.changes if c.key == "TIDY_MODULE"]
    assert undo[-1][1:] == ("removed", "teardown", "tidy_module", "module")


def test_wide_fixture_never_undone_is_the_leak_of_its_first_test(scope_run) -> None:
    _, leaks = scope_run
    assert _leak(leaks, "test_uses_messy_module_first") == {
        "probe": "env", "key": "MESSY_MODULE", "change": "added", "before": None, "after": "on",
        "phase": "setup", "fixture": "messy_module", "scope": "module", "severity": "high"}
    assert leaks["test_uses_messy_module_again"] == []
    assert leaks["test_between"] == []  # ran before the fixture, in the same module


def test_function_fixture_leak_names_the_fixture(scope_run) -> None:
    _, leaks = scope_run
    leak = _leak(leaks, "test_uses_messy_function")
    assert (leak["key"], leak["phase"], leak["fixture"], leak["scope"]) == (
        "MESSY_FUNCTION", "setup", "messy_function", "function")


def test_leak_in_call_has_phase_call(scope_run) -> None:
    _, leaks = scope_run
    leak = _leak(leaks, "test_leaks_in_call")
    assert (leak["key"], leak["phase"]) == ("LEAK_IN_CALL", "call")
    assert "fixture" not in leak


def test_leak_in_a_function_fixture_finaliser_has_phase_teardown(scope_run) -> None:
    _, leaks = scope_run
    # Function-scoped fixtures get no checkpoint of their own in teardown (that would cost a
    # token round per fixture per test): the phase is known, the fixture is not claimed.
    leak = _leak(leaks, "test_uses_messy_finaliser")
    assert (leak["key"], leak.get("phase")) == ("MESSY_FINALISER", "teardown")


def test_leak_in_addfinalizer_has_phase_teardown(scope_run) -> None:
    _, leaks = scope_run
    plain = _leak(leaks, "test_leaks_in_addfinalizer")
    assert (plain["key"], plain.get("phase")) == ("LEAK_IN_ADDFINALIZER", "teardown")


def test_leak_in_a_wide_fixture_finaliser_names_it(scope_run) -> None:
    _, leaks = scope_run
    # A wide fixture's finaliser runs when its scope ends, in the teardown of the module's
    # last test, and is named: that test's leak, made by that fixture.
    wide = _leak(leaks, "test_last")
    assert (wide["key"], wide["phase"], wide["fixture"], wide["scope"]) == (
        "MESSY_MODULE_FINALISER", "teardown", "messy_module_finaliser", "module")


def test_resolve_leaks_on_the_record_agrees_with_the_summary(scope_run) -> None:
    run, leaks = scope_run
    record = run.record()
    resolved = resolve_leaks(record.tests)
    ids = {t.index: t.nodeid.split("::", 1)[1] for t in record.tests}
    from_record = {ids[i]: sorted(c.key for c in cs) for i, cs in resolved.items()}
    from_summary = {t: sorted(leak["key"] for leak in ls) for t, ls in leaks.items() if ls}
    assert from_record == from_summary == {
        "test_uses_messy_module_first": ["MESSY_MODULE"],
        "test_uses_messy_function": ["MESSY_FUNCTION"],
        "test_leaks_in_call": ["LEAK_IN_CALL"],
        "test_uses_messy_finaliser": ["MESSY_FINALISER"],
        "test_leaks_in_addfinalizer": ["LEAK_IN_ADDFINALIZER"],
        "test_last": ["MESSY_MODULE_FINALISER"],
    }
    # And the terminal section lists each one with its phase and fixture.
    section = "\n".join(run.section())
    assert "6 test(s) leaked state:" in section
    assert ("test_scope.py::test_uses_messy_module_first: MESSY_MODULE: ∅ → on "
            "[setup, fixture messy_module (module)]") in section
    assert "test_scope.py::test_leaks_in_call: LEAK_IN_CALL: ∅ → on [call]" in section
