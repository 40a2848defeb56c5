"""The ``strict`` fixture of the in-process strict tests (statesnap's strict mode, run by
pytester in this process: see strict_runs.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from strict_runs import StrictRun, strict_runner


@pytest.fixture
def strict(pytester: pytest.Pytester, tmp_path: Path) -> Callable[..., StrictRun]:
    """``strict(*args)``: pytest with ``-p statesnap --statesnap-strict ...`` on
    ``pytester.path``, in this process; the record lives outside the inner rootdir."""
    return strict_runner(pytester, tmp_path)
