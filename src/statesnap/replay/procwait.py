"""Waiting for an isolated test's process: a deadline, its process group, and how it ended.

Pure of pytest.  The child's process group is killed once it is gone, before it is reaped
(``WNOWAIT``); a pidfd makes the wait one ``select`` where the kernel has it.  See
docs/ARCHITECTURE.md ("Replays").
"""

from __future__ import annotations

import os
import select
import signal
import time
from dataclasses import dataclass

#: After the deadline the child first gets SIGABRT, so faulthandler prints where it hung; if it
#: is still there after this many seconds, its group gets SIGKILL.
ABORT_GRACE = 2.0


@dataclass
class Exit:
    """How a child process ended."""

    #: Exit status when it exited, None when a signal killed it.
    code: int | None = None
    #: The signal that killed it, when one did.
    signal: int | None = None
    #: True when statesnap killed it for running past its timeout.
    timed_out: bool = False
    #: True when the child dumped core (the kernel says so; the core may not exist).
    core: bool = False

    @property
    def ok(self) -> bool:
        return self.code == 0 and self.signal is None and not self.timed_out

    @property
    def signal_name(self) -> str | None:
        if self.signal is None:
            return None
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    def describe(self) -> str:
        """``"killed by SIGSEGV (signal 11)"``, ``"exited with status 3"``."""
        if self.signal is not None:
            text = f"killed by {self.signal_name} (signal {self.signal})"
            return text + (", core dumped" if self.core else "")
        return f"exited with status {self.code}"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.code is not None:
            out["code"] = self.code
        if self.signal is not None:
            out["signal"] = self.signal_name
        if self.timed_out:
            out["timed_out"] = True
        return out


def _exited(pid: int) -> os.waitid_result | None:
    """The child's exit, if it has exited, without reaping it."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)


def _wait_exited(pid: int, timeout: float | None) -> os.waitid_result | None:
    """Block until the child exits (not reaped) or ``timeout`` passes (then None)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pidfd = -1
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    try:
        if pidfd >= 0:
            while True:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    ready, _, _ = select.select([pidfd], [], [], left)
                except InterruptedError:  # pragma: no cover - PEP 475 retries for us
                    continue
                if ready:
                    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
                if deadline is not None and time.monotonic() >= deadline:
                    return _exited(pid)
        pause = 0.0005
        while True:
            info = _exited(pid)
            if info is not None:
                return info
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Signal a whole process group; False when there was no such group to signal.

    A group already gone is fine: the caller that started its child without a session of its
    own (an interactive replay) then signals the child alone.
    """
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def wait_child(pid: int, timeout: float | None = None, group: bool = True) -> Exit:
    """Wait for child ``pid`` (its own group leader when ``group``) and reap it.

    Past ``timeout`` the child gets SIGABRT, then its group SIGKILL; the result says
    ``timed_out``.  When it ends, the rest of its group is killed, then it is reaped.
    """
    timed_out = False
    info = _wait_exited(pid, timeout)
    if info is None:
        timed_out = True
        try:
            os.kill(pid, signal.SIGABRT)
        except ProcessLookupError:
            pass
        info = _wait_exited(pid, ABORT_GRACE)
        if info is None:
            if group:
                kill_group(pid)
            else:
                os.kill(pid, signal.SIGKILL)
            _wait_exited(pid, None)
    if group:
        kill_group(pid)  # grandchildren die with the child's group
    _, status = os.waitpid(pid, 0)
    exit_ = Exit(timed_out=timed_out)
    if os.WIFSIGNALED(status):
        exit_.signal = os.WTERMSIG(status)
        exit_.core = os.WCOREDUMP(status)
    else:
        exit_.code = os.waitstatus_to_exitcode(status)
    return exit_
