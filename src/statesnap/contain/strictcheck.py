"""Strict mode's check: the teardown wrapper that makes a test which leaked state error,
with the diff and a fix hint (:class:`StrictPlugin`).

Imported only where strict mode is on (its feature's configure, statesnap.contain.strict,
registers the plugin and the terminal lines from here) or an isolated test's parent asks what
escaped its child; a session without either does not load this module.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import TYPE_CHECKING, Any

import pytest
from _pytest.outcomes import Failed

from statesnap.analysis.leaks import WIDE_SCOPES, Held, scope_holds, setup_hint
from statesnap.analysis.own_fixtures import (
    display_fixture,
    is_pytest_own,
    is_users_setup,
    lower_own_class_setup,
)
from statesnap.base.internal import note_internal_error
from statesnap.output.lines import short
from statesnap.plugin import markers
from statesnap.plugin.hookplugin import HookPlugin
from statesnap.plugin.run import MAX_LINES, RunState
from statesnap.probes.files.probe import FilesProbe
from statesnap.state.diff import Change
from statesnap.state.tracker import Label, TestTracker

if TYPE_CHECKING:
    from statesnap.state.selection import ProbeSelection

ALLOW_MARKER = markers.ALLOW
STRICT_KEY = pytest.StashKey["StrictPlugin"]()
#: The field of a test's record line: the ``probe:key`` refs it errored for.
FIELD = "strict"

class StateLeaked(Failed):
    """Raised at teardown by strict mode: the test leaked state; the message is the diff."""


def net_so_far(run: RunState) -> list[Change]:
    """The test's net changes up to now (a full snapshot), labelled like the record's."""
    tracker: TestTracker | None = run.tracker
    if tracker is None:
        return []
    # After a quiet teardown (the plugin took no after-call snapshot) all of it is the call's.
    return tracker.net_so_far(Label("call" if run.test.call_is_last else "teardown"))


def _current_value(run: RunState, probe: str, key: str) -> Any:
    tracker: TestTracker | None = run.tracker
    snap = tracker.latest if tracker is not None else None
    if snap is None:
        return None
    return snap.get(probe).get(key)


def format_leak(nodeid: str, leaks: Iterable[Change], run: RunState,
                held_by: dict[str, str] | None = None) -> str:
    """The teardown error's text: each leaked key, before → after, where, and a fix hint."""
    from statesnap.state.selection import allowance_refs, made_directories, within

    leaks = list(leaks)
    lines = [f"statesnap --statesnap-strict: {nodeid} leaked state that later tests would "
             f"see ({len(leaks)} change(s)):"]
    hints: list[str] = []
    # What is in a directory the test made goes with it: one fix, one allowance for all.
    made = made_directories(leaks)
    for ch in leaks:
        where = f" [{ch.phase}" + (
            f", fixture {display_fixture(ch.fixture, ch.phase)} ({ch.scope})" if ch.fixture else "")
        where = where + "]" if ch.phase else ""
        owner = (held_by or {}).get(ch.ref)
        owner_text = f" (set up by {owner}, not undone when its scope ended)" if owner else ""
        lines.append(f"  {ch.ref}: {ch.change} {short(ch.before)} → {short(ch.after)}"
                     f"{where}{owner_text}")
        probe = run.snapshotter.probe(ch.probe) if run.snapshotter else None
        top = within(ch.key, made) if ch.probe == FilesProbe.name else None
        own = setup_hint(ch)
        if own is not None:
            # A class or module set-up's change: undone in its tear-down, not by a monkeypatch
            # (function-scoped, it cannot reach there), as the terminal and findings say.
            if own not in hints:
                hints.append(own)
        elif probe is not None and top in (None, ch.key):
            try:
                hint = probe.hint(ch.key, ch.change)
            except Exception as exc:
                note_internal_error(f"probe {ch.probe}: hint", exc)
                hint = None
            if hint and hint not in hints:
                hints.append(hint)
    for hint in hints[:5]:
        lines.append(f"  fix: {hint}")
    refs = ", ".join(repr(r) for r in allowance_refs(leaks)[:3])
    lines.append(f"intended? allow it: @pytest.mark.{ALLOW_MARKER}({refs}) or the ini option "
                 "statesnap_allow")
    return "\n".join(lines)


