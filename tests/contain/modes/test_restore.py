"""Restore mode on a polluting suite: the suite heals, the record still names polluters."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Run = Callable[..., Any]

SUITE = '''
import os, sys, pytest

@pytest.fixture(scope="module")
def module_env():
    os.environ["MODULE_FIXTURE"] = "on"
    yield
    del os.environ["MODULE_FIXTURE"]

def test_a_env_polluter():
    os.environ["ZOO_MODE"] = "fast"

def test_b_cwd_polluter(tmp_path):
    os.chdir(tmp_path)

def test_c_syspath_polluter():
    sys.path.insert(0, "/nonexistent/zoo")

def test_d_fixture_user(module_env):
    pass

def test_e_fixture_still_there(module_env):
    # restore mode must not take a wide fixture's state away from its scope
    assert os.environ["MODULE_FIXTURE"] == "on"

def test_f_victim():
    assert "ZOO_MODE" not in os.environ
    assert "/nonexistent/zoo" not in sys.path
    assert os.getcwd() == os.environ["SUITE_ROOT"]
'''


def test_the_suite_heals_and_the_polluters_stay_named(
        pytester: pytest.Pytester, run: Run, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_heal=SUITE)
    monkeypatch.setenv("SUITE_ROOT", str(pytester.path))
    polluted = run()
    polluted.result.assert_outcomes(passed=5, failed=1)
    summary = tmp_path / "summary.json"
    healed = run("--statesnap-restore", f"--statesnap-json={summary}")
    healed.result.assert_outcomes(passed=6)
    lines = healed.lines()
    assert lines["test_heal.py::test_a_env_polluter"]["restored"] == ["env:ZOO_MODE"]
    assert lines["test_heal.py::test_b_cwd_polluter"]["restored"] == ["cwd:cwd"]
    assert "syspath:sys.path:/nonexistent/zoo" in lines[
        "test_heal.py::test_c_syspath_polluter"]["restored"]
    # The fixture's change was left to the fixture (its scope, its finaliser).
    assert "restored" not in lines["test_heal.py::test_d_fixture_user"]
    assert "restored" not in lines["test_heal.py::test_e_fixture_still_there"]
    # The leak itself is still in the record and the summary: the polluter is named.
    leaks = {t["nodeid"]: t["leaks"] for t in json.loads(summary.read_text())["tests"]}
    assert {(lk["probe"], lk["key"]) for lk in leaks["test_heal.py::test_a_env_polluter"]} \
        == {("env", "ZOO_MODE")}
    healed.result.stdout.fnmatch_lines([
        "*restore mode put back * key(s) after 3 test(s):*",
        "*test_heal.py::test_a_env_polluter: env:ZOO_MODE*",
    ])


def test_restore_only_selected_probes(pytester: pytest.Pytester, run: Run,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_heal=SUITE)
    monkeypatch.setenv("SUITE_ROOT", str(pytester.path))
    inner = run("--statesnap-restore=env")
    inner.result.assert_outcomes(passed=5, failed=1)  # cwd and sys.path were left dirty
    victim = inner.lines()["test_heal.py::test_f_victim"]
    assert victim["outcome"] == "failed"
    # env was put back, so the first assertion held; the sys.path one did not
    assert "/nonexistent/zoo" in victim["failure"]["message"]


def test_restore_of_a_probe_that_cannot(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_one="def test_x():\n    pass\n")
    inner = run("--statesnap-restore=threads")
    assert inner.result.ret == 4
    assert "threads cannot put state back" in inner.result.stderr.str()
