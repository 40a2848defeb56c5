"""Waiting for isolated children: exit statuses, signals, timeouts, their process groups."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from statesnap.base import spawned
from statesnap.contain.isolate.modes import choose_mode, cuda_initialised
from statesnap.contain.isolate.run import trim_frames
from statesnap.replay.procwait import kill_group, wait_child


def _fork(body: str) -> int:
    """A child (own process group) running ``body`` in a fresh interpreter, via exec."""
    pid = spawned.fork()  # noted as statesnap's own: the only kind wait_child takes
    if pid == 0:  # pragma: no cover - child
        os.setpgid(0, 0)
        os.execv(sys.executable, [sys.executable, "-c", body])
    try:
        os.setpgid(pid, pid)  # also done by the child; whichever runs first
    except OSError:
        pass
    return pid


def test_exit_status_is_reported() -> None:
    pid = _fork("import os; os._exit(5)")
    result = wait_child(pid)
    assert (result.code, result.signal, result.timed_out) == (5, None, False)
    assert result.describe() == "exited with status 5"
    assert not result.ok


def test_signal_is_named() -> None:
    pid = _fork("import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    result = wait_child(pid)
    assert result.signal == signal.SIGTERM
    assert result.signal_name == "SIGTERM"
    assert result.to_json() == {"signal": "SIGTERM"}


def test_kill_group_says_whether_there_was_a_group() -> None:
    pid = _fork("import time; time.sleep(60)")
    assert kill_group(pid) is True
    assert wait_child(pid).signal == signal.SIGKILL
    # Reaped: no group of that id is left (the interactive replay's case: kill the child alone).
    assert kill_group(pid) is False


def test_timeout_aborts_then_kills() -> None:
    pid = _fork("import time; time.sleep(60)")
    result = wait_child(pid, timeout=0.3)
    assert result.timed_out
    assert result.signal == signal.SIGABRT  # faulthandler's chance to say where it hung


def test_timeout_kills_a_child_that_ignores_sigabrt() -> None:
    pid = _fork("import signal, time; signal.signal(signal.SIGABRT, signal.SIG_IGN); "
                "time.sleep(60)")
    result = wait_child(pid, timeout=0.3)
    assert result.timed_out
    assert result.signal == signal.SIGKILL


def test_the_childs_group_is_killed_when_it_exits(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild"
    body = ("import subprocess, sys; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
            f"open({str(pidfile)!r}, 'w').write(str(p.pid))")
    pid = _fork(body)
    result = wait_child(pid)
    assert result.code == 0
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{grandchild}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            break
        if state == "Z":
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the grandchild outlived its group")


def test_fork_unless_cuda_is_initialised() -> None:
    # torch (CPU build) imported in a fresh interpreter: CUDA is not initialised, so fork.
    code = ("import torch, sys; "
            "from statesnap.contain.isolate.modes import choose_mode, cuda_initialised; "
            "print(cuda_initialised(), choose_mode('auto')[0], choose_mode('spawn')[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "fork", "spawn"]
    assert choose_mode("fork") == ("fork", "asked")
    assert cuda_initialised() == ("torch.cuda" in sys.modules and bool(
        sys.modules["torch.cuda"].is_initialized()))


def test_trim_frames_keeps_the_tests_frames() -> None:
    dump = "\n".join([
        "Fatal Python error: Segmentation fault",
        "",
        "Current thread 0x1 (most recent call first):",
        '  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at',
        '  File "/src/test_x.py", line 10 in test_segv',
        '  File "/venv/site-packages/_pytest/python.py", line 187 in pytest_pyfunc_call',
        '  File "/venv/site-packages/pluggy/_execution.py", line 147 in _multicall',
        "",
        "Extension modules: psutil (total: 1)",
    ])
    trimmed = trim_frames(dump).splitlines()
    assert '  File "/src/test_x.py", line 10 in test_segv' in trimmed
    assert "  ... (pytest's own frames)" in trimmed
    assert not [line for line in trimmed if "pluggy" in line]
    assert trimmed[-1] == "Extension modules: psutil (total: 1)"
