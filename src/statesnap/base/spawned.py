"""The processes statesnap started itself: the only ones it may signal, waited for and reaped.

Every process statesnap starts (a replay, an isolated test's child) is started here
(:func:`popen`, :func:`fork`), which notes its pid; every signal statesnap sends goes through
:func:`signal_process` or :func:`signal_group`, which send it only to a pid noted here that is
still this process's own unreaped child (so its pid cannot have been reused), and to a group
only where that child leads it.  Anything else (a ``MagicMock`` a patched ``subprocess.Popen``
handed back, which ``int()`` makes 1; pid 0 or -1; a pid of someone else's) is refused with one
``internal_error`` line (:mod:`statesnap.base.internal`) and no signal: ``killpg(1, SIGKILL)``
is ``kill(-1, SIGKILL)``, which as root ends every process on the machine.

The functions used here are taken when this module is imported, which the plugin does when it
loads (:mod:`statesnap.plugin.cleanroom` imports it), before any test can patch ``os.kill``,
``os.waitpid`` or ``subprocess.Popen``.  Why: docs/ARCHITECTURE.md ("The clean room").
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from typing import Any

from statesnap.base.internal import note_internal_error

_KILL = os.kill
_KILLPG = os.killpg
_GETPGID = os.getpgid
_SETPGID = os.setpgid
_WAITID = os.waitid
_WAITPID = os.waitpid
_FORK = os.fork
_CLOSE = os.close
_PIDFD_OPEN = getattr(os, "pidfd_open", None)
_EXITCODE = os.waitstatus_to_exitcode
_WIFSIGNALED = os.WIFSIGNALED
_WTERMSIG = os.WTERMSIG
_WCOREDUMP = os.WCOREDUMP
_POPEN = subprocess.Popen
_POLL = select.poll
_POLLIN = select.POLLIN
_MONOTONIC = time.monotonic
_SLEEP = time.sleep
_P_PID = os.P_PID
_EXITED_NOW = os.WEXITED | os.WNOHANG | os.WNOWAIT
_EXITED = os.WEXITED | os.WNOWAIT
_SIGKILL = signal.SIGKILL

#: The children statesnap started and has not reaped: pid -> (whether it leads a process group
#: of its own, the ``Popen`` that started it or None for a fork).
_children: dict[int, tuple[bool, Any]] = {}
#: Children statesnap started and has reaped since (the latest :data:`_REAPED_KEPT`): a late
#: signal to one is refused quietly, where any other pid is an error of statesnap's own.
_reaped: dict[int, None] = {}
_REAPED_KEPT = 4096


class NotOurs(Exception):
    """statesnap was about to signal a process it did not start (never sent)."""


def is_pid(value: object) -> bool:
    """A real ``int`` (not a bool, not a mock, not a subclass) naming one process: above 1."""
    return type(value) is int and value > 1


def _note(pid: int, group: bool, proc: Any) -> None:
    if not is_pid(pid):
        raise NotOurs(f"the process started has no pid: {pid!r}")
    for old, (_, started) in list(_children.items()):
        if started is not None and started.returncode is not None:
            forget(old)  # reaped by its Popen since
    _reaped.pop(pid, None)
    _children[pid] = (group, proc)


def popen(args: Any, **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, **kwargs)`` with the real class, its pid noted as ours."""
    proc: subprocess.Popen[Any] = _POPEN(args, **kwargs)
    _note(proc.pid, bool(kwargs.get("start_new_session")), proc)
    return proc


def fork() -> int:
    """``os.fork()``; in the parent the child's pid is noted as ours (it makes its own group,
    :mod:`statesnap.contain.isolate.fork`); the child starts with no children of ours."""
    pid = _FORK()
    if pid == 0:
        _children.clear()
    else:
        _note(pid, True, None)
    return pid


def lead_group(pid: int) -> None:
    """Make child ``pid`` (0: this process) the leader of a process group of its own."""
    try:
        _SETPGID(pid, pid)
    except OSError:
        pass  # the child did it first and has exec'd or exited; or it is gone


def owned(pid: object) -> bool:
    """Whether ``pid`` is a child statesnap started and has not reaped (as far as it knows)."""
    return is_pid(pid) and pid in _children


def forget(pid: int) -> None:
    """``pid`` was reaped: it is no longer ours to signal."""
    if _children.pop(pid, None) is not None:
        _reaped[pid] = None
        if len(_reaped) > _REAPED_KEPT:
            del _reaped[next(iter(_reaped))]


def _refuse(what: str, target: object, reason: str) -> None:
    note_internal_error("signalling a process", NotOurs(
        f"refused to send {what} to {target!r}: {reason}; nothing was signalled"))


