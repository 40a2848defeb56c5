"""statesnap's own errors, caught so that the user's run goes on, but never silently.

A block that catches an error of statesnap's own (a probe's detail it cannot read, a restore
that did not take, bookkeeping that failed) calls :func:`note_internal_error`.  The entry is
kept in a process-wide list (:func:`noted`: each distinct error once, with a count) and passed
to the sink the pytest layer installs with :func:`set_sink`, which writes it into the record
as an ``internal_error`` line (:mod:`statesnap.record.journal`).  Entries noted before a sink
is installed reach it when it is.  The same error at the same place reaches a sink once: a
probe that fails on every test writes one line, not one per test.

Noting never raises and never warns (under ``-W error`` a warning would fail the user's test).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

#: The first line of an error's message is kept up to this many characters.
MESSAGE_LIMIT = 300

Sink = Callable[[dict[str, Any]], None]
_Key = tuple[str, str]

#: Each distinct ``(where, error)`` once, in the order first noted, and how often.
_noted: dict[_Key, dict[str, Any]] = {}
_counts: dict[_Key, int] = {}
#: Noted while no sink was installed (or the sink failed): for the next sink.
_pending: dict[_Key, dict[str, Any]] = {}
#: What the current sink has taken.
_sent: set[_Key] = set()
_sink: Sink | None = None


def describe(exc: BaseException) -> str:
    """``Type: first line of the message (file:line)``, the line where it was raised."""
    try:
        lines = str(exc).strip().splitlines()
        message = lines[0][:MESSAGE_LIMIT] if lines else ""
    except Exception:  # an exception whose __str__ fails still has a type
        message = "<message unreadable>"
    tb = exc.__traceback__
    where = ""
    if tb is not None:
        while tb.tb_next is not None:
            tb = tb.tb_next
        where = f" ({os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno})"
    return f"{type(exc).__name__}: {message}{where}"


def note_internal_error(where: str, exc: BaseException) -> None:
    """Keep ``exc``, caught in ``where`` (``"probe fds: socket addresses"``), for the record."""
    try:
        _keep(where, describe(exc))
    except Exception:  # the one place that cannot report its own failure
        pass


def adopt(where: str, error: str) -> None:
    """Keep an error another process of this run noted (an isolated test's child), which
    has no record of its own to write it to."""
    try:
        _keep(where, error)
    except Exception:
        pass


def _keep(where: str, error: str) -> None:
    entry = {"type": "internal_error", "where": where, "error": error}
    key = (where, error)
    _counts[key] = _counts.get(key, 0) + 1
    _noted.setdefault(key, entry)
    _offer(key, entry)


def _offer(key: _Key, entry: dict[str, Any]) -> None:
    sink = _sink
    if key in _sent:
        return
    if sink is None:
        _pending.setdefault(key, entry)
        return
    try:
        sink(dict(entry))
    except Exception:  # the sink broke: the entry waits for the next one
        _pending.setdefault(key, entry)
        return
    _sent.add(key)
    _pending.pop(key, None)


def set_sink(sink: Sink | None) -> None:
    """Send every entry noted from now on to ``sink``, first the ones noted while there was
    none; None uninstalls it (entries then wait for the next sink)."""
    global _sink
    _sink = sink
    _sent.clear()
    for key, entry in list(_pending.items()):
        _offer(key, entry)


def noted() -> list[tuple[dict[str, Any], int]]:
    """Every distinct internal error this process noted, in order, with how often."""
    return [(dict(entry), _counts[key]) for key, entry in _noted.items()]
