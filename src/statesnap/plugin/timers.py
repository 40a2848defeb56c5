"""Interval timers and alarms a test left running, held while statesnap does its own work.

A test may leave an ``ITIMER_REAL`` (or an ``alarm``) firing with a ``SIGALRM`` handler of
its own.  statesnap's session end runs with the signal handlers of before the first test put
back (:mod:`statesnap.plugin.cleanroom`), where ``SIGALRM`` kills the process: the run died
right after the dots, before pytest printed its failures and summary line.  So the end holds
the timers: each one left running is stopped as the end starts, and given back, with the time
it had left and its interval, once the test's handlers are back.  ``alarm`` is the
``ITIMER_REAL`` timer on Linux, held with it.  The per-test hooks leave timers alone: they
swap no handler, so a timer meets them as it would meet pytest's own code.

The functions are taken when the plugin loads, before any test could patch them.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

_setitimer = getattr(signal, "setitimer", None)
#: The timers a process has (those this platform knows).
_WHICH = tuple(getattr(signal, name) for name in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF")
               if hasattr(signal, name))


def hold() -> list[tuple[int, float, float]]:
    """Stop every running timer; ``(which, time left, interval)`` of each one stopped."""
    held: list[tuple[int, float, float]] = []
    if _setitimer is None:
        return held
    for which in _WHICH:
        try:
            left, interval = _setitimer(which, 0.0, 0.0)
        except (OSError, ValueError):  # signal.ItimerError is an OSError
            continue
        if left > 0.0:
            held.append((which, left, interval))
    return held


def give_back(held: list[tuple[int, float, float]]) -> None:
    """Start again the timers :func:`hold` stopped, each with the time it had left."""
    if _setitimer is None:
        return
    for which, left, interval in held:
        try:
            _setitimer(which, left, interval)
        except (OSError, ValueError):
            pass


@contextmanager
def held() -> Iterator[None]:
    """The tests' timers stopped for the duration of the block, given back after it."""
    stopped = hold()
    try:
        yield
    finally:
        give_back(stopped)
