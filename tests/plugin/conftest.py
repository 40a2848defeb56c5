"""Helpers for the end-to-end tests of the pytest plugin: real inner pytest runs via pytester.

Every inner run gets ``-p no:randomly`` on its command line: pytester deletes
``PYTEST_ADDOPTS`` when it starts, so the top-level conftest's setting does not reach it.
Outputs that the tests read (records, summaries, the per-report log) go to a directory
outside the inner rootdir, so that statesnap's ``files`` probe never sees them change.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from statesnap.record.journal import Record
from statesnap.record.reader import read_record

#: A conftest plugin for inner runs that logs every report (outcome per phase) to a file
#: named by ``STATESNAP_E2E_REPORTS``; written at unconfigure so that writing it is no
#: per-test state change.
REPORT_LOGGER = '''
import json, os


class _ReportLog:
    # The reports live on an instance, not in a module-level list: the attributes probe
    # watches the rootdir's modules, and a list growing there would be a leak of every test.
    def __init__(self):
        self.reports = []

    def pytest_runtest_logreport(self, report):
        crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
        self.reports.append({
            "nodeid": report.nodeid,
            "when": report.when,
            "outcome": report.outcome,
            "wasxfail": getattr(report, "wasxfail", None),
            "crash": None if crash is None else crash.message,
        })

    def pytest_unconfigure(self, config):
        path = os.environ.get("STATESNAP_E2E_REPORTS")
        if path:
            with open(path, "w", encoding="utf-8") as f:
                json.dump(self.reports, f)


def pytest_configure(config):
    config.pluginmanager.register(_ReportLog(), "statesnap-e2e-report-log")
'''

_SECTION_START = re.compile(r"^-+ statesnap -+$")
_SECTION_END = re.compile(r"^(=+ .* =+|=+)$")


@dataclass
class InnerRun:
    """One inner pytest run and the files it left."""

    result: pytest.RunResult
    record_path: Path
    reports_path: Path

    @property
    def ret(self) -> int:
        return int(self.result.ret)

    def record(self) -> Record:
        return read_record(self.record_path)

    def reports(self) -> list[dict[str, Any]]:
        """Every test report of the run, in order, as logged by :data:`REPORT_LOGGER`."""
        data: list[dict[str, Any]] = json.loads(self.reports_path.read_text(encoding="utf-8"))
        return data

    def comparable(self) -> list[tuple[Any, ...]]:
        """Reports reduced to what must not change when statesnap is on."""
        return [(r["nodeid"], r["when"], r["outcome"], r["wasxfail"], r["crash"])
                for r in self.reports()]

    def outcomes(self) -> dict[str, int]:
        return self.result.parseoutcomes()

    def section(self) -> list[str]:
        """The lines of statesnap's own terminal section (empty if it printed none)."""
        return statesnap_section(self.result.outlines)


def statesnap_section(lines: Sequence[str]) -> list[str]:
    """Lines between the ``--- statesnap ---`` separator and the next ``===`` separator."""
    out: list[str] = []
    inside = False
    for line in lines:
        if _SECTION_START.match(line):
            inside = True
            continue
        if inside and (_SECTION_END.match(line) or re.match(r"^-+ .+ -+$", line)):
            break
        if inside:
            out.append(line)
    return out


class Runner:
    """Runs the inner suite in ``pytester.path``; numbered outputs live in ``outdir``."""

    def __init__(self, pytester: pytest.Pytester, outdir: Path,
                 monkeypatch: pytest.MonkeyPatch) -> None:
        self.pytester = pytester
        self.outdir = outdir
        self.monkeypatch = monkeypatch
        self.count = 0

    def conftest(self, source: str) -> Path:
        """Write the inner rootdir's ``conftest.py``: ``source`` plus the report logger."""
        return self.pytester.makeconftest(source + "\n" + REPORT_LOGGER)

    def __call__(self, *args: str, statesnap: bool = True, subprocess: bool = False,
                 record: bool = True, timeout: float = 120) -> InnerRun:
        self.count += 1
        n = self.count
        reports = self.outdir / f"reports-{n}.json"
        record_path = self.outdir / f"record-{n}.jsonl"
        self.monkeypatch.setenv("STATESNAP_E2E_REPORTS", str(reports))
        argv: list[str] = ["-p", "no:randomly"]
        if statesnap:
            argv += ["-p", "statesnap"]
            if record:
                argv += ["--statesnap-record", str(record_path)]
        argv += list(args)
        if not subprocess:
            # In process, statesnap is already imported by the outer session, so pytest warns
            # that it cannot rewrite its asserts; a subprocess imports it fresh.  Last, so that
            # it wins over a ``-W error`` in ``args``.
            argv += ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
        if subprocess:
            result = self.pytester.runpytest_subprocess(*argv, timeout=timeout)
        else:
            # The inner tests really change os.environ, and in process that would carry over
            # into the next inner run (and into this session): put it back exactly.
            saved = dict(os.environ)
            try:
                result = self.pytester.runpytest(*argv)
            finally:
                os.environ.clear()
                os.environ.update(saved)
        return InnerRun(result, record_path, reports)


@pytest.fixture
def inner(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runner:
    """Run pytest on the suite written into ``pytester.path`` (a conftest logs its reports).

    A test that needs its own ``conftest.py`` writes it with :meth:`Runner.conftest`.
    """
    pytester.makeconftest(REPORT_LOGGER)
    outdir = tmp_path / "outputs"
    outdir.mkdir()
    return Runner(pytester, outdir, monkeypatch)

