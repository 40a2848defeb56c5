"""End to end: ``pytest -p statesnap --report pollution.html`` on a real suite, then the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from statesnap.cli import main

SUITE = {
    "test_leaky.py": """
import os

def test_sets_flag():
    os.environ["E2E_FLAG"] = "on"

def test_needs_flag_off():
    assert os.environ.get("E2E_FLAG") is None
""",
}


def _data(html: str) -> dict[str, object]:
    m = re.search(r'<script type="application/json" id="statesnap-data">(.*?)</script>', html,
                  re.S)
    assert m is not None
    parsed: dict[str, object] = json.loads(m.group(1))
    return parsed


def test_the_plugin_writes_the_report_at_the_end_of_the_run(
        pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> None:
    pytester.makepyfile(**SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "statesnap", "--report", "out/pollution.html",
        "--statesnap-record", str(tmp_path_factory.mktemp("records") / "run.jsonl"),
        "--statesnap-verify-budget", "0")
    result.assert_outcomes(passed=1, failed=1)
    report = pytester.path / "out" / "pollution.html"
    result.stdout.fnmatch_lines(["*report: *pollution.html*"])
    html = report.read_text(encoding="utf-8")
    assert "test_leaky.py::test_needs_flag_off" in html
    assert "E2E_FLAG" in html
    data = _data(html)
    rows = data["tests"]
    assert isinstance(rows, list)
    assert [r[2] for r in rows] == ["test_leaky.py::test_sets_flag",
                                    "test_leaky.py::test_needs_flag_off"]
    assert [r[3] for r in rows] == ["passed", "failed"]
    assert rows[0][5] >= 1  # the polluter leaked


def test_the_cli_rebuilds_it_from_the_record(pytester: pytest.Pytester,
                                             tmp_path_factory: pytest.TempPathFactory,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    pytester.makepyfile(**SUITE)
    record = tmp_path_factory.mktemp("records") / "cli-run.jsonl"
    pytester.runpytest_subprocess("-p", "no:randomly", "-p", "statesnap",
                                  "--statesnap-record", str(record),
                                  "--statesnap-verify-budget", "0")
    out = pytester.path / "again.html"
    assert main(["report", str(record), "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    # Attributed afresh from the record: the polluter is named for the victim.
    assert 'class="badge status-suspected"' in html
    finding = html[html.index('id="finding-1"'):html.index("</article>")]
    assert "test_leaky.py::test_sets_flag" in finding
    assert "env:E2E_FLAG" in finding
    assert Path(out).stat().st_size < 200_000
