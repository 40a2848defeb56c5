"""Spawn isolation end to end: each test in a fresh interpreter, reports as usual."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Run = Callable[..., Any]

SUITE = '''
import ctypes, os, sys

def test_first_imports():
    import json.tool  # noqa: F401
    os.environ["SPAWN_LEAK"] = "1"
    assert os.environ["STATESNAP_ISOLATED"] == "spawn"

def test_fresh_interpreter():
    # A fresh interpreter: neither the earlier test's import nor its variable is here.
    assert "json.tool" not in sys.modules
    assert "SPAWN_LEAK" not in os.environ

def test_fails():
    print("spawned output")
    assert [1, 2] == [1, 3]

def test_segfault():
    ctypes.string_at(0)
'''


def test_spawned_tests_run_fresh_and_report_as_usual(pytester: pytest.Pytester,
                                                     run: Run) -> None:
    pytester.makepyfile(test_spawn=SUITE)
    inner = run("--statesnap-isolate=spawn")
    inner.result.assert_outcomes(passed=2, failed=2)
    texts = {r["nodeid"].split("::")[1]: r for r in inner.reports() if r["outcome"] == "failed"}
    assert "assert [1, 2] == [1, 3]" in texts["test_fails"]["text"]
    assert "spawned output" in texts["test_fails"]["content"]
    assert "killed by SIGSEGV" in texts["test_segfault"]["text"]
    lines = inner.lines()
    first = lines["test_spawn.py::test_first_imports"]
    assert first["isolation"]["mode"] == "spawn"
    assert first["isolation"]["reason"] == "asked"
    contained = {(c["probe"], c["key"]) for c in first["contained_changes"]}
    assert ("env", "SPAWN_LEAK") in contained
    assert first["changes"] == []
    assert lines["test_spawn.py::test_segfault"]["isolation"]["exit"] == {"signal": "SIGSEGV"}
    # A failing test makes the child pytest exit 1: that is a normal end, not a crash.
    assert "crashed" not in lines["test_spawn.py::test_fails"]["isolation"]


def test_spawned_output_reaches_the_terminal_with_dash_s(pytester: pytest.Pytester,
                                                         run: Run) -> None:
    pytester.makepyfile(test_loud='''
import pytest

@pytest.mark.statesnap_isolate("spawn")
def test_prints():
    print("from a fresh interpreter")
''')
    inner = run("-s")
    inner.result.assert_outcomes(passed=1)
    inner.result.stdout.fnmatch_lines(["*from a fresh interpreter*"])
    # The child's own terminal reporter is silenced: one session header, not two.
    assert inner.out.count("test session starts") == 1
