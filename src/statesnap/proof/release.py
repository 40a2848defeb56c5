"""Before in-session replays, let go of what the finished tests leaked into this process.

Only leaks the record names, still the same thing: a listening socket's port (its descriptor
pointed at a placeholder), file locks.  Child processes the tests left still running are named,
never signalled (statesnap signals only what it started).  Each is printed and kept in the
record (a ``released`` line).  Why and how: docs/ARCHITECTURE.md ("Letting go").
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from statesnap.base.spawned import is_pid
from statesnap.probes.fds import socket_text
from statesnap.record.journal import Record
from statesnap.state.diff import REMOVED

#: The kind of a child process the tests left running: named, never signalled.
LEFT_RUNNING = "child"
#: Like things let go of beyond this many are one line: a count and this many examples.
EXAMPLES = 3
#: Each kind of thing let go of, as the line about many of them names it.
KINDS = {"socket": "sockets' addresses", "lock": "file locks (the files stay open)",
         "child": "child processes", "other": "things"}
_STD_STREAMS = frozenset({0, 1, 2})


@dataclass
class Held:
    """One leak a test left in this process, as the record last saw it."""

    probe: str
    key: str
    value: Any
    test: str


def held_leaks(record: Record) -> list[Held]:
    """The ``fds`` and ``children`` keys the tests of this process added and left."""
    first: dict[tuple[str, str], Any] = {}
    last: dict[tuple[str, str], Held | None] = {}
    for t in sorted(record.tests, key=lambda t: t.index):
        if t.worker != record.worker:
            continue
        for ch in t.changes:
            if ch.probe not in ("fds", "children"):
                continue
            ref = (ch.probe, ch.key)
            first.setdefault(ref, ch.before)
            last[ref] = None if ch.change == REMOVED else Held(ch.probe, ch.key, ch.after,
                                                                 t.nodeid)
    # Only what a test added: a key that was there before the first test is not a test's.
    return [h for ref, h in last.items() if h is not None and first[ref] is None]


@dataclass(frozen=True)
class Released:
    """One thing let go of: the line printed for it, and the leak it was (where one)."""

    what: str
    probe: str | None = None
    key: str | None = None
    test: str | None = None
    #: What kind of thing (:data:`KINDS`): like things are printed as one line.
    kind: str = "other"

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "probe": self.probe, "key": self.key, "test": self.test}


def release(record: Record, own_fds: Iterable[int]) -> list[str]:
    """Let go of the leaks of ``record`` this process still holds; a line for each."""
    return [r.what for r in release_all(record, own_fds)]


def release_all(record: Record, own_fds: Iterable[int]) -> list[Released]:
    """Let go of the leaks of ``record`` this process still holds; what each one was."""
    if record.header.get("pid") != os.getpid():
        return []
    own = set(own_fds)
    done: list[Released] = []
    children: list[Held] = []
    writers: set[int] = set()
    for h in held_leaks(record):
        if h.probe == "children":
            children.append(h)
            continue
        try:
            fd = int(h.key)
        except ValueError:
            continue
        if fd in _STD_STREAMS or fd in own:
            continue
        found = _release_fd(fd, h)
        if found:
            done.append(Released(found[1], h.probe, h.key, h.test, found[0]))
        if isinstance(h.value, str) and h.value.startswith("/") and (
                h.value.endswith(("(w)", "(rw)", "(wa)", "(rwa)"))):
            writers.add(fd)
    flushed = flush_files(writers)
    if flushed:
        done.append(Released(f"the buffered writes of {flushed} file(s) tests left open "
                             "(flushed)", "fds"))
    done += _children_left(children)
    return done


def release_lines(released: Iterable[Released]) -> list[str]:
    """The lines printed for what was let go of: one per thing, or, for more than
    :data:`EXAMPLES` of a kind (a test that left 2,000 locked descriptors), one line with
    the count and a few examples; the record's ``released`` line keeps every one."""
    groups: dict[str, list[Released]] = {}
    for r in released:
        groups.setdefault(r.kind, []).append(r)
    lines: list[str] = []
    for kind, items in groups.items():
        verb = ("replaying beside (statesnap signals only processes it started)"
                if kind == LEFT_RUNNING else "before replaying, let go of")
        if len(items) <= EXAMPLES:
            lines += [f"{verb} {r.what}" for r in items]
            continue
        examples = "; ".join(r.what for r in items[:EXAMPLES])
        lines.append(f"{verb} {len(items)} {KINDS.get(kind, kind)}: "
                     f"{examples}; … and {len(items) - EXAMPLES} more (all in the record's "
                     "'released' line)")
    return lines


