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
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from statesnap.base import spawned
from statesnap.replay.inherited import TRAMPOLINE
from statesnap.replay.procwait import kill_group
from statesnap.replay.warmprogram import PROGRAM

#: ``STATESNAP_REPLAY_WARM=off`` (or ``--statesnap-replay-warm=off``) replays cold only.
WARM_ENV = "STATESNAP_REPLAY_WARM"
#: How long the warm parent may take to import the preload before replays go cold.
START_TIMEOUT = 120.0

_said: set[str] = set()
#: Set by the plugin from ``--statesnap-replay-warm`` (None: the environment decides).
setting: dict[str, bool | None] = {"on": None}


def enabled() -> bool:
    """Whether replays may fork from a warm parent (default: yes)."""
    if setting["on"] is not None:
        return bool(setting["on"])
    return os.environ.get(WARM_ENV, "on").strip().lower() not in ("off", "0", "no", "false")


def say_once(reason: str) -> None:
    """The one line that says replays run cold, and why (once per reason and process)."""
    if reason in _said:
        return
    _said.add(reason)
    sys.stderr.write(f"statesnap: replays run cold, each in a fresh interpreter: {reason}\n")
    sys.stderr.flush()


class WarmChild:
    """One forked replay, as the log pump watches it: its exit comes over the socket."""

    def __init__(self, parent: WarmParent) -> None:
        self.parent = parent
        self.returncode: int | None = None
        self.timed_out = False
        self.lost = False

    def has_exited(self) -> bool:
        return self.returncode is not None or self.lost or self.parent.poll_exit(self, 0.0)

    def wait_exited(self, timeout: float) -> None:
        if self.returncode is None and not self.lost:
            self.parent.poll_exit(self, timeout)


class WarmParent:
    """The warm parent process of one replay environment, and the socket to it."""

    def __init__(self, proc: subprocess.Popen[bytes], sock: socket.socket, loaded: int) -> None:
        self.proc = proc
        self.sock = sock
        self.loaded = loaded
        self._buf = b""

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
        parent is closed)."""
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
        while b"\n" not in self._buf:
            if not _readable(self.sock, timeout):
                return None
            data = self.sock.recv(65536)
            if not data:
                return None
            self._buf += data
        line, self._buf = self._buf.split(b"\n", 1)
        out: dict[str, Any] = json.loads(line)
        return out

    def fork(self, argv: Sequence[str], timeout: float, out_fd: int, secret_fd: int,
             secret_env: str) -> WarmChild:
        """Fork a child running ``python -m pytest *argv`` with stdout and stderr on
        ``out_fd``; the warm parent kills its group past ``timeout``."""
        msg = json.dumps({"argv": list(argv), "timeout": timeout, "secret_env": secret_env})
        socket.send_fds(self.sock, [(msg + "\n").encode()], [out_fd, secret_fd])
        return WarmChild(self)

    def poll_exit(self, child: WarmChild, timeout: float) -> bool:
        reply = self._read(timeout)
        if reply is None:
            if self.proc.poll() is not None or _closed(self.sock):
                child.lost = True
                child.returncode = -int(signal.SIGKILL)
                return True
            return False
        child.returncode = int(reply.get("exit", 1))
        child.timed_out = bool(reply.get("timed_out"))
        return True

    def alive(self) -> bool:
        return self.proc.returncode is None and spawned.owned(self.proc.pid) \
            and not spawned.has_exited(self.proc.pid)

    def close(self) -> None:
        """End it: EOF on its socket makes it kill a running child and exit."""
        try:
            self.sock.close()
        except OSError:
            pass
        if self.proc.returncode is not None or not spawned.owned(self.proc.pid):
            return  # closed before
        try:
            if spawned.wait_exited(self.proc.pid, 5.0) is None:
                kill_group(self.proc.pid)
        except ChildProcessError:
            pass
        spawned.wait(self.proc)


def _readable(sock: socket.socket, timeout: float) -> bool:
    # poll, not select: select refuses a descriptor numbered 1024 or more.
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(timeout * 1000.0))


def _closed(sock: socket.socket) -> bool:
    try:
        return _readable(sock, 0.0) and not sock.recv(1, socket.MSG_PEEK)
    except OSError:
        return True
