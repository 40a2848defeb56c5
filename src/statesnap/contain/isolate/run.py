"""Running an isolated test in its child process and showing its reports here.

Registered by :class:`~statesnap.contain.isolate.plugin.IsolatePlugin` only when some test asks
for isolation (what isolation means and how the mode is chosen: docs/ARCHITECTURE.md,
"Isolation").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from _pytest.outcomes import Failed

from statesnap.base.internal import adopt
from statesnap.contain.guards import guard_verdict
from statesnap.contain.isolate.channel import ChildResult
from statesnap.contain.isolate.fields import CONTAINED, CONTAINED_CHANGES, FIELD, Isolation
from statesnap.contain.isolate.fork import run_forked
from statesnap.contain.isolate.modes import (
    PHASES,
    IsolateSettings,
    choose_mode,
    requested_mode,
)
from statesnap.contain.isolate.spawn import run_spawned
from statesnap.contain.isolate.warnings import emit as emit_warnings
from statesnap.contain.strictcheck import escaped_leak_message
from statesnap.plugin.hookplugin import HookPlugin
from statesnap.record.failure import failure_entry

if TYPE_CHECKING:
    from statesnap.plugin.run import RunState


class ProcessCrashed(Failed):
    """The isolated test's process died (signal, exit, timeout) before finishing a phase."""


class IsolateRunner(HookPlugin):
    """The per-test half of :class:`statesnap.contain.isolate.plugin.IsolatePlugin`."""

    def __init__(self, run: RunState, settings: IsolateSettings) -> None:
        self.run = run
        self.settings = settings

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None
                                ) -> bool | None:
        run = self.run
        wanted = requested_mode(item, self.settings.mode)
        if wanted is None or guard_verdict(item) is not None:
            # A guarded test whose state is dirty errors at its setup, before it runs
            # anything: in this process, where the verdict was reached.
            return None
        mode, reason = choose_mode(wanted)
        timeout = self.settings.timeout
        if mode == "fork":
            result = run_forked(run, item, timeout)
        else:
            result = run_spawned(run, item, timeout)
        publish(run, item, nextitem, result, mode, reason, timeout)
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


def _crash_report(run: RunState, item: pytest.Item, phase: str, message: str,
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
    run.test.note_phase(phase, outcome)
    if outcome == "failed":
        run.test.note_failure(failure_entry(phase, ProcessCrashed.__name__, message, message))
    return report


def _parent_teardown(run: RunState, item: pytest.Item,
                     nextitem: pytest.Item | None) -> pytest.TestReport | None:
    """Finalise fixtures this process holds whose scope ends with this test (mixed runs)."""
    state = getattr(item.session, "_setupstate", None)
    if state is None or not getattr(state, "stack", None):
        return None
    call = pytest.CallInfo.from_call(lambda: state.teardown_exact(nextitem), when="teardown")
    if call.excinfo is None:
        return None
    run.test.note_phase("teardown", "failed")
    return pytest.TestReport.from_item_and_call(item, call)


def publish(run: RunState, item: pytest.Item, nextitem: pytest.Item | None,
            result: ChildResult, mode: str, reason: str, timeout: float | None) -> None:
    """Show the child's reports here and note the test for the record."""
    config = item.config
    ihook = item.ihook
    reports = [_deserialize(config, d) for d in result.reports]
    run.test.adopt_outcome(result.phases, result.failure)
    for err in result.errors:
        entry = dict(err)
        entry["where"] = f"isolated child: {entry.get('where', '?')}"
        run.note_error(entry)
    for internal in result.internal_errors:
        adopt(f"isolated child: {internal.get('where', '?')}", str(internal.get("error", "?")))
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
        reports.append(_crash_report(run, item, phase, message, capman))
        if phase != "teardown":
            reports.append(pytest.TestReport(item.nodeid, item.location, {}, "passed", None,
                                             "teardown"))
            run.test.note_phase("teardown", "passed")
    leak = escaped_leak_message(run, item)
    if leak is not None and reports and reports[-1].when == "teardown" and reports[-1].passed:
        reports[-1].outcome = "failed"
        reports[-1].longrepr = leak
        run.test.note_phase("teardown", "failed")
    for report in reports:
        ihook.pytest_runtest_logreport(report=report)
    extra = _parent_teardown(run, item, nextitem)
    if extra is not None:
        ihook.pytest_runtest_logreport(report=extra)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    test = run.test
    test.add_field(CONTAINED, True)
    test.add_field(FIELD, Isolation(mode, reason, result.exit.to_json(),
                                    crashed=not finished or not result.clean_exit).to_json())
    test.add_field(CONTAINED_CHANGES, result.changes)
    if result.exit_request is not None:
        message, code = result.exit_request
        pytest.exit(message, code)
