"""A replay child's output on its way to the log, with secrets scrubbed before it is written.

The child sends each secret value it meets through an inherited pipe (``SECRET_FD_ENV``); the
parent replaces every known value by its digest, whole lines at a time, in one ``poll`` loop
in the caller's thread (``select`` refuses descriptors numbered 1024 or more, which a test that
left many files open makes ours).  In a pytest session this module is first imported by the
session end, inside the clean room (:mod:`statesnap.plugin.cleanattrs` has put back ``select``,
``os``, ``time`` and ``json`` as they were before the tests), so the functions it takes at
import are the real ones even where a test left them patched.  See docs/ARCHITECTURE.md
("Replays").
"""

from __future__ import annotations

import codecs
import json
import os
import select
import subprocess
import time
from collections.abc import Iterable
from typing import IO, Any, Protocol

from statesnap.base import spawned
from statesnap.base.redact import SECRET_FD_ENV, Redactor

_READ = os.read
_POLL = select.poll
_MONOTONIC = time.monotonic
_LOADS = json.loads
#: What a pipe's read end can answer: data, or its writers gone (EOF) or an error, which a
#: read then reports (``select`` calls all of them readable).
_READABLE = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR | select.POLLNVAL

#: After the child exited, how long output still held open by a process it left behind
#: (a leaked daemon child inherits its stdout) is read before the log is closed.
DRAIN_AFTER_EXIT = 1.0

#: A line longer than this (a progress bar redrawn with ``\r``) is written without waiting for
#: its newline.
MAX_PENDING = 1 << 20


class Watched(Protocol):
    """A child whose exit the pump watches (a forked replay, statesnap.replay.warm)."""

    def has_exited(self) -> bool: ...

    def wait_exited(self, timeout: float) -> None: ...


class _PopenWatch:
    """A child of ours, watched without reaping it (WNOWAIT): until the caller reaps it, its
    pid and group are still ours to kill (statesnap.base.spawned)."""

    def __init__(self, proc: subprocess.Popen[Any]) -> None:
        self.pid = proc.pid

    def has_exited(self) -> bool:
        return spawned.has_exited(self.pid)

    def wait_exited(self, timeout: float) -> None:
        spawned.wait_exited(self.pid, timeout)


class SecretPipe:
    """The pipe a replay child reports its secret values through (one per child)."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self._partial = b""
        self._closed = False
        #: Every child holding the write end is gone.
        self.eof = False

    def child_env(self) -> dict[str, str]:
        return {SECRET_FD_ENV: str(self.write_fd)}

    def started(self) -> None:
        """The child has its copy of the write end: the parent's goes, so EOF can come."""
        os.close(self.write_fd)

    def take(self) -> list[str]:
        """The values the child has reported since the last call (never blocks)."""
        if self._closed:
            return []
        data = self._partial
        while True:
            try:
                chunk = _READ(self.read_fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                self.eof = True
                break
            data += chunk
        *lines, self._partial = data.split(b"\n")
        values = []
        for line in lines:
            try:
                value = _LOADS(line.decode("utf-8", "surrogateescape"))
            except ValueError:
                continue
            if isinstance(value, str):
                values.append(value)
        return values

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self.read_fd)


class LogPump:
    """Copies a child's output into ``log``: raw to ``tee`` if given, scrubbed to the log."""

    def __init__(self, out_fd: int, log: IO[str], redactor: Redactor,
                 known: Iterable[str] = (), secrets: SecretPipe | None = None,
                 tee: IO[bytes] | None = None) -> None:
        self.out_fd = out_fd
        self.log = log
        self.redactor = redactor
        self.values = set(known)
        self.secrets = secrets
        self.tee = tee
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""
        self._eof = False

    def run(self, proc: subprocess.Popen[Any] | Watched, deadline: float | None = None) -> bool:
        """Pump until the child exits and its output is drained; True if ``deadline`` came
        first (the child is still running: the caller kills it and calls again).  ``proc``:
        a child of ours, or a replay forked by a warm parent (:mod:`statesnap.replay.warm`)."""
        watched_proc = proc if not isinstance(proc, subprocess.Popen) else _PopenWatch(proc)
        exited_at: float | None = None
        while True:
            now = _MONOTONIC()
            # Not reaped (WNOWAIT): until the caller reaps it, its pid and group are still ours
            # to kill (statesnap.base.spawned).
            if exited_at is None and watched_proc.has_exited():
                exited_at = now
            if exited_at is None and deadline is not None and now >= deadline:
                return True
            # The secret pipe is read whenever it has data, or a child reporting many secrets
            # would fill it and block until the replay's timeout.
            watched = [] if self._eof else [self.out_fd]
            secrets = self.secrets
            if secrets is not None and not secrets.eof:
                watched.append(secrets.read_fd)
            if self._eof and exited_at is not None:
                return False
            if exited_at is not None and now - exited_at > DRAIN_AFTER_EXIT:
                return False
            wait = 0.05 if exited_at is not None else 0.2
            if deadline is not None and exited_at is None:
                wait = max(0.0, min(wait, deadline - now))
            if not watched:  # stdout closed, secrets done: only the exit is left to wait for
                watched_proc.wait_exited(wait)
                continue
            ready = _ready(watched, wait)
            if secrets is not None and secrets.read_fd in ready:
                self.values.update(secrets.take())
            if self.out_fd not in ready:
                if not ready and exited_at is not None:
                    return False  # exited, and nothing more came within the wait
                continue
            chunk = _READ(self.out_fd, 65536)
            if not chunk:
                self._eof = True
                continue
            self._write(chunk)

    def _write(self, chunk: bytes) -> None:
        if self.tee is not None:
            self.tee.write(chunk)
            self.tee.flush()
        # The child reports a secret before it prints it: whatever it printed in this chunk,
        # its secrets are in the pipe by now.
        if self.secrets is not None:
            self.values.update(self.secrets.take())
        text = self._pending + self._decoder.decode(chunk)
        cut = text.rfind("\n") + 1
        if cut == 0 and len(text) > MAX_PENDING:
            cut = len(text)
        self._pending = text[cut:]
        if cut:
            self.log.write(self.redactor.scrub(text[:cut], self.values))
            self.log.flush()

    def close(self) -> None:
        """Write what is left (a last line without newline) and close the secret pipe."""
        if self.secrets is not None:
            self.values.update(self.secrets.take())
            self.secrets.close()
        rest = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        if rest:
            self.log.write(self.redactor.scrub(rest, self.values))
        self.log.flush()


def _ready(fds: list[int], timeout: float) -> list[int]:
    """The descriptors of ``fds`` that can be read (data, EOF or an error) within ``timeout``."""
    poller = _POLL()
    for fd in fds:
        poller.register(fd, _READABLE)
    return [fd for fd, events in poller.poll(timeout * 1000.0) if events & _READABLE]
