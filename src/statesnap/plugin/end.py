"""The end of the session: the record's footer, the findings and the outputs (through the
one pipeline, statesnap.proof.session_end, or the end a feature took over), the terminal
section.  Everything here runs shielded from what the tests left in the process, with the
timers they left running held (statesnap.plugin.timers)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from statesnap.plugin import cleanroom
from statesnap.plugin.hookplugin import HookPlugin
from statesnap.plugin.outputs import exit_status
from statesnap.plugin.run import RunState
from statesnap.state.settle import deliver_deferred
from statesnap.state.snapshot import cost_table


class SessionEnd(HookPlugin):
    """The core's session-end hooks (statesnap.plugin.cleanroom shields each of them)."""

    def __init__(self, run: RunState) -> None:
        self.run = run
        self._closed = False
        self._probes_closed = False

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        run = self.run
        # What finalisers raised in statesnap's collections (statesnap.state.settle), for
        # pytest to report at its session's end, where plain pytest reports garbage its own
        # collector had not reached.
        self._guarded("reporting what finalisers raised", deliver_deferred)
        interrupted = False
        with cleanroom.shielded(run.baseline):
            try:
                self._guarded("finishing the record", lambda: self._close(int(exitstatus)))
                self._guarded("the session end", lambda: (run.end or plain_end)(run))
            except KeyboardInterrupt:
                interrupted = True
            self._say_missing(interrupted)
        if interrupted:
            # pytest's own code for a session a Ctrl-C stopped, whatever the tests did.
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        else:
            session.exitstatus = exit_status(session.exitstatus,
                                             run.outputs.missing_by_fault())

    def _say_missing(self, interrupted: bool) -> None:
        """One line for each asked-for file not written (not said already), and one for a
        Ctrl-C that stopped the end."""
        run = self.run
        missing = run.outputs.missing()
        for label, path in missing:
            if path not in run.outputs.said:
                run.say(f"statesnap: {label} {path} was not written")
        if interrupted:
            kept = ("" if missing else "; the record, summary and report hold what was proven "
                    "so far")
            run.say("statesnap: interrupted (Ctrl-C): the replays were stopped and the files "
                    f"they staged put back{kept}")

    def _guarded(self, what: str, work: Callable[[], None]) -> None:
        """Run end-of-session work; a bug in it is one line, never a traceback."""
        try:
            work()
        except Exception as exc:
            from statesnap.proof.session_end import describe_error

            self.run.say(f"statesnap: {what} failed: {describe_error(exc)}")

    def _close(self, exitstatus: int) -> None:
        if self._closed:
            return
        self._closed = True
        writer = self.run.writer
        if writer is not None and self.run.snapshotter is not None:
            try:
                self._write_footer(exitstatus)  # dropped by a record cut short
            except OSError as exc:
                assert self.run.record_path is not None
                self.run.outputs.failed(self.run.record_path)
                self.run.say(f"statesnap: cannot finish the record {self.run.record_path}: "
                                    f"{exc.strerror or exc}")
            else:
                assert self.run.record_path is not None
                if writer.cut is not None:
                    self._say_cut(writer.cut, writer.cut_noted)
                else:
                    self.run.outputs.written(self.run.record_path)
            finally:
                writer.close()
        if self.run.snapshotter is not None:
            # Closed in pytest_unconfigure, after the rest of the end (Probe.stop says why).
            self.run.snapshotter.stop()

    def _say_cut(self, cut: dict[str, Any], noted: bool) -> None:
        """The disk refused a line mid-run: the record stops there, the tests went on."""
        path = self.run.record_path
        assert path is not None
        self.run.outputs.failed(path, no_room=True)
        self.run.say(
            f"statesnap: the record {path} was cut short ({cut.get('error')}); the "
            f"{self.run.tests_written} tests all ran, those after the cut are not in it"
            + ("" if noted else " (nor is the note saying so)")
            + ": nothing was replayed")

    def _write_footer(self, exitstatus: int) -> None:
        assert self.run.writer is not None and self.run.snapshotter is not None
        self.run.writer.write({
            "type": "footer",
            "finished": time.time(),
            "exitstatus": exitstatus,
            "tests": self.run.tests_written,
            "costs": cost_table(self.run.snapshotter.settled_costs(), self.run.tests_written),
            "disabled": self.run.snapshotter.disabled,
            # Probes may learn things after the header was written (nvml: host pids).
            "notes": dict(self.run.ctx.notes) if self.run.ctx is not None else {},
            # Which tests each autouse fixture runs before (analysis/resets.py).
            "autouse": [[name, baseid] for name, baseid in self.run.autouse],
        })

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        # Interrupted before sessionfinish (KeyboardInterrupt during collection): still close.
        if not self._closed:
            with cleanroom.shielded(self.run.baseline):
                self._guarded("finishing the record",
                              lambda: self._close(int(pytest.ExitCode.INTERRUPTED)))
        if self.run.snapshotter is not None and not self._probes_closed:
            self._probes_closed = True
            self._guarded("closing the probes", self.run.snapshotter.close)
        # The end needs the baseline no more: its copy of sys.modules would keep the modules
        # of the session's start alive past the interpreter's own teardown of them, where an
        # unclosed file a module holds (structlog's WRITE_LOCKS) warns on stderr after the
        # summary; plain pytest, tearing them down in order, never shows it.
        self.run.baseline.modules.clear()

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from statesnap.plugin import terminal

        with cleanroom.shielded(self.run.baseline):
            self._guarded("the terminal section",
                          lambda: terminal.write_summary(self.run, terminalreporter))
            self._guarded("the terminal section",
                          lambda: terminal.write_containment(self.run, terminalreporter))


def plain_end(run: RunState) -> None:
    """The session end of a process that ran its tests itself: read the record back, find,
    prove, store the verdicts, write the outputs (statesnap.proof.session_end)."""
    if run.record_path is None or run.child:
        return
    from statesnap.proof.session_end import Interrupted, finish_session, read_back

    s = run.settings
    # A run without failures and without files to write needs only the tests that leaked or
    # carry more than an outcome (the terminal section): the plain ones are not parsed.
    ctx = run.end_context()
    lean = run.failures_written == 0 and s.json_path is None and s.report_path is None
    record = read_back(ctx, lean=lean)
    if record is None:
        return
    if record.cut is not None:
        # The disk that cut the record short would refuse the replays' logs too, and a
        # prefix of the run is no order to prove anything by: attribution only.
        ctx.verify_budget = 0.0
    run.results.record = record
    run.results.records = [record]
    try:
        result = finish_session(ctx, [record])
    except Interrupted as exc:  # Ctrl-C: what was proven so far is shown, then it goes on
        if exc.result is not None:
            run.results.findings = exc.result.findings
            run.results.report_written = exc.result.report_written
        raise
    run.results.findings = result.findings
    run.results.report_written = result.report_written
