"""What the chaos tests compare between a plain pytest run and one with statesnap: the
exit status, the final summary line, each test's outcome (from ``-v``), and statesnap's own
tracebacks (none allowed)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from suite_runs import summary_line

_VERBOSE = re.compile(r"^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
#: What a traceback or pytest's internal-error report looks like.
TRACEBACKS = ("Traceback (most recent call last)", "INTERNALERROR")

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:randomly"]


def outcomes(output: str) -> dict[str, str]:
    """Each test's outcome from a ``-v`` run's lines."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        m = _VERBOSE.match(line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def env(tmp: Path, **extra: str) -> dict[str, str]:
    """The inner runs' environment: no CI settings of the outer run, a temporary directory
    of the test's own (statesnap's fallback record goes there), no colour."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("PYTEST_", "STATESNAP", "COV_"))}
    tmp.mkdir(parents=True, exist_ok=True)
    return {**keep, "TMPDIR": str(tmp), "PYTEST_ADDOPTS": "-p no:randomly", "NO_COLOR": "1",
            **extra}


def statesnap_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("statesnap: ")]


def check_same_run(plain: subprocess.CompletedProcess[str],
                   snap: subprocess.CompletedProcess[str]) -> None:
    """statesnap's run ended as the plain one: exit status, summary line, every outcome."""
    context = f"--- plain:\n{plain.stdout[-3000:]}{plain.stderr[-1000:]}\n--- statesnap:\n" \
              f"{snap.stdout[-5000:]}{snap.stderr[-2000:]}"
    assert summary_line(plain.stdout) is not None, context
    assert summary_line(snap.stdout) == summary_line(plain.stdout), context
    assert outcomes(snap.stdout) == outcomes(plain.stdout), context
    assert snap.returncode == plain.returncode, context
    for text in TRACEBACKS:
        assert text not in snap.stdout + snap.stderr, context
