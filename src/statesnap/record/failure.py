"""A test line's ``failure``: the first failure of a test, as the record keeps it.

Built from plain values, so that the plugin (from pytest's report) and isolation (from a child
that died) write the same entry: ``phase``, ``exc_type``, ``message`` (the first line),
``text`` (the end of the failure's text) and, where known, ``where`` (the failing frame,
:func:`statesnap.record.signature.failing_frame`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: The first line of the message is kept up to this many characters.
MESSAGE_LIMIT = 500
#: The failure's text is kept from its end (where the assertion is) up to this many characters.
TEXT_LIMIT = 8000


def _unchanged(text: str) -> str:
    return text


def failure_entry(phase: str, exc_type: str | None, message: str, text: str,
                  where: str | None = None,
                  scrub: Callable[[str], str] = _unchanged) -> dict[str, Any]:
    """The record's ``failure`` of a test; ``scrub`` hides secrets in what was kept."""
    lines = message.strip().splitlines()
    entry: dict[str, Any] = {
        "phase": phase,
        "exc_type": exc_type,
        "message": scrub(lines[0][:MESSAGE_LIMIT] if lines else ""),
        "text": scrub(text[-TEXT_LIMIT:]),
    }
    if where is not None:
        entry["where"] = where
    return entry
