"""Per-test process isolation: ``--statesnap-isolate[=fork|spawn]`` and ``statesnap_isolate``.

An isolated test runs in a fresh child process, so what it leaks dies with it.  This module
chooses how (fork when it is safe; a fresh interpreter when CUDA is already initialised in
this process, because a forked child inherits a CUDA context it cannot use), runs the child
(:mod:`statesnap.isolate_fork`, :mod:`statesnap.isolate_spawn`) and then shows the child's
reports through this process's hooks, exactly as pytest shows any test's: the terminal,
``-rA`` sections, junitxml and every other plugin see ordinary reports with the captured
output, the assertion introspection, skips, xfails and xpasses as they were.  A child that
dies (a segfault, ``abort()``, ``os._exit``) or runs past ``--statesnap-isolate-timeout``
fails its test with the signal or the exit status, plus whatever it printed before dying, and
the session goes on.

The test line in the record says ``"contained": true``, how it ran (``isolation``), and the
changes the test made in its child (``contained_changes``); its ``changes`` are only what
escaped the child (files it wrote, for instance), so they alone count as leaks.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import pytest
from _pytest.outcomes import Failed

# All imported now, not on the first isolated test: a statesnap module appearing in
# sys.modules during a test would read as that test's change.
from statesnap.guards import guard_verdict
from statesnap.isolate_channel import ChildResult
from statesnap.isolate_fork import run_forked
from statesnap.isolate_spawn import run_spawned
from statesnap.isolate_warnings import emit as emit_warnings
from statesnap.strict import escaped_leak_message

if TYPE_CHECKING:
    from statesnap.plugin import StatesnapPlugin

MARKER = "statesnap_isolate"
MARKER_HELP = (f"{MARKER}(mode='auto'): run this test in a fresh child process (fork, or "
               "spawn when CUDA is initialised or mode='spawn'), so what it leaks dies with it")
PHASES = ("setup", "call", "teardown")


class ProcessCrashed(Failed):
    """The isolated test's process died (signal, exit, timeout) before finishing a phase."""


def cuda_initialised() -> bool:
    """Whether this process has initialised CUDA; never initialises it, never imports torch."""
    cuda = sys.modules.get("torch.cuda")
    if cuda is None:
        return False
    check = getattr(cuda, "is_initialized", None)
    try:
        return bool(check()) if callable(check) else False
    except Exception:
        return False


def choose_mode(requested: str) -> tuple[str, str]:
    """``(fork|spawn, reason)`` for a requested ``auto``, ``fork`` or ``spawn``.

    An explicit ``fork`` still becomes ``spawn`` when forking would break the child.
    """
    if requested == "spawn":
        return "spawn", "asked"
    if not hasattr(os, "fork"):
        return "spawn", "no fork on this platform"
    if cuda_initialised():
        return "spawn", "CUDA is initialised in this process (a forked child cannot use it)"
    return "fork", "asked" if requested == "fork" else "safe to fork"


def requested_mode(item: pytest.Item, default: str | None) -> str | None:
    """The isolation an item asks for (its marker wins over the command line), or None."""
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return default
    mode = marker.kwargs.get("mode", marker.args[0] if marker.args else "auto")
    if mode not in ("auto", "fork", "spawn"):
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.{MARKER}({mode!r}): expected 'auto', 'fork' or 'spawn'"
        )
    return str(mode)


class IsolatePlugin:
    """Runs the items that ask for it in a child process, then reports them here.

    Its per-test hook lives on :class:`_IsolateRunner`, registered only when some test is
    marked or ``--statesnap-isolate`` is on: the usual session pays nothing per test.
    """

    def __init__(self, plugin: StatesnapPlugin) -> None:
        self.plugin = plugin
        self.count: dict[str, int] = {}
        #: Whether any collected item carries the marker (None: not known, look every time).
        self.any_marked: bool | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        # A bad marker is a usage error before anything runs; and with no marker anywhere
        # (the usual case), no test pays for looking its markers up again.
        self.any_marked = False
        for item in items:
            if requested_mode(item, None) is not None:
                self.any_marked = True
        pm = self.plugin.config.pluginmanager
        if ((self.any_marked or self.plugin.settings.isolate is not None)
                and not pm.has_plugin("statesnap-isolate-runner")):
            pm.register(_IsolateRunner(self), "statesnap-isolate-runner")


