"""The CI jobs in docs/ci.md: parsed as YAML, and their pytest commands run on a small suite.

Each job's pytest line is run as its shell would run it (``python`` is this environment's), in
a suite with a planted polluter; the files it writes must be the ones the job uploads, and the
GitHub job's summary and annotations must come out of it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from suite_runs import write_suite

DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"
SUITE = {
    "test_wf.py": """
        import os

        def test_sets_mode():
            os.environ["WF_MODE"] = "fast"

        def test_reads_mode():
            assert os.environ.get("WF_MODE", "slow") == "slow"
    """,
}


def jobs() -> dict[str, Any]:
    """The YAML blocks of docs/ci.md, by the heading they are under."""
    out: dict[str, Any] = {}
    heading = ""
    text = DOC.read_text(encoding="utf-8")
    for found in re.finditer(r"^## (?P<h>[^\n]+)$|^```yaml\n(?P<y>.*?)^```$", text,
                             re.MULTILINE | re.DOTALL):
        if found.group("h"):
            heading = found.group("h").strip()
        else:
            out[heading] = yaml.safe_load(found.group("y"))
    return out


def pytest_line(lines: list[str]) -> str:
    found = [line for line in lines if re.search(r"\bpytest\b", line) and "pip" not in line]
    assert len(found) == 1, found
    return found[0]


def outputs(command: str) -> dict[str, str]:
    """``option → path`` of the files the command writes."""
    out = {}
    for word in shlex.split(command):
        name, sep, value = word.partition("=")
        if sep and name in ("--statesnap-record", "--statesnap-json", "--report", "--junitxml"):
            out[name] = value
    return out


def run(command: str, tmp: Path,
        env: dict[str, str]) -> tuple[Path, subprocess.CompletedProcess[str]]:
    root = write_suite(tmp / "proj", SUITE)
    base = {k: v for k, v in os.environ.items()
            if k not in ("PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST")
            and not k.startswith(("PYTEST_XDIST", "STATESNAP_", "GITHUB_"))}
    base["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}"
    # As the job runs it: pytest-randomly is not installed there (here it is, for its tests).
    base["PYTEST_ADDOPTS"] = "-p no:randomly"
    proc = subprocess.run(["/bin/sh", "-c", command], cwd=root, env={**base, **env},
                          capture_output=True, text=True, timeout=300, check=False)
    return root, proc


def test_github_job_parses_and_uploads_what_its_pytest_writes(tmp_path: Path) -> None:
    doc = jobs()["GitHub Actions"]
    steps = doc["jobs"]["test"]["steps"]
    uses = [s.get("uses", "").split("@")[0] for s in steps]
    assert uses[:2] == ["actions/checkout", "actions/setup-python"]
    upload = steps[uses.index("actions/upload-artifact")]
    assert upload["if"] == "always()"  # the outputs matter most when tests failed
    command = pytest_line([s["run"] for s in steps if "run" in s])
    files = outputs(command)
    assert set(files) == {"--statesnap-record", "--statesnap-json", "--report", "--junitxml"}
    folder = upload["with"]["path"]
    assert all(p.startswith(folder) for p in files.values())

    summary = tmp_path / "summary.md"
    root, proc = run(command, tmp_path, {"GITHUB_STEP_SUMMARY": str(summary),
                                         "GITHUB_ACTIONS": "true",
                                         "GITHUB_WORKSPACE": str(tmp_path / "proj")})
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    for path in files.values():
        assert (root / path).is_file(), path
    assert "test_wf.py::test_reads_mode" in summary.read_text(encoding="utf-8")
    assert [x for x in proc.stdout.splitlines() if x.startswith("::error file=test_wf.py,")]
    assert "statesnap.verdict:test_wf.py::test_reads_mode" in (
        root / files["--junitxml"]).read_text(encoding="utf-8")


def test_gitlab_job_parses_and_keeps_what_its_pytest_writes(tmp_path: Path) -> None:
    doc = jobs()["GitLab CI"]
    job = doc["test"]
    command = pytest_line(job["script"])
    files = outputs(command)
    assert set(files) == {"--statesnap-record", "--statesnap-json", "--report", "--junitxml"}
    artifacts = job["artifacts"]
    assert artifacts["when"] == "always"
    assert artifacts["reports"]["junit"] == files["--junitxml"]
    assert all(any(p.startswith(k) for k in artifacts["paths"]) for p in files.values())

    root, proc = run(command, tmp_path, {})
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    for path in files.values():
        assert (root / path).is_file(), path
    assert not [x for x in proc.stdout.splitlines() if x.startswith("::")]


@pytest.mark.parametrize("heading", ["GitHub Actions", "GitLab CI"])
def test_every_job_runs_pytest_verbose(heading: str) -> None:
    """-v: the console log then holds the order and the plugins backfill needs."""
    doc = jobs()[heading]
    lines = ([s["run"] for s in doc["jobs"]["test"]["steps"] if "run" in s]
             if "jobs" in doc else doc["test"]["script"])
    assert "-v" in shlex.split(pytest_line(lines))
