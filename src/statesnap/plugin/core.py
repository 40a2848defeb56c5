"""The core plugin's hooks, read top to bottom in the order pytest calls them.

:func:`configure` (called by the package's ``pytest_configure``) makes the session's
:class:`~statesnap.plugin.run.RunState` and registers :class:`StatesnapPlugin`, which takes
the snapshots around every test and writes the record.  Features register themselves and are
called through the run state (observers, terminal lines, session end), never imported here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from statesnap.analysis.own_fixtures import PYTEST_OWN_SETUP, lower_own_class_setup
from statesnap.base.internal import note_internal_error
from statesnap.plugin.end import SessionEnd
from statesnap.plugin.failurenote import note_failure
from statesnap.plugin.fixturekinds import FAILED, FixtureKinds, is_builtin_fixture, watch_fixture
from statesnap.plugin.hookplugin import HookPlugin
from statesnap.plugin.options import rootdir_pitfalls, settings_from
from statesnap.plugin.outsidecapture import OutsideCapture
from statesnap.plugin.packagesetup import watch_package_setups
from statesnap.plugin.run import RUN_KEY, RunState, TestState
from statesnap.plugin.sessionstart import start_session
from statesnap.plugin.start import marker_reorderers
from statesnap.plugin.testline import TestLines
from statesnap.plugin.wideteardowns import WideTeardowns
from statesnap.probes.base import Probe
from statesnap.record.journal import encode_string
from statesnap.replay.warmpick import current as preload_current
from statesnap.state.diff import diff_snapshots
from statesnap.state.tracker import Label

if TYPE_CHECKING:
    from statesnap.plugin.order import RestoreBefore
    from statesnap.probes.fixtures import FixturesProbe

def configure(config: pytest.Config, imports_done: Callable[[], None] = lambda: None) -> None:
    """Make the run state and register the core plugin (features register themselves).

    ``imports_done`` is called just before the first snapshot: the package root passes its
    start-up import shortcut's undoing (given, not imported, so no module imports it back)."""
    settings = settings_from(config)
    run = RunState(config, settings)
    config.stash[RUN_KEY] = run
    params = config.invocation_params
    # Said in the header and again in statesnap's section (-q shows no header).
    run.pitfalls = rootdir_pitfalls(list(params.args), Path(params.dir), config.rootpath)
    config.pluginmanager.register(StatesnapPlugin(run, imports_done), "statesnap-session")
    config.pluginmanager.register(SessionEnd(run), "statesnap-end")
    if settings.order_file is not None:
        from statesnap.plugin.order import OrderPlugin

        config.pluginmanager.register(OrderPlugin(settings.order_file), "statesnap-order")


