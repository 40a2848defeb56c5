"""``threads``: Python threads still alive, and the count of native threads Python does not know.

Keys are thread names (unique with `` #2`` in start order); ``<native threads>`` is low
severity.  The token (``/proc/self/task``'s link count) and its noise: docs/PROBES.md.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from statesnap.probes.base import Probe, ProbeContext, ProbeMap, Severity, unreadable
from statesnap.probes.procdir import ProcDir

#: The key holding the number of native threads that are not Python threads.
NATIVE_KEY = "<native threads>"

#: How long :meth:`ThreadsProbe.read` lets a just-joined thread finish leaving the kernel.
_SETTLE_NS = 200_000


def _class_name(thread: threading.Thread) -> str:
    t = type(thread)
    return f"{t.__module__}.{t.__qualname__}"


class ThreadsProbe(Probe):
    """Python threads (name, daemon flag, class) plus the native-only thread count."""

    name = "threads"
    severity = Severity.HIGH

    def __init__(self) -> None:
        self._task: ProcDir | None = None
        self._last_native: int | None = None

    def setup(self, ctx: ProbeContext) -> None:
        if os.path.isdir("/proc/self/task"):
            task = ProcDir("/proc/{pid}/task", ctx.own_fds)
            try:
                if task.fstat().st_nlink > 2:  # 2 + threads; anything else is not that counter
                    self._task = task
                else:
                    task.close()
            except OSError:
                task.close()

    def _kernel_threads(self) -> int | None:
        if self._task is None:
            return None
        return self._task.fstat().st_nlink - 2

    def token(self) -> object:
        active = getattr(threading, "_active", None)
        if isinstance(active, dict):
            # tuple(dict) and map(id, ...) run in C without releasing the GIL, so a thread
            # starting meanwhile cannot make the iteration fail.  The ids catch an ident reused
            # by a new thread after the old one ended.
            return tuple(active), tuple(map(id, active.values())), self._kernel_threads()
        threads = threading.enumerate()
        return tuple(map(id, threads)), self._kernel_threads()

    def gauges(self, current: ProbeMap) -> dict[str, float]:
        native = current.get(NATIVE_KEY)
        python = len(current) - (NATIVE_KEY in current)
        out = {"threads": float(python)}
        if isinstance(native, int):
            out["native threads"] = float(native)
        return out

    def read(self) -> ProbeMap:
        threads = threading.enumerate()
        out: ProbeMap = {}
        for thread in threads:
            try:
                key = thread.name
                if type(key) is not str:
                    key = f"{key}"  # a key is text (a name set to a number, to an object)
                n = 1
                while key in out:
                    n += 1
                    key = f"{thread.name} #{n}"
                out[key] = {
                    "daemon": thread.daemon,
                    "class": _class_name(thread),
                    "ident": thread.ident,
                }
            except Exception as exc:  # a name that cannot be hashed or shown: its own key
                out[f"<thread {thread.ident}>"] = unreadable(exc)
        native = self._native(len(threads))
        if native is not None:
            out[NATIVE_KEY] = native
        return out

    def _native(self, python_threads: int) -> int | None:
        kernel = self._kernel_threads()
        if kernel is None:
            return None
        native = max(kernel - python_threads, 0)
        last = self._last_native
        if last is not None and native > last:
            # Most often a Python thread that was joined a moment ago and has not left the
            # kernel yet; give it the CPU briefly rather than report a thread that is going.
            deadline = time.perf_counter_ns() + _SETTLE_NS
            while native > last and time.perf_counter_ns() < deadline:
                os.sched_yield()
                native = max((self._kernel_threads() or 0) - python_threads, 0)
        self._last_native = native
        return native

    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        if key == NATIVE_KEY:
            return Severity.LOW
        if isinstance(after, dict) and not after.get("daemon"):
            return Severity.HIGH  # keeps running and keeps the interpreter from exiting
        return Severity.MEDIUM

    def detail(self, key: str, before: Any, after: Any) -> str | None:
        if key == NATIVE_KEY:
            return f"native threads not started by Python: {before} → {after}"
        if isinstance(after, dict) and before is None:
            kind = "daemon" if after.get("daemon") else "non-daemon"
            return f"{kind} thread {key!r} ({after.get('class')}) still running"
        if after is None and isinstance(before, dict):
            return f"thread {key!r} stopped"
        return None

    def hint(self, key: str, change: str) -> str | None:
        if key == NATIVE_KEY:
            return ("a library started native threads (a thread pool); shut it down in a "
                    "fixture finaliser if later tests depend on the thread count")
        if change == "removed":
            return (f"this test stopped thread {key!r} that an earlier test started; give the "
                    "thread to a fixture that starts and stops it")
        return (f"join thread {key!r} (or stop it) before the test ends, e.g. in a fixture "
                "finaliser: set its stop event, then thread.join()")

    def close(self) -> None:
        if self._task is not None:
            self._task.close()
            self._task = None
