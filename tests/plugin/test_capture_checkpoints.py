"""Checkpoints inside a phase (wide fixtures, class set-ups) see the standard streams as the
others do: pytest's capture file on descriptors 1 and 2 is nobody's leak.

Seen on the real-world corpus (securenative): a background thread's socket moved the fds
token during a class's ``tearDownClass``, and the read there, inside pytest's teardown phase,
recorded fds 1 and 2 as HIGH changes of the class teardown, and their return as HIGH changes
of a later test that only opened a file.  Here a class teardown, a module fixture's setup and
its teardown each leave a file open, so the fds probe reads in each of those segments.
"""

from __future__ import annotations

import json
import re

import pytest

from repro_check import check_reproductions

HELD = """
FILES = []
"""

CLASSES = """
import unittest

import pytest

import held


class TestTearsDown(unittest.TestCase):
    @classmethod
    def tearDownClass(cls):
        held.FILES.append(open(__file__))

    def test_one(self):
        pass


@pytest.fixture(scope="module")
def wide():
    print("wide fixture output")
    held.FILES.append(open(__file__))
    yield
    held.FILES.append(open(__file__))


def test_uses_wide(wide):
    print("the test's output")
    assert False, "fails on purpose: its captured output is checked"
"""

LATER = """
import held


def test_opens_one():
    held.FILES.append(open(__file__))


def test_nothing_held():
    assert held.FILES == [], "files left open"
"""

STD_STREAMS = {"0", "1", "2"}


def test_the_capture_file_on_the_standard_streams_is_no_leak(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(held=HELD, test_a_classes=CLASSES, test_b_later=LATER)
    plain = pytester.runpytest_subprocess("-p", "no:randomly", "-rA")
    plain.assert_outcomes(passed=2, failed=2)
    result = pytester.runpytest_subprocess("-p", "statesnap", "-p", "no:randomly", "-rA",
                                           "--statesnap-json=out.json")
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    # The output captured in the wide fixture's setup and in the test is reported as without
    # statesnap: the capture was suspended for the checkpoint and resumed, nothing lost.
    for section in (r"Captured stdout setup -+\nwide fixture output\n",
                    r"Captured stdout call -+\nthe test's output\n"):
        assert re.search(section, plain.stdout.str()) and re.search(section, out), out
    summary = json.loads((pytester.path / "out.json").read_text())
    fds = [(t["nodeid"], leak["key"], leak.get("fixture"), leak["phase"])
           for t in summary["tests"] for leak in t["leaks"] if leak["probe"] == "fds"]
    assert not [f for f in fds if f[1] in STD_STREAMS], fds
    # The files really left open are each where it was opened.
    where = {(f[2], f[3]) for f in fds}
    assert where == {("TestTearsDown.tearDownClass", "teardown"), ("wide", "setup"),
                     ("wide", "teardown"), (None, "call")}, fds
    assert len(fds) == 4, fds
    # The victim's finding is as before, and each printed reproduction fails its test.
    findings = {f["victim"].split("::")[1]: f for f in summary["findings"]}
    assert findings["test_nothing_held"]["status"] == "verified", findings
    check_reproductions(out, pytester.path, ["test_nothing_held", "test_uses_wide"])
