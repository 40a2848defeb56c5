"""A runner's warm parent: started on its first replay, then shared by every replay in flight.

The :class:`~statesnap.replay.runner.Runner` asks :class:`WarmReplays` for the parent before
each replay.  The first asks start it and run cold while it imports (a runner that replays
once, a backfill task, pays nothing for it); later ones wait for its preload's verdict.  One
lock covers starting and that wait, so threads replaying at once start one parent, not one
each, and share it: the parent forks a child per request and files each exit under its id
(:mod:`statesnap.replay.warm`).  When the parent refuses, replays run cold and the runner
says so once, on one stderr line.  See docs/ARCHITECTURE.md ("Replays").
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import IO

from statesnap.replay.log import LogPump, SecretPipe
from statesnap.replay.result import ReplayResult
from statesnap.replay.warm import WarmParent, cold_line
from statesnap.replay.warmsetting import WarmSetting

#: Starts a warm parent (``WarmParent.spawn`` with the runner's environment), or says why not.
Spawn = Callable[[Sequence[str]], "WarmParent | str"]
#: Makes the log pump of one replay: (read end of its output pipe) -> pump.
PumpFor = Callable[[int], LogPump]


class WarmReplays:
    """The warm parent of one runner, its state, and how one forked replay is run."""

    def __init__(self, setting: WarmSetting) -> None:
        self.setting = setting
        self._parent: WarmParent | None = None
        self._lock = threading.Lock()
        #: Why replays run cold (the warm parent refused, or could not start); None: not yet.
        self.refused: str | None = None

    def parent(self, modules: object, spawn: Spawn) -> WarmParent | None:
        """The warm parent to fork this replay from; None when it runs cold: turned off, an
        old record without its preload list, the parent refused (said once), or the parent
        was only just started by this call."""
        if not self.setting.on or self.refused is not None:
            return None
        with self._lock:
            if self.refused is not None:
                return None
            current = self._parent
            if current is not None and current.loaded >= 0 and not current.alive():
                current.close()  # it died: start another
                self._parent = current = None
            if current is None:
                if not isinstance(modules, list) or not modules:
                    self._refuse("the record does not list the modules to preload")
                    return None
                try:
                    started = spawn([str(m) for m in modules])
                except Exception as exc:  # forking is a speed-up: whatever fails, go cold
                    started = f"cannot start the warm parent ({type(exc).__name__}: {exc})"
                if isinstance(started, str):
                    self._refuse(started)
                    return None
                self._parent = started
                weakref.finalize(self, started.close)
                return None
            try:
                why = current.ready()
            except Exception as exc:
                current.close()
                why = f"the warm parent's answer could not be read ({type(exc).__name__})"
            if why is not None:
                self._parent = None
                self._refuse(why)
                return None
            return current

    def _refuse(self, why: str) -> None:
        self.refused = why
        sys.stderr.write(cold_line(why))
        sys.stderr.flush()

    def drop(self, parent: WarmParent) -> None:
        """End ``parent`` (it hung, or the caller was interrupted): every child still running
        is killed, and the next replay starts a new one."""
        with self._lock:
            if self._parent is parent:
                self._parent = None
        parent.close()

    def close(self) -> None:
        with self._lock:
            parent, self._parent = self._parent, None
        if parent is not None:
            parent.close()


def run_forked(warm: WarmReplays, parent: WarmParent, argv: Sequence[str], limit: float,
               deadline: float, log: IO[str], result: ReplayResult, secret_env: str,
               secrets: SecretPipe, pump_for: PumpFor) -> bool:
    """One replay forked from ``parent`` running ``python -m pytest *argv``, its output
    pumped into ``log`` until ``deadline`` (the warm parent itself kills the child past
    ``limit``; the margin is for a parent that hangs).  False when it could not fork
    (``result.error`` says why)."""
    read_fd, write_fd = os.pipe()
    try:
        child = parent.fork(list(argv), limit, write_fd, secrets.write_fd, secret_env)
    except Exception as exc:
        os.close(read_fd)
        why = exc.strerror if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
        result.error = f"cannot fork from the warm parent: {why}"
        log.write(f"# statesnap: {result.error}\n")
        secrets.close()
        return False
    finally:
        os.close(write_fd)
        secrets.started()  # the warm parent has its copy: ours goes, so EOF can come
    pump = pump_for(read_fd)
    try:
        if pump.run(child, deadline=deadline + 30.0):
            warm.drop(parent)
            child.timed_out = True
            child.wait_exited(5.0)
        if child.timed_out:
            result.timed_out = True
            log.write(f"\n# statesnap: replay timed out after {limit:.0f}s; its "
                      "process group was killed\n")
        result.returncode = child.returncode if child.returncode is not None else -9
        result.cpu = child.cpu
    except BaseException:
        warm.drop(parent)  # interrupted: EOF makes the warm parent kill its children
        raise
    finally:
        pump.close()
        os.close(read_fd)
    return True
