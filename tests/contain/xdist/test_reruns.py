"""pytest-rerunfailures: reruns in the record; a test that only fails in the suite is flagged."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Run = Callable[..., Any]

SUITE = '''
import os, pathlib

def test_polluter():
    os.environ["RR_POLLUTE"] = "1"

def test_order_victim():
    # fails while polluted, and cleans up as it fails: its rerun passes
    if os.environ.pop("RR_POLLUTE", None):
        assert False, "polluted by an earlier test"

def test_flaky():
    counter = pathlib.Path(os.environ["RR_COUNTER"])
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    assert n % 2 == 1, f"attempt {n}"

def test_steady():
    pass
'''


def test_reruns_are_recorded_and_order_dependence_is_flagged(
        pytester: pytest.Pytester, run: Run, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_reruns=SUITE)
    monkeypatch.setenv("RR_COUNTER", str(tmp_path / "counter"))
    summary = tmp_path / "summary.json"
    inner = run("--reruns", "1", "--statesnap-verify-budget=120", f"--statesnap-json={summary}")
    outcomes = inner.result.parseoutcomes()
    assert (outcomes["passed"], outcomes["rerun"]) == (4, 2)
    lines = inner.lines()
    assert lines["test_reruns.py::test_order_victim"]["reruns"] == 1
    assert lines["test_reruns.py::test_order_victim"]["outcome"] == "passed"
    assert lines["test_reruns.py::test_order_victim"]["failure"]["message"].startswith(
        "polluted by an earlier test")
    assert "reruns" not in lines["test_reruns.py::test_steady"]
    findings = {f["victim"]: f for f in json.loads(summary.read_text())["findings"]}
    order = findings["test_reruns.py::test_order_victim"]
    assert order["status"] == "suspected"
    assert "likely order-dependent" in order["note"]
    assert order["polluters"] == ["test_reruns.py::test_polluter"]
    assert order["key"] == "RR_POLLUTE"
    flaky = findings["test_reruns.py::test_flaky"]
    assert flaky["status"] == "not-deterministic"
    assert flaky["polluters"] == []
    inner.result.stdout.fnmatch_lines(["*pytest-rerunfailures reran 2 test(s)*"])


PLUGIN_LISTING = '''
import os, pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    names = sorted(n for n, _ in session.config.pluginmanager.list_name_plugin()
                   if n and n.startswith("statesnap-"))
    with open(os.environ["PLUGIN_LISTING"], "a", encoding="utf-8") as f:
        f.write(" ".join(names) + "\\n")
'''


def test_per_test_hooks_are_registered_only_when_some_test_needs_them(
        pytester: pytest.Pytester, run: Run, tmp_path: Path, report_logger: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Every hook a plugin registers is called on every test: reruns, isolation and guards
    # keep theirs off unless a test is marked (or an option asks for them).
    listing = tmp_path / "plugins.txt"
    monkeypatch.setenv("PLUGIN_LISTING", str(listing))
    pytester.makeconftest(report_logger + PLUGIN_LISTING)
    pytester.makepyfile(test_plain="def test_a():\n    pass\n")
    run().result.assert_outcomes(passed=1)
    run("--reruns", "1").result.assert_outcomes(passed=1)
    pytester.makepyfile(test_marked='''
import pytest

@pytest.mark.flaky(reruns=1)
@pytest.mark.statesnap_isolate
def test_b():
    pass
''')
    run().result.assert_outcomes(passed=2)
    plain, reruns, marked = (set(line.split()) for line in listing.read_text().splitlines())
    assert "statesnap-session" in plain
    assert not {"statesnap-reruns", "statesnap-isolate-runner"} & plain
    assert "statesnap-reruns" in reruns and "statesnap-isolate-runner" not in reruns
    assert {"statesnap-reruns", "statesnap-isolate-runner"} <= marked
