"""Replays forked from a warm parent: the libraries imported once, one fork per replay.

A fresh interpreter per replay is exact, but most of its cost is importing the same libraries
again.  A :class:`WarmParent` is one process per replay environment (interpreter, environment,
cwd, umask, signal state: those of the :class:`~statesnap.replay.runner.Runner` that starts
it) that imports what the recorded session had imported before its first test
(:mod:`statesnap.replay.warmpick`), checks that the preload left nothing a fork would carry
into the child that a fresh process lacks (a thread, a child process, CUDA, a socket or other
open file, a changed environment, cwd, signal handler or umask), and then forks one
``python -m pytest`` child per replay (:mod:`statesnap.replay.warmprogram`).  When a check
fails it refuses, and the runner replays cold and says so once.

The children are the warm parent's, not ours: it waits for them and kills a child's process
group past its timeout (statesnap signals only processes it started: this process signals only
the warm parent, :mod:`statesnap.base.spawned`).  See docs/ARCHITECTURE.md ("Replays").
"""

from __future__ import annotations

import json
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from statesnap.base import spawned
from statesnap.replay.inherited import TRAMPOLINE
from statesnap.replay.procwait import kill_group
from statesnap.replay.warmprogram import PROGRAM
from statesnap.replay.warmsetting import WarmSetting

__all__ = ["WarmChild", "WarmParent", "WarmSetting", "cold_line"]

#: How long the warm parent may take to import the preload before replays go cold.
START_TIMEOUT = 120.0
#: How long one thread reads the socket for everyone before letting another wait (s).
_READ_SLICE = 0.05


def cold_line(reason: str) -> str:
    """The one line that says replays run cold, and why."""
    return f"statesnap: replays run cold, each in a fresh interpreter: {reason}\n"


class WarmChild:
    """One forked replay, as the log pump watches it: its exit comes over the socket."""

    def __init__(self, parent: WarmParent, ident: int) -> None:
        self.parent = parent
        self.ident = ident
        self.returncode: int | None = None
        self.timed_out = False
        self.lost = False
        #: Its user + system CPU seconds (wait4 in the warm parent).
        self.cpu: float | None = None

    def has_exited(self) -> bool:
        return self.parent.collect(self, 0.0)

    def wait_exited(self, timeout: float) -> None:
        self.parent.collect(self, timeout)


class WarmParent:
    """The warm parent process of one replay environment, and the socket to it.

    Safe for several replays in flight at once, each from its own thread: a request carries
    an id, and whichever thread reads the socket files every exit message under its id."""

    def __init__(self, proc: subprocess.Popen[bytes], sock: socket.socket, loaded: int) -> None:
        self.proc = proc
        self.sock = sock
        self.loaded = loaded
        self._buf = b""
        self._lock = threading.Lock()  # the fields below, and sends
        self._reader = threading.Lock()  # one thread reads the socket at a time
        self._replies: dict[int, dict[str, Any]] = {}
        self._next = 0
        self._gone = False

    @classmethod
    def spawn(cls, python: str, modules: Sequence[str], cwd: str, env: Mapping[str, str],
              umask: int | None, trampoline: Mapping[str, Any] | None) -> WarmParent | str:
        """Start it; it preloads while the caller goes on (:meth:`ready` waits for that).
        The reason, as a string, when it cannot start."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        cmd = [python, "-c", PROGRAM, str(theirs.fileno()), ",".join(modules)]
        if trampoline is not None:
            cmd = [python, "-c", TRAMPOLINE, json.dumps(dict(trampoline)), *cmd]
        try:
            proc = spawned.popen(cmd, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True, pass_fds=(theirs.fileno(),),
                                 umask=-1 if umask is None else umask)
        except OSError as exc:
            ours.close()
            return f"cannot start the warm parent ({exc.strerror})"
        finally:
            theirs.close()
        return cls(proc, ours, -1)

    def ready(self) -> str | None:
        """Wait for the preload's verdict: None when forks may start, else why not (and the
        parent is closed).  Called before any fork, under the runner's lock."""
        if self.loaded >= 0:
            return None
        reply = self._read(START_TIMEOUT)
        if reply is None or "ok" not in reply:
            self.close()
            if reply is None:
                return "the warm parent did not finish its preload"
            return str(reply.get("refused") or "the warm parent refused")
        self.loaded = int(reply["ok"])
        return None

    def _read(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None if none came within ``timeout`` or the parent is gone."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            if not _readable(self.sock, max(0.0, deadline - time.monotonic())):
                return None
            try:
                data = self.sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                self._gone = True
                return None
            self._buf += data
        line, self._buf = self._buf.split(b"\n", 1)
        out: dict[str, Any] = json.loads(line)
        return out

    def fork(self, argv: Sequence[str], timeout: float, out_fd: int, secret_fd: int,
             secret_env: str) -> WarmChild:
        """Fork a child running ``python -m pytest *argv`` with stdout and stderr on
        ``out_fd``; the warm parent kills its group past ``timeout``."""
        with self._lock:
            self._next += 1
            ident = self._next
            msg = json.dumps({"id": ident, "argv": list(argv), "timeout": timeout,
                              "secret_env": secret_env})
            socket.send_fds(self.sock, [(msg + "\n").encode()], [out_fd, secret_fd])
        return WarmChild(self, ident)

    def collect(self, child: WarmChild, timeout: float) -> bool:
        """Whether ``child`` has exited (its message read, or the parent gone), waiting up to
        ``timeout`` for it; messages for other children read meanwhile are kept for them."""
        deadline = time.monotonic() + timeout
        while True:
            if child.returncode is not None or child.lost:
                return True
            with self._lock:
                reply = self._replies.pop(child.ident, None)
                gone = self._gone
            if reply is not None:
                child.returncode = int(reply.get("exit", 1))
                child.timed_out = bool(reply.get("timed_out"))
                cpu = reply.get("cpu")
                child.cpu = float(cpu) if isinstance(cpu, (int, float)) else None
                return True
            if gone or self.proc.poll() is not None:
                child.lost = True
                child.returncode = -int(signal.SIGKILL)
                return True
            left = deadline - time.monotonic()
            if not self._reader.acquire(timeout=max(0.0, min(left, _READ_SLICE))):
                if left <= 0:
                    return False
                continue
            try:
                msg = self._read(max(0.0, min(left, _READ_SLICE)))
            finally:
                self._reader.release()
            if msg is not None and isinstance(msg.get("id"), int):
                with self._lock:
                    self._replies[int(msg["id"])] = msg
            elif msg is None and left <= 0:
                return False

    def alive(self) -> bool:
        return self.proc.returncode is None and spawned.owned(self.proc.pid) \
            and not spawned.has_exited(self.proc.pid)

    def close(self) -> None:
        """End it: EOF on its socket makes it kill every running child and exit.  Threads
        waiting for a child then find it lost."""
        with self._lock:
            self._gone = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            if self.proc.returncode is None and spawned.owned(self.proc.pid):
                try:
                    if spawned.wait_exited(self.proc.pid, 5.0) is None:
                        kill_group(self.proc.pid)
                except ChildProcessError:
                    pass
                spawned.wait(self.proc)
        finally:
            # Closed only now: a thread still polling it saw EOF above, not a reused number.
            self.sock.close()


def _readable(sock: socket.socket, timeout: float) -> bool:
    # poll, not select: select refuses a descriptor numbered 1024 or more.
    poller = select.poll()
    try:
        poller.register(sock.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
    except ValueError:  # closed
        return True
    return bool(poller.poll(timeout * 1000.0))
