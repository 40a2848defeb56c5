"""Subtests report from inside the call phase: no snapshot per subtest, the same record.

pytest's ``subtests`` fixture and unittest's ``subTest`` make a call report per subtest.  Once
statesnap has seen that, it watches the call phase's edges and takes its after-call checkpoint
only when the call has ended.  Real pytest runs; the probes' token counts in the record's
footer say how many snapshots were taken.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

SUITE = """
import os
import unittest

import pytest

SUBTESTS = 30


@pytest.mark.parametrize("n", range(4))
def test_many(subtests, n):
    for i in range(SUBTESTS):
        with subtests.test(i=i):
            assert i >= 0


class TestCase(unittest.TestCase):
    def test_sub(self):
        for i in range(SUBTESTS):
            with self.subTest(i=i):
                self.assertGreaterEqual(i, 0)

    def test_sub_then_leak(self):
        for i in range(SUBTESTS):
            with self.subTest(i=i):
                self.assertGreaterEqual(i, 0)
        os.environ["SUBTEST_LEAK"] = "1"  # after the last subtest, still in the call


def test_after(subtests):
    with subtests.test():
        pass
    assert os.environ["SUBTEST_LEAK"] == "1"
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_subs=SUITE)
    return pytester.runpytest_subprocess(*args)


def test_subtests_take_no_snapshot_each_and_a_change_after_them_is_the_call_s(
        pytester: pytest.Pytester) -> None:
    plain = _run(pytester, "-p", "no:statesnap")
    result = _run(pytester, "-p", "statesnap", "--statesnap-record=r.jsonl",
                  "--statesnap-probes=env")
    assert result.ret == plain.ret == 0
    assert result.parseoutcomes() == plain.parseoutcomes()
    lines = [json.loads(x) for x in (pytester.path / "r.jsonl").read_text().splitlines()]
    footer = next(x for x in lines if x["type"] == "footer")
    tokens = footer["costs"]["env"]["tokens"]
    # 7 tests with 181 subtests: a snapshot after each subtest would be over 181 token calls;
    # the first test's two subtest reports before the edges are watched, and a few per test.
    assert tokens < 60, tokens
    tests: dict[str, Any] = {x["nodeid"].rsplit("::", 1)[1]: x
                             for x in lines if x["type"] == "test"}
    [leak] = tests["test_sub_then_leak"]["changes"]
    assert (leak["key"], leak["phase"]) == ("SUBTEST_LEAK", "call")
