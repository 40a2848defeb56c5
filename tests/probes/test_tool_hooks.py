"""A test tool's own hook in ``gc.callbacks`` (hypothesis's GC timer, added once per process on
first use) is LOW; a hook of the user's, or one taken out, keeps its MEDIUM severity (found on
python-dateutil's hypothesis tests)."""

from __future__ import annotations

import json

import pytest

#: Stands in for hypothesis: the hook's module is what the rule reads.
TOOL = """
def gc_cumulative_time(phase, info):
    pass
"""

TESTS = """
import gc


def test_a_tool_adds_its_timer():
    from hypothesis.internal.junkdrawer import gc_cumulative_time

    gc.callbacks.append(gc_cumulative_time)


def test_b_user_adds_a_hook():
    def mine(phase, info):
        pass

    gc.callbacks.append(mine)


def test_c_user_removes_the_tools():
    gc.callbacks[:] = [c for c in gc.callbacks if "junkdrawer" not in c.__module__]


def test_d_user_swaps_its_hook_for_the_tools():
    from hypothesis.internal.junkdrawer import gc_cumulative_time

    gc.callbacks[:] = [gc_cumulative_time]
"""


def test_only_a_tools_own_hook_is_low(pytester: pytest.Pytester) -> None:
    pkg = pytester.mkpydir("hypothesis")
    (pkg / "internal").mkdir()
    (pkg / "internal" / "__init__.py").write_text("")
    (pkg / "internal" / "junkdrawer.py").write_text(TOOL)
    pytester.makepyfile(test_hooks=TESTS)
    result = pytester.runpytest_subprocess("-p", "statesnap", "-p", "no:randomly",
                                           "-p", "no:hypothesispytest",
                                           "--statesnap-json=out.json")
    result.assert_outcomes(passed=4)
    summary = json.loads((pytester.path / "out.json").read_text())
    rated = {t["nodeid"].rsplit("::", 1)[1]: [(x["key"], x["severity"]) for x in t["leaks"]
                                              if x["probe"] == "process"]
             for t in summary["tests"]}
    assert rated == {
        "test_a_tool_adds_its_timer": [("gc.callbacks", "low")],
        "test_b_user_adds_a_hook": [("gc.callbacks", "medium")],
        "test_c_user_removes_the_tools": [("gc.callbacks", "medium")],
        "test_d_user_swaps_its_hook_for_the_tools": [("gc.callbacks", "medium")],
    }, rated
    out = result.stdout.str()
    assert "test_a_tool_adds_its_timer" not in out and "test_b_user_adds_a_hook" in out
