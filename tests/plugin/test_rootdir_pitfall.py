"""A path option given as two words can move pytest's rootdir; statesnap says so.

pytest picks its rootdir and ini file before it knows plugin options, and counts an existing
path given as a separate word among the test paths.  Real runs in a subprocess.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from statesnap.plugin.options import rootdir_pitfalls


def _run(project: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "statesnap",
         "--statesnap-verify-budget=0", *args],
        cwd=project, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (project / "test_a.py").write_text("def test_a():\n    pass\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    record = elsewhere / "run.jsonl"
    record.write_text("", encoding="utf-8")  # a previous run's record: it exists
    return project, record


def test_two_words_with_an_existing_outside_path_are_named(layout: tuple[Path, Path]) -> None:
    project, record = layout
    out = _run(project, "--statesnap-record", str(record))
    assert f"--statesnap-record {record}: given as two words" in out
    assert f"write --statesnap-record={record}" in out


def test_the_equals_form_says_nothing(layout: tuple[Path, Path]) -> None:
    project, record = layout
    out = _run(project, f"--statesnap-record={record}")
    assert "two words" not in out


def test_paths_inside_the_invocation_dir_and_new_paths_are_fine(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "run.jsonl").write_text("", encoding="utf-8")
    inside = ["--statesnap-record", "out/run.jsonl"]
    missing = ["--report", str(tmp_path.parent / "not-there.html")]
    assert rootdir_pitfalls([*inside, *missing], tmp_path, tmp_path) == []
