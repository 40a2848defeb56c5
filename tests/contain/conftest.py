"""Real inner pytest runs for the containment features (isolation, modes, xdist).

Every inner run is a subprocess (``python -m pytest``): isolation forks and spawns, and a
crashing test must take nothing of the outer run with it.  ``-p no:randomly`` goes on each
command line because pytester drops ``PYTEST_ADDOPTS``.  Records and report logs go to a
directory outside the inner rootdir, so the ``files`` probe never sees them change, and an
ini file keeps pytester's own ``stdout``/``stderr`` files out of its view.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from statesnap.record.journal import Record
from statesnap.record.reader import read_record

#: Appended to the inner suite's conftest: logs every report (written at unconfigure, so
#: writing it is no per-test state change).
REPORT_LOGGER = '''
import json, os


class _ReportLog:
    # An instance registered as a plugin: no module-level state for the probes to see.
    def __init__(self):
        self.reports = []

    def pytest_runtest_logreport(self, report):
        self.reports.append({
            "nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
            "wasxfail": getattr(report, "wasxfail", None),
            "text": report.longreprtext,
            "sections": [title for title, _ in report.sections],
            "content": "".join(body for _, body in report.sections),
        })

    def pytest_unconfigure(self, config):
        path = os.environ.get("STATESNAP_E2E_REPORTS")
        if path and not os.environ.get("STATESNAP_ISOLATED") and self.reports:
            with open(path, "w", encoding="utf-8") as f:
                json.dump(self.reports, f)


def pytest_configure(config):
    config.pluginmanager.register(_ReportLog(), "e2e-report-log")
'''
#: pytester's subprocess runs write these into the inner rootdir, under the files probe.
INI = '''[pytest]
statesnap_watch_exclude =
    stdout
    stderr
'''


@dataclass
class Inner:
    """One inner run and what it left."""

    result: pytest.RunResult
    record_path: Path
    reports_path: Path

    @property
    def out(self) -> str:
        return self.result.stdout.str()

    def record(self) -> Record:
        return read_record(self.record_path)

    def lines(self) -> dict[str, dict[str, Any]]:
        """The record's test lines as written, by node id."""
        out: dict[str, dict[str, Any]] = {}
        for text in self.record_path.read_text(encoding="utf-8").splitlines():
            obj = json.loads(text)
            if obj.get("type") == "test":
                out[obj["nodeid"]] = obj
        return out

    def reports(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = json.loads(self.reports_path.read_text(encoding="utf-8"))
        return data

    def phases(self) -> list[tuple[str, str, str, str | None]]:
        """``(nodeid, when, outcome, wasxfail)`` of every report, in order."""
        return [(r["nodeid"], r["when"], r["outcome"], r["wasxfail"]) for r in self.reports()]


Run = Callable[..., Inner]


@pytest.fixture
def report_logger() -> str:
    """The conftest text that logs reports; a test writing its own conftest appends it."""
    return REPORT_LOGGER


@pytest.fixture
def run(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    """``run(*args, statesnap=True, randomly=False)``: pytest on ``pytester.path``, in a
    subprocess; pytest-randomly is off unless ``randomly``."""
    outdir = tmp_path / "outputs"
    outdir.mkdir()
    conftest = pytester.path / "conftest.py"
    if not conftest.exists():
        conftest.write_text(REPORT_LOGGER, encoding="utf-8")
    ini = pytester.path / "pytest.ini"
    if not ini.exists():
        ini.write_text(INI, encoding="utf-8")
    count = 0

    def inner(*args: str, statesnap: bool = True, randomly: bool = False,
              timeout: float = 180) -> Inner:
        nonlocal count
        count += 1
        reports = outdir / f"reports-{count}.json"
        record = outdir / f"record-{count}.jsonl"
        monkeypatch.setenv("STATESNAP_E2E_REPORTS", str(reports))
        argv = [] if randomly else ["-p", "no:randomly"]
        if randomly:  # the outer conftest's PYTEST_ADDOPTS switches it off
            monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
        if statesnap:
            argv = ["-p", "statesnap", f"--statesnap-record={record}",
                    "--statesnap-verify-budget=0", *argv]
        result = pytester.runpytest_subprocess(*argv, *args, timeout=timeout)
        return Inner(result, record, reports)

    return inner