class StatesnapPlugin(HookPlugin):
    """The core's hooks.  One instance per pytest process; its state is the :class:`RunState`
    in ``config.stash[RUN_KEY]``."""

    def __init__(self, run: RunState, imports_done: Callable[[], None] = lambda: None) -> None:
        self.run = run
        self._imports_done = imports_done
        self.config = run.config
        self.settings = run.settings
        self.index = 0
        self._started = 0.0
        self.restore_before: RestoreBefore | None = None
        #: The fixtures probe, where it runs (replays, --statesnap-watch-fixtures).
        self.fixtures: FixturesProbe | None = None
        #: pytest's own fixtures (PYTEST_OWN_SETUP) whose first setup has been seen.
        self._own_setup_seen: set[str] = set()
        #: :class:`WideTeardowns` is registered (a wide fixture of the user's was set up).
        self._wide_teardowns = False
        self._kinds = FixtureKinds(run.autouse)
        #: Checkpoints inside a phase: with pytest's capture suspended, as at the others.
        self._outside = OutsideCapture(run.config)
        #: Writes each test's record line (:mod:`statesnap.plugin.testline`).
        self._write_test = TestLines(run).write
        #: A test's call phase is running (known once :class:`_CallEdges` is registered).
        self.in_call = False
        self._call_edges = False

    # -- session start: probes, record header, snapshot before collection -----------------
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return self.run.pitfalls

    def _on_probe_error(self, probe: Probe, where: str, exc: BaseException) -> None:
        # Never warnings.warn here: under -W error that would fail the user's test.
        self.run.note_error({
            "type": "probe_error",
            "probe": probe.name,
            "where": where,
            "index": self.index,
            "error": f"{type(exc).__name__}: {exc}",
        })
        self.run.say(
            f"statesnap: probe {probe.name!r} raised in {where} ({type(exc).__name__}: {exc}); "
            "switched off for the rest of the run"
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.fixtures, self.restore_before = start_session(
            self.run, self._on_probe_error, self._imports_done)

    # -- collection: what importing the test modules changed ------------------------------
    # The baseline is taken as the test loop starts, not in pytest_collection_finish: that
    # runs inside pytest's own collection-time catch_warnings, whose filters list is swapped
    # back afterwards and would look like the first test's leak.
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        self._baseline_after_collection(session.items)
        run = self.run
        watch_package_setups(session.items, lambda: run.tracker, self._outside)
        return (yield)

    def _baseline_after_collection(self, items: list[pytest.Item]) -> None:
        if self.run.tracker is None or self.run.writer is None:
            return
        if self.restore_before is not None:
            self.restore_before.prepare()
        before = self.run.tracker.current
        after = self.run.tracker.baseline()
        self.run.session_baseline = after
        try:
            changes = diff_snapshots(before, after) if before is not None else []
        except Exception as exc:  # a third-party probe's values that cannot be compared
            note_internal_error("snapshot after collection", exc)
            changes = []
        for ch in changes:
            ch.phase = "collection"
        line: dict[str, object] = {"type": "collection",
                                   "changes": [c.to_json() for c in changes]}
        sorters = marker_reorderers(self.config, items)
        if sorters:  # read into the header's replay.reorders (statesnap.record.reader)
            line["reorders"] = sorters
        try:  # what a warm parent preloads (statesnap.replay.warmpick), read into the header
            line["preload"] = preload_current(self.run.settings.rootdir, [
                getattr(p, "__name__", None) or type(p).__module__
                for p in self.config.pluginmanager.get_plugins()])
        except Exception as exc:
            note_internal_error("listing the modules to preload", exc)
        self.run.writer.write(line)
        if self.restore_before is not None:
            self.restore_before.save()

    # -- each test: checkpoints around setup, call, teardown and wide fixtures ------------
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        tracker, writer = self.run.tracker, self.run.writer
        if tracker is None or writer is None:
            return (yield)
        index = self.index
        self.index += 1
        nodeid_json = encode_string(item.nodeid)  # once, for the start and the test line
        writer.write_start_encoded(index, nodeid_json)
        run = self.run
        test = run.test = TestState(nextitem)
        self._started = time.perf_counter()
        restored: list[str] = []
        if self.restore_before is not None:
            restored = self.restore_before.maybe_restore(item.nodeid)
            if restored:
                tracker.abort()  # the reference snapshot is stale after a restore
        for hook in run.observers:
            hook.before_test(item)
        tracker.begin()
        try:
            return (yield)
        finally:
            duration = time.perf_counter() - self._started
            try:
                changes = tracker.end("call" if test.call_is_last else "teardown")
            except Exception as exc:
                # Bookkeeping must never change a test's outcome nor end the session (a
                # third-party probe's values that cannot be compared): the test's line is
                # still written, without changes, and the next test starts afresh.
                note_internal_error("snapshot after a test", exc)
                tracker.abort()
                changes = []
            if changes:
                lower_own_class_setup(changes, getattr(item, "cls", None))
            for hook in run.observers:
                # After end(): restore mode puts state back here and re-snapshots, so the
                # next test starts from the healed state while this line keeps the leak.
                restored += hook.after_test(item, index, changes)
            self._write_test(item, index, nodeid_json, duration, changes, restored, test)

    def _watch_call_edges(self) -> None:
        # A second report of a call phase: subtests (pytest's, or unittest's subTest) report
        # each one from inside the call.  A checkpoint after each would cost a snapshot per
        # subtest (more-itertools: 2332 of them on 664 tests) and label nothing new: from
        # now on the call phase's edges are watched and those reports take none.
        from statesnap.plugin.calledges import CallEdges  # only where subtests are used

        self._call_edges = True
        self.config.pluginmanager.register(CallEdges(self), "statesnap-call-edges")

    def _after_setup(self) -> None:
        # With no fixture of the user's in its setup, a test's setup runs only pytest's own
        # code: the checkpoint is skipped and the next one covers both phases.
        tracker, test = self.run.tracker, self.run.test
        assert tracker is not None
        names = test.function_fixtures
        if names or test.wide_fixtures:
            # Function-scoped fixtures run on every test, so they get no checkpoint of their
            # own (that would multiply the per-test cost); a setup change is put down to them
            # together, and to the one by name when there is only one.
            tracker.checkpoint(Label(
                "setup",
                " or ".join(names) if names else None,
                "function" if names else None,
            ))

    def _after_call(self, item: pytest.Item) -> None:
        assert self.run.tracker is not None
        if self._kinds.quiet_teardown(item, self.run.test):
            # Nothing of the user's runs in this teardown: the end-of-test snapshot closes
            # the call phase instead (one snapshot per test, not two).
            self.run.test.call_is_last = True
        else:
            self.run.tracker.checkpoint(Label("call"))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_fixture_setup(
        self, fixturedef: Any, request: pytest.FixtureRequest
    ) -> Generator[None, object, object]:
        own = (self.run.tracker is not None and fixturedef.argname in PYTEST_OWN_SETUP
               and fixturedef.argname not in self._own_setup_seen
               and is_builtin_fixture(fixturedef))
        if own:
            # pytest's tmp_path imports getpass and pwd on first use, inside the user's
            # fixture that asked for it: checkpoints around its first setup label that
            # import as pytest's own (two light snapshots, once per session).
            assert self.run.tracker is not None
            self._own_setup_seen.add(fixturedef.argname)
            before = self.run.test.function_fixtures
            try:
                self._outside.checkpoint(self.run.tracker, Label(
                    "setup", " or ".join(before) or None, "function" if before else None))
            except Exception as exc:  # bookkeeping must never change a test's outcome
                note_internal_error(f"checkpoint before fixture {fixturedef.argname}", exc)
        value: object = FAILED
        try:
            value = yield
            return value
        finally:
            try:
                if own and self.run.tracker is not None:
                    self._outside.checkpoint(self.run.tracker,
                                             Label("setup", fixturedef.argname, "function"))
                elif self.run.tracker is not None and (kind := self._kinds.of(fixturedef))[0]:
                    if not kind[1] and str(fixturedef.scope) == "function":
                        self.run.test.quiet_fixtures.append(fixturedef.argname)
                elif self.run.tracker is not None:
                    if str(fixturedef.scope) == "function":
                        test = self.run.test
                        test.function_fixtures.append(fixturedef.argname)
                        if not test.tears_down and kind[1]:
                            test.tears_down = True
                    else:
                        if not self._wide_teardowns:
                            self._watch_wide_teardowns()
                        self.run.test.wide_fixtures = True
                        if self.fixtures is not None and value is not FAILED:
                            watch_fixture(self.fixtures, self.run.ctx, fixturedef, request, value)
                        self._outside.checkpoint(self.run.tracker, Label(
                            "setup", fixturedef.argname, str(fixturedef.scope)), light=False)
            except Exception as exc:  # bookkeeping must never change a test's outcome
                note_internal_error(f"checkpoint after fixture {fixturedef.argname}", exc)

    def _watch_wide_teardowns(self) -> None:
        # Before this fixture's setup returns, so before any finaliser of it can run.
        self._wide_teardowns = True
        self.config.pluginmanager.register(WideTeardowns(self), "statesnap-wide-teardowns")

    def after_finalizer(self, fixturedef: Any) -> None:
        """A fixture was finalised (:class:`WideTeardowns`): a wide one of the user's gets a
        checkpoint of its own."""
        if (self.run.tracker is not None and str(fixturedef.scope) != "function"
                and not is_builtin_fixture(fixturedef)):
            try:
                if self.fixtures is not None:
                    self.fixtures.torn_down(fixturedef)
                self._outside.checkpoint(self.run.tracker, Label(
                    "teardown", fixturedef.argname, str(fixturedef.scope)), light=False)
            except Exception as exc:  # bookkeeping must never change a test's outcome
                note_internal_error(f"checkpoint after fixture {fixturedef.argname}", exc)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        # pytest asks for a phase's report the moment the phase has ended, before the next
        # one starts: the phase checkpoints sit here, which spares two hook wrappers of their
        # own (setup, call) on every test.
        run = self.run
        if run.tracker is not None:
            try:
                when = call.when
                if when == "setup":
                    test = run.test
                    if test.function_fixtures or test.wide_fixtures:  # else no checkpoint
                        self._after_setup()
                elif when == "call":
                    if "call" in run.test.phases and not self._call_edges:
                        self._watch_call_edges()
                    if not self.in_call:  # a subtest's report, inside the call: no checkpoint
                        self._after_call(item)
            except Exception as exc:  # bookkeeping must never change a test's outcome
                note_internal_error(f"checkpoint after {call.when}", exc)
        report = yield
        try:
            # The outcome, noted here rather than in a method of its own: three times a test.
            when = report.when or "call"
            outcome: str = report.outcome
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "xpassed"
            test = run.test
            test.phases[when] = outcome
            if report.failed and test.failure is None:
                note_failure(run, report, call, item, when)
        except Exception as exc:  # bookkeeping must never change a test's outcome
            note_internal_error("noting a test's report", exc)
        if run.report_sink is not None:
            run.report_sink(item, report)
        return report