class _IsolateRunner:
    """The per-test half of :class:`IsolatePlugin`."""

    def __init__(self, owner: IsolatePlugin) -> None:
        self.owner = owner

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None
                                ) -> bool | None:
        plugin = self.owner.plugin
        wanted = requested_mode(item, plugin.settings.isolate)
        if wanted is None or guard_verdict(item) is not None:
            # A guarded test whose state is dirty errors at its setup, before it runs
            # anything: in this process, where the verdict was reached.
            return None
        mode, reason = choose_mode(wanted)
        timeout = plugin.settings.isolate_timeout
        if mode == "fork":
            result = run_forked(plugin, item, timeout)
        else:
            result = run_spawned(plugin, item, timeout)
        self.owner.count[mode] = self.owner.count.get(mode, 0) + 1
        publish(plugin, item, nextitem, result, mode, reason, timeout)
        return True


def _deserialize(config: pytest.Config, data: dict[str, Any]) -> pytest.TestReport:
    report: pytest.TestReport = config.hook.pytest_report_from_serializable(
        config=config, data=data)
    # JSON turned tuples into lists; pytest and plugins unpack these as tuples.
    report.location = tuple(report.location)  # type: ignore[assignment]
    report.sections = [tuple(s) for s in report.sections]  # type: ignore[misc]
    if isinstance(report.longrepr, list):  # a skip's (path, lineno, reason)
        report.longrepr = tuple(report.longrepr)
    return report


_INTERNAL_FRAMES = ("/_pytest/", "/pluggy/", "/statesnap/", "<frozen runpy>")


def trim_frames(text: str) -> str:
    """A faulthandler dump without the frames of pytest, pluggy and statesnap below the test."""
    out: list[str] = []
    frames = 0
    skipping = False
    for line in text.splitlines():
        if not line.strip():
            frames, skipping = 0, False
            out.append(line)
            continue
        if line.startswith("  File "):
            if skipping:
                continue
            if frames and any(part in line for part in _INTERNAL_FRAMES):
                skipping = True
                out.append("  ... (pytest's own frames)")
                continue
            frames += 1
        out.append(line)
    return "\n".join(out)


def crash_message(result: ChildResult, phase: str, timeout: float | None) -> str:
    """The failure text of a test whose process died."""
    exit_ = result.exit
    if exit_.timed_out:
        head = (f"statesnap: isolated test timed out after {timeout:g}s in {phase} "
                f"(--statesnap-isolate-timeout); its process group was killed")
    elif result.internal is not None and result.clean_exit:
        head = "statesnap: the isolated test's child process failed"
    else:
        head = f"statesnap: isolated test process {exit_.describe()} during {phase}"
    parts = [head]
    if result.internal:
        parts.append(result.internal.strip())
    if result.crash_text:
        parts.append("output of the child outside pytest's capture (faulthandler, stderr):\n"
                     + trim_frames(result.crash_text))
    return "\n\n".join(parts)


def _crash_phase(result: ChildResult) -> str:
    seen = result.whens()
    for phase in PHASES:
        if phase not in seen:
            if phase == "call" and any(
                r.get("when") == "setup" and r.get("outcome") != "passed" for r in result.reports
            ):
                continue  # setup failed or skipped: no call was due
            return phase
    return "teardown"


def _xfail_outcome(item: pytest.Item, report: pytest.TestReport) -> None:
    """An xfail-marked test whose process died in its call is an xfail, as a raise would be.

    Built here rather than through the makereport hooks: plugins keep per-item state from
    the setup report (made in the child), which this process never saw.
    """
    if report.when != "call" or item.config.getoption("runxfail", False):
        return
    try:
        from _pytest.skipping import evaluate_xfail_marks
    except ImportError:  # pragma: no cover - pytest moved it
        return
    xfailed = evaluate_xfail_marks(item)
    if xfailed is not None and xfailed.run and xfailed.raises is None:
        report.outcome = "skipped"
        report.wasxfail = xfailed.reason


