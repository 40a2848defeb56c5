"""A class's ``setup_class``/``setUpClass`` and ``teardown_class`` are the leakers, not a test.

pytest runs them as class-scoped fixtures with names of its own
(``_xunit_setup_class_fixture_TestX``) during the setup of the class's first test and the
teardown of its last.  What they leave is theirs: listed, counted, hinted and noted as the
method's, in the user's words; the tests they ran for are only how a replay gets them to run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from repro_check import check_reproductions

APP = """
class Config:
    level = 1
"""

CLASSES = """
import unittest

import app


class TestSetsUp:
    @classmethod
    def setup_class(cls):
        cls.shared = [1, 2]          # the class's own state, for its tests
        app.Config.mode = "class"    # and the project's, never undone

    def test_first(self):
        assert self.shared == [1, 2]

    def test_second(self):
        assert app.Config.mode == "class"


class TestTearsDown:
    def test_only(self):
        pass

    @classmethod
    def teardown_class(cls):
        app.Config.level = 9


class TestUnit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        app.Config.unit = True

    def test_u(self):
        self.assertTrue(app.Config.unit)
"""

READERS = """
import app


def test_no_mode():
    assert not hasattr(app.Config, "mode"), "mode left"


def test_level_default():
    assert app.Config.level == 1, "level left"


def test_no_unit():
    assert not hasattr(app.Config, "unit"), "unit left"
"""

#: victim -> (its polluter, the key, the method that made the change, where to undo it)
CASES = {
    "test_no_mode": ("test_b_classes.py::TestSetsUp::test_first", "app:Config.mode",
                     "TestSetsUp.setup_class", "undo it in teardown_class"),
    "test_level_default": ("test_b_classes.py::TestTearsDown::test_only", "app:Config.level",
                           "TestTearsDown.teardown_class",
                           "put the value back in teardown_class itself"),
    "test_no_unit": ("test_b_classes.py::TestUnit::test_u", "app:Config.unit",
                     "TestUnit.setUpClass", "undo it in tearDownClass"),
}

INTERNAL = ("_xunit_", "_unittest_")


def _suite(pytester: pytest.Pytester, readers: str) -> None:
    pytester.makepyfile(app=APP, test_b_classes=CLASSES, **{readers: READERS})


def _check_finding(f: dict[str, Any], victim: str) -> None:
    polluter, key, method, undo = CASES[victim]
    assert f["polluters"] == [polluter], f
    assert (f["probe"], f["key"]) == ("attributes", key), f
    assert f["hint"].startswith(f"{method} changes {key}"), f
    assert undo in f["hint"] and "monkeypatch" not in f["hint"], f
    assert f"the change was made in {method}" in f["note"] and "not by the test" in f["note"]


def test_set_ups_and_tear_downs_are_the_leakers_in_the_run_and_its_findings(
        pytester: pytest.Pytester) -> None:
    _suite(pytester, "test_c_readers")
    result = pytester.runpytest_subprocess("-p", "statesnap", "-p", "no:randomly",
                                           "--statesnap-json=out.json", "--report=r.html")
    result.assert_outcomes(passed=4, failed=3)
    out = result.stdout.str()
    summary = json.loads((pytester.path / "out.json").read_text())
    # The report counts as the terminal and the JSON do: no test leaked, three set-ups did.
    counts = {label: value for value, label in re.findall(
        r'<span class="stat-value">([^<]*)</span> <span class="stat-label">([^<]*)</span>',
        (pytester.path / "r.html").read_text("utf-8"))}
    assert counts["leaked state"] == "0" and counts["set-ups that leaked"] == "3", counts
    assert not [i for i in INTERNAL if i in out + json.dumps(summary)]
    # No test leaked: three set-ups did.  The class's own attribute is recorded, LOW and not
    # listed: only code that names the class sees it (test_own_class_setup.py).
    assert "3 class or module set-up(s) leaked state:" in out
    assert "test(s) leaked state" not in out
    assert ("TestSetsUp.setup_class (class, set up for test_b_classes.py::TestSetsUp::"
            "test_first): app:Config.mode: ∅ → 'class'") in out
    assert "TestSetsUp.shared" not in out
    assert ("TestTearsDown.teardown_class (class, torn down after test_b_classes.py::"
            "TestTearsDown::test_only): app:Config.level: 1 → 9") in out
    assert "TestUnit.setUpClass (class, set up for test_b_classes.py::TestUnit::test_u)" in out
    tests = {t["nodeid"]: t for t in summary["tests"]}
    assert not [n for n, t in tests.items() if t["leaked"]]
    made = {(leak["key"], leak["fixture"], leak["phase"], leak.get("by_setup"),
             leak["severity"]) for t in tests.values() for leak in t["leaks"]}
    assert made == {
        ("app:Config.mode", "TestSetsUp.setup_class", "setup", True, "high"),
        ("test_b_classes:TestSetsUp.shared", "TestSetsUp.setup_class", "setup", True, "low"),
        ("app:Config.level", "TestTearsDown.teardown_class", "teardown", True, "high"),
        ("app:Config.unit", "TestUnit.setUpClass", "setup", True, "high"),
    }
    findings = {f["victim"].split("::")[1]: f for f in summary["findings"]}
    assert set(findings) == set(CASES)
    for victim, f in findings.items():
        assert f["status"] == "verified", f
        _check_finding(f, victim)
    check_reproductions(out, pytester.path, list(CASES))


def test_the_hunt_names_the_set_up_too(pytester: pytest.Pytester) -> None:
    # The readers run first: the recorded run passes, and the hunt finds them.
    _suite(pytester, "test_a_readers")
    record = pytester.path / "record.jsonl"
    result = pytester.runpytest_subprocess("-p", "statesnap", "-p", "no:randomly",
                                           f"--statesnap-record={record}")
    result.assert_outcomes(passed=7)
    hunt = subprocess.run([sys.executable, "-m", "statesnap", "hunt", str(record), "-q",
                           "--budget", "600", "--json", "hunt.json"], cwd=pytester.path,
                          capture_output=True, text=True, timeout=900)
    assert hunt.returncode == 1, hunt.stdout + hunt.stderr
    assert not [i for i in INTERNAL if i in hunt.stdout]
    findings = {f["victim"].split("::")[1]: f
                for f in json.loads((pytester.path / "hunt.json").read_text())["findings"]}
    assert set(findings) == set(CASES), hunt.stdout
    for victim, f in findings.items():
        assert f["status"] == "latent", f
        _check_finding(f, victim)
    check_reproductions(hunt.stdout, pytester.path, list(CASES))
