"""The pid-namespace harness (``tests/pidns.py``) tells a killed bystander from a live one.

Every test that could signal processes relies on it, so it must catch the very accident it
guards against: a ``kill(-1, SIGKILL)`` from inside the namespace.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import pidns

pytestmark = pytest.mark.needs_pidns


def _run(code: str) -> subprocess.CompletedProcess[str]:
    pidns.require()
    return subprocess.run(pidns.wrap([sys.executable, "-c", code]), capture_output=True,
                          text=True, timeout=60)


def test_a_kill_of_every_process_reaches_the_bystander_only_inside() -> None:
    proc = _run("import os, signal; os.kill(-1, signal.SIGKILL)")
    assert not pidns.bystander_survived(proc.stderr)


def test_a_quiet_command_leaves_the_bystander_and_keeps_its_status() -> None:
    proc = _run("import sys; sys.exit(3)")
    assert proc.returncode == 3
    assert pidns.bystander_survived(proc.stderr)
