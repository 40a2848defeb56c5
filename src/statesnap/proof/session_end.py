"""After the last test: find and verify the failures of a record, and write the outputs.

:func:`~statesnap.contain.registry.finish` (and, under xdist, the controller) reads the record back
and
calls these.  Working from the record on disk (rather than in-memory state) keeps one code path
for the plugin and the CLI, and proves the record is complete.  Every output error becomes one
terminal line, and the session fails for it (:class:`statesnap.plugin.outputs.Outputs`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from statesnap.record.journal import Record

if TYPE_CHECKING:
    from statesnap.analysis.findings import Finding
    from statesnap.plugin.core import StatesnapPlugin


def find(plugin: StatesnapPlugin, record: Record) -> list[Finding]:
    """Attribute failures and, within the budget, verify them in fresh processes."""
    if record.running is None and not any(t.failed for t in record.tests):
        return []  # nothing failed: nothing to attribute (and attribution is not imported)
    try:
        from statesnap.analysis import attribution
    except ImportError:
        return []
    findings = attribution.attribute(record)
    if plugin.settings.verdicts_from is not None:
        return _recorded_verdicts(plugin, plugin.settings.verdicts_from, findings)
    if not findings or plugin.settings.verify_budget <= 0 or plugin.settings.order_file:
        # A replay child (running --statesnap-order) never verifies: no recursion.
        return findings
    from statesnap.proof import verify
    from statesnap.proof.release import release_all
    from statesnap.replay.runner import Runner

    # What finished tests still hold in this process (a port, a lock, a child) would meet
    # every replay started from here, and not one started after the session.
    own = plugin.ctx.own_fds if plugin.ctx is not None else set()
    try:
        released = release_all(record, own)
    except Exception as exc:  # never fail the run over it; the replays then say what they see
        released = []
        plugin._terminal_line(f"statesnap: could not let go of what tests leaked: {exc!r}")
    for done in released:
        plugin._terminal_line(f"statesnap: before replaying, let go of {done.what}")
    _record_released(plugin, [r.to_json() for r in released])
    return verify.verify_findings(
        record,
        findings,
        budget=plugin.settings.verify_budget,
        repeat=plugin.settings.verify_repeat,
        find_cleaners=plugin.settings.find_cleaners,
        progress=plugin._terminal_line,
        runner=Runner(record, env=plugin.initial_env, redactor=plugin.redactor),
    )


def _record_released(plugin: StatesnapPlugin, actions: list[dict[str, object]]) -> None:
    """Keep what was let go of in the record: the replays ran without it."""
    if plugin.record_path is None or not actions:
        return
    from statesnap.record.journal import append_lines

    try:
        append_lines(plugin.record_path, [{"type": "released", "actions": actions}])
    except OSError as exc:
        plugin._terminal_line(f"statesnap: cannot note in {plugin.record_path} what was let "
                              f"go of: {exc.strerror}")


def _recorded_verdicts(plugin: StatesnapPlugin, path: Path,
                       findings: list[Finding]) -> list[Finding]:
    """``statesnap replay``: each victim's verdict as the recorded run proved it, not one
    re-ranked from this replay's record (which can name another polluter)."""
    from statesnap.analysis.verdicts import stored
    from statesnap.record.journal import RecordError, read_record

    try:
        proven = {f.victim: f for f in stored(read_record(path))}
    except RecordError as exc:
        plugin._terminal_line(f"statesnap: cannot read the recorded verdicts: {exc}")
        return findings
    out = []
    for f in findings:
        kept = proven.get(f.victim)
        if kept is not None:
            extra = f"the verdict the recorded run stored ({path})"
            kept.note = f"{kept.note}; {extra}" if kept.note else extra
        out.append(kept or f)
    return out


def store_verdicts(plugin: StatesnapPlugin, findings: list[Finding]) -> None:
    """Append the session's verdicts to its record, so every later reader shows them."""
    if plugin.record_path is None or not findings:
        return
    from statesnap.analysis.verdicts import store

    try:
        store(plugin.record_path, findings)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        plugin._terminal_line(f"statesnap: cannot store the verdicts in {plugin.record_path}: "
                              f"{why}; later readers will show them as not replayed")


def write_outputs(plugin: StatesnapPlugin, records: list[Record], findings: list[Finding]) -> None:
    """Write the summary JSON and the report that were asked for, each on its own.

    A file that cannot be written gets one line and is noted in ``plugin.outputs``; the
    plugin makes the session fail for it (the option was checked at start, so this is a
    disk that filled up or a directory that went away during the run).
    """
    s = plugin.settings
    if s.json_path is not None:
        from statesnap.output.summary import write_summary

        _write(plugin, s.json_path, lambda path: write_summary(path, records, findings))
    if s.report_path is not None:
        from statesnap.output.report import write_report

        if _write(plugin, s.report_path, lambda path: write_report(path, records, findings)):
            plugin.report_written = s.report_path


def _write(plugin: StatesnapPlugin, path: Path, write: Callable[[Path], None]) -> bool:
    try:
        write(path)
    except OSError as exc:
        reason = exc.strerror or str(exc)
    except Exception as exc:  # a bug must cost this file, not the run and the other files
        reason = describe_error(exc)
    else:
        plugin.outputs.written(path)
        return True
    plugin.outputs.failed(path)
    plugin._terminal_line(f"statesnap: cannot write {path}: {reason}")
    return False


def describe_error(exc: BaseException) -> str:
    """``Type: message (file:line)`` of the innermost frame: one line for a bug report."""
    tb = exc.__traceback__
    where = ""
    while tb is not None:
        where = f" ({Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno})"
        tb = tb.tb_next
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}" + (f": {text}" if text else "") + where
