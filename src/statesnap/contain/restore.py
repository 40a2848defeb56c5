"""Restore mode: ``--statesnap-restore[=PROBES]`` puts back, after each test, what it leaked.

Before each test's setup, every covered restorable probe saves the real state (objects, not
fingerprints: :meth:`Probe.save`); after its teardown, the keys the test leaked are put back
(:meth:`Probe.restore`) and the reference snapshot is retaken, so the next test starts from the
healed state.  The test's record line keeps its leak in ``changes`` and lists what was put
back in ``restored``: the suite heals while the record and the report still name every
polluter.

Not restored: changes a wide-scoped fixture made in its setup or its finaliser (they belong
to the scope: the setup's are its finaliser's to undo, and the finaliser's are that
undoing), and by default low-severity changes (a plain import: removing a module that later
code imported again would give two copies of its classes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

from statesnap.analysis.leaks import WIDE_SCOPES
from statesnap.probes.base import Probe
from statesnap.state.diff import Change
from statesnap.state.selection import ProbeSelection, resolve

if TYPE_CHECKING:
    from statesnap.plugin.core import StatesnapPlugin


class RestoreMode:
    """A test hook of the plugin (:class:`statesnap.contain.registry.TestHook`)."""

    def __init__(self, plugin: StatesnapPlugin) -> None:
        self.plugin = plugin
        self.selection: ProbeSelection | None = None
        self.probes: list[Probe] = []
        self._saved: dict[str, object] = {}
        #: ``nodeid -> ["env:FOO", ...]``, in run order.
        self.restored: dict[str, list[str]] = {}
        #: Restores that raised: ``(nodeid, probe, error)``.
        self.failures: list[tuple[str, str, str]] = []

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        p = self.plugin
        active = p.snapshotter.probes if p.snapshotter is not None else []
        self.selection = resolve(p.settings.restore or "all", "--statesnap-restore", active,
                                 p.unavailable, restorable_only=True)
        self.probes = [pr for pr in active if pr.name in self.selection.names]

    def before_test(self, item: pytest.Item) -> None:
        self._saved = {}
        for probe in self.probes:
            try:
                self._saved[probe.name] = probe.save()
            except Exception as exc:
                self.failures.append((item.nodeid, probe.name, f"save: {exc!r}"))

    def _restorable(self, changes: Sequence[Change]) -> dict[str, list[str]]:
        selection = self.selection
        keys: dict[str, list[str]] = {}
        if selection is None:
            return keys
        for ch in changes:
            if ch.scope in WIDE_SCOPES and ch.phase in ("setup", "teardown"):
                continue  # a wide fixture's setup or finaliser: its scope's business
            if ch.probe in self._saved and selection.covers(ch):
                keys.setdefault(ch.probe, []).append(ch.key)
        return keys

    def after_test(self, item: pytest.Item, index: int, changes: Sequence[Change]) -> list[str]:
        """Put the leaked keys back; the ``probe:key`` refs restored."""
        if self.plugin.isolated_child:
            return []
        wanted = self._restorable(changes)
        done: list[str] = []
        for probe in self.probes:
            keys = wanted.get(probe.name)
            if not keys:
                continue
            try:
                done += [f"{probe.name}:{k}" for k in probe.restore(self._saved[probe.name],
                                                                     keys)]
            except Exception as exc:
                self.failures.append((item.nodeid, probe.name, f"restore: {exc!r}"))
        self._saved = {}
        if done:
            self.restored[item.nodeid] = done
            tracker = self.plugin.tracker
            if tracker is not None:
                tracker.baseline()  # re-read the probes whose state was just put back
        return done
