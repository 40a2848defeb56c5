"""Run a command inside a fresh pid namespace, beside a bystander process that must survive.

Tests whose statesnap run could signal processes (a mocked ``Popen`` handing a fake pid to the
kill path, ``os.kill`` patched, a timer left running) never run bare on the machine that runs
the suite: a wrong ``kill(-1, SIGKILL)`` as root would take the CI runner with it.  Inside
``unshare --pid --fork --mount-proc`` such a signal reaches only the namespace.  The
namespace's first process (pid 1, which ``kill(-1, ...)`` never reaches) starts a bystander
(``sleep``), runs the command, then reports on its stderr whether the bystander is still
alive, and exits with the command's status.

Use :func:`wrap` on an argv, run it, then :func:`bystander_survived` on its stderr.
Marked tests (``needs_pidns``) fail under ``CI=true`` where ``unshare`` cannot make a
namespace, rather than skip (``tests/ci_skips.py``).
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence

import pytest

#: Printed by the namespace's first process on stderr after the command ended.
ALIVE = "pidns: bystander alive"
KILLED = "pidns: BYSTANDER KILLED"

# pid 1 of the namespace: a bystander (not a child of the command's process tree), then the
# command, then the bystander's fate.  Signals the command's descendants send inside the
# namespace never reach pid 1 unless it installed a handler, and it installs none.
_BOOT = r"""
import json, subprocess, sys
argv, alive, killed = json.loads(sys.argv[1])
bystander = subprocess.Popen(["sleep", "3600"], start_new_session=True)
try:
    rc = subprocess.call(argv)
finally:
    gone = bystander.poll()
    if gone is None:
        sys.stderr.write("\n%s (pid %d)\n" % (alive, bystander.pid))
        bystander.kill()
        bystander.wait()
    else:
        sys.stderr.write("\n%s (it ended with %s)\n" % (killed, gone))
    sys.stderr.flush()
sys.exit(rc if rc >= 0 else 128 - rc)
"""


@functools.cache
def unavailable() -> str | None:
    """Why a pid namespace cannot be made here, or None when it can."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "no unshare command (util-linux)"
    try:
        proc = subprocess.run([unshare, "--pid", "--fork", "--mount-proc", "true"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare failed: {exc}"
    if proc.returncode != 0:
        return f"unshare cannot make a pid namespace: {proc.stderr.strip() or proc.returncode}"
    return None


def require() -> None:
    """Skip (a failure under CI=true, by the ``needs_pidns`` marker) where no namespace can be
    made: such a test never falls back to running bare."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)


def wrap(argv: Sequence[str]) -> list[str]:
    """``argv`` run as the child of a new pid namespace's first process, beside a bystander."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "call require() first"
    return [unshare, "--pid", "--fork", "--mount-proc", "--", sys.executable, "-c", _BOOT,
            json.dumps([list(argv), ALIVE, KILLED])]


def bystander_survived(stderr: str) -> bool:
    """Whether the namespace's bystander was alive when the wrapped command ended."""
    if KILLED in stderr:
        return False
    assert ALIVE in stderr, f"no word from the namespace's first process:\n{stderr[-2000:]}"
    return True
