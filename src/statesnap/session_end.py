"""What happens after the last test: read the record back, find, verify, write outputs.

Working from the record on disk (rather than in-memory state) keeps one code path for the
plugin and the CLI, and proves the record is complete.  Every output error becomes a terminal
line, never a failed run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from statesnap.findings import Finding
from statesnap.record import Record, RecordError, read_record

if TYPE_CHECKING:
    from statesnap.plugin import StatesnapPlugin


def finish(plugin: StatesnapPlugin, session: Any) -> None:
    plugin.record = None
    plugin.findings = []
    if plugin.record_path is None or getattr(plugin.config, "workerinput", None) is not None:
        return  # xdist workers leave merging and findings to the controller
    try:
        record = read_record(plugin.record_path)
    except RecordError as exc:
        plugin._terminal_line(f"statesnap: cannot read back the record: {exc}")
        return
    plugin.record = record
    plugin.findings = find(plugin, record)
    write_outputs(plugin, [record], plugin.findings)


def find(plugin: StatesnapPlugin, record: Record) -> list[Finding]:
    """Attribute failures and, within the budget, verify them in fresh processes."""
    try:
        from statesnap import attribution
    except ImportError:
        return []
    findings = attribution.attribute(record)
    if not findings or plugin.settings.verify_budget <= 0 or plugin.settings.order_file:
        # A replay child (running --statesnap-order) never verifies: no recursion.
        return findings
    from statesnap import verify
    from statesnap.runner import Runner

    return verify.verify_findings(
        record,
        findings,
        budget=plugin.settings.verify_budget,
        repeat=plugin.settings.verify_repeat,
        find_cleaners=plugin.settings.find_cleaners,
        progress=plugin._terminal_line,
        runner=Runner(record, env=plugin.initial_env, redactor=plugin.redactor),
    )


def write_outputs(plugin: StatesnapPlugin, records: list[Record], findings: list[Finding]) -> None:
    s = plugin.settings
    if s.json_path is not None:
        from statesnap.summary import write_summary

        try:
            write_summary(s.json_path, records, findings)
        except OSError as exc:
            plugin._terminal_line(f"statesnap: cannot write {s.json_path}: {exc.strerror}")
    if s.report_path is not None:
        try:
            from statesnap.report import write_report
        except ImportError:
            plugin._terminal_line("statesnap: the HTML report is not available in this build")
            return
        try:
            write_report(s.report_path, records, findings)
            plugin.report_written = s.report_path
        except OSError as exc:
            plugin._terminal_line(f"statesnap: cannot write {s.report_path}: {exc.strerror}")
