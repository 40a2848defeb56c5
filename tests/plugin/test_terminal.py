"""The terminal section and progress lines, as a user reads them in CI (output not a tty)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from statesnap.record.reader import read_record

SUITE = '''
import os
import sys
import types


def test_stub_json5():
    fake = types.ModuleType("terminal_json5")
    fake.dumps = lambda obj: "<stub>"
    sys.modules["terminal_json5"] = fake  # a new module: a low-severity leak


def test_export_uses_the_real_json5():
    mod = sys.modules.get("terminal_json5")
    assert mod is None or mod.dumps({}) != "<stub>"


def test_sets_flag():
    os.environ["TERMINAL_FLAG"] = "1"


def test_needs_no_flag():
    assert "TERMINAL_FLAG" not in os.environ
'''


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\n")
    (suite / "test_terminal_suite.py").write_text(textwrap.dedent(SUITE))
    out = tmp_path / "out"
    record = out / "run.jsonl"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "statesnap",
           f"--statesnap-record={record}", f"--statesnap-json={out / 'summary.json'}", *args]
    proc = subprocess.run(cmd, cwd=suite, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)  # stdout a pipe: not a terminal
    return proc, record


@pytest.mark.parametrize("verbosity", ["-q", "-v"])
def test_progress_lines_start_on_their_own_line(tmp_path: Path, verbosity: str) -> None:
    proc, _ = _run(tmp_path, verbosity, "--statesnap-verify-budget=120")
    lines = proc.stdout.splitlines()
    # Not a terminal: one line per victim once its verdict is settled, none per replay.
    assert not [line for line in lines if "statesnap: replaying" in line], proc.stdout
    progress = [line for line in lines if "statesnap: [" in line]
    assert progress, proc.stdout
    assert all(line.startswith("statesnap: ") for line in progress), proc.stdout
    # ... and the test progress before them is whole.
    before = lines[lines.index(progress[0]) - 1]
    assert before.rstrip().endswith("[100%]"), proc.stdout


def test_section_names_the_summary_and_the_low_severity_cause(tmp_path: Path) -> None:
    proc, record = _run(tmp_path, "--statesnap-verify-budget=120")
    out = proc.stdout
    summary = tmp_path / "out" / "summary.json"
    assert f"record: {record}" in out.splitlines()
    assert f"summary: {summary}" in out.splitlines()
    # The stub is a low-severity change (a new module) that is a verified finding's proven
    # cause: it is listed with the leaks, and counted.
    assert "[VERIFIED] test_terminal_suite.py::test_export_uses_the_real_json5" in out, out
    leaks = [line.strip() for line in out.splitlines()
             if line.startswith("    test_terminal_suite.py::")]
    assert any(line.startswith("test_terminal_suite.py::test_stub_json5: terminal_json5:")
               for line in leaks), out
    assert "2 test(s) leaked state:" in out, out
    # Low-severity leaks that broke nothing stay out of the section (still in the record).
    tests = read_record(record).tests
    low = [c for t in tests for c in t.changes if c.severity <= 1]
    assert low, "the suite must have low-severity changes for this test to mean anything"
