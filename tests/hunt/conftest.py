"""Fixtures of the hunt's tests (helpers live in ``hunt_helpers``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hunt_helpers import Suite


@pytest.fixture
def suite(tmp_path: Path) -> Suite:
    root = tmp_path / "suite"
    out = tmp_path / "out"
    root.mkdir()
    out.mkdir()
    # An ini file makes the suite its own rootdir, away from this repository's pyproject.
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return Suite(root, out)
