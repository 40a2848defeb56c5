"""A class set-up that sets its own class's attributes (``cls.conn = ...``) is rated LOW.

That is how unittest and xunit classes share a value among their tests: only code that names
the class sees it.  Listed as a set-up's leak it was noise in every unittest suite, and strict
mode errored the class's last test for it.  What stays as it was: the same set-up changing
another class, a test of the class changing the attribute afterwards, a set-up of a base
class's attribute run for a subclass, and a hunt still proving a victim of a LOW leak.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from repro_check import check_reproductions

APP = """
class Registry:
    names = []
"""

CLASSES = """
import unittest

import app


class TestUnit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.conn = {"open": True}       # its own: LOW
        app.Registry.flag = "unit"      # another class's: HIGH

    def test_one(self):
        self.assertTrue(self.conn["open"])

    def test_two(self):
        self.assertTrue(self.conn["open"])


class TestOnlyOwn:
    @classmethod
    def setup_class(cls):
        cls.db = {"rows": 3}            # its own, and nothing else: LOW

    def test_db(self):
        assert self.db["rows"] == 3


class TestXunit:
    def setup_class(cls):
        cls.items = []                  # its own, then appended to by a test: HIGH

    def test_fill(self):
        self.items.append(1)

    def test_empty(self):
        assert self.items == [1]


class Base:
    @classmethod
    def setup_class(cls):
        Base.counter = 1                # the base's attribute, run for a subclass: HIGH


class TestChild(Base):
    def test_child(self):
        assert Base.counter == 1

"""


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, str]]:
    pytester.makepyfile(app=APP, test_classes=CLASSES)
    result = pytester.runpytest_subprocess("-p", "statesnap", "-p", "no:randomly",
                                           "--statesnap-json=out.json", *args)
    summary = json.loads((pytester.path / "out.json").read_text())
    severities = {leak["key"]: leak["severity"]
                  for t in summary["tests"] for leak in t["leaks"]}
    return result, severities


def test_own_attributes_are_low_and_the_rest_keeps_its_severity(
        pytester: pytest.Pytester) -> None:
    result, severities = _run(pytester)
    result.assert_outcomes(passed=6)
    assert severities == {
        "test_classes:TestUnit.conn": "low",
        "test_classes:TestOnlyOwn.db": "low",
        "app:Registry.flag": "high",
        "test_classes:TestXunit.items": "high",
        "test_classes:Base.counter": "high",
    }, severities
    out = result.stdout.str()
    assert "TestUnit.conn" not in out and "TestOnlyOwn" not in out
    assert "app:Registry.flag" in out and "TestXunit.items" in out


def test_strict_mode_errors_only_for_what_others_see(pytester: pytest.Pytester) -> None:
    # Plain pytest: 6 passed.  Strict mode errors the tests whose leaks others see, and no
    # longer the class whose set-up only set its own attributes.
    result, _ = _run(pytester, "--statesnap-strict")
    result.assert_outcomes(passed=6, errors=3)
    errored = {line.split(" - ")[0].split("::", 1)[1]
               for line in result.stdout.lines if line.startswith("ERROR ")}
    assert errored == {"TestUnit::test_two", "TestXunit::test_empty", "TestChild::test_child"}, \
        result.stdout.str()
    out = result.stdout.str()
    # In the user's words: their method, and where to undo it (not pytest's fixture name, not a
    # monkeypatch, which is function-scoped and cannot reach a class set-up).
    assert ("attributes:app:Registry.flag: added ∅ → 'unit' [setup, fixture TestUnit.setUpClass"
            " (class)] (set up by TestUnit.setUpClass, not undone when its scope ended)") in out
    assert "fix: TestUnit.setUpClass changes app:Registry.flag and nothing undoes it: undo it " \
        "in tearDownClass (or addClassCleanup)" in out
    assert "_unittest_" not in out and "_xunit_" not in out and "monkeypatch" not in out


VICTIM = """
import test_classes


def test_conn_not_opened_yet():
    assert not hasattr(test_classes.TestUnit, "conn")
"""


def test_a_victim_of_a_low_leak_is_still_found(pytester: pytest.Pytester) -> None:
    # Someone does read the class's attribute from outside: the hunt reaches LOW leakers by
    # default, proves the victim, and prints a reproduction that fails under plain pytest.
    pytester.makepyfile(app=APP, test_classes=CLASSES, test_a_reader=VICTIM)
    record = pytester.path / "record.jsonl"
    result = pytester.runpytest_subprocess("-p", "statesnap", "-p", "no:randomly",
                                           f"--statesnap-record={record}")
    result.assert_outcomes(passed=7)
    hunt = subprocess.run([sys.executable, "-m", "statesnap", "hunt", str(record), "-q",
                           "--budget", "300", "--json", "hunt.json"], cwd=pytester.path,
                          capture_output=True, text=True, timeout=600)
    assert hunt.returncode == 1, hunt.stdout + hunt.stderr
    findings = {f["victim"]: f for f in json.loads((pytester.path / "hunt.json").read_text())
                ["findings"]}
    # (TestXunit::test_empty is found too: it relies on test_fill's append, as written.)
    f = findings["test_a_reader.py::test_conn_not_opened_yet"]
    assert (f["status"], f["polluters"], f["key"]) == (
        "latent", ["test_classes.py::TestUnit::test_one"], "test_classes:TestUnit.conn"), f
    check_reproductions(hunt.stdout, pytester.path, ["test_conn_not_opened_yet", "test_empty"])
