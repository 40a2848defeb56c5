"""``children``: child processes still running, or exited and never waited for (zombies).

Keys are command lines (unique with `` #2`` in pid order), fingerprints the pid and a status.
Never reaps: ``waitid`` only with ``WNOWAIT``, ``/proc`` and psutil only read.  The token and its
cost: docs/PROBES.md.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from statesnap.probes.base import (
    Probe,
    ProbeContext,
    ProbeMap,
    ProbeUnavailable,
    ProcFile,
    Severity,
    import_own,
)

RUNNING = "running"
ZOMBIE = "zombie"
STOPPED = "stopped"
GONE = "gone"

_STATES = {"Z": ZOMBIE, "X": GONE, "T": STOPPED, "t": STOPPED}
_CMDLINE_LIMIT = 200


#: ``waitid`` flags that ask "is there any child?" without waiting or reaping.  ``__WALL``
#: (Linux, not in :mod:`os`) counts children whatever signal they report their exit with.
_ANY_CHILD_FLAGS: int | None = (
    os.WEXITED | os.WNOHANG | os.WNOWAIT | (0x40000000 if sys.platform == "linux" else 0)
    if all(hasattr(os, n) for n in ("waitid", "P_ALL", "WEXITED", "WNOHANG", "WNOWAIT"))
    else None)  # never asked without WNOHANG (it would wait) or WNOWAIT (it would reap)


def _ask_no_child() -> bool | None:
    """True when this process has no child at all (running or zombie), False when it has
    some, None when ``waitid`` cannot be asked here (no ``waitid``, or a kernel before 4.7
    that refuses ``__WALL`` for it)."""
    if _ANY_CHILD_FLAGS is None:
        return None
    try:
        os.waitid(os.P_ALL, 0, _ANY_CHILD_FLAGS)
    except ChildProcessError:
        return True
    except OSError:
        return None
    return False


#: How long to wait for a child caught in the middle of ``exec`` to get its command line.
_EXEC_SETTLE_NS = 5_000_000


def _state_name(letter: str) -> str:
    return _STATES.get(letter, RUNNING)


def _command_line(pid: int, own_modules: set[str]) -> str:
    """The command line of ``pid``; ``[name]`` for a zombie, which has none left."""
    try:
        # On change only: most sessions never start a child of their own.
        psutil = import_own("psutil", own_modules)
        proc = psutil.Process(pid)
        deadline = time.perf_counter_ns() + _EXEC_SETTLE_NS
        while True:
            try:
                args = proc.cmdline()
            except psutil.ZombieProcess:
                args = []
            if args or proc.status() == psutil.STATUS_ZOMBIE:
                break
            if time.perf_counter_ns() > deadline:
                break
            # subprocess.Popen returns once exec has closed its error pipe, a moment before
            # the kernel has set up the new program's arguments: the command line reads
            # empty in between.  The key must not be taken from that moment.
            os.sched_yield()
        return " ".join(args) if args else f"[{proc.name()}]"
    except Exception:
        return f"[pid {pid}]"


class ChildrenProbe(Probe):
    """Direct child processes of this process, found without reaping them."""

    name = "children"
    severity = Severity.HIGH

    def __init__(self) -> None:
        #: ``proc`` (the ``children`` files) or ``psutil`` (a scan of every process).
        self.mode = ""
        self._own: set[int] = set()
        self._main: ProcFile | None = None
        self._tasks: dict[int, ProcFile] = {}
        self._stats: dict[int, ProcFile] = {}
        self._names: dict[int, str] = {}
        self._last: ProbeMap = {}
        self._waitid = False
        self._own_modules: set[str] = set()

    def setup(self, ctx: ProbeContext) -> None:
        self._own = ctx.own_fds
        self._own_modules = ctx.own_modules
        self._waitid = _ask_no_child() is not None
        main = ProcFile("/proc/{pid}/task/{pid}/children", self._own)
        try:
            main.read()
        except OSError:
            main.close()
        else:
            self._main = main
            self.mode = "proc"
            return
        try:
            import_own("psutil", ctx.own_modules).Process().children()
        except Exception as exc:
            raise ProbeUnavailable(f"no /proc/self/task/*/children and no psutil: {exc}") from exc
        self.mode = "psutil"

    # -- cheap ------------------------------------------------------------------------------
    def _listed(self) -> bytes:
        assert self._main is not None
        raw = self._main.read()
        active = getattr(threading, "_active", None)
        if isinstance(active, dict) and len(active) > 1:
            raw += self._other_tasks(list(active.values()))
        return raw

    def _other_tasks(self, threads: list[threading.Thread]) -> bytes:
        leader = os.getpid()  # the main thread's tid is the pid
        out = b""
        alive = set()
        for thread in threads:
            tid = thread.native_id
            if tid is None or tid == leader:
                continue
            alive.add(tid)
            f = self._tasks.get(tid)
            if f is None:
                f = self._tasks[tid] = ProcFile(f"/proc/{{pid}}/task/{tid}/children", self._own)
            try:
                out += f.read()
            except OSError:  # the thread ended between the two looks
                f.close()
                del self._tasks[tid]
        for tid in [t for t in self._tasks if t not in alive]:
            self._tasks.pop(tid).close()
        return out

    def _state(self, pid: int) -> str:
        f = self._stats.get(pid)
        if f is None:
            f = self._stats[pid] = ProcFile(f"/proc/{pid}/stat", self._own)
        try:
            data = f.read()
        except OSError:
            return GONE
        end = data.rfind(b")")  # the command name in parentheses may hold spaces and ')'
        return _state_name(data[end + 2 : end + 3].decode("ascii", "replace"))

    def _prune(self, pids: list[int]) -> None:
        keep = set(pids)
        for pid in [p for p in self._stats if p not in keep]:
            self._stats.pop(pid).close()
        for pid in [p for p in self._names if p not in keep]:
            del self._names[pid]

    def token(self) -> object:
        if self.mode == "psutil":
            return None  # the scan is the read; there is no cheaper question to ask
        if self._waitid and _ask_no_child():
            if self._stats:
                self._prune([])
            return b""  # what the listing below gives when there is no child
        raw = self._listed()
        if not raw:
            if self._stats:
                self._prune([])
            return raw
        pids = [int(p) for p in raw.split()]
        if len(self._stats) > len(pids):
            self._prune(pids)
        return raw, tuple(self._state(pid) for pid in pids)

    # -- detail -----------------------------------------------------------------------------
    def gauges(self, current: ProbeMap) -> dict[str, float]:
        running = [v for v in current.values()
                   if not (isinstance(v, dict) and v.get("status") == "zombie")]
        return {"children": float(len(running))}

    def read(self) -> ProbeMap:
        if self.mode == "psutil":
            found = self._scan_psutil()
        else:
            pids = sorted(int(p) for p in self._listed().split())
            self._prune(pids)
            found = [(pid, self._state(pid)) for pid in pids]
        out: ProbeMap = {}
        for pid, status in found:
            if status == GONE:
                continue  # reaped between the listing and now
            cmd = self._command(pid)
            key = cmd
            n = 1
            while key in out:
                n += 1
                key = f"{cmd} #{n}"
            out[key] = {"pid": pid, "status": status}
        self._last = out
        return out

    def _scan_psutil(self) -> list[tuple[int, str]]:
        psutil = import_own("psutil", self._own_modules)
        out = []
        for child in psutil.Process().children():
            try:
                status = child.status()
            except psutil.Error:
                continue
            out.append((child.pid, {
                psutil.STATUS_ZOMBIE: ZOMBIE,
                psutil.STATUS_STOPPED: STOPPED,
                psutil.STATUS_DEAD: GONE,
            }.get(status, RUNNING)))
        return sorted(out)

    def _command(self, pid: int) -> str:
        # Remembered per pid: a zombie has no command line any more, and its key must not
        # change when it exits, or "exited" would read as one process gone and another come.
        known = self._names.get(pid)
        if known is not None:
            return known
        text = _command_line(pid, self._own_modules)
        if len(text) > _CMDLINE_LIMIT:
            text = text[:_CMDLINE_LIMIT] + "…"
        self._names[pid] = text
        return text

    # -- reporting --------------------------------------------------------------------------
    def severity_of(self, key: str, before: Any, after: Any) -> Severity:
        if isinstance(after, dict):
            if after.get("status") == ZOMBIE:
                # It ended by itself: a zombie costs a pid slot, not a port or a lock.
                return Severity.LOW if isinstance(before, dict) else Severity.MEDIUM
            return Severity.HIGH
        return Severity.MEDIUM

    def hint(self, key: str, change: str) -> str | None:
        if change == "removed":
            return ("this test ended or reaped a process an earlier test started; let the "
                    "fixture that starts a process also stop it")
        now = self._last.get(key)
        if isinstance(now, dict) and now.get("status") == ZOMBIE:
            return ("the process exited but nobody waited for it: call proc.wait() (or use "
                    "`with subprocess.Popen(...) as proc:`) so it is reaped")
        return ("terminate the process and wait for it in the test or a fixture finaliser: "
                "proc.terminate(); proc.wait(timeout=10) (proc.kill() if that times out)")

    def close(self) -> None:
        for f in [self._main, *self._tasks.values(), *self._stats.values()]:
            if f is not None:
                f.close()
        self._main = None
        self._tasks.clear()
        self._stats.clear()
