"""Waiting for an isolated test's process: a deadline, its process group, and how it ended.

Pure of pytest.  The child's process group is killed once it is gone, before it is reaped
(``WNOWAIT``); a pidfd makes the wait one ``poll`` where the kernel has it.  Only children
statesnap started are waited for and signalled (:mod:`statesnap.base.spawned`).  See
docs/ARCHITECTURE.md ("Replays").
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from statesnap.base import spawned

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


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Signal a whole process group; False when there was no such group to signal.

    Only a group led by a child statesnap started in a session of its own and has not reaped
    is signalled (:func:`statesnap.base.spawned.signal_group`); anything else is refused.  A
    group already gone is fine: the caller that started its child without a session of its
    own (an interactive replay) then signals the child alone.
    """
    return spawned.signal_group(pgid, sig)


def wait_child(pid: int, timeout: float | None = None) -> Exit:
    """Wait for child ``pid`` (started by :mod:`statesnap.base.spawned`, leading its own
    process group) and reap it.

    Past ``timeout`` the child gets SIGABRT (faulthandler's chance to say where it hung), then
    its group SIGKILL; the result says ``timed_out``.  When it ends, the rest of its group is
    killed, then it is reaped.
    """
    if not spawned.owned(pid):
        raise spawned.NotOurs(f"not a child statesnap started: {pid!r}")
    timed_out = spawned.wait_exited(pid, timeout) is None
    if timed_out:
        spawned.signal_process(pid, signal.SIGABRT)
        spawned.wait_exited(pid, ABORT_GRACE)
    # Its group: grandchildren die with it (and the child too, if it ignored SIGABRT).  Not
    # reaped yet, so the group id is still its own.  A child with no group of its own that
    # hung gets SIGKILL alone.
    if not kill_group(pid) and timed_out:
        spawned.signal_process(pid, signal.SIGKILL)
    code, sig, core = spawned.status_parts(spawned.reap(pid))
    return Exit(code=code, signal=sig, timed_out=timed_out, core=core)
