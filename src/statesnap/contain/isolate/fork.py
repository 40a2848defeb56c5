"""Fork isolation: run one test's setup, call and teardown in a forked child.

The child streams its reports to the parent through a temporary file and leaves with
``os._exit``.  Which fixtures and probes stay the parent's: docs/ARCHITECTURE.md ("Isolation").
"""

from __future__ import annotations

import faulthandler
import gc
import os
import sys
import tempfile
import traceback
from typing import IO, TYPE_CHECKING, Any

import pytest

from statesnap.base import spawned
from statesnap.base.internal import noted
from statesnap.contain.isolate.channel import ChildResult, parse_messages, read_tail, write_message
from statesnap.contain.isolate.warnings import recording_log, to_message
from statesnap.replay.procwait import kill_group, wait_child

if TYPE_CHECKING:
    from statesnap.plugin.run import RunState

#: Probes that watch state outside the process; the parent alone reads them.
SHARED_STATE_PROBES = frozenset({"files"})
#: Probes whose state the fork itself (and the child's set-up) changes.
FORK_CHANGES = frozenset({"threads", "children", "fds", "process"})
#: The child's exit status when statesnap itself failed in it.
INTERNAL_ERROR_STATUS = 70


def process_local(probe: Any) -> bool:
    """Whether a probe reads this process's own state (a forked child may read it)."""
    flag = getattr(probe, "process_local", None)
    if isinstance(flag, bool):
        return flag
    return str(getattr(probe, "name", "")) not in SHARED_STATE_PROBES


def _report_sink(run: RunState, channel: IO[bytes]) -> Any:
    """Streams each report, as made, with the child's bookkeeping, to the parent."""

    def send(item: pytest.Item, report: pytest.TestReport) -> None:
        data = item.config.hook.pytest_report_to_serializable(config=item.config,
                                                              report=report)
        write_message(channel, {
            "report": data,
            "phases": run.test.phases,
            "failure": run.test.failure,
        })

    return send


def _start_child(run: RunState, item: pytest.Item, channel: IO[bytes],
                 crash: IO[bytes]) -> None:
    """Everything the child does before the test: group, crash file, fresh snapshot."""
    spawned.lead_group(0)
    # A segfault's Python traceback goes to the crash file, which the parent shows.
    faulthandler.enable(file=crash, all_threads=True)
    # Only the parent writes the record; the channel is statesnap's, not the test's; the
    # child tears every fixture down itself (no quiet teardown).
    run.enter_child(own_fds=(channel.fileno(), crash.fileno()),
                    report_sink=_report_sink(run, channel))
    # Fixtures the parent holds are finalised by the parent, once, when their scope ends.
    stack = getattr(getattr(item.session, "_setupstate", None), "stack", None)
    if isinstance(stack, dict):
        for finalizers, _ in stack.values():
            finalizers.clear()
    snapshotter, tracker = run.snapshotter, run.tracker
    if snapshotter is not None and tracker is not None and tracker.current is not None:
        snapshotter.probes = [p for p in snapshotter.probes if process_local(p)]
        # The fork itself changes threads, children and fds (and faulthandler's file, above):
        # re-read those, so the child's diff starts from the child's own state.
        tracker.current = snapshotter.take(tracker.current, only=FORK_CHANGES)
        tracker.begin()


def _child_main(run: RunState, item: pytest.Item, channel: IO[bytes],
                crash: IO[bytes]) -> None:
    status = 0
    try:
        errors_before = len(run.errors)
        internal_before = len(noted())
        _start_child(run, item, channel, crash)
        from _pytest.outcomes import Exit as PytestExit
        from _pytest.runner import runtestprotocol

        log = recording_log()  # the parent's catch_warnings, copied into this process
        seen = len(log) if log is not None else 0
        try:
            runtestprotocol(item, log=False, nextitem=None)
        except PytestExit as exc:
            write_message(channel, {"exit": exc.msg, "returncode": exc.returncode})
        for msg in (log or [])[seen:]:
            write_message(channel, to_message(msg))
        changes = run.tracker.end() if run.tracker is not None else []
        write_message(channel, {
            "done": True,
            "changes": [c.to_json() for c in changes],
            "errors": run.errors[errors_before:],
            # statesnap's own errors in the child: it has no record, the parent writes them.
            "internal_errors": [{"where": e["where"], "error": e["error"]}
                                for e, _ in noted()[internal_before:]],
        })
    except BaseException:
        status = INTERNAL_ERROR_STATUS
        try:
            write_message(channel, {"internal": traceback.format_exc()})
        except BaseException:
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(status)


def run_forked(run: RunState, item: pytest.Item,
               timeout: float | None) -> ChildResult:
    """Run ``item`` in a forked child; the result holds its reports and how it ended."""
    result = ChildResult()
    with tempfile.TemporaryFile() as channel, tempfile.TemporaryFile() as crash:
        # Anything buffered now would be flushed by both processes.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        # Frozen objects are never traversed by the child's collector, so it does not touch
        # (and copy) every page of the parent's heap; the parent unfreezes them at once.
        pid = -1
        gc.freeze()
        try:
            pid = spawned.fork()  # the real fork, the pid noted as ours to signal
        finally:
            if pid != 0:
                gc.unfreeze()
        if pid == 0:  # pragma: no cover - the child never returns
            _child_main(run, item, channel, crash)
        spawned.lead_group(pid)  # also done by the child: whichever runs first wins
        try:
            result.exit = wait_child(pid, timeout)
        except BaseException:
            # Ctrl-C (the child, in its own group, never got it) or worse: leave no orphans.
            kill_group(pid)
            try:
                spawned.reap(pid)
            except ChildProcessError:
                pass
            raise
        channel.seek(0)
        parse_messages(channel.read(), result)
        if not result.done or not result.clean_exit:
            result.crash_text = read_tail(crash)
    return result