class StrictPlugin(HookPlugin):
    """Checks every test's leaks at the end of its teardown."""

    def __init__(self, run: RunState, spec: str, allow: tuple[str, ...]) -> None:
        self.run = run
        self.spec = spec
        self.allow = allow
        self.selection: ProbeSelection | None = None
        self.held: dict[tuple[str, str], Held] = {}
        self._finalised: set[tuple[str, str]] = set()
        run.config.stash[STRICT_KEY] = self

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from statesnap.state.selection import ProbeSelection, SelectionError, resolve

        p = self.run
        spec = self.spec
        active = p.snapshotter.probes if p.snapshotter is not None else []
        try:
            selection = resolve(spec, "--statesnap-strict", active, p.unavailable)
        except SelectionError as exc:
            raise pytest.UsageError(str(exc)) from None
        if session.config.pluginmanager.hasplugin("warnings"):
            # pytest's warnings plugin runs every test inside catch_warnings, which puts the
            # filters back after the protocol, i.e. after this check: inside a test, warnings
            # changes can never leak, and seen from teardown they always look as if they do.
            selection = ProbeSelection(selection.names - {"warnings"}, selection.min_severity)
        self.selection = selection

    def _patterns(self, item: pytest.Item) -> list[str]:
        from statesnap.state.selection import normalise_allow

        out = list(self.allow)
        for marker in item.iter_markers(ALLOW_MARKER):
            out += [normalise_allow(str(a)) for a in marker.args]
        return out

    @pytest.hookimpl(trylast=True)
    def pytest_fixture_post_finalizer(self, fixturedef: Any, request: Any) -> None:
        if str(fixturedef.scope) in WIDE_SCOPES:
            self._finalised.add((str(fixturedef.argname), str(fixturedef.scope)))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item,
                                nextitem: pytest.Item | None) -> Generator[None, None, None]:
        self._finalised = set()
        result = yield  # a teardown that raised already errors; no second error on top
        if not self.run.child:
            message = self.check(item)
            if message is not None:
                raise StateLeaked(message, pytrace=False)
        return result

    def check_escaped(self, item: pytest.Item) -> str | None:
        """:meth:`check` for an isolated test, in the parent, once its child is gone."""
        self._finalised = set()
        return self.check(item)

    def check(self, item: pytest.Item) -> str | None:
        """The leak message for ``item`` now (after its teardown), or None when it is clean."""
        selection = self.selection
        if selection is None:
            return None
        leaks: list[Change] = []
        held_by: dict[str, str] = {}
        changes = net_so_far(self.run)
        lower_own_class_setup(changes, getattr(item, "cls", None))  # as the record rates them
        for ch in changes:
            if is_pytest_own(ch.fixture):
                continue  # pytest's own setup (tmp_path's imports, a package's import)
            ref = (ch.probe, ch.key)
            if scope_holds(ch):
                self.held.setdefault(ref, Held(ch))
                continue
            held = self.held.get(ref)
            if held is not None and held.put_back(ch.after):
                del self.held[ref]  # the scope ended and put it back
                continue
            leaks.append(ch)
        own = {(c.probe, c.key) for c in leaks}
        for ref, held in list(self.held.items()):
            if (held.fixture, held.scope) not in self._finalised:
                continue
            del self.held[ref]
            if ref in own:
                continue  # this test changed it last: its own change is listed, not the fixture
            if not held.put_back(_current_value(self.run, *ref)):
                leaks.append(held.change)
                name = display_fixture(held.fixture, "setup")
                held_by[held.change.ref] = (name if is_users_setup(held.fixture)
                                            else f"{held.scope} fixture {name}")
        from statesnap.state.selection import allowed

        patterns = self._patterns(item)
        leaks = [c for c in leaks if selection.covers(c) and not allowed(c, patterns)]
        if not leaks:
            return None
        self.run.test.add_field(FIELD, [c.ref for c in leaks])
        return format_leak(item.nodeid, leaks, self.run, held_by)


def escaped_leak_message(run: RunState, item: pytest.Item) -> str | None:
    """For an isolated test, in the parent: what escaped its child (files), if strict is on."""
    strict = run.config.stash.get(STRICT_KEY, None)
    return None if strict is None else strict.check_escaped(item)


def terminal_lines(run: RunState) -> list[str]:
    strict = run.results.tests_with(FIELD)
    if not strict:
        return []
    return [f"strict mode: {len(strict)} test(s) errored for leaking state:"] + [
        f"    {nodeid}: {', '.join(map(str, refs))}" for nodeid, refs in strict[:MAX_LINES]]
