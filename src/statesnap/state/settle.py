"""Resources only garbage holds, released before a test's end is read: the same list every run.

An event loop, a socket pair or a pool a test leaves unclosed and unreachable keeps its
descriptors (or its threads, its worker processes) until the garbage collector finalises it,
and when the collector runs shifts with every allocation -- inside the test (no leak seen), or
during a later one (a leak seen).  So when a test's end reading shows a resource it added
(:data:`RESOURCE_PROBES`), statesnap runs one full collection and reads again: what garbage
held is released now, in that test, on every run; what is still reachable is a real leak and
stays listed.  A test that adds no resource pays nothing, nor one that adds only files opened
by path (reference counting closes those, :func:`_collectable`).

Why the collection changes no test's outcome: it runs between tests, and frees only objects
no code can reach; while the collector is on, a collection at that point is one plain pytest
may run too (statesnap's own allocations already move when it runs), so no test can count on
it not happening.  With the collector off (``gc.disable()``, left so by a test or a conftest)
nothing collects in plain pytest either, so statesnap does not: the resource stays listed,
again on every run.  What a finaliser raises meanwhile is kept for the session's end
(:func:`collect_garbage`).  Why and how: docs/probes.md ("Resources held only by garbage").
"""

from __future__ import annotations

import gc
import sys
from typing import Any, cast

from statesnap.state.snapshot import Snapshot

#: The collector's own functions, captured before any test runs: a test that leaves
#: ``gc.collect`` mocked (or ``gc.isenabled`` patched) must not get statesnap's calls.
_COLLECT = gc.collect
_ISENABLED = gc.isenabled

#: Probes of resources (a descriptor, a thread, a child process) that a test can leave held
#: only by garbage, which the collector's finalisers release whenever it runs.
RESOURCE_PROBES = frozenset({"fds", "threads", "children"})


def resource_added(before: Snapshot, after: Snapshot) -> bool:
    """Whether ``after`` holds a resource that ``before`` did not (a key added, or one whose
    fingerprint changed: a descriptor number reused for something else)."""
    for name in RESOURCE_PROBES:
        now = after.maps.get(name)
        was = before.maps.get(name)
        if now is None or now is was:  # off, or its token did not move: the same map
            continue
        was = was or {}
        try:
            if any((key not in was or was[key] != value) and _collectable(name, value)
                   for key, value in now.items()):
                return True
        except Exception:  # a value whose comparison raises: read again rather than guess
            return True
    return False


def _collectable(probe: str, value: object) -> bool:
    """Whether garbage may hold this resource until a collection: not a file opened by its
    path (an ``fds`` value naming one, ``/path (r)``).  A file object nothing refers to is
    closed at once by reference counting; only one inside a reference cycle waits for the
    collector, and that is rare, while a suite that keeps files open on purpose (structlog's
    18 loggers writing to a file) would pay a full collection per test that frees nothing.
    Sockets, pipes, event loops' descriptors (``anon_inode:``), threads and children are what
    cycles hold (an event loop, its selector and its transports are one)."""
    return not (probe == "fds" and isinstance(value, str) and value.startswith("/"))


def collect_garbage() -> bool:
    """One full collection, where the collector is on; whether one ran.

    An exception a finaliser raises meanwhile (an unclosed loop's ``ResourceWarning`` under
    ``-W error``) is kept for the session's end (:func:`deliver_deferred`) rather than handed
    to the hook installed now (pytest's, which would make it a warning, or an error, of the
    next test): statesnap's collection must not make it some test's failure, and the end of
    the session is where plain pytest reports garbage its own collector had not reached."""
    if not _ISENABLED():
        return False
    hook = sys.unraisablehook
    sys.unraisablehook = _defer
    try:
        _COLLECT()
    finally:
        sys.unraisablehook = hook
    return True


def deliver_deferred() -> None:
    """Hand the unraisable exceptions kept by :func:`collect_garbage` to the hook installed
    now (the plugin calls it as the session ends, before pytest reports its own)."""
    hook = sys.unraisablehook
    while _DEFERRED:
        hook(cast("sys.UnraisableHookArgs", _DEFERRED.pop(0)))


class _Shown:
    """Stands for the finalised object in a kept report: its text only (holding the object
    itself would bring it back to life, its descriptors with it)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


class _Unraisable:
    """What ``sys.unraisablehook`` reads of one report, without frames: a traceback's frames
    would keep the finaliser's ``self`` (an event loop, its sockets) alive until delivered."""

    __slots__ = ("err_msg", "exc_traceback", "exc_type", "exc_value", "object")

    def __init__(self, args: Any) -> None:
        self.err_msg: str | None = args.err_msg
        self.exc_type: type[BaseException] = args.exc_type
        self.exc_value: BaseException | None = args.exc_value
        self.exc_traceback: None = None
        try:
            shown = repr(args.object)
        except Exception:
            shown = f"<{type(args.object).__qualname__} object>"
        self.object = _Shown(shown)
        seen: set[int] = set()
        exc = self.exc_value
        while exc is not None and id(exc) not in seen:  # the chain, without its frames
            seen.add(id(exc))
            exc.__traceback__ = None
            exc = exc.__cause__ or exc.__context__


#: Reports kept by collect_garbage until the session's end.
_DEFERRED: list[_Unraisable] = []


def _defer(args: Any) -> None:
    try:
        _DEFERRED.append(_Unraisable(args))
    except Exception:  # a report that cannot be kept: Python's own way, on stderr
        sys.__unraisablehook__(args)
