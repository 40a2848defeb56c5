"""Containment features around the core plugin: isolation, strict and restore modes, guards,
pytest-xdist lanes and pytest-rerunfailures reruns.

:func:`register` is called by :func:`statesnap.plugin.core.configure`; it registers the markers
and only the features a session needs (the hooks of an optional plugin on a class registered
only when that plugin is present).  Features that act around every test implement
:class:`TestHook`; the core plugin calls them from its protocol wrapper.  :func:`finish`
replaces the plain session end when xdist lanes or reruns need more than one record or a
second look, and :func:`write_terminal` adds their lines to the terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from statesnap.state.diff import Change

if TYPE_CHECKING:
    from statesnap.plugin.core import StatesnapPlugin

_XDIST_KEY = pytest.StashKey[Any]()
_PARTS_KEY = pytest.StashKey[dict[str, Any]]()
MAX_LINES = 12


class TestHook(Protocol):
    """A feature called around every test by the core plugin's protocol wrapper."""

    def before_test(self, item: pytest.Item) -> None:
        """Before the reference snapshot of the test (and before its setup)."""

    def after_test(self, item: pytest.Item, index: int, changes: Sequence[Change]) -> list[str]:
        """After its final snapshot; returns ``probe:key`` refs it restored (or [])."""


def register(config: pytest.Config, plugin: StatesnapPlugin) -> None:
    """Markers, and the feature plugins this session needs."""
    from statesnap.contain import guards
    from statesnap.contain.isolate import plugin as isolate
    from statesnap.plugin import markers

    for line in markers.HELP:
        config.addinivalue_line("markers", line)
    s = plugin.settings
    pm = config.pluginmanager
    parts: dict[str, Any] = {}
    if s.isolate_child is not None:
        from statesnap.contain.isolate.spawn import SpawnedChild

        pm.register(SpawnedChild(plugin, s.isolate_child), "statesnap-spawned-child")
    else:
        parts["isolate"] = isolate.IsolatePlugin(plugin)
        pm.register(parts["isolate"], "statesnap-isolate")
    guard = guards.GuardPlugin(plugin)
    pm.register(guard, "statesnap-guards")
    plugin.hooks.append(guard)
    if s.strict is not None and s.isolate_child is None:
        from statesnap.contain import strict

        parts["strict"] = strict.StrictPlugin(plugin)
        pm.register(parts["strict"], "statesnap-strict")
    if s.restore is not None and s.isolate_child is None:
        from statesnap.contain.restore import RestoreMode

        parts["restore"] = RestoreMode(plugin)
        pm.register(parts["restore"], "statesnap-restore")
        plugin.hooks.append(parts["restore"])
    if pm.hasplugin("xdist"):
        from statesnap.contain.xdist import XdistHooks

        parts["xdist"] = XdistHooks(plugin)
        pm.register(parts["xdist"], "statesnap-xdist")
    if pm.hasplugin("rerunfailures"):
        from statesnap.contain.reruns import RerunHooks

        pm.register(RerunHooks(plugin), "statesnap-reruns")
    config.stash[_PARTS_KEY] = parts


def _part(plugin: StatesnapPlugin, name: str) -> Any:
    return plugin.config.stash.get(_PARTS_KEY, {}).get(name)


