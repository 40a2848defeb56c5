"""Leaks no later test can see: a key an autouse fixture sets again before every test body.

Order-dependence needs a later test to *start* from a different state because an earlier one
ran, so a key is a channel only while the state test bodies start from can differ.  loguru's
suite gives the global logger a fresh core in an autouse fixture before (and after) every test;
structlog's resets its configuration before every test.  What a test leaves in such a key is
overwritten before the next test's body runs: listing it would flag nearly every test.

The rule, decided from the record alone (the footer's ``autouse``: each function-scoped autouse
fixture's name and the node id prefix of the tests it runs for; each change's phase and
fixture):

- a key is *reset* by autouse fixtures when some test's setup changed it at a checkpoint whose
  fixtures were all autouse (``reset_logger``; ``_reset_config or _ensure_...``);
- a test's leak of that key is closed, and listed at LOW, when the next test of its lane runs
  those fixtures (it lies under their node id prefixes) and its setup changed the key again
  before its body: the value left was overwritten before any later test body could read it
  (or, where this test's change was first seen where the reset ran and the next test's reset
  left the very same fingerprint -- a fresh object at a reused address -- the value is the
  reset's); the last test of a lane, where its change is the reset's own.

A test whose leak reaches the next test's body keeps its severity: a handler added to the
logger, seen by a test of another folder that no reset runs for (the last test the reset runs
for: what it leaves is what the tests after the fixture's reach start from).  Only
what is *listed* changes: the record keeps every change at its severity, attribution and the
key-level proof read them all.  The limit: the rule is per key, so an autouse fixture that
rebuilds part of an object (one attribute of it) closes the whole key.  Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from statesnap.analysis.leaks import WIDE_SCOPES, resolve_leaks
from statesnap.analysis.quiet import quiet
from statesnap.probes.base import Severity
from statesnap.record.journal import TestEntry
from statesnap.state.diff import Change

Ref = tuple[str, str]


def autouse_of(footer: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """``{fixture name: [node id prefixes]}`` from a record footer's ``autouse``."""
    out: dict[str, list[str]] = {}
    for entry in (footer or {}).get("autouse") or ():
        if isinstance(entry, list) and len(entry) == 2 and all(isinstance(x, str) for x in entry):
            out.setdefault(entry[0], []).append(entry[1])
    return out


def reaches(baseid: str, nodeid: str) -> bool:
    """Whether a fixture defined at ``baseid`` runs for the test ``nodeid``."""
    return (not baseid or nodeid == baseid or nodeid.startswith(baseid + "/")
            or nodeid.startswith(baseid + "::"))


def _reset_label(ch: Change, autouse: Mapping[str, list[str]]) -> frozenset[str] | None:
    """The autouse fixtures that made ``ch`` in a setup, where all of its label's are."""
    if ch.phase != "setup" or ch.scope != "function" or not ch.fixture:
        return None
    names = frozenset(ch.fixture.split(" or "))
    return names if names and all(n in autouse for n in names) else None


def resetters(tests: Iterable[TestEntry], autouse: Mapping[str, list[str]]
              ) -> dict[Ref, set[frozenset[str]]]:
    """``{(probe, key): {autouse fixtures of one setup checkpoint that changed it}}``: one of
    each group made the change (function fixtures share a checkpoint)."""
    found: dict[Ref, set[frozenset[str]]] = {}
    for t in tests:
        for ch in t.changes:
            names = _reset_label(ch, autouse)
            if names is not None:
                found.setdefault((ch.probe, ch.key), set()).add(names)
    return found


def closed_leaks(tests: Sequence[TestEntry], leaks: Mapping[int, list[Change]],
                 autouse: Mapping[str, list[str]]) -> set[tuple[int, Ref]]:
    """``(test index, (probe, key))`` of the leaks above LOW that no later test can see."""
    if not autouse or not leaks:
        return set()
    by_key = resetters(tests, autouse)
    if not by_key:
        return set()
    order = list(tests)
    position = {t.index: i for i, t in enumerate(order)}
    touched: list[set[Ref]] = [{(c.probe, c.key) for c in t.changes} for t in order]
    setup_moved: list[set[Ref]] = [
        {(c.probe, c.key) for c in t.changes if c.phase == "setup"} for t in order]
    out: set[tuple[int, Ref]] = set()
    for index, mine in leaks.items():
        i = position.get(index)
        if i is None:
            continue
        last = i + 1 >= len(order)
        for ch in mine:
            ref = (ch.probe, ch.key)
            groups = by_key.get(ref)
            if ch.severity <= Severity.LOW or not groups or ch.scope in WIDE_SCOPES:
                continue
            own = _reset_label(ch, autouse) is not None
            if last:
                if own:
                    out.add((index, ref))  # the reset's own value, and no test after it
                continue
            following = order[i + 1]
            covering = [g for g in groups
                        if all(any(reaches(b, following.nodeid) for b in autouse[n]) for n in g)]
            if not covering:
                continue  # the next test runs without the reset: it can see the value left
            if ref not in setup_moved[i + 1]:
                # The next test's setup left the value alone: its body started from it.  Unless
                # this test's change was first seen where the reset ran and the next test's
                # reset gave the very same fingerprint (a fresh object at a reused address).
                names = set((ch.fixture or "").split(" or ")) if ch.phase == "setup" else set()
                if ref in touched[i + 1] or not names & set().union(*covering):
                    continue
            out.add((index, ref))
    return out


def listed_leaks(tests: Sequence[TestEntry], footer: Mapping[str, Any] | None
                 ) -> dict[int, list[Change]]:
    """:func:`resolve_leaks`, with each closed leak (:func:`closed_leaks`) and each change no
    later test can act on (:func:`statesnap.analysis.quiet.quiet`) as a copy at LOW: what the
    terminal, the summary JSON and the report list.  The record's own changes are
    left as they are (attribution ranks them)."""
    leaks = resolve_leaks(tests)
    closed = closed_leaks(tests, leaks, autouse_of(footer))
    out: dict[int, list[Change]] = {}
    for index, mine in leaks.items():
        out[index] = [_lowered(ch) if ch.severity > Severity.LOW and (
            (index, (ch.probe, ch.key)) in closed or quiet(ch)) else ch for ch in mine]
    return out


def _lowered(ch: Change) -> Change:
    return Change(ch.probe, ch.key, ch.change, ch.before, ch.after, ch.phase, ch.fixture,
                  ch.scope, int(Severity.LOW), ch.then, ch.aliases)
