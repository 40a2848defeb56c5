"""Replays of state that only reference cycles keep: the collector off, or run before a test.

A subclass defined in a test and kept alive by a reference cycle (``Hexagon.example =
Hexagon()``) stays in its base's ``__subclasses__()`` until the collector runs, and when it
runs shifts with what the process compiled and allocated (bytecode written or not).  A
replay of such a record runs with the collector off, so that its answer does not depend on
that timing; a replay asked to (``gc: collect``) collects just before the victim, which shows
whether the failure rests on garbage-collection timing at all.  The child side is
:class:`statesnap.plugin.order.RestoreBefore` (the ``gc`` field of its spec).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from statesnap.record.journal import TestEntry

#: Keys of state only weak references see: a cycle can keep what they list alive.
CYCLE_HELD = ("__subclasses__",)
#: The ``gc`` field of a restore spec.
OFF = "off"
COLLECT = "collect"


def cycle_held_key(probe: str | None, key: str | None) -> bool:
    """Whether ``probe:key`` is state that reference cycles can keep alive."""
    return probe == "attributes" and key is not None and any(
        key.endswith(k) or f"{k}:" in key for k in CYCLE_HELD)


def held_by_cycles(tests: Iterable[TestEntry]) -> bool:
    """Whether a recorded test changed state that reference cycles can keep alive."""
    return any(cycle_held_key(c.probe, c.key) for t in tests for c in t.changes)


def with_gc(restore: Mapping[str, Any] | None, mode: str) -> dict[str, Any]:
    """``restore`` (a ``--statesnap-restore-before`` spec, or none) with the collector's
    ``mode``; a mode already asked for stays."""
    spec: dict[str, Any] = dict(restore) if restore is not None else {"before": "", "keys": []}
    spec.setdefault("gc", mode)
    return spec