def finish(plugin: StatesnapPlugin, session: pytest.Session) -> None:
    """Session end: merge xdist lanes, find, verify, flag reruns, write the outputs."""
    from statesnap.contain import xdist as xdist_support
    from statesnap.proof import session_end
    from statesnap.record.journal import RecordError, read_record

    config = plugin.config
    plugin.record, plugin.findings, plugin.records = None, [], []
    if getattr(config, "workerinput", None) is not None:
        xdist_support.note_worker_output(plugin)
        return  # the controller merges the lanes and finds
    if xdist_support.is_controller(config):
        xdist_support.finish_controller(plugin, _part(plugin, "xdist"))
        return
    if plugin.record_path is None or plugin.settings.isolate_child is not None:
        return
    s = plugin.settings
    # A run without failures and without files to write needs only the tests that leaked or
    # carry more than an outcome (the terminal section): the plain ones are not parsed.
    lean = plugin.failures_written == 0 and s.json_path is None and s.report_path is None
    try:
        record = read_record(plugin.record_path, skip_plain=lean)
    except RecordError as exc:
        plugin._terminal_line(f"statesnap: cannot read back the record: {exc}")
        return
    plugin.record = record
    plugin.records = [record]
    findings = session_end.find(plugin, record)
    from statesnap.contain.reruns import flag_order_dependent

    findings += flag_order_dependent(plugin, record, findings)
    plugin.findings = findings
    session_end.store_verdicts(plugin, findings)
    session_end.write_outputs(plugin, [record], findings)


def _isolation_lines(records: Sequence[Any]) -> list[str]:
    modes: dict[str, int] = {}
    crashed: list[str] = []
    for record in records:
        for t in record.tests:
            info = t.extra.get("isolation")
            if not isinstance(info, dict):
                continue
            modes[str(info.get("mode"))] = modes.get(str(info.get("mode")), 0) + 1
            if info.get("crashed"):
                exit_ = info.get("exit") or {}
                how = exit_.get("signal") or (f"status {exit_['code']}" if "code" in exit_
                                              else "?")
                if exit_.get("timed_out"):
                    how = "timed out"
                crashed.append(f"    {t.nodeid}: {how}")
    if not modes:
        return []
    total = sum(modes.values())
    how = ", ".join(f"{m} {n}" for m, n in sorted(modes.items()))
    lines = [f"isolated {total} test(s) in child processes ({how}); their own changes died "
             "with them"]
    if crashed:
        lines.append(f"  {len(crashed)} isolated test process(es) died:")
        lines += crashed[:MAX_LINES]
    return lines


def write_terminal(plugin: StatesnapPlugin, tr: Any) -> None:
    """Lines about isolation, restore, strict, lanes and reruns, when there are any."""
    records = plugin.records or ([plugin.record] if plugin.record is not None else [])
    lines = _isolation_lines(records)
    restored = [(t.nodeid, t.extra["restored"]) for r in records for t in r.tests
                if t.extra.get("restored")]
    if restored and plugin.settings.restore is not None:
        keys = sum(len(k) for _, k in restored)
        lines.append(f"restore mode put back {keys} key(s) after {len(restored)} test(s):")
        lines += [f"    {nodeid}: {', '.join(map(str, refs))}"
                  for nodeid, refs in restored[:MAX_LINES]]
        if len(restored) > MAX_LINES:
            lines.append(f"    … and {len(restored) - MAX_LINES} more (see the record)")
    restore = _part(plugin, "restore")
    if restore is not None:
        for nodeid, probe, error in restore.failures[:MAX_LINES]:
            lines.append(f"restore mode: {probe} could not put back after {nodeid}: {error}")
    strict = [(t.nodeid, t.extra["strict"]) for r in records for t in r.tests
              if t.extra.get("strict")]
    if strict:
        lines.append(f"strict mode: {len(strict)} test(s) errored for leaking state:")
        lines += [f"    {nodeid}: {', '.join(map(str, refs))}"
                  for nodeid, refs in strict[:MAX_LINES]]
    reruns = [(t.nodeid, t.extra["reruns"]) for r in records for t in r.tests
              if t.extra.get("reruns")]
    if reruns:
        lines.append(f"pytest-rerunfailures reran {len(reruns)} test(s): "
                     + ", ".join(f"{n} ({k})" for n, k in reruns[:MAX_LINES]))
    if len(plugin.records) > 1:
        lanes = ", ".join(f"{r.worker} ({len(r.tests)} tests"
                          + (", crashed" if r.crashed else "") + ")" for r in plugin.records)
        lines.append(f"xdist lanes merged into the record: {lanes}")
    if not lines:
        return
    tr.write_sep("-", "statesnap containment")
    for line in lines:
        tr.write_line(line)
