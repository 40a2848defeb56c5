"""The hunt's first line says what became of LOW-severity leaks, as the orders below it show.

On cachetools 8.0.2 the line said "113 LOW-severity leak(s) left out (--all-leaks)" and the
list below it then showed "61 test(s) with LOW-severity leaks first": the leaks were not
grouped with the leakers, but an order did hunt them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hunt_helpers import Suite

pytestmark = pytest.mark.slow

LOW_SUITE = {
    "test_low.py": '''
import os


def test_imports_colorsys():
    import colorsys  # noqa: F401  (a plain import: a LOW-severity leak)


def test_sets_level():
    os.environ["LOWWORDS_LEVEL"] = "debug"  # a leak above LOW: one group


def test_plain():
    assert True
''',
}


def _hunt(suite: Suite, record: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "statesnap", "hunt", str(record), *args],
                          cwd=suite.root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _first_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("hunted "))


def test_low_leaks_hunted_in_their_own_order_are_not_said_left_out(suite: Suite) -> None:
    suite.write(LOW_SUITE)
    record = suite.record()
    out = _hunt(suite, record, "--budget", "600")
    assert "low-leakers-first" in out, out
    first = _first_line(out)
    assert "left out" not in first, out
    assert "LOW-severity leak(s) not grouped: their tests ran first in one order" in first, out


def test_low_leaks_no_order_reached_are_said_left_out(suite: Suite) -> None:
    suite.write(LOW_SUITE)
    record = suite.record()
    # A budget that the leakers' orders spend: the low-leakers-first order never runs.
    out = _hunt(suite, record, "--budget", "0.01")
    assert "low-leakers-first," not in out, out
    assert "LOW-severity leak(s) left out (--all-leaks)" in _first_line(out), out
