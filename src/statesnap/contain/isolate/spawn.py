"""Spawn isolation: run one test in a fresh interpreter, for when forking is not safe.

The child is a replay's command line, told to run this one node id and to stream its reports to
a channel file; :class:`SpawnedChild` is its side.  Why a subprocess: docs/ARCHITECTURE.md
("Isolation").
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from statesnap.base import spawned
from statesnap.contain.isolate.channel import ChildResult, parse_messages, write_message
from statesnap.contain.isolate.warnings import to_message
from statesnap.plugin import cleanattrs
from statesnap.plugin.hookplugin import HookPlugin
from statesnap.record.reader import RecordError, read_record
from statesnap.replay.child import child_command, child_env
from statesnap.replay.orderfile import write_order
from statesnap.replay.procwait import kill_group, wait_child

if TYPE_CHECKING:
    from statesnap.plugin.run import RunState

_HEADER_KEY = pytest.StashKey[dict[str, Any]]()
LOG_TAIL = 6000


class SpawnedChild(HookPlugin):
    """Registered in a spawned child (``--statesnap-isolate-child``): streams its reports."""

    def __init__(self, run: RunState, channel: Path) -> None:
        self.run = run
        self.channel = open(channel, "ab")  # noqa: SIM115 - open for the whole session
        # Spawned isolation's reports, like fork's, are shown by the parent, not written here.

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # The parent shows the reports; the child's own terminal output (its header, progress
        # and summary) would only be noise, on the user's terminal under -s.  The terminal
        # plugin stays loaded: its options (-r, -v, ...) are on the replayed command line.
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and hasattr(tr, "_tw"):
            from _pytest.config import create_terminal_writer

            tr._tw = create_terminal_writer(session.config, io.StringIO())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        config = self.run.config
        data = config.hook.pytest_report_to_serializable(config=config, report=report)
        write_message(self.channel, {
            "report": data,
            "phases": self.run.test.phases,
            "failure": self.run.test.failure,
        })

    def pytest_warning_recorded(self, warning_message: Any, when: str, nodeid: str,
                                location: Any) -> None:
        if when == "runtest":
            write_message(self.channel, to_message(warning_message))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.channel.close()


def _header(run: RunState) -> dict[str, Any]:
    """The session's record header (written at session start), read back once."""
    cached = run.config.stash.get(_HEADER_KEY, None)
    if cached is not None:
        return cached
    header: dict[str, Any] = {}
    if run.record_path is not None:
        try:
            header = read_record(run.record_path).header
        except RecordError:
            header = {}
    run.config.stash[_HEADER_KEY] = header
    return header


def spawn_command(run: RunState, item: pytest.Item, workdir: Path) -> list[str]:
    """The ``python -m pytest`` line that runs ``item`` alone, reporting into ``workdir``."""
    order = workdir / "order.json"
    write_order(order, [item.nodeid])
    active = [p.name for p in (run.snapshotter.probes if run.snapshotter else [])]
    # This very interpreter (the test runs as part of this session), and a scratch cache
    # only where this session has one: without the cacheprovider ``cache_dir`` is an unknown
    # ini key, which ``filterwarnings = error`` turns into an internal error.
    cache = (workdir / "cache" if run.config.pluginmanager.has_plugin("cacheprovider")
             else None)
    return child_command(
        sys.executable, _header(run), order, workdir / "record.jsonl", [str(item.path)],
        probes=[n for n in active if n != "files"] or ["-files"], cache_dir=cache,
        options=[f"--statesnap-isolate-child={workdir / 'channel.jsonl'}"])


def _capture_off(config: pytest.Config) -> bool:
    return str(config.getoption("capture", "fd")) == "no"


def run_spawned(run: RunState, item: pytest.Item,
                timeout: float | None) -> ChildResult:
    """Run ``item`` in a fresh interpreter; the result holds its reports and how it ended."""
    # Started, waited for and read back with the functions of before the tests (a test may
    # have left os.stat, os.scandir or json.loads patched); the child is a fresh interpreter,
    # so nothing of the test's own world changes.
    with cleanattrs.restored(run.baseline.attributes):
        return _run_spawned(run, item, timeout)


def _run_spawned(run: RunState, item: pytest.Item, timeout: float | None) -> ChildResult:
    result = ChildResult(ok_codes=(0, 1))
    workdir = Path(tempfile.mkdtemp(prefix="statesnap-spawn-"))
    try:
        cmd = spawn_command(run, item, workdir)
        # The test runs as part of this session (and its xdist worker): it keeps their env.
        env = child_env(os.environ, keep_xdist=True, STATESNAP_ISOLATED="spawn")
        log_path = workdir / "output.log"
        cwd = Path(run.config.invocation_params.dir)
        with open(log_path, "wb") as log:
            out: Any = None if _capture_off(run.config) else log
            try:
                proc = spawned.popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=out, start_new_session=True)
            except OSError as exc:
                result.internal = f"cannot start {cmd[0]}: {exc.strerror}"
                return result
            try:
                result.exit = wait_child(proc.pid, timeout)
            except BaseException:
                kill_group(proc.pid)
                spawned.wait(proc)
                raise
            # Reaped by wait_child; tell Popen so it does not wait again (or warn).
            proc.returncode = result.exit.code if result.exit.code is not None else (
                -(result.exit.signal or 9))
        channel = workdir / "channel.jsonl"
        if channel.exists():
            parse_messages(channel.read_bytes(), result)
        _read_child_record(workdir / "record.jsonl", result)
        if not result.done or not result.clean_exit:
            text = log_path.read_bytes()[-LOG_TAIL:].decode("utf-8", "replace").strip()
            result.crash_text = text
            if result.exit.code == 4 and not result.reports:
                result.internal = "the spawned pytest could not run the test: " + (
                    " / ".join(text.splitlines()[-3:]) or "no output")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def _read_child_record(path: Path, result: ChildResult) -> None:
    try:
        record = read_record(path)
    except RecordError:
        return
    result.errors = list(record.errors)
    result.internal_errors = list(record.internal_errors)
    if record.tests:
        test = record.tests[0]
        result.done = True
        result.phases = dict(test.phases) or result.phases
        if test.failure is not None:
            result.failure = test.failure
        result.changes = [c.to_json() for c in test.changes]