def _release_fd(fd: int, h: Held) -> tuple[str, str] | None:
    """``(kind, line)`` of what was let go of on ``fd``; None where nothing was."""
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None  # closed since (or no /proc): nothing held
    value = h.value if isinstance(h.value, str) else ""
    if target.startswith("socket:"):
        if socket_text(fd) != value:
            return None  # another socket under that number now: not the test's
        bound_udp = (value.startswith("socket udp") and " -> " not in value
                     and not value.endswith((":0", "(unbound)")))
        if not (value.endswith(" LISTEN") or bound_udp):
            return None  # a connection holds no address another process could want
        if not _replace_socket(fd):
            return None
        return "socket", f"{value} (fd {fd}, left by {h.test})"
    if target.startswith("/") and value.startswith(target + " ("):
        unlocked = False
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN | fcntl.LOCK_NB)
            unlocked = True
        with contextlib.suppress(OSError):
            fcntl.lockf(fd, fcntl.LOCK_UN)
            unlocked = True
        # Unlocking asks nothing of whether a lock was held: the line says "any".
        return (("lock", f"any lock on {target} (fd {fd}, left by {h.test}; the file stays "
                         "open)") if unlocked else None)
    return None


def flush_files(fds: set[int]) -> int:
    """Flush Python file objects open on ``fds``: what they still buffer reaches the file
    now, as it would when the process exits (a replay reads the file).  How many
    descriptors had one."""
    if not fds:
        return 0
    import gc
    import io

    flushed: set[int] = set()
    kinds = (io.BufferedWriter, io.BufferedRandom, io.TextIOWrapper)
    for obj in gc.get_objects():
        # type(), not isinstance(): isinstance asks the object's __class__, and some objects
        # answer that with a warning (torch.distributed's deprecated reduce_op), which a
        # suite run with -W error would turn into an exception here.
        if not issubclass(type(obj), kinds):
            continue
        try:
            fd = obj.fileno()
            if obj.closed or fd not in fds:
                continue
            obj.flush()  # a text wrapper flushes its buffer too; both are asked, harmlessly
            flushed.add(fd)
        except (OSError, ValueError):
            continue
    return len(flushed)


def _replace_socket(fd: int) -> bool:
    """Point ``fd`` at a fresh socket of its kind: the leaked one is closed, its address
    free; a listening one's placeholder listens on a port the system picks."""
    try:
        probe = socket.socket(fileno=fd)
    except OSError:
        return False
    try:
        family, kind = probe.family, probe.type
        listening = probe.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    except OSError:
        return False
    finally:
        probe.detach()
    try:
        placeholder = socket.socket(family, kind)
    except OSError:
        return False
    with placeholder:
        if listening:
            with contextlib.suppress(OSError):
                if family == socket.AF_INET:
                    placeholder.bind(("127.0.0.1", 0))
                elif family == socket.AF_INET6:
                    placeholder.bind(("::1", 0))
                placeholder.listen()  # an unbound Unix socket binds to an abstract name
        try:
            os.dup2(placeholder.fileno(), fd, inheritable=False)
        except OSError:
            return False
    return True


def _children_left(children: list[Held]) -> list[Released]:
    """The child processes tests left that still run: named, never signalled.

    statesnap signals only processes it started itself (base/spawned.py): a child a test
    started is the test's, and ending it could end work the user still relies on.  The
    replays run beside it, and a verdict that could depend on it says so (proof/verify.py).
    """
    if not children:
        return []
    try:
        import psutil
    except ImportError:
        return []
    me = os.getpid()
    lines: list[Released] = []
    for h in children:
        pid = h.value.get("pid") if isinstance(h.value, dict) else None
        if not is_pid(pid):  # a real int above 1 (True is an int; -1 and 0 are everyone)
            continue
        try:
            proc = psutil.Process(pid)
            if proc.ppid() != me or not _running(proc, psutil):
                continue
        except psutil.Error:
            continue
        lines.append(Released(f"child process {h.key} (pid {pid}, left by {h.test})",
                              h.probe, h.key, h.test, LEFT_RUNNING))
    return lines


def _running(proc: Any, psutil: Any) -> bool:
    """Still running (a zombie has let go of everything; it is left for its parent to reap)."""
    try:
        return bool(proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False
