"""One real CI-like run of the planted suite (``pytest -n 2 -v``), shared by the tests here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from backfill_suite import CiRun, git_init, run_ci, write_project


@pytest.fixture(scope="session")
def ci_run(tmp_path_factory: pytest.TempPathFactory) -> CiRun:
    root = write_project(tmp_path_factory.mktemp("project") / "proj")
    commit = git_init(root)
    ci = root / "ci"
    proc = run_ci(root, ci)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    return CiRun(root=root, ci=ci, commit=commit)


@pytest.fixture
def project(ci_run: CiRun, tmp_path: Path) -> CiRun:
    """A private copy of the project and its CI artifacts (a backfill writes into OUTDIR)."""
    root = tmp_path / "proj"
    shutil.copytree(ci_run.root, root, symlinks=True)
    return CiRun(root=root, ci=root / "ci", commit=ci_run.commit)
