"""Restore mode: ``--statesnap-restore[=PROBES]`` puts back, after each test, what it leaked.

A per-test observer: covered probes save the real state before each test, and the keys it leaked
are put back after it; the record still names every polluter.  What is not restored, and why:
docs/ARCHITECTURE.md ("Restore mode").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

from statesnap.plugin import options
from statesnap.plugin.hookplugin import HookPlugin, module_dir
from statesnap.plugin.run import MAX_LINES, RunState
from statesnap.probes.base import Probe
from statesnap.state.diff import Change

if TYPE_CHECKING:
    # Imported where restore mode is on (its session start), not by every session.
    from statesnap.state.selection import ProbeSelection


class RestoreMode(HookPlugin):
    """A per-test observer of the core (:class:`statesnap.plugin.run.TestObserver`)."""

    def __init__(self, run: RunState, spec: str) -> None:
        # Imported here, at configure and only where restore is on: a module a session
        # without it never runs costs its import and its teardown at exit (issue 28).
        from statesnap.analysis.leaks import WIDE_SCOPES

        self.run = run
        self.spec = spec
        self.wide_scopes = WIDE_SCOPES
        self.selection: ProbeSelection | None = None
        self.probes: list[Probe] = []
        self._saved: dict[str, object] = {}
        #: Restores that raised: ``(nodeid, probe, error)``.
        self.failures: list[tuple[str, str, str]] = []

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from statesnap.state.selection import SelectionError, resolve

        p = self.run
        active = p.snapshotter.probes if p.snapshotter is not None else []
        try:
            self.selection = resolve(self.spec, "--statesnap-restore", active,
                                     p.unavailable, restorable_only=True)
        except SelectionError as exc:
            raise pytest.UsageError(str(exc)) from None
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
            if ch.scope in self.wide_scopes and ch.phase in ("setup", "teardown"):
                continue  # a wide fixture's setup or finaliser: its scope's business
            if ch.probe in self._saved and selection.covers(ch):
                keys.setdefault(ch.probe, []).append(ch.key)
        return keys

    def after_test(self, item: pytest.Item, index: int, changes: Sequence[Change]) -> list[str]:
        """Put the leaked keys back; the ``probe:key`` refs restored."""
        if self.run.child:
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
            tracker = self.run.tracker
            if tracker is not None:
                tracker.baseline()  # re-read the probes whose state was just put back
        return done

    def terminal_lines(self, run: RunState) -> list[str]:
        lines = _restored_lines(run)
        for nodeid, probe, error in self.failures[:MAX_LINES]:
            lines.append(f"restore mode: {probe} could not put back after {nodeid}: {error}")
        return lines


# -- the feature's registration: options, configure, terminal lines ----------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup(options.GROUP).addoption(
        "--statesnap-restore",
        nargs="?",
        const="all",
        default=None,
        metavar="PROBES",
        help="after each test, put back the state it leaked where a probe can (env, cwd, "
        "sys.path, sys.modules, ...); the record and the report still name every polluter",
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    spec = options.probe_selection(config.option.statesnap_restore, "restore")
    run = RunState.of(config)
    run.modes["restore"] = spec
    if spec is None or run.child:
        return
    mode = RestoreMode(run, spec)
    config.pluginmanager.register(mode, "statesnap-restore")
    run.observe(mode)
    run.add_lines(mode.terminal_lines)


def _restored_lines(run: RunState) -> list[str]:
    restored = run.results.tests_with("restored")
    if not restored:
        return []
    keys = sum(len(k) for _, k in restored)
    lines = [f"restore mode put back {keys} key(s) after {len(restored)} test(s):"]
    lines += [f"    {nodeid}: {', '.join(map(str, refs))}"
              for nodeid, refs in restored[:MAX_LINES]]
    if len(restored) > MAX_LINES:
        lines.append(f"    … and {len(restored) - MAX_LINES} more (see the record)")
    return lines


#: pytest and pluggy read every name dir() lists (statesnap.plugin.hookplugin).
__dir__ = module_dir(globals())
