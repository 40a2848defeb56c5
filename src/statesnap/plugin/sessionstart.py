"""A statesnap session's start: probes chosen and started, the record opened, its header
written, and the first snapshot taken before collection.

Called once by the core plugin's ``pytest_sessionstart`` (statesnap.plugin.core); a usage
error (a probe selection, a record path) is raised before anything is written.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from statesnap.base.internal import set_sink as set_internal_sink
from statesnap.base.redact import report_secrets_to_parent
from statesnap.plugin.probesetup import FIXTURES, make_probes, start_probes
from statesnap.plugin.run import RunState
from statesnap.plugin.start import session_header, watch_installed_project
from statesnap.probes.base import Probe, ProbeContext
from statesnap.record.journal import RecordWriter
from statesnap.record.paths import default_record_path, fallback_record_path, mark_latest
from statesnap.state.snapshot import Snapshotter
from statesnap.state.tracker import TestTracker

if TYPE_CHECKING:
    from statesnap.plugin.order import RestoreBefore
    from statesnap.probes.fixtures import FixturesProbe


def start_session(run: RunState, on_probe_error: Callable[[Probe, str, BaseException], None],
                  imports_done: Callable[[], None]) -> tuple[FixturesProbe | None,
                                                             RestoreBefore | None]:
    """Start the session's probes and record; the fixtures probe where it runs, and the
    restore-before plugin where ``--statesnap-restore-before`` asked for it."""
    s = run.settings
    config = run.config
    fixtures: FixturesProbe | None = None
    restore_before: RestoreBefore | None = None
    run.ctx = ProbeContext(
        rootdir=s.rootdir,
        packages=s.packages,
        watch_roots=s.watch_roots,
        watch_exclude=s.watch_exclude,
        redactor=run.redactor,
        probe_options=probe_options(config, s.nvml_every),
    )
    secret_fd = report_secrets_to_parent(run.redactor, os.environ)
    if secret_fd is not None:
        run.ctx.own_fds.add(secret_fd)
    # Probe selection is validated before anything is written: a usage error must not
    # leave an empty record behind.
    chosen = make_probes(run)
    if any(p.name == "attributes" for p in chosen):
        watch_installed_project(run)
    if not run.child and getattr(config, "workerinput", None) is None:
        run.outputs.ask("--statesnap-json", s.json_path)
        run.outputs.ask("--report", s.report_path)
    run.record_path = (run.lane_path or s.record_path
                       or default_record_path(config, run.worker))
    run.writer = open_record(run, run.record_path,
                             named=s.record_path is not None or run.lane_path is not None)
    run.record_path = run.writer.path
    run.ctx.own_fds.add(run.writer.fileno)
    run.outputs.ask("--statesnap-record", run.record_path)
    run.ctx.own_paths.update({run.record_path, run.record_path.with_suffix(".logs")})
    for out in (s.json_path, s.report_path):
        if out is not None:
            run.ctx.own_paths.add(out)
    basetemp = config.option.basetemp
    if basetemp:
        # pytest's own temporary area (``--basetemp`` inside the project): each test's
        # tmp_path is fresh, and pytest empties it at every session's start.  Watched, every
        # use of tmp_path was a leak (strict mode errored on the very fix its hints give).
        run.ctx.own_paths.add(Path(os.path.abspath(str(basetemp))))
    active, statuses = start_probes(run, chosen)
    if any(p.name == FIXTURES for p in active):
        from statesnap.probes.fixtures import FixturesProbe

        fixtures = next((p for p in active if isinstance(p, FixturesProbe)), None)
    run.snapshotter = Snapshotter(active, on_error=on_probe_error)
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
        restore_before = RestoreBefore(s.restore_before, active, lambda: tracker.latest)
        config.pluginmanager.register(restore_before, "statesnap-restore-before")
    if s.record_path is None and run.worker == "main":
        mark_latest(run.record_path)
    imports_done()  # statesnap's start-up imports are done; the tests see no finder
    run.tracker.baseline()  # before collection
    return fixtures, restore_before


def open_record(run: RunState, path: Path, named: bool) -> RecordWriter:
    """The record's writer at ``path``.  Only a path the user named is a usage error when
    it cannot be written: the default place (pytest's cache, read-only in some CI
    checkouts) falls back to a folder of the temporary directory, said in one line."""
    try:
        return RecordWriter(path, keep_going=True)
    except OSError as exc:
        if named:
            raise pytest.UsageError(
                f"--statesnap-record {path}: cannot write ({exc.strerror})") from None
        why = exc.strerror or str(exc)
    try:
        fallback = fallback_record_path(path)
        writer = RecordWriter(fallback, keep_going=True)
    except OSError as exc:
        raise pytest.UsageError(
            f"statesnap: cannot write the record in {path.parent} ({why}) nor in "
            f"{exc.filename or tempfile.gettempdir()} ({exc.strerror}); name a place "
            "with --statesnap-record") from None
    run.say(f"statesnap: cannot write in {path.parent} ({why}); the record is at "
            f"{fallback}")
    return writer


def probe_options(config: pytest.Config, nvml_every: str | None) -> dict[str, str]:
    """Per-probe settings: the command line's, and what other plugins do to the state a probe
    watches (pytest-randomly reseeding the global generators before every test phase)."""
    options = {} if nvml_every is None else {"nvml_every": nvml_every}
    if (config.pluginmanager.has_plugin("randomly")
            and config.getoption("randomly_reset_seed", default=False)):
        options["reseeded_by"] = "pytest-randomly"
    return options

