"""The core plugin's hooks, read top to bottom in the order pytest calls them.

:func:`configure` (called by the package's ``pytest_configure``) makes the session's
:class:`~statesnap.plugin.run.RunState` and registers :class:`StatesnapPlugin`, which takes
the snapshots around every test and writes the record.  Features register themselves and are
called through the run state (observers, terminal lines, session end), never imported here.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from statesnap import probes as probe_registry
from statesnap.analysis.own_fixtures import PYTEST_OWN_SETUP
from statesnap.base.internal import note_internal_error
from statesnap.base.internal import set_sink as set_internal_sink
from statesnap.base.redact import report_secrets_to_parent
from statesnap.plugin.end import SessionEnd
from statesnap.plugin.hookplugin import HookPlugin
from statesnap.plugin.options import rootdir_pitfalls, settings_from
from statesnap.plugin.run import RUN_KEY, RunState, TestState
from statesnap.plugin.start import session_header, watch_installed_project
from statesnap.probes.base import Probe, ProbeContext, ProbeUnavailable
from statesnap.record.gauges import Gauges
from statesnap.record.journal import RecordWriter, dumps, encode_string, plain_test_line
from statesnap.record.paths import default_record_path, mark_latest
from statesnap.state.diff import Change, diff_snapshots
from statesnap.state.snapshot import Snapshotter
from statesnap.state.tracker import Label, TestTracker

if TYPE_CHECKING:
    from statesnap.plugin.order import RestoreBefore
    from statesnap.probes.fixtures import FixturesProbe

#: The on-demand probe of wide fixtures' values (statesnap.probes.fixtures), imported only in
#: the runs that use it: a recording run pays no import for it.
FIXTURES = "fixtures"


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


#: A fixture's value while its set-up has not returned (it raised): nothing to watch.
_FAILED = object()

#: Fixtures pytest makes for the user's own code: xunit ``setup_*``/``teardown_*`` functions
#: and unittest's ``setUpClass``.  Their functions live in ``_pytest``; they run user code.
_USER_CODE_FIXTURES = ("_xunit_setup_", "_unittest_")


def _may_tear_down(fixturedef: Any) -> bool:
    """Whether a fixture may run code at its teardown: pytest finalises a generator
    function's fixture; one given ``request`` may add finalisers; anything else a plugin
    wrapped (coroutines) counts too."""
    func = getattr(fixturedef, "func", None)
    argnames = getattr(fixturedef, "argnames", None)
    if func is None or argnames is None or "request" in argnames:
        return True
    return (inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func)
            or inspect.iscoroutinefunction(func))


def _is_builtin_fixture(fixturedef: Any) -> bool:
    func = getattr(fixturedef, "func", None)
    module = getattr(func, "__module__", "") or ""
    if str(getattr(fixturedef, "argname", "")).startswith(_USER_CODE_FIXTURES):
        return False
    return module.startswith(("_pytest", "pytest", "statesnap"))


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
        #: ``fixturedef -> (func, argnames, builtin, may tear down)``: :meth:`_kind`.
        self._fixture_kinds: dict[Any, tuple[object, object, bool, bool]] = {}
        self._gauges = Gauges()
        self._worker_json: str = encode_string(run.worker)
        #: ``(overall outcome, JSON)`` of each distinct set of phase outcomes.
        self._phase_texts: dict[tuple[tuple[str, str], ...], tuple[str, str]] = {}
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

    def _make_probes(self) -> list[Probe]:
        found = probe_registry.discover(warn=self.run.say)
        for extra in self.config.hook.pytest_statesnap_add_probes(config=self.config):
            if extra:
                found.extend(extra)
        only, drop = probe_registry.parse_selection(self.settings.probes)
        # Known by name everywhere; run only where asked (its read digests every live wide
        # fixture after each test) or where a selection names it.
        if self.settings.watch_fixtures or (only is not None and FIXTURES in only):
            from statesnap.probes.fixtures import FixturesProbe

            found.append(FixturesProbe())
        known = {p.name for p in found} | {FIXTURES}
        unknown = (only or set()) - known | (drop - known)
        if unknown:
            raise pytest.UsageError(
                f"--statesnap-probes: unknown probe(s) {', '.join(sorted(unknown))} "
                f"(known: {', '.join(sorted(known))})"
            )
        return probe_registry.select(found, only, drop)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        s, run = self.settings, self.run
        run.ctx = ProbeContext(
            rootdir=s.rootdir,
            packages=s.packages,
            watch_roots=s.watch_roots,
            watch_exclude=s.watch_exclude,
            redactor=run.redactor,
            probe_options={} if s.nvml_every is None else {"nvml_every": s.nvml_every},
        )
        secret_fd = report_secrets_to_parent(run.redactor, os.environ)
        if secret_fd is not None:
            run.ctx.own_fds.add(secret_fd)
        # Probe selection is validated before anything is written: a usage error must not
        # leave an empty record behind.
        chosen = self._make_probes()
        if any(p.name == "attributes" for p in chosen):
            watch_installed_project(run)
        if not run.child and getattr(self.config, "workerinput", None) is None:
            run.outputs.ask("--statesnap-json", s.json_path)
            run.outputs.ask("--report", s.report_path)
        run.record_path = (run.lane_path or s.record_path
                           or default_record_path(self.config, run.worker))
        run.ctx.own_paths.update({run.record_path, run.record_path.with_suffix(".logs")})
        for out in (s.json_path, s.report_path):
            if out is not None:
                run.ctx.own_paths.add(out)
        basetemp = self.config.option.basetemp
        if basetemp:
            # pytest's own temporary area (``--basetemp`` inside the project): each test's
            # tmp_path is fresh, and pytest empties it at every session's start.  Watched, every
            # use of tmp_path was a leak (strict mode errored on the very fix its hints give).
            run.ctx.own_paths.add(Path(os.path.abspath(str(basetemp))))
        try:
            run.writer = RecordWriter(run.record_path)
            run.ctx.own_fds.add(run.writer.fileno)
            run.outputs.ask("--statesnap-record", run.record_path)
        except OSError as exc:
            raise pytest.UsageError(
                f"--statesnap-record {run.record_path}: cannot write ({exc.strerror})"
            ) from None
        active: list[Probe] = []
        statuses: list[dict[str, Any]] = []
        for probe in chosen:
            try:
                probe.setup(run.ctx)
            except ProbeUnavailable as exc:
                run.unavailable[probe.name] = str(exc)
                statuses.append({"name": probe.name, "status": "unavailable", "detail": str(exc)})
                continue
            except Exception as exc:
                detail = f"setup: {type(exc).__name__}: {exc}"
                run.unavailable[probe.name] = detail
                statuses.append({"name": probe.name, "status": "error", "detail": detail})
                run.say(f"statesnap: probe {probe.name!r} failed to start ({detail})")
                continue
            mode = getattr(probe, "mode", None)
            statuses.append({"name": probe.name, "status": "ok",
                             "detail": str(mode) if mode else None})
            active.append(probe)
        if any(p.name == FIXTURES for p in active):
            from statesnap.probes.fixtures import FixturesProbe

            self.fixtures = next((p for p in active if isinstance(p, FixturesProbe)), None)
        run.snapshotter = Snapshotter(active, on_error=self._on_probe_error)
        run.tracker = TestTracker(run.snapshotter)
        run.writer.write(session_header(run, statuses))

        def internal_error(entry: dict[str, Any]) -> None:
            # Only a process that writes the record takes them (a forked child has no writer).
            if run.writer is None:
                raise ValueError("no record writer in this process")
            run.writer.write_open(entry)

        # statesnap's own caught errors (statesnap.base.internal), those noted so far too.
        set_internal_sink(internal_error)
        if s.restore_before is not None:
            from statesnap.plugin.order import RestoreBefore

            tracker = run.tracker
            self.restore_before = RestoreBefore(s.restore_before, active,
                                                lambda: tracker.latest)
            self.config.pluginmanager.register(self.restore_before,
                                               "statesnap-restore-before")
        if s.record_path is None and run.worker == "main":
            mark_latest(run.record_path)
        self._imports_done()  # statesnap's start-up imports are done; the tests see no finder
        run.tracker.baseline()  # before collection

    # -- collection: what importing the test modules changed ------------------------------
    # The baseline is taken as the test loop starts, not in pytest_collection_finish: that
    # runs inside pytest's own collection-time catch_warnings, whose filters list is swapped
    # back afterwards and would look like the first test's leak.
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        self._baseline_after_collection()
        return (yield)

    def _baseline_after_collection(self) -> None:
        if self.run.tracker is None or self.run.writer is None:
            return
        if self.restore_before is not None:
            self.restore_before.prepare()
        before = self.run.tracker.current
        after = self.run.tracker.baseline()
        self.run.session_baseline = after
        changes = diff_snapshots(before, after) if before is not None else []
        for ch in changes:
            ch.phase = "collection"
        self.run.writer.write({"type": "collection", "changes": [c.to_json() for c in changes]})
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
            changes = tracker.end("call" if test.call_is_last else "teardown")
            for hook in run.observers:
                # After end(): restore mode puts state back here and re-snapshots, so the
                # next test starts from the healed state while this line keeps the leak.
                restored += hook.after_test(item, index, changes)
            self._write_test(item, index, nodeid_json, duration, changes, restored, test)

    def _write_test(self, item: pytest.Item, index: int, nodeid_json: str, duration: float,
                    changes: Sequence[Change],
                    restored: list[str], test: TestState) -> None:
        run = self.run
        assert run.writer is not None and run.tracker is not None
        assert run.snapshotter is not None
        phases, failure, extra = test.phases, test.failure, test.fields
        gauges = self._gauges.of(run.tracker.current, run.snapshotter.probes)
        run.tests_written += 1
        if not changes and failure is None and not restored and not extra:
            # Most tests: nothing but the outcome, formatted by hand.
            outcome, phases_json = self._phase_text(phases)
            run.writer.write_line(plain_test_line(
                index, nodeid_json, self._worker_json, outcome, phases_json,
                round(duration, 6), gauges[1]))
            return
        entry: dict[str, Any] = {
            "type": "test",
            "index": index,
            "nodeid": item.nodeid,
            "worker": run.worker,
            "outcome": _overall(phases),
            "phases": phases,
            "duration": round(duration, 6),
            "changes": [c.to_json() for c in changes],
        }
        if failure is not None:
            entry["failure"] = failure
            run.failures_written += 1
        if restored:
            entry["restored"] = restored
        if gauges[0]:
            entry["gauges"] = gauges[0]
        entry.update(extra)
        run.writer.write(entry)

    def _phase_text(self, phases: dict[str, str]) -> tuple[str, str]:
        """The overall outcome and the JSON text of ``phases``; a run has few distinct ones."""
        key = tuple(phases.items())
        known = self._phase_texts.get(key)
        if known is None:
            known = self._phase_texts[key] = (_overall(phases), dumps(phases))
        return known

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
        if self._quiet_teardown(item):
            # Nothing of the user's runs in this teardown: the end-of-test snapshot closes
            # the call phase instead (one snapshot per test, not two).
            self.run.test.call_is_last = True
        else:
            self.run.tracker.checkpoint(Label("call"))

    def _quiet_teardown(self, item: pytest.Item) -> bool:
        """Whether the teardown after this call runs no code of the user's.

        So when every fixture the test uses is a function-scoped one of the user's that was
        set up for it and has no teardown (no generator, no ``request``, whose
        ``addfinalizer`` runs user code at teardown), or it uses none at all, and the next
        test shares this one's parent (so no module- or class-scoped fixture is torn down).
        A fixture of pytest's or a plugin's (``tmp_path``, ``monkeypatch``), or ``request``
        asked by the test itself, keeps the checkpoint.  Finalisers a plugin added with
        ``item.addfinalizer`` would then be counted as the call's.
        """
        test = self.run.test
        nextitem = test.nextitem
        if test.wide_fixtures or test.tears_down or nextitem is None:
            return False
        if nextitem.parent is not item.parent:
            return False
        names = getattr(item, "fixturenames", None)
        return not names or set(names) <= set(test.function_fixtures)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_fixture_setup(
        self, fixturedef: Any, request: pytest.FixtureRequest
    ) -> Generator[None, object, object]:
        own = (self.run.tracker is not None and fixturedef.argname in PYTEST_OWN_SETUP
               and fixturedef.argname not in self._own_setup_seen
               and _is_builtin_fixture(fixturedef))
        if own:
            # pytest's tmp_path imports getpass and pwd on first use, inside the user's
            # fixture that asked for it: checkpoints around its first setup label that
            # import as pytest's own (two light snapshots, once per session).
            assert self.run.tracker is not None
            self._own_setup_seen.add(fixturedef.argname)
            before = self.run.test.function_fixtures
            self.run.tracker.checkpoint(Label("setup", " or ".join(before) or None,
                                          "function" if before else None))
        value: object = _FAILED
        try:
            value = yield
            return value
        finally:
            if own and self.run.tracker is not None:
                self.run.tracker.checkpoint(Label("setup", fixturedef.argname, "function"))
            elif self.run.tracker is not None and not (kind := self._kind(fixturedef))[0]:
                if str(fixturedef.scope) == "function":
                    test = self.run.test
                    test.function_fixtures.append(fixturedef.argname)
                    if not test.tears_down and kind[1]:
                        test.tears_down = True
                else:
                    if not self._wide_teardowns:
                        self._watch_wide_teardowns()
                    self.run.test.wide_fixtures = True
                    if self.fixtures is not None and value is not _FAILED:
                        self._watch_fixture(fixturedef, request, value)
                    self.run.tracker.checkpoint(
                        Label("setup", fixturedef.argname, str(fixturedef.scope)), light=False
                    )

    def _watch_wide_teardowns(self) -> None:
        # Before this fixture's setup returns, so before any finaliser of it can run.
        self._wide_teardowns = True
        self.config.pluginmanager.register(WideTeardowns(self), "statesnap-wide-teardowns")

    def _kind(self, fixturedef: Any) -> tuple[bool, bool]:
        """``(_is_builtin_fixture, _may_tear_down)`` of a fixture definition.

        Asked at every setup of every fixture (a few per test); both read only the
        definition's function, argument names and name, so the answer is kept per definition
        and given again while its function and argument names are the same objects (a plugin
        that wraps a fixture's function, as pytest-asyncio does, gets a fresh answer)."""
        func = getattr(fixturedef, "func", None)
        argnames = getattr(fixturedef, "argnames", None)
        try:
            known = self._fixture_kinds.get(fixturedef)
        except TypeError:  # an unhashable stand-in for a FixtureDef: asked every time
            return _is_builtin_fixture(fixturedef), _may_tear_down(fixturedef)
        if known is not None and known[0] is func and known[1] is argnames:
            return known[2], known[3]
        builtin, tears = _is_builtin_fixture(fixturedef), _may_tear_down(fixturedef)
        self._fixture_kinds[fixturedef] = (func, argnames, builtin, tears)
        return builtin, tears

    def _watch_fixture(self, fixturedef: Any, request: pytest.FixtureRequest,
                       value: object) -> None:
        """Hand a wide fixture's value to the fixtures probe, with how to re-create it.

        Re-creating is pytest's own finalisation, ``FixtureDef.finish(request)`` (a public
        method of pytest 8 and 9, with the request the fixture was set up with); where this
        pytest lacks it the value is still watched, and the record says it cannot be
        re-created."""
        assert self.fixtures is not None
        finish = getattr(fixturedef, "finish", None)
        recreate = None
        if callable(finish):
            def recreate() -> None:
                finish(request)
        elif self.run.ctx is not None:
            self.run.ctx.notes["fixtures"] = (
                f"pytest {pytest.__version__}: a fixture has no finish(): wide fixtures are "
                "watched but cannot be re-created before a test (no key-level proof)")
        try:
            self.fixtures.set_up(str(fixturedef.argname), str(fixturedef.scope), value,
                                 recreate, owner=fixturedef)
        except Exception as exc:  # bookkeeping must never change a test's outcome
            note_internal_error("watching a wide fixture", exc)

    def after_finalizer(self, fixturedef: Any) -> None:
        """A fixture was finalised (:class:`WideTeardowns`): a wide one of the user's gets a
        checkpoint of its own."""
        if (self.run.tracker is not None and str(fixturedef.scope) != "function"
                and not _is_builtin_fixture(fixturedef)):
            if self.fixtures is not None:
                self.fixtures.torn_down(fixturedef)
            self.run.tracker.checkpoint(
                Label("teardown", fixturedef.argname, str(fixturedef.scope)), light=False
            )

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
                self._note_failure(report, call, item, when)
        except Exception as exc:  # bookkeeping must never change a test's outcome
            note_internal_error("noting a test's report", exc)
        if run.report_sink is not None:
            run.report_sink(item, report)
        return report

    def _note_failure(self, report: pytest.TestReport, call: pytest.CallInfo[None],
                      item: pytest.Item | None, when: str) -> None:
        """The test's first failure (a failed report of one of its phases)."""
        test = self.run.test
        # Imported on the first failure: a session with none never needs them.
        from statesnap.record.failure import failure_entry
        from statesnap.record.signature import failing_frame

        excinfo = call.excinfo
        message, exc_type, where = "", None, None
        if excinfo is not None:
            exc_type = excinfo.typename
            try:
                message = str(excinfo.value)
            except Exception:  # the test's exception has a broken __str__
                message = ""
            if item is not None:
                # With the type, the failure's signature (statesnap.record.signature): a
                # replay that fails elsewhere in the test fails differently.
                where = failing_frame(excinfo.traceback, getattr(item, "path", None),
                                      item.config.rootpath)
        test.note_failure(failure_entry(when, exc_type, message, report.longreprtext or "",
                                        where, scrub=self._scrub))

    def _scrub(self, text: str) -> str:
        """Replace values of secret-looking environment variables that appear in a text."""
        return self.run.redactor.scrub(text, self.run.redactor.secrets_in(os.environ))


class WideTeardowns(HookPlugin):
    """Calls the core after each fixture's finalisers ran, for the checkpoint after a wide
    fixture of the user's (its scope's changes are its own, not the next test's).

    Registered by the core at the first setup of such a fixture: pytest finalises a fixture
    only after its setup, so none is missed, and a session that has none (or only pytest's
    own) pays no hook call at each fixture's teardown, a few per test."""

    __slots__ = ("core",)

    def __init__(self, core: StatesnapPlugin) -> None:
        self.core = core

    @pytest.hookimpl(trylast=True)
    def pytest_fixture_post_finalizer(self, fixturedef: Any, request: Any) -> None:
        self.core.after_finalizer(fixturedef)


def _overall(phases: dict[str, str]) -> str:
    setup = phases.get("setup")
    call = phases.get("call")
    teardown = phases.get("teardown")
    if setup == "failed":
        return "error"
    if setup in ("skipped", "xfailed"):
        return str(setup)
    if call is not None and call != "passed":
        return "failed" if call == "failed" else call
    if teardown == "failed":
        return "error"
    return call or setup or "unknown"
