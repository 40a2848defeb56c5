"""From a record's per-test changes to leaks: what persisted and whose fault it is.

A change made while setting up a module-, class-, package- or session-scoped fixture, and
undone when that scope ends (in the teardown of a later test), is not a leak of anybody.  One
that is never undone is a leak of the first test whose setup ran the fixture; where that
fixture is a class or module set-up of the user's (:func:`by_users_setup`), it is listed there
but is the method's.  Pure functions;
:class:`Held` and :func:`scope_holds` are the rule, also applied live by strict mode
(statesnap.contain.strict).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from statesnap.analysis.own_fixtures import (
    display_fixture,
    fixture_words,
    is_pytest_own,
    is_users_setup,
)
from statesnap.base.plain import Value
from statesnap.record.journal import TestEntry
from statesnap.state.diff import REMOVED, Change
from statesnap.state.settle import RESOURCE_PROBES

WIDE_SCOPES = frozenset({"module", "class", "package", "session"})


def by_users_setup(ch: Change) -> bool:
    """Whether a class or module set-up method of the user's (``setup_class``, ``setUpClass``,
    ``setup_module``) or its tear-down made ``ch``: it is that method's leak, never that of
    the test pytest ran it for (the class's first test, or its last one for a tear-down)."""
    return ch.scope in WIDE_SCOPES and is_users_setup(ch.fixture)


def setup_name(ch: Change) -> str:
    """``TestX.setup_class`` (``TestX.teardown_class`` for a change made in the tear-down)."""
    return display_fixture(ch.fixture or "", ch.phase)


def fixture_note(ch: Change, nodeid: str) -> str | None:
    """Where a wide fixture (or a class or module set-up of the user's) made ``ch``, said
    for a finding whose polluter is ``nodeid``, the test it ran for: the test is only how a
    replay gets it to run."""
    if not (ch.fixture and ch.scope in WIDE_SCOPES):
        return None
    words = fixture_words(ch.fixture, ch.phase)
    if ch.phase == "teardown":
        return (f"the change was made in {words.name} (torn down after {nodeid}), not by the "
                f"test: put the value back {words.undo}")
    if words.internal:
        return (f"the change was made in {words.name} (set up for {nodeid}), not by the "
                f"test, and never undone: undo it {words.undo}")
    return (f"the change was made by the {ch.scope}-scoped fixture {ch.fixture!r} "
            f"(set up for {nodeid}) and never undone: undo it {words.undo}")


def setup_hint(ch: Change) -> str | None:
    """The fix hint of a change a class or module set-up (or tear-down) of the user's made:
    in that method's terms (a monkeypatch, function-scoped, cannot undo it there)."""
    if not by_users_setup(ch):
        return None
    words = fixture_words(ch.fixture or "", ch.phase)
    if ch.phase == "teardown":
        return (f"{words.name} changes {ch.key} on its way out and leaves it: put the value "
                f"back {words.undo}")
    return f"{words.name} changes {ch.key} and nothing undoes it: undo it {words.undo}"


def scope_holds(ch: Change) -> bool:
    """Whether a wide-scoped fixture's setup made ``ch``: its scope's until the scope ends."""
    return ch.phase == "setup" and ch.scope in WIDE_SCOPES and bool(ch.fixture)


class Held(Value):
    """A change a wide-scoped fixture's setup made, held for its scope.

    Put back by the time the scope ends, nobody leaked it; still there, it is a leak of the
    test whose setup ran the fixture.
    """

    _fields = ("change", "index")
    __slots__ = _fields

    def __init__(self, change: Change, index: int = -1) -> None:
        self.change = change
        #: The record index of the test whose setup ran the fixture (-1 where none is kept).
        self.index = index

    @property
    def fixture(self) -> str:
        return self.change.fixture or ""

    @property
    def scope(self) -> str:
        return self.change.scope or ""

    def put_back(self, value: Any) -> bool:
        """Whether ``value`` is the key's value from before the fixture's setup."""
        return bool(value == self.change.before)


def resolve_leaks(tests: Iterable[TestEntry]) -> dict[int, list[Change]]:
    """``{test index: [leaks]}`` for every test with at least one leak.

    A resource an earlier test left (its leak) that goes away during a later test -- the
    garbage collector closes the socket, the thread ends -- is the earlier test's, never the
    later one's: when it happens is the collector's timing, and charging it to whichever test
    ran then made two runs of one suite list different tests."""
    leaks: dict[int, list[Change]] = {}
    held: dict[tuple[str, str], Held] = {}
    #: Resources a test added and left: (probe, key) -> the value it left.
    left: dict[tuple[str, str], Any] = {}
    for test in tests:
        mine: list[Change] = []
        for ch in test.changes:
            if is_pytest_own(ch.fixture):
                continue  # pytest's own tmp_path setup (see own_fixtures): nobody's leak
            ref = (ch.probe, ch.key)
            if ch.probe in RESOURCE_PROBES:
                if ch.change == REMOVED and ref in left and left[ref] == ch.before:
                    del left[ref]
                    continue  # an earlier test's resource released now: not this test's
                if ch.change == REMOVED:
                    left.pop(ref, None)
                else:
                    left[ref] = ch.after
            if scope_holds(ch) and ref not in held:
                held[ref] = Held(ch, test.index)
                continue
            h = held.get(ref)
            if h is not None and ch.phase == "teardown" and h.put_back(ch.after):
                del held[ref]  # the scope ended and put the value back: nobody leaked it
                continue
            if h is not None:
                # Someone else changed a key a wide fixture holds: the fixture's change still
                # counts as its first test's leak (and this one is this test's own).
                leaks.setdefault(h.index, []).append(h.change)
                del held[ref]
            mine.append(ch)
        if mine:
            leaks.setdefault(test.index, []).extend(mine)
    for h in held.values():
        leaks.setdefault(h.index, []).append(h.change)
    return leaks
