"""What pytest and unittest do for themselves is never a leak, a key or a hint.

Real pytest runs in subprocesses: a unittest suite (``doClassCleanups`` sets
``tearDown_exceptions`` on every class pytest tears down), a leak made in ``setUpClass``
(named by the user's method, never pytest's internal fixture), pytest's ``tmp_path`` importing
``getpass`` inside a user's fixture, a weak proxy in ``sys.modules`` that removes itself when a
later test collects garbage, and the summary JSON counting leaks the way the terminal does.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

UNITTEST_SUITE = """
import os
import unittest


class TestConfigured(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.environ["BOOKKEEPING_MODE"] = "on"  # a real leak: never undone

    def test_one(self):
        self.assertTrue(True)

    def test_two(self):
        self.assertTrue(True)


class TestPlain(unittest.TestCase):
    def test_three(self):
        self.assertEqual(1, 1)

    def test_four(self):
        self.assertEqual(2, 2)


def test_mode_is_unset():
    assert "BOOKKEEPING_MODE" not in os.environ
"""


def _summary(pytester: pytest.Pytester) -> dict[str, Any]:
    data = json.loads((pytester.path / "out.json").read_text())
    assert isinstance(data, dict)
    return data


def _leaks(summary: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {t["nodeid"]: t["leaks"] for t in summary["tests"]}


def test_unittest_class_teardown_is_not_a_leak_and_setupclass_is_named(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_ut=UNITTEST_SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "--statesnap-json=out.json", "--statesnap-probes=env,attributes",
    )
    result.assert_outcomes(passed=4, failed=1)
    summary = _summary(pytester)
    keys = [leak["key"] for leaks in _leaks(summary).values() for leak in leaks]
    assert not [k for k in keys if "tearDown_exceptions" in k or "_classSetupFailed" in k]
    # The one real leak: made in setUpClass, the set-up's own (not its first test's).
    assert keys == ["BOOKKEEPING_MODE"]
    (leak,) = _leaks(summary)["test_ut.py::TestConfigured::test_one"]
    assert (leak["fixture"], leak["by_setup"]) == ("TestConfigured.setUpClass", True)
    assert not [t for t in summary["tests"] if t["leaked"]]
    out = result.stdout.str()
    assert "_unittest_setUpClass_fixture" not in out + json.dumps(summary)
    assert ("TestConfigured.setUpClass (class, set up for test_ut.py::TestConfigured::test_one)"
            ": BOOKKEEPING_MODE: ∅ → on") in out
    finding = summary["findings"][0]
    assert finding["key"] == "BOOKKEEPING_MODE"
    assert finding["polluters"] == ["test_ut.py::TestConfigured::test_one"]
    note = " ".join(str(finding.get(k) or "") for k in ("note", "hint"))
    assert "_unittest_setUpClass" not in note + json.dumps(finding)  # pytest's own fixture name
    assert "TestConfigured.setUpClass" in note and "tearDownClass" in note
    assert "1 class or module set-up(s) leaked state:" in out and "test(s) leaked" not in out
    assert "fix: TestConfigured.setUpClass changes BOOKKEEPING_MODE and nothing undoes it" in out


TMP_SUITE = {
    "conftest": """
import pytest

@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "data.txt").write_text("x")
    return tmp_path
""",
    "test_tmp": """
import sys

FIRST = {}

def test_before_any_tmp_path():
    FIRST["getpass"] = "getpass" in sys.modules

def test_uses_the_users_fixture(workdir):
    assert (workdir / "data.txt").read_text() == "x"

def test_getpass_was_fresh():
    # Makes the run meaningful: getpass came in during the run, not before it.
    assert FIRST == {"getpass": False}
    assert "getpass" in sys.modules
""",
}


def test_pytests_tmp_path_imports_are_not_blamed_on_the_users_fixture(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(**TMP_SUITE)
    # Not runpytest_subprocess: it passes --basetemp, and pytest asks for the user name
    # (importing getpass and pwd) only when it picks the base directory itself.
    result = pytester.run(
        sys.executable, "-m", "pytest", "-p", "statesnap", "--statesnap-json=out.json",
        "--statesnap-probes=modules",
    )
    result.assert_outcomes(passed=3)
    leaks = _leaks(_summary(pytester))
    mine = leaks["test_tmp.py::test_uses_the_users_fixture"]
    assert not [x for x in mine if x["key"] in ("getpass", "pwd")], mine
    assert not [x for x in mine if x.get("fixture") == "workdir"], mine


PROXY_SUITE = """
import gc
import sys
import types
import weakref


def test_loader_puts_a_proxy():
    # What jinja2's ModuleLoader does: a weak proxy that removes itself on collection.  The
    # module sits in a reference cycle, so it goes only when a later test collects garbage.
    module = types.ModuleType("rendered_templates")
    module.cycle = module
    name = "rendered_templates_proxy"
    sys.modules[name] = weakref.proxy(module, lambda _: sys.modules.pop(name, None))


def test_collects_garbage():
    gc.collect()
    assert "rendered_templates_proxy" not in sys.modules
"""


def test_a_self_removing_weak_proxy_in_sys_modules_is_low_and_counts_as_no_leak(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_proxy=PROXY_SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "statesnap", "--statesnap-json=out.json", "--statesnap-probes=modules",
    )
    result.assert_outcomes(passed=2)
    summary = _summary(pytester)
    leaks = _leaks(summary)
    put, removed = (leaks[f"test_proxy.py::{n}"]
                    for n in ("test_loader_puts_a_proxy", "test_collects_garbage"))
    assert [(x["key"], x["change"], x["severity"]) for x in put] == [
        ("rendered_templates_proxy", "added", "low")]
    assert [(x["key"], x["change"], x["severity"]) for x in removed] == [
        ("rendered_templates_proxy", "removed", "low")]
    # The JSON, the terminal and the report agree: low-severity leaks are listed, not counted.
    assert not any(t["leaked"] for t in summary["tests"])
    assert "no test leaked state" in result.stdout.str()