def _ours(pid: object, what: str) -> bool | None:
    """None when ``pid`` may not be signalled; else whether it leads a group of its own.  A
    refusal is noted, except for a child of ours already reaped (nothing left to signal)."""
    if not is_pid(pid):
        _refuse(what, pid, "not a pid statesnap started (a pid is an int above 1)")
        return None
    assert isinstance(pid, int)
    entry = _children.get(pid)
    if entry is None:
        if pid not in _reaped:
            _refuse(what, pid, "not a process statesnap started")
        return None
    group, proc = entry
    if proc is not None and proc.returncode is not None:
        forget(pid)  # its Popen reaped it: the pid may be someone else's by now
        return None
    try:
        # Only an unreaped child of ours answers: its pid (and group id) cannot be reused.
        _WAITID(_P_PID, pid, _EXITED_NOW)
    except ChildProcessError:
        forget(pid)
        return None
    except OSError as exc:
        _refuse(what, pid, f"cannot tell whether it is ours ({exc})")
        return None
    return bool(group)


def signal_process(pid: object, sig: int) -> bool:
    """Send ``sig`` to ``pid``, a child statesnap started and has not reaped; True if sent."""
    if _ours(pid, f"signal {sig}") is None:
        return False
    assert isinstance(pid, int)
    try:
        _KILL(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def signal_group(pgid: object, sig: int = _SIGKILL) -> bool:
    """Send ``sig`` to the process group ``pgid`` led by a child statesnap started in a group
    of its own and has not reaped; True if sent.  False, without a note, for a child started
    in the caller's group (an interactive replay: the caller then signals the child alone)."""
    if not _ours(pgid, f"signal {sig} to a process group"):
        return False
    assert isinstance(pgid, int)
    try:
        actual = _GETPGID(pgid)
    except ProcessLookupError:
        return False
    if actual != pgid:
        _refuse(f"signal {sig}", -pgid, f"pid {pgid} leads no group (it is in {actual})")
        return False
    try:
        _KILLPG(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def exited(pid: int) -> os.waitid_result | None:
    """The child's exit, if it has exited, without reaping it (ChildProcessError when it is
    no child of ours, or reaped)."""
    return _WAITID(_P_PID, pid, _EXITED_NOW)


def has_exited(pid: int) -> bool:
    """Whether child ``pid`` has exited (or is gone), without reaping it."""
    try:
        return exited(pid) is not None
    except ChildProcessError:
        return True


def wait_exited(pid: int, timeout: float | None) -> os.waitid_result | None:
    """Block until child ``pid`` exits (not reaped) or ``timeout`` passes (then None).

    A pidfd makes this one ``poll`` where the kernel has it (Linux 5.3); elsewhere it polls
    with a short, growing sleep.  ``poll`` rather than ``select``: ``select`` refuses a
    descriptor numbered 1024 or more, which a test that left many files open makes ours.
    """
    deadline = None if timeout is None else _MONOTONIC() + timeout
    pidfd = -1
    if _PIDFD_OPEN is not None:
        try:
            pidfd = _PIDFD_OPEN(pid)
        except OSError:
            pidfd = -1
    try:
        if pidfd >= 0:
            poller = _POLL()
            poller.register(pidfd, _POLLIN)
            while True:
                left = None if deadline is None else max(0.0, deadline - _MONOTONIC())
                if poller.poll(None if left is None else left * 1000.0):
                    return _WAITID(_P_PID, pid, _EXITED)
                if deadline is not None and _MONOTONIC() >= deadline:
                    return exited(pid)
        pause = 0.0005
        while True:
            info = exited(pid)
            if info is not None:
                return info
            if deadline is not None and _MONOTONIC() >= deadline:
                return None
            _SLEEP(pause)
            pause = min(pause * 2, 0.02)
    finally:
        if pidfd >= 0:
            _CLOSE(pidfd)


def reap(pid: int) -> int:
    """Wait for child ``pid`` and reap it; its wait status.  It is no longer ours after."""
    try:
        _, status = _WAITPID(pid, 0)
    finally:
        forget(pid)
    return status


def wait(proc: subprocess.Popen[Any]) -> int:
    """``proc.wait()`` with the captured ``waitpid``: reap it and set its ``returncode``."""
    if proc.returncode is None:
        try:
            status = reap(proc.pid)
        except ChildProcessError:  # reaped by the kernel (SIGCHLD ignored): status lost,
            proc.returncode = 0    # which Popen.wait() also calls 0
        else:
            proc.returncode = _EXITCODE(status)
    forget(proc.pid)
    return int(proc.returncode)


def status_parts(status: int) -> tuple[int | None, int | None, bool]:
    """(exit code, killing signal, core dumped) of a wait status."""
    if _WIFSIGNALED(status):
        return None, _WTERMSIG(status), bool(_WCOREDUMP(status))
    return _EXITCODE(status), None, False