def _crash_report(plugin: StatesnapPlugin, item: pytest.Item, phase: str, message: str,
                  capman: Any) -> pytest.TestReport:
    """A failed report for ``phase``, with what the child printed into pytest's capture."""
    if capman is not None:
        # fd capture writes to a file the child shared with us: what it printed before dying.
        try:
            out, err = capman.read_global_capture()
        except Exception:
            out, err = "", ""
        if out:
            item.add_report_section(phase, "stdout", out)
        if err:
            item.add_report_section(phase, "stderr", err)

    def crashed() -> None:
        raise ProcessCrashed(message, pytrace=False)

    call = pytest.CallInfo.from_call(crashed, when=phase)  # type: ignore[arg-type]
    report = pytest.TestReport.from_item_and_call(item, call)
    _xfail_outcome(item, report)
    outcome = "xfailed" if hasattr(report, "wasxfail") else "failed"
    plugin.note_phase(phase, outcome)
    if outcome == "failed" and plugin._failure is None:
        plugin._failure = {"phase": phase, "exc_type": ProcessCrashed.__name__,
                           "message": message.splitlines()[0][:500], "text": message[-8000:]}
    return report


def _parent_teardown(plugin: StatesnapPlugin, item: pytest.Item,
                     nextitem: pytest.Item | None) -> pytest.TestReport | None:
    """Finalise fixtures this process holds whose scope ends with this test (mixed runs)."""
    state = getattr(item.session, "_setupstate", None)
    if state is None or not getattr(state, "stack", None):
        return None
    call = pytest.CallInfo.from_call(lambda: state.teardown_exact(nextitem), when="teardown")
    if call.excinfo is None:
        return None
    plugin.note_phase("teardown", "failed")
    return pytest.TestReport.from_item_and_call(item, call)


def publish(plugin: StatesnapPlugin, item: pytest.Item, nextitem: pytest.Item | None,
            result: ChildResult, mode: str, reason: str, timeout: float | None) -> None:
    """Show the child's reports here and note the test for the record."""
    config = item.config
    ihook = item.ihook
    reports = [_deserialize(config, d) for d in result.reports]
    plugin.adopt_outcome(result.phases, result.failure)
    for err in result.errors:
        entry = dict(err)
        entry["where"] = f"isolated child: {entry.get('where', '?')}"
        plugin.errors.append(entry)
        if plugin.writer is not None:
            plugin.writer.write(entry)
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    emit_warnings(result.warnings)  # inside pytest's catch_warnings for this test
    finished = result.done and [r.when for r in reports][-1:] == ["teardown"]
    if not finished or not result.clean_exit:
        phase = _crash_phase(result) if not finished else "teardown"
        message = crash_message(result, phase, timeout)
        capman = config.pluginmanager.getplugin("capturemanager") if mode == "fork" else None
        if finished:
            # The test finished, then its process died or hung: its teardown failed.
            reports = [r for r in reports if r.when != "teardown"]
        reports.append(_crash_report(plugin, item, phase, message, capman))
        if phase != "teardown":
            reports.append(pytest.TestReport(item.nodeid, item.location, {}, "passed", None,
                                             "teardown"))
            plugin.note_phase("teardown", "passed")
    leak = escaped_leak_message(plugin, item)
    if leak is not None and reports and reports[-1].when == "teardown" and reports[-1].passed:
        reports[-1].outcome = "failed"
        reports[-1].longrepr = leak
        plugin.note_phase("teardown", "failed")
    for report in reports:
        ihook.pytest_runtest_logreport(report=report)
    extra = _parent_teardown(plugin, item, nextitem)
    if extra is not None:
        ihook.pytest_runtest_logreport(report=extra)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    plugin.test_extra.update({
        "contained": True,
        "isolation": {"mode": mode, "reason": reason, "exit": result.exit.to_json(),
                      **({"crashed": True} if not finished or not result.clean_exit else {})},
        "contained_changes": result.changes,
    })
    if result.exit_request is not None:
        message, code = result.exit_request
        pytest.exit(message, code)
