"""What a hunt finding says about its victim's failure and the runs behind it
(``hunt/suspect.py``), checked against the printed reproduction.

A brittle test fails with a message that names how many tests its run held: two in the hunt's
run without the leaking tests, one alone.  The finding's reproduction runs it alone, so the
failure the finding shows must be the alone run's, the one a user gets from the command; and
the finding lists the log of every run that decided it, each once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hunt_helpers import Suite

from repro_check import run_reproduction
from statesnap.analysis.findings import BRITTLE
from statesnap.hunt.hunt import Hunter
from statesnap.hunt.options import HuntOptions
from statesnap.record.reader import read_record

pytestmark = pytest.mark.slow

VICTIM = "test_b_uses_home.py::test_uses_home"
FILES = {
    "pytest.ini": "[pytest]\n",
    "test_a0_plain.py": "def test_plain():\n    pass\n",
    "test_a_sets_home.py": '''
import os

def test_sets_home():
    os.environ["ZOO_HOME"] = "/zoo"
''',
    "test_b_uses_home.py": '''
import os

def test_uses_home(request):
    assert "ZOO_HOME" in os.environ, (
        f"ZOO_HOME unset, {request.session.testscollected} test(s) in the run")
''',
}


def test_a_brittle_findings_failure_is_the_one_its_reproduction_shows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = Suite(tmp_path / "suite", tmp_path / "out")
    suite.root.mkdir()
    suite.out.mkdir()
    suite.write(FILES)
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:randomly")
    monkeypatch.delenv("ZOO_HOME", raising=False)
    record = suite.record()
    result = Hunter([read_record(record)], HuntOptions(budget=600),  # type: ignore[arg-type]
                    logs_dir=suite.out / "hunt-logs").hunt()
    (f,) = result.findings
    assert (f.victim, f.status, f.setter) == (
        VICTIM, BRITTLE, "test_a_sets_home.py::test_sets_home")
    # It failed in a run of two tests first (without the leaking one), then alone.
    failed_runs = [r for r in result.runs if VICTIM in r.new_failures]
    assert failed_runs, [(r.label, r.new_failures) for r in result.runs]
    assert f.exc_type == "AssertionError"
    assert f.message is not None and f.message.startswith("ZOO_HOME unset, 1 test(s) in the run")
    run = run_reproduction(f.repro, suite.root)
    assert run.proc.returncode == 1, run.output
    assert "ZOO_HOME unset, 1 test(s) in the run" in run.output
    # Every run that decided it is listed once, and each log is there to read.
    assert f.logs and len(f.logs) == len(set(f.logs)), f.logs
    assert all(Path(log).is_file() for log in f.logs), f.logs
    assert {r.log for r in failed_runs} <= set(f.logs), (f.logs, failed_runs)


def test_a_latent_suspect_that_turns_brittle_lists_each_run_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The victim passes after the LOW-severity import in the run without the leaking tests
    # (latent, at first), fails after the leaker in the reversed run, and fails alone: it
    # turns brittle, and its failure is attributed again from the same runs.
    suite = Suite(tmp_path / "suite", tmp_path / "out")
    suite.root.mkdir()
    suite.out.mkdir()
    suite.write({
        "pytest.ini": "[pytest]\n",
        "test_a_imports.py": "def test_imports_colorsys():\n    import colorsys  # noqa: F401\n",
        "test_b_needs.py": "import sys\n\ndef test_needs_colorsys():\n"
                           "    assert 'colorsys' in sys.modules, 'colorsys not imported yet'\n",
        "test_c_other.py": "import os\n\ndef test_other():\n    os.environ['ZOO_OTHER'] = '1'\n",
    })
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:randomly")
    monkeypatch.delenv("ZOO_OTHER", raising=False)
    record = suite.record()
    result = Hunter([read_record(record)], HuntOptions(budget=600),  # type: ignore[arg-type]
                    logs_dir=suite.out / "hunt-logs").hunt()
    (f,) = result.findings
    assert (f.victim, f.status, f.setter) == (
        "test_b_needs.py::test_needs_colorsys", BRITTLE, "test_a_imports.py::test_imports_colorsys")
    assert f.message == "colorsys not imported yet"
    assert f.logs and len(f.logs) == len(set(f.logs)), f.logs
    assert all(Path(log).is_file() for log in f.logs), f.logs
    run = run_reproduction(f.repro, suite.root)
    assert run.proc.returncode == 1 and "colorsys not imported yet" in run.output, run.output
