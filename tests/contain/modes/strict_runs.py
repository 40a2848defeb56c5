"""Strict mode's inner runs, in this process: the fixture's runner and what a run shows.

Shared by the in-process strict tests (``test_strict_unit.py``, ``test_strict_held.py``,
``test_strict_scope_end.py``); the ``strict`` fixture itself is in this folder's conftest.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: The strict error's last line for these refs.
ALLOW_LINE = ("intended? allow it: @pytest.mark.statesnap_allow({refs}) or the ini option "
              "statesnap_allow")
#: A later test module: the inner suite's module-scoped fixtures end before it runs.
OTHER = '''
def test_later():
    pass
'''


@dataclass
class StrictRun:
    result: pytest.RunResult
    record: Path

    def reports(self) -> list[pytest.TestReport]:
        reprec: Any = self.result.reprec  # type: ignore[attr-defined]  # in process only
        reports: list[pytest.TestReport] = reprec.getreports("pytest_runtest_logreport")
        return reports

    def errors(self) -> dict[str, str]:
        """``{test name: teardown error text}`` of every test that errored at teardown."""
        return {r.nodeid.split("::")[-1]: r.longreprtext for r in self.reports()
                if r.when == "teardown" and r.failed}

    def outcomes(self) -> dict[str, str]:
        """``{test name: call outcome}``."""
        return {r.nodeid.split("::")[-1]: r.outcome for r in self.reports() if r.when == "call"}

    def lines(self) -> dict[str, dict[str, Any]]:
        """The record's test lines by test name."""
        out: dict[str, dict[str, Any]] = {}
        for text in self.record.read_text(encoding="utf-8").splitlines():
            obj = json.loads(text)
            if obj.get("type") == "test":
                out[obj["nodeid"].split("::")[-1]] = obj
        return out


def strict_runner(pytester: pytest.Pytester, tmp_path: Path) -> Callable[..., StrictRun]:
    """``run(*args)``: pytest with ``-p statesnap --statesnap-strict ...`` on
    ``pytester.path``, in this process; the record lives outside the inner rootdir."""
    count = 0

    def run(*args: str) -> StrictRun:
        nonlocal count
        count += 1
        record = tmp_path / f"record-{count}.jsonl"
        saved, cwd = dict(os.environ), os.getcwd()
        try:
            result = pytester.runpytest(
                "-p", "no:randomly", "-p", "statesnap", f"--statesnap-record={record}",
                "--statesnap-verify-budget=0", *args,
                # statesnap is imported already: pytest cannot rewrite its asserts.
                "-W", "ignore::pytest.PytestAssertRewriteWarning")
        finally:
            # The inner tests really change os.environ and the cwd, in this process.
            os.environ.clear()
            os.environ.update(saved)
            os.chdir(cwd)
        return StrictRun(result, record)

    return run
